"""What is written where a secret goes but is not one: the one test every secret check asks.

Two questions, at two sizes:

- :func:`is_placeholder` — the value given to a secret-looking key ("password: changeme",
  ``api_key = "<your key>"``) is a placeholder, a reference to where the secret really lives
  (``$TOKEN``, ``os.environ[...]``, ``getpass()``, a password manager), or something that is
  not a secret at all (a number, a URL, an address, a UUID). The rules' assignments, the
  credentials in URLs and the signals' keyed values all ask this.
- :func:`written_to_be_read` — a whole key-shaped finding was written to be read, not used: a
  format shown with filler (``ghp_xxxx…``, ``0123456789``), or a provider's documented sample
  (``AKIAIOSFODNN7EXAMPLE``) where the entry says it is one. No issued key is made of filler;
  "EXAMPLE" inside a key with nothing saying so stays a secret.
"""

from __future__ import annotations

import re

_PLACEHOLDER = re.compile(
    r"""^(?:
    # filler, elisions and template marks
    x{3,}.*|\*{3,}.*|\.{2,}|.*\.{3}.*|<.*|\{.*|\[.*|!.*|&.*|~.*
    # words that stand for a value to fill in
    |your[_-].*|my[_-].*|change[_-]?me.*|placeholder|redacted|none|null|nil|true|false
    |todo|tbd|required|optional|string|str|secret|password|passwd|token|api[_-]?key|example
    |replace[_-]?me|fill[_-]?(?:me|in)|fixme|insert[_-].*|set[_-]?me|dummy|test
    |.*[_-]?(?:here|example|placeholder)
    # a reference to where the secret lives: a variable, the environment, a file, a call, a
    # password manager
    |\$.*|%.*|@.*|/.*|\./.*|[a-z]:\\.*
    |env\b.*|env\[.*|os\.environ.*|os\.getenv.*|process\.env.*|getenv.*|environ.*
    |[a-z_][a-z_.]{2,60}\(.*
    |.*(?:1password|bitwarden|lastpass|keychain|keepass|vault|secrets?manager|pass\s+show).*
    # not a secret at all
    |\d+|https?://.*|[\w.-]+@[\w.-]+\.\w+
    |[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}
    )$""",
    re.IGNORECASE | re.VERBOSE,
)


def is_placeholder(value: str) -> bool:
    """Whether ``value``, given to a secret-looking key, is not itself a secret."""
    return _PLACEHOLDER.match(value) is not None


_FILLER = re.compile(
    r"([^\s])\1{7,}|0123456789|(?:your|my)[_-](?:api[_-]?)?(?:key|token|secret)", re.IGNORECASE
)
_SAMPLE = re.compile(r"example|sample|dummy|placeholder|fake", re.IGNORECASE)
_SAYS_SAMPLE = re.compile(
    r"\b(?:example|examples|docs|documentation|sample|format|placeholder|fake|dummy|test\s+fixture"
    r"|tutorial)\b",
    re.IGNORECASE,
)
_HOSTNAME = re.compile(r"[\w-]+(?:\.[\w-]+)+")


def written_to_be_read(found: str, rest: str) -> bool:
    """Whether the key-shaped text ``found`` is filler or a sample, given the rest of the entry."""
    value = _HOSTNAME.sub(" ", found)  # "db.internal.example" is a host, not a sample key
    if _FILLER.search(value):
        return True
    return bool(_SAMPLE.search(value) and _SAYS_SAMPLE.search(rest))
