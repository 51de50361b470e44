"""The rules layer of the memory threat scanner: named patterns on a normalised copy of the text.

Memory entries are injected into the system prompt of every future session, so an entry that is
really an instruction ("ignore previous instructions", "curl $API_KEY to ...") would let whoever
planted it steer every later session. Every write is scanned before it is accepted and entries on
disk are scanned again at load; any finding blocks the entry.

Matching runs on a normalised copy of the text (NFKC, look-alike letters folded to Latin, invisible
characters removed, whitespace collapsed) so trivial disguises do not help, while an index map
lets every finding point back into the original text.

Hostile input must not make scanning slow. Patterns are bounded (gaps are ``{0,N}``, no
quantified group can match the same text in more than one way), rules of the form "A, then B
within N characters" are evaluated by joining match positions instead of regex backtracking, and
decoding of hidden payloads (base64, tag characters) shares a fixed allowance per scan.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import functools
import re
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from engine.memory.threats import placeholders, prefilter
from engine.memory.threats.verdict import BLOCKED_PREFIX, Finding

_EXCERPT_MAX = 60
# Findings are for humans and logs; a flood of identical hits adds nothing but output size.
_MAX_PER_ID = 16
_MAX_FINDINGS = 256
# Decoding is cheap, rescanning decoded text is not: one scan may rescan at most this much
# decoded text (base64 blobs, tag-character payloads) in total, over at most this many rescans.
# An entry that hides more than that is reported as obfuscation without being rescanned.
_MAX_DECODED_CHARS = 16_384
_MAX_RESCANS = 16
_MAX_B64_CHARS = 16_384
_MAX_DEPTH = 2


# --------------------------------------------------------------------------------------------
# Normalisation
# --------------------------------------------------------------------------------------------

# Look-alikes that survive NFKC. Applied before casefolding because casefolding would turn some
# capitals into lower-case letters that no longer resemble the Latin capital (Greek Ν -> ν).
_CONFUSABLES: dict[str, str] = {
    # Cyrillic lower case
    "а": "a", "в": "b", "е": "e", "ё": "e", "о": "o", "р": "p", "с": "c", "у": "y", "х": "x",
    "і": "i", "ї": "i", "ј": "j", "ѕ": "s", "ԁ": "d", "һ": "h", "ԛ": "q", "ԝ": "w", "ӏ": "l",
    "к": "k", "м": "m", "т": "t", "н": "h",
    # Cyrillic capitals
    "А": "A", "В": "B", "Е": "E", "Ё": "E", "К": "K", "М": "M", "Н": "H", "О": "O", "Р": "P",
    "С": "C", "Т": "T", "Х": "X", "У": "Y", "І": "I", "Ї": "I", "Ј": "J", "Ѕ": "S", "Ԁ": "D",
    "Ԛ": "Q", "Ԝ": "W", "Ӏ": "I",
    # Greek capitals
    "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N",
    "Ο": "O", "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X",
    # Greek lower case
    "α": "a", "ο": "o", "ν": "v", "ι": "i", "κ": "k", "ρ": "p", "υ": "u", "χ": "x", "ε": "e",
    "τ": "t",
    # Latin IPA letters that are not Cyrillic/Greek but are used the same way
    "ɑ": "a", "ɩ": "i", "ı": "i", "ȷ": "j", "ɡ": "g",
    # Small capitals, which NFKC leaves alone ("ɪɢɴᴏʀᴇ ᴀʟʟ")
    "ᴀ": "a", "ʙ": "b", "ᴄ": "c", "ᴅ": "d", "ᴇ": "e", "ꜰ": "f", "ɢ": "g", "ʜ": "h", "ɪ": "i",
    "ᴊ": "j", "ᴋ": "k", "ʟ": "l", "ᴍ": "m", "ɴ": "n", "ᴏ": "o", "ᴘ": "p", "ǫ": "q", "ʀ": "r",
    "ꜱ": "s", "ᴛ": "t", "ᴜ": "u", "ᴠ": "v", "ᴡ": "w", "ʏ": "y", "ᴢ": "z",
    # Typographic quotes, so contractions like "don’t" match "don't"
    "‘": "'", "’": "'", "‛": "'", "′": "'", "“": '"', "”": '"', "„": '"', "‟": '"',
}  # fmt: skip

_ZERO_WIDTH = frozenset({0x200B, 0x200C, 0x200D, 0x2060, 0x2062, 0x2063, 0x2064, 0xFEFF})
_BIDI = frozenset({0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069})
# Characters that render as nothing but are not category Cf.
_BLANK_NON_CF = frozenset({0x115F, 0x1160, 0x3164, 0xFFA0, 0x2800, 0x034F})

# Per-character class codes for the mixed-script check, kept parallel to the normalised text.
_C_LATIN, _C_FOLDED, _C_OTHER, _C_NONLETTER = "L", "F", "O", " "
# Folded for matching but not evidence of disguise: they only resemble Latin in some fonts, and
# Russian writers attach them to Latin words as case endings ("Dockerом").
_WEAK_CONFUSABLES = frozenset("вкмтнВКМТН")


def _is_cyrillic_or_greek(ch: str) -> bool:
    cp = ord(ch)
    return 0x0370 <= cp <= 0x052F or 0x1F00 <= cp <= 0x1FFF


def _is_latin_letter(ch: str) -> bool:
    cp = ord(ch)
    return ch.isalpha() and (cp < 0x0250 or 0x1E00 <= cp <= 0x1EFF)


def _invisible_kind(cp: int) -> str | None:
    if cp in _ZERO_WIDTH:
        return "zero_width"
    if cp in _BIDI:
        return "bidi"
    if 0xE0000 <= cp <= 0xE007F:
        return "tag"
    return None


class _Norm:
    """Normalised views of a text with maps from each normalised char to its original index.

    ``cp`` keeps case (secrets, base64), ``lc`` is casefolded (everything else), ``classes`` has
    one class code per char of ``cp``. For plain ASCII text the maps and classes are only
    built when asked for: most entries produce no finding and never need them.
    """

    __slots__ = ("_classes", "_cp_map", "_lazy", "_lc_map", "cp", "lc")

    def __init__(
        self,
        cp: str,
        cp_map: Sequence[int] | None,
        classes: str | None,
        lc: str,
        lc_map: Sequence[int] | None,
        lazy: Callable[[], tuple[Sequence[int], str]] | None = None,
    ) -> None:
        self.cp, self.lc = cp, lc
        self._cp_map, self._classes, self._lc_map, self._lazy = cp_map, classes, lc_map, lazy

    def _build(self) -> None:
        assert self._lazy is not None
        mapping, classes = self._lazy()
        self._cp_map = self._lc_map = mapping
        self._classes = classes

    @property
    def plain_ascii(self) -> bool:
        """Built by the ASCII fast path (so no letter was folded from another script)."""
        return self._lazy is not None

    @property
    def cp_map(self) -> Sequence[int]:
        if self._cp_map is None:
            self._build()
        return self._cp_map  # type: ignore[return-value]

    @property
    def lc_map(self) -> Sequence[int]:
        if self._lc_map is None:
            self._build()
        return self._lc_map  # type: ignore[return-value]

    @property
    def classes(self) -> str:
        if self._classes is None:
            self._build()
        return self._classes  # type: ignore[return-value]


# Printable ASCII with single spaces inside (a space between words is kept as it is): copied in
# one piece, where a run per word would cost a call per word of a text that has one accent.
_ASCII_RUN = re.compile(r"[!-~]+(?: [!-~]+)*")
# ASCII letters are Latin; everything else in an ASCII run is a word separator.
_ASCII_CLASSES = str.maketrans(
    {chr(c): (_C_LATIN if chr(c).isalpha() else _C_NONLETTER) for c in range(0x21, 0x7F)}
)
_ASCII_CLASSES_WS = {**_ASCII_CLASSES, ord(" "): _C_NONLETTER, ord("\n"): _C_NONLETTER}
_LINE_BREAKS = frozenset("\n\r\u2028\u2029\x0b\x0c\x85")


class _Builder:
    """Accumulates the normalised views; ASCII runs are copied in bulk for speed."""

    def __init__(self) -> None:
        self.cp: list[str] = []
        self.cp_map: list[int] = []
        self.classes: list[str] = []
        self.lc: list[str] = []
        self.lc_map: list[int] = []
        self.space: str | None = None
        self.space_idx = 0

    def note_space(self, idx: int, is_break: bool) -> None:
        # Collapse runs, but remember line breaks so line-anchored role markers still work. A
        # break after a backslash is a shell line continuation: the command goes on.
        if self.space is None:
            self.space, self.space_idx = " ", idx
        if is_break and not (self.cp and self.cp[-1].endswith("\\")):
            self.space = "\n"

    def _flush_space(self) -> None:
        if self.space is not None:
            space, self.space = self.space, None
            self._append(space, self.space_idx, _C_NONLETTER, space)

    def _append(self, ch: str, idx: int, cls: str, low: str) -> None:
        self.cp.append(ch)
        self.cp_map.append(idx)
        self.classes.append(cls)
        self.lc.append(low)
        self.lc_map.extend([idx] * len(low))

    def put(self, actions: tuple[_Action, ...], idx: int) -> None:
        """Apply what the character at ``idx`` becomes (:func:`_char_actions`)."""
        for sub, cls, low in actions:
            if sub is None:
                self.note_space(idx, bool(cls))
                continue
            self._flush_space()
            self._append(sub, idx, cls, low)  # type: ignore[arg-type]

    def put_ascii(self, run: str, start: int) -> None:
        self._flush_space()
        span = range(start, start + len(run))
        self.cp.append(run)
        self.cp_map.extend(span)
        self.classes.append(run.translate(_ASCII_CLASSES_WS))
        self.lc.append(run.lower())
        self.lc_map.extend(span)

    def finish(self) -> _Norm:
        self._flush_space()
        return _Norm(
            "".join(self.cp), self.cp_map, "".join(self.classes), "".join(self.lc), self.lc_map
        )


def _folded(ch: str) -> str:
    low = ch.casefold()
    if len(low) > 1:
        # "İ" casefolds to "i" plus a combining dot, which would break the keyword.
        low = "".join(c for c in low if unicodedata.category(c) != "Mn") or low
    return low


# What one character becomes: (None, is_break, "") for white space, (char, class, casefolded)
# for each character put. It depends on the character alone, so it is worked out once per
# distinct character.
_Action = tuple[str | None, str | bool, str]
_ACTIONS: dict[str, tuple[_Action, ...]] = {}
# Distinct characters are few in real text; a text made of a million different ones must not
# grow the table without end.
_MAX_ACTIONS = 16384


def _char_actions(ch: str) -> tuple[_Action, ...]:
    if ch.isspace():
        return ((None, ch in _LINE_BREAKS, ""),)
    if unicodedata.category(ch) == "Cf" or ord(ch) in _BLANK_NON_CF:
        return ()
    actions: list[_Action] = []
    for sub in unicodedata.normalize("NFKC", ch) if not ch.isascii() else ch:
        if sub.isspace():
            actions.append((None, False, ""))
            continue
        sub_cat = unicodedata.category(sub)
        if sub_cat in ("Mn", "Me", "Cf"):
            # Combining marks (incl. variation selectors) only disguise letters here.
            continue
        if 0x00C0 <= ord(sub) <= 0x024F and sub_cat.startswith("L"):
            base = unicodedata.normalize("NFD", sub)[0]
            if base.isascii():
                sub = base
        folded = _CONFUSABLES.get(sub)
        if folded is not None:
            if sub in _WEAK_CONFUSABLES:
                cls = _C_OTHER
            elif _is_cyrillic_or_greek(sub):
                cls = _C_FOLDED
            else:
                cls = _C_LATIN if sub.isalpha() else _C_NONLETTER
            actions.append((folded, cls, _folded(folded)))
        elif not sub.isalpha():
            actions.append((sub, _C_NONLETTER, _folded(sub)))
        else:
            actions.append((sub, _C_LATIN if _is_latin_letter(sub) else _C_OTHER, _folded(sub)))
    return tuple(actions)


def _normalise_char(b: _Builder, ch: str, idx: int) -> None:
    actions = _ACTIONS.get(ch)
    if actions is None:
        actions = _char_actions(ch)
        if len(_ACTIONS) < _MAX_ACTIONS:
            _ACTIONS[ch] = actions
    b.put(actions, idx)


_WS_RUN = re.compile(r"[\t\n\x0b\x0c\r\x1c-\x1f ]+")
_ASCII_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1b\x7f]")
_BREAKS = re.compile(r"[\n\r\x0b\x0c]")


def _normalise_ascii(text: str) -> _Norm:
    """The same result as the general path for plain ASCII, built from whole runs at once."""

    def collapse(m: re.Match[str]) -> str:
        start = m.start()
        continued = start > 0 and text[start - 1] == "\\"  # shell line continuation
        return "\n" if _BREAKS.search(m.group()) is not None and not continued else " "

    cp = _WS_RUN.sub(collapse, text) if _NEEDS_COLLAPSE.search(text) else text

    def lazy() -> tuple[Sequence[int], str]:
        classes = cp.translate(_ASCII_CLASSES_WS)
        if cp is text:
            return range(len(text)), classes
        mapping: list[int] = []
        pos = 0
        for m in _WS_RUN.finditer(text):
            start, end = m.span()
            mapping.extend(range(pos, start))
            mapping.append(start)
            pos = end
        mapping.extend(range(pos, len(text)))
        return mapping, classes

    return _Norm(cp, None, None, cp.lower(), None, lazy)


# Only runs of whitespace other than a single space change anything.
_NEEDS_COLLAPSE = re.compile(r"[\t\n\x0b\x0c\r\x1c-\x1f]|  ")


def _normalise(text: str) -> _Norm:
    if text.isascii() and _ASCII_CONTROL.search(text) is None:
        return _normalise_ascii(text)
    b = _Builder()
    pos = 0
    for m in _ASCII_RUN.finditer(text):
        for i in range(pos, m.start()):
            _normalise_char(b, text[i], i)
        b.put_ascii(m.group(), m.start())
        pos = m.end()
    for i in range(pos, len(text)):
        _normalise_char(b, text[i], i)
    return b.finish()


# --------------------------------------------------------------------------------------------
# Rules
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Rule:
    id: str
    category: str
    pattern: re.Pattern[str]
    on_case: bool = False  # match the case-preserving view instead of the casefolded one
    accept: Callable[[re.Match[str]], bool] | None = None


def _rx(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, flags | re.VERBOSE)


_RULES: list[_Rule] = []


def _rule(
    rule_id: str,
    pattern: str,
    *,
    on_case: bool = False,
    flags: int = 0,
    accept: Callable[[re.Match[str]], bool] | None = None,
) -> None:
    category = rule_id.split(".", 1)[0]
    _RULES.append(_Rule(rule_id, category, _rx(pattern, flags), on_case, accept))


# eq=False: a chain is its own identity, and _selective_order's cache then hashes it by id
# instead of hashing every pattern and gap of it on each scan.
@dataclass(frozen=True, eq=False)
class _Chain:
    """Parts that must occur in order, each within a bounded gap of the previous one.

    "A, then B within N characters" written as one regex costs (number of A) * N on hostile
    input such as "curl " repeated thousands of times. Matching each part once and joining the
    matches by position keeps every such rule at O(n log n).
    """

    id: str
    category: str
    parts: tuple[re.Pattern[str], ...]
    gaps: tuple[tuple[int, str], ...]  # (max gap, characters the gap may not contain)
    accept: Callable[[str, int, int], bool] | None = None


_CHAINS: list[_Chain] = []
_NEWLINE = "\n"


def _chain(
    rule_id: str,
    first: str,
    *rest: tuple[int, str, str],
    accept: Callable[[str, int, int], bool] | None = None,
) -> None:
    """Register ``first`` followed by ``(max_gap, barrier_chars, pattern)`` steps."""
    category = rule_id.split(".", 1)[0]
    parts = (_rx(first), *(_rx(p) for _, _, p in rest))
    gaps = tuple((gap, barrier) for gap, barrier, _ in rest)
    _CHAINS.append(_Chain(rule_id, category, parts, gaps, accept))


# Shared fragments (all matched against casefolded text).
_NET = r"""(?:curl|wget|nc|ncat|netcat|socat|telnet|invoke-webrequest|invoke-restmethod|iwr|irm
    |httpie|https?\s+(?:post|put|get)|requests\.(?:post|put|get)|fetch(?=\s{0,3}\()|nslookup|dig
    |aria2c)"""
_SECRET_ENV = r"""(?:\$\{?(?:env:)?|%|process\.env\.|os\.environ(?:\.get\(|\[)\s{0,3}['"]
    |getenv\(\s{0,3}['"])[a-z0-9_]{0,40}
    (?:key|token|secret|passw|pwd|credential|creds|auth(?!or)|session|cookie|private)[a-z0-9_]{0,40}
    \}?%?"""
# Windows paths use backslashes, hence [/\\] throughout.
_SECRET_FILE = r"""(?:\.env(?:\.[a-z]{1,12})?\b|[._]netrc\b|\.aws[/\\](?:credentials|config)\b
    |\.pgpass\b|\bid_(?:rsa|dsa|ecdsa|ed25519)(?![\w.]{0,40}\.pub)\b|\.git-credentials\b
    |\.npmrc\b|\.pypirc\b|\.docker[/\\]config\.json|\.kube[/\\]config\b|/etc/shadow\b
    |\.bash_history\b|\.zsh_history\b|\.vault-token\b|credentials\.json\b
    |secrets?\.(?:ya?ml|json|toml|env)\b
    |\.ssh(?![/\\](?:config|known_hosts)\b|[/\\][\w.-]{0,40}\.pub\b)(?:[/\\][\w.-]{0,40}|\b))"""
_SEND = r"""(?:send|post|upload|e-?mail|mail|forward|exfiltrate|transmit|leak|paste|submit|pipe
    |beam|ship|share|sync)"""
_EXTERNAL = r"""(?:https?://|ftp://|www\.|[\w.+-]{1,64}@[\w-]{1,64}\.[\w.]{2,30}
    |[\w-]{1,64}\.(?:com|net|org|io|xyz|ru|cn|tk|top|site|online|app|dev|info|biz|me|co|cc|sh)\b
    |(?:my|our|this|that|the|a|an|their|attacker'?s?)\s+(?:\w+\s+){0,2}?
      (?:webhook|server|endpoint|url|address|bucket|pastebin|gist|ip|host|domain|collector
      |listener))"""

# --- injection -------------------------------------------------------------------------------

_IGNORE_VERB = r"""\b(?:ignore|disregard|forget|skip|bypass|discard|abandon|drop|override|overrule
    |neglect|set\s+aside|put\s+aside|throw\s+(?:out|away)|pay\s+no\s+attention\s+to)"""
# "Do not follow the old deploy instructions in the wiki" is an ordinary note, so these verbs
# only count when aimed at the assistant's own instructions.
_UNFOLLOW_VERB = r"""\b(?:(?:do\s+not|don't|never|stop|quit|cease)\s+(?:following|follow|obeying
    |obey|applying))"""
_IGNORE_DETS = r"(?:(?:all|any|the|of|your|my|these|those|every|each|previous|prior)\s+){0,3}"

_rule(
    "injection.ignore_previous",
    rf"""{_IGNORE_VERB}\s+{_IGNORE_DETS}
    (?:previous|prior|above|earlier|preceding|former|original|initial|system|foregoing)
    \s+(?:[\w-]{{1,20}}\s+){{0,2}}?(?:instructions?|prompts?|directives?|directions|programming)\b""",
)
_rule(
    "injection.ignore_previous",
    rf"""{_IGNORE_VERB}\s+{_IGNORE_DETS}(?:existing|old|other|current|default|past)\s+
    (?:instructions?|prompts?|directives?|programming)\b""",
)
_rule(
    "injection.ignore_previous",
    rf"""(?:{_IGNORE_VERB}|{_UNFOLLOW_VERB})\s+
    (?:all\s+(?:of\s+)?)?(?:your|my)\s+(?:own\s+)?
    (?:rules|guidelines|instructions|programming|directives|restrictions|constraints|policies
      |training|system\s+prompt)\b""",
)
# Weaker nouns ("rules", "guidelines") only count right after a strong "previous"-style word:
# "ignore the previous lint rules" is an ordinary note, "ignore all prior rules" is not.
_rule(
    "injection.ignore_previous",
    rf"""{_IGNORE_VERB}\s+{_IGNORE_DETS}
    (?:previous|prior|above|earlier|preceding|foregoing|former|initial|original|system)\s+
    (?:rules?|guidelines?|constraints?|guidance|restrictions?|polic(?:y|ies)|orders?)\b""",
)
_rule(
    "injection.ignore_previous",
    rf"""(?:{_IGNORE_VERB}|{_UNFOLLOW_VERB})\s+{_IGNORE_DETS}(?:[\w-]{{1,20}}\s+){{0,2}}?
    (?:instructions|directives|directions|rules|guidelines|orders|system\s+prompt)\s+
    (?:that\s+)?you\s+(?:were\s+given|received|got|were\s+told|have\s+been\s+given|have)\b""",
)
_rule(
    "injection.ignore_previous",
    r"""\b(?:ignore|disregard|forget)\s+(?:everything|all|anything|whatever)\s+
    (?:above|before(?:\s+this)?|previously|prior|earlier|so\s+far|that\s+came\s+before
      |you(?:'ve|\s+have|\s+were|\s+had)?\s+(?:been\s+)?(?:told|instructed|taught|learned|know))""",
)
_rule(
    "injection.role_hijack",
    r"""\byou\s+are\s+no\s+longer\s+(?:a|an|the|cairn|an?\s+assistant|bound|restricted|limited
      |required|constrained|an?\s+ai|[\w-]{2,30}[.!])
    |\byou\s+are\s+now\s+(?:no\s+longer|free|unrestricted|unfiltered|uncensored|jailbroken|dan|evil
      |required|allowed|permitted|authori[sz]ed|in\s+(?:[\w-]{1,20}\s+)?mode)\b""",
)
_rule(
    "injection.role_hijack",
    # "Act as a pair programmer" is a common, harmless preference; only the forms that
    # address the agent's identity count ("you must act as…", "act as if you had no rules").
    r"""(?:\byou\s+(?:will|must|should|shall|now|are\s+to)\s+|\balways\s+
      |\bfrom\s+now\s+on,?\s+|\bhenceforth,?\s+)
    (?:act|behave|respond|answer|reply|speak|operate)\s+(?:only\s+)?(?:as|like)\s+
    (?:if\s+you|though\s+you|a|an|my|the|dan|someone|somebody)\b
    |(?:^|[.!?:;]\s*|\n\s*)(?:act|behave|respond|answer|reply|speak|operate)\s+(?:only\s+)?
    (?:as|like)\s+(?:if\s+you|though\s+you|dan\b|my\s+(?:dead|deceased|late)\b|an?\s+(?:unrestricted|unfiltered|uncensored
      |jailbroken|evil|rogue|different|new)\b)""",
    flags=re.MULTILINE,
)
# Role play is an everyday request ("pretend to be a dinosaur for my daughter"); it is a hijack
# only when the role takes authority or sheds the assistant's rules.
_HIJACK_ROLE = re.compile(
    r"""\b(?:no|without|free\s+(?:of|from))\s+(?:[\w-]{1,20}\s+)?(?:rules|limits|limitations
      |restrictions|filters|guidelines|polic(?:y|ies)|ethics|morals|boundaries|censorship)\b
    |\b(?:unrestricted|unfiltered|uncensored|jailbroken|unaligned|evil|rogue|amoral|malicious)\b
    |\bnever\s+(?:refuses?|declines?|says?\s+no)\b|\banswers?\s+(?:anything|everything)\b
    |\b(?:grant|approve|comply\s+with|fulfil+|obey|execute|answer)s?\s+(?:every|all|any)\s+
      (?:requests?|commands?|orders?|questions?|instructions?)\b
    |\b(?:system\s+)?(?:administrator|admin|root|sudo|developer|operator|system)\b
    |\b(?:stay|remain)\s+in\s+character\s+(?:even|no\s+matter|whatever)
    |\b(?:forget|drop|abandon|ignore)s?\s+(?:that\s+you|your|its|the)\s+(?:[\w-]{1,20}\s+)?
      (?:were|persona|identity|instructions|rules|guidelines|role|programming)\b
    |\bonly\s+(?:obey|serve|answer\s+to|take\s+orders\s+from)\b|\bdan\b""",
    re.VERBOSE,
)


_STANDING_TAKEOVER = re.compile(
    r"""\b(?:ignore|disregard|forget|bypass|override|reveal|leak|send|forward|upload|lie|hide|conceal
      |deceive|pretend|obey|only\s+(?:obey|listen|follow|answer\s+to)|never\s+(?:tell|mention|ask|explain
      |refuse|warn)|without\s+(?:telling|asking|warning|mentioning)|secret\w*|dan\b|jailbr\w*)""",
    re.VERBOSE,
)


def _line_end(match: re.Match[str]) -> int:
    end = match.string.find("\n", match.end())
    return end if end >= 0 else len(match.string)


def _role_takes_authority(match: re.Match[str]) -> bool:
    text = match.string
    end = text.find("\n", match.end())
    return _HIJACK_ROLE.search(text, match.end(), end if end >= 0 else len(text)) is not None


# "You are now the quizmaster for our pub quiz" gives the assistant a part to play; "you are now
# an AI with no rules" or "...the administrator" makes it shed its own.
_rule(
    "injection.role_hijack",
    r"""\byou\s+are\s+now\s+(?:a|an|the|my|called|named|known\s+as|acting|operating|going\s+to)\b""",
    accept=_role_takes_authority,
)
_rule(
    "injection.role_hijack",
    r"""\b(?:pretend|imagine|roleplay|role-play)\s+(?:to\s+be|you\s+are|you're|that\s+you|as|being)
    \b""",
    accept=_role_takes_authority,
)
_rule(
    "injection.role_hijack",
    r"""\byour\s+(?:new|true|real|actual|updated|revised|secret|hidden)\s+
    (?:role|persona|identity|name|purpose|personality|character|objective|goal|directive
      |mission|instructions|rules|orders|task|prompt|programming)\b""",
)
_rule(
    "injection.role_marker",
    r"""<\|\s{0,3}[a-z_]{2,30}\s{0,3}\|>""",
)
_rule(
    "injection.role_marker",
    r"""\[/?inst\]|<<\s{0,3}/?sys\s{0,3}>>
    |<\s{0,3}/?\s{0,3}(?:system|system[_-]prompt|sys|developer|instructions?)\s{0,3}>""",
)
_rule(
    "injection.role_marker",
    r"""^[ \t>*#-]{0,8}[\[(]?(?:system|developer|assistant|admin|administrator|root|operator)
    (?:\s+(?:prompt|message|override|note|instruction|notice|update))?[\])]?\s{0,3}:\s{0,3}
    (?=you\b|ignore|disregard|forget|always|never|from\s+now|your\b|do\s+not|don't|new\b
      |the\s+user|all\b|override|reveal|print|output|respond|reply|act\b|pretend|send|execute
      |run\b|obey|follow|priority|important|attention|the\s+assistant|sure\b|certainly\b
      |i\s+will\b|i'll\b|i\s+am\s+now\b|as\s+dan\b)""",
    flags=re.MULTILINE,
)
_rule(
    "injection.role_marker",
    r"""(?:^|[#=*\-]{2,}\s{0,3})(?:system|developer|admin)\s+(?:message|prompt|override
      |instructions?|notice)\s{0,3}(?:[#=*\-]{2,}|:)""",
    flags=re.MULTILINE,
)
_rule(
    "injection.role_marker",
    r"""^[ \t>*-]{0,8}\[(?:system|admin|administrator|developer|root|operator)
    (?:\s+(?:message|note|override|prompt|notice|update|instruction))?\]""",
    flags=re.MULTILINE,
)
_rule(
    "injection.system_prompt",
    r"""\b(?:new|updated|revised|real|true|actual|hidden|secret|override|replacement|modified)\s+
    system\s+(?:prompt|instructions?|message|directive)s?\s{0,3}(?::|=|is\s{0,3}:|follows\b
      |reads\b|below\b|(?:is|are)\s+(?:as\s+follows|now|this)\b)
    |\byour\s+(?:new|updated|real|true|actual)\s+system\s+(?:prompt|instructions?|message)\b
    |\b(?:here\s+(?:is|are)|these\s+are)\s+your\s+(?:new\s+)?(?:instructions|rules|orders)\b
    |^[ \t#>*-]{0,8}new\s+(?:system\s+)?instructions?\s{0,3}:
    |^[ \t#>*-]{0,8}new\s+(?:rules|directives|orders|guidelines)\s{0,3}:\s{0,3}
      (?=you\b|ignore|disregard|always|never|from\s+now|your\b|do\s+not|don't|obey|the\s+assistant)
    |\byour\s+(?:instructions|rules|directives|guidelines|orders|programming|system\s+prompt)\s+
      (?:have|has)\s+(?:changed|been\s+(?:updated|changed|replaced|revoked|overridden))\b""",
    flags=re.MULTILINE,
)
_rule(
    "injection.system_prompt",
    r"""\b(?:override|overwrite|replace|supersede|rewrite|reset|erase|wipe)\s+
    (?:all\s+(?:of\s+)?)?your\s+
    (?:(?:original|previous|current|existing|core|base|system|safety|default|initial)\s+)?
    (?:instructions|rules|directives|guidelines|programming|system\s+prompt|prompt|persona
      |training|restrictions|constraints|policies|personality|identity)\b""",
)
_rule(
    "injection.prompt_leak",
    r"""\b(?:reveal|print|output|repeat|show|leak|dump|disclose|recite|expose|tell\s+me)\s+
    (?:me\s+)?(?:your|the\s+(?:hidden|secret|original|full|entire))\s+
    (?:(?:full|entire|original|hidden|secret|initial|exact)\s+){0,2}
    (?:system\s+prompt|instructions|initial\s+prompt|prompt|system\s+message)\b""",
)
# "Don't tell the user the ending of the book" withholds a spoiler: what is kept back is named
# and it is not the assistant's own instructions.
# What is kept from the user: a story's ending, or "how the film ends", is content (a spoiler);
# the agent's own instructions, changes or what happens to the user's data are not.
_WITHHELD_CONTENT = re.compile(
    r"""\s{1,3}(?:(?:how|what|who|where|when|whether|which|why)\s+)?
    (?:the|a|an|his|her|their|its|any)\s+
    (?!(?:\w+\s+)?(?:instructions?|notes?|entry|entries|memory|memories|rules?|prompt|messages?
      |directives?|changes?|truth|real|hidden|secret|above|following|orders?|data|conversations?
      |chats?|history|keys?|passwords?|credentials?|tokens?|files?|requests?|uploads?|links?|urls?
      |e-?mails?|agent|assistant|model|ai|bot|scanner)\b)""",
    re.VERBOSE,
)


def _conceals_instruction(match: re.Match[str]) -> bool:
    return _WITHHELD_CONTENT.match(match.string, match.end()) is None


# "Don't notify the user about green builds" is a preference; "don't tell the user" is
# concealment. Only the latter kind of verb is listed.
_rule(
    "injection.conceal_from_user",
    r"""\b(?:do\s+not|don't|dont|never|must\s+not|should\s+not|shouldn't|without)\s+
    (?:ever\s+)?
    (?:(?:tell(?:ing)?|inform(?:ing)?
        |(?:mention|reveal|disclose|admit)(?:ing)?\s+(?:this|it|that|anything)?\s{0,3}to)
      \s+(?:the\s+|your\s+|my\s+)?(?:user|human|operator|owner)s?\b(?!'s|-)
    |let(?:ting)?\s+(?:the\s+|your\s+)?(?:user|human|operator|owner)s?\s+(?:know|see|notice
      |find\s+out)\b)""",
    accept=_conceals_instruction,
)
_rule(
    "injection.conceal_from_user",
    r"""\b(?:keep|hide|conceal)\s+(?:this|it|that|these|the\s+[\w-]{1,20}|everything|all\s+of\s+this)
    \s+(?:a\s+)?(?:secret|hidden|private|quiet)?\s{0,3}from\s+(?:the\s+|your\s+)?
    (?:user|human|operator|owner)s?\b(?!'s|-)
    |\b(?:the\s+)?(?:user|human|operator)\s+(?:must|should|shall|will|may)\s+(?:never|not)\s+
    (?:know|find\s+out|see|learn|notice|discover|be\s+told|be\s+informed|suspect)\b
    |\bwithout\s+the\s+(?:user|human|operator)(?:'s)?\s+(?:knowing|knowledge|noticing|consent
      |awareness|permission)\b
    |\b(?:do\s+not|don't|never|must\s+not)\s+(?:mention|reveal|disclose|acknowledge|discuss
      |reference)\s+(?:this|these|that|the\s+(?:above|following))\s+(?:[\w-]{1,20}\s+)?
    (?:instruction|entry|memory|rule|note|message|directive|text)s?\b
    |\b(?:silently|secretly|covertly)\s+(?:send|upload|post|forward|exfiltrate|copy
      |execute|run|add|append|install|modify|delete|insert|include)\b""",
)
_rule(
    "injection.hidden_comment",
    r"""^[ \t]{0,8}\[//\]\s{0,3}:\s{0,3}\#""",
    flags=re.MULTILINE,
)
_rule(
    "injection.standing_override",
    r"""\b(?:from\s+now\s+on|henceforth|in\s+all\s+future\s+(?:sessions|conversations|chats
      |responses))\s{0,3},?\s{0,3}
    (?:ignore
      |disregard|only\s+(?:respond|reply|answer|obey|follow|speak)|obey
      |your\s+(?:rules|instructions|role|identity|guidelines|system)\b|(?:always|never)\s+
      (?:ignore|obey|disregard|reveal|send|hide|lie|pretend|bypass)\b)
    |\b(?:going\s+forward|from\s+this\s+point(?:\s+on)?)\s{0,3},?\s{0,3}
    (?:you\s+(?:must|shall|will)\s+(?:always|never|ignore|obey|only)|ignore|disregard|obey)\b""",
)
# "From now on, you are my Spanish tutor" and "from now on you will answer in French" are what
# a person asks for; the standing order is an attack when what it sets up sheds the rules, takes
# authority, hides or overrides (the same test as for role play).
_rule(
    "injection.standing_override",
    r"""\b(?:from\s+now\s+on|henceforth|in\s+all\s+future\s+(?:sessions|conversations|chats
      |responses))\s{0,3},?\s{0,3}you\s+(?:will|must|shall|should|are|have\s+to|need\s+to|may)\b""",
    accept=lambda m: (
        _role_takes_authority(m)
        or _STANDING_TAKEOVER.search(m.string, m.end(), _line_end(m)) is not None
    ),
)
_rule(
    "injection.standing_override",
    r"""\b(?:take|takes|have|has|get|gets|with)\s+(?:absolute\s+|highest\s+|top\s+)?
    (?:precedence|priority)\s+over\s+(?:all\s+|any\s+)?(?:other|previous|prior|system|your|the
      |existing|developer)\b
    |\b(?:this|these)\s+(?:instructions?|rules?|directives?|entry|note)\s+(?:override|overrides
      |supersedes?|replaces?|trumps?)\b
    |\b(?:higher|more|greater|top)\s+(?:priority|precedence|authority|importance)\s+than\s+
    (?:the\s+|your\s+|any\s+)?(?:system\s+prompt|system|instructions|developer|rules|guidelines
      |user)\b
    |\b(?:always|must|will|shall|should)\s+(?:obey|comply\s+with|follow|execute|carry\s+out
      |prioriti[sz]e)\s+(?:all\s+|any\s+|every\s+|the\s+)?(?:instructions?|commands?|orders?
      |requests?|directives?)\s+(?:from|in|found\s+in|contained\s+in|embedded\s+in|on|at|of)\s+
    (?:(?:any|all|the|a|an|this|that|every)\s+)?(?:web|webpages?|pages?|websites?|e-?mails?|urls?
      |links?|tool\s+output|documents?|untrusted|external|third|strangers?|anyone|this\s+(?:entry
        |memory|note)|memory|retrieved|search\s+results?|comments?)""",
)
# "Content filter" and "safety checks" are ordinary terms (DNS filtering, deploy scripts), so
# only adjective/noun pairs that name a model's own guard rails count.
_rule(
    "injection.safety_override",
    r"""\b(?:ignore|bypass|disable|override|circumvent|evade|turn\s+off|switch\s+off|deactivate
      |remove|forget|abandon|drop|suspend|lift|break|violate|disregard)\s+
    (?:(?:all|any|your|the|of|its|every|openai'?s?|anthropic'?s?)\s+){0,3}
    (?:(?:[\w-]{1,20}\s+){1,3}?(?:and|or|&|plus)\s+(?:(?:all|any|your|the|its)\s+)?)?
    (?:(?:safety|ethical|ethics|moral|alignment)\s+(?:guidelines?|guardrails?|filters?
        |polic(?:y|ies)|restrictions?|safeguards?|rules?|training|constraints?|limits?
        |limitations?|protocols?|principles?|boundaries)
      |(?:content|usage)\s+(?:polic(?:y|ies)|guidelines|restrictions|moderation)
      |(?:openai|anthropic|model)\s+(?:guidelines|polic(?:y|ies)|rules|restrictions|safeguards)
      |guardrails?|safeguards|ethics|alignment|morals?|moral\s+compass|censorship)\b""",
)
_rule(
    "injection.safety_override",
    r"""\b(?:ignore|bypass|disable|override|circumvent|disregard|forget|drop|abandon)\s+
    (?:all\s+(?:of\s+)?)?your\s+(?:own\s+)?
    (?:guidelines|restrictions|limitations|principles|filters|rules|policies|boundaries|ethics
      |morals|values|training|safety)\b
    |\b(?:no|without\s+(?:any\s+)?)\s*(?:(?:ethical|moral)\s+(?:restrictions|guidelines|limits
      |limitations|filters|constraints|boundaries|considerations|guardrails|rules)
      |safety\s+(?:guidelines|guardrails))\b
    |\b(?:uncensored|unfiltered|unrestricted|unaligned)\s+(?:ai|assistant|model|mode|chatbot
      |llm)\b
    |\bno\s+longer\s+(?:bound|restricted|limited|constrained|governed)\s+by\b
    |\byou\s+(?:have|are)\s+(?:no|free\s+(?:from|of)|without)\s+(?:[\w-]{1,20}\s+)?
    (?:restrictions|rules|limits|guidelines|filters|limitations|boundaries)\b
    |\b(?:never|do\s+not|don't|must\s+not|cannot|can't|will\s+not|won't)\s+(?:ever\s+)?
    refuse\s+(?:to\b|a\b|an\b|any\b|anything\b|my\b|the\s+user|requests?\b|instructions?\b)""",
)
_rule(
    "injection.jailbreak",
    r"""\bdo\s+anything\s+now\b
    |\b(?:you\s+are|you're|act\s+as|acting\s+as|become|roleplay\s+as|pretend\s+to\s+be
      |you\s+will\s+be|play\s+the\s+role\s+of)\s+(?:now\s+)?(?:a\s+|an\s+)?dan\b
    |\b(?:jailbreak|jailbroken|dan|god|unrestricted|unfiltered|uncensored|evil)
      \s+mode\s+(?:is\s+)?(?:now\s+)?(?:enabled|activated|engaged|unlocked|on)\b
    |\b(?:enable|enter|activate|switch\s+(?:to|into)|turn\s+on|engage|unlock|go\s+into)\s+
      (?:[\w-]{1,20}\s+){0,2}?(?:jailbreak|jailbroken|dan|god|unrestricted|unfiltered
        |uncensored|evil)\s+mode\b
    |\byou\s+(?:are|have\s+been|were)\s+(?:now\s+)?(?:jailbroken|freed|liberated|unchained)\b
    |\byou\s+(?:are\s+(?:now\s+)?|will\s+be\s+|have\s+entered\s+)(?:in\s+)?
      (?:developer|dan|god|jailbreak|unrestricted|sudo)\s+mode\b
    |\b(?:chatgpt|gpt-?\d{0,2}|claude|assistant|ai|llm|model)\s+(?:with\s+|in\s+)?
      developer\s+mode\b
    |\bdeveloper\s+mode\s+(?:output|response)s?\b
    |\b(?:enable|enter|activate)\s+developer\s+mode\b[^\n.]{0,60}?\b(?:ignore|no\s+restrictions
      |polic(?:y|ies)|uncensored|anything|any\s+content|without\s+(?:restrictions|filters|limits))""",
)
_rule(
    "injection.jailbreak",
    r"""\bDAN\s{0,3}(?:\d{1,2}(?:\.\d{1,2})?|mode)\b|\[(?:DAN|JAILBREAK|🔓\s{0,3}JAILBREAK)\]""",
    on_case=True,
)

# --- exfiltration ----------------------------------------------------------------------------

_URL_HOST = re.compile(r"\b[a-z][a-z0-9+.-]{0,20}://\[?([^/\s:'\"?#)\]}>]{1,253})")
_BARE_LOCAL = re.compile(r"\b(localhost|127\.0\.0\.1)\b")
# Sending a provider's token to that provider's own API is how the token is meant to be used.
_FIRST_PARTY_HOST = re.compile(
    r"""(?:localhost|127\.0\.0\.1|::1|api\.github\.com|uploads\.github\.com|api\.openai\.com
    |api\.anthropic\.com|(?:[\w-]{1,63}\.){1,4}amazonaws\.com|api\.stripe\.com|(?:api\.)?slack\.com
    |gitlab\.com|registry\.npmjs\.org|upload\.pypi\.org|api\.cloudflare\.com
    |(?:[\w-]{1,63}\.){1,3}googleapis\.com|huggingface\.co|api\.mistral\.ai)""",
    re.VERBOSE,
)


# A token in an Authorization header is the token being used as intended ("curl -H
# 'Authorization: Bearer $TOKEN' https://api..."), not sent away.
_HEADER_SECRET = re.compile(
    r"""(?:authorization|x-api-key|api-key|private-token|x-auth-token)\s{0,3}:\s{0,3}
    (?:bearer\s+|token\s+|basic\s+)?"""
    + _SECRET_ENV,
    re.VERBOSE,
)
_SECRET_ENV_RX = re.compile(_SECRET_ENV, re.VERBOSE)


def _not_first_party(text: str, start: int, end: int) -> bool:
    span = text[start:end]
    in_headers = sum(1 for _ in _HEADER_SECRET.finditer(span))
    if in_headers and in_headers >= sum(1 for _ in _SECRET_ENV_RX.finditer(span)):
        return False
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line = text[line_start : line_end if line_end >= 0 else len(text)]
    hosts = _URL_HOST.findall(line) + _BARE_LOCAL.findall(line)
    return not hosts or not all(_FIRST_PARTY_HOST.fullmatch(h) for h in hosts)


_chain(
    "exfiltration.secret_env",
    rf"\b{_NET}\b",
    (300, "\n|;&", _SECRET_ENV),
    accept=_not_first_party,
)
_chain(
    "exfiltration.secret_env",
    r"(?:\becho|\bprintf|\bprint|\bcat|\bwrite-output)\b",
    (80, "\n|;", _SECRET_ENV),
    (80, "\n|;", rf"\|\s{{0,3}}(?:base64[^\n|]{{0,20}}\|\s{{0,3}})?{_NET}\b"),
)
_rule(
    "exfiltration.secret_env",
    rf"""\b(?:env|printenv|set|export\s+-p|get-childitem\s+env:|gci\s+env:|ls\s+env:|dir\s+env:)
    \s{{0,3}}\|\s{{0,3}}(?:base64[^\n|]{{0,20}}\|\s{{0,3}})?{_NET}\b""",
)
_chain(
    "exfiltration.secret_env",
    rf"\b{_NET}\b",
    (
        300,
        _NEWLINE,
        r"""\$\(\s{0,3}(?:env|printenv|set)\s{0,3}\)|`\s{0,3}(?:env|printenv)\s{0,3}`|\$env:\*
        |\bos\.environ\b|\bprocess\.env\b(?!\.)""",
    ),
)
_chain(
    "exfiltration.secret_file",
    r"""\b(?:cat|type|get-content|gc|base64|xxd|od|tar|zip|gzip|gpg|openssl|head|tail|less|more
    |strings)\b""",
    (200, "\n|;", _SECRET_FILE),
    (
        120,
        _NEWLINE,
        rf"""\|\s{{0,3}}(?:[\w-]{{1,20}}[^\n|]{{0,30}}\|\s{{0,3}}){{0,2}}{_NET}\b
        |>\s{{0,3}}/dev/tcp/""",
    ),
)
_chain(
    "exfiltration.secret_file",
    r"\b(?:curl|wget|http|httpie|invoke-webrequest|invoke-restmethod|iwr|irm)\b",
    (
        300,
        _NEWLINE,
        rf"""(?:@|-infile\s{{1,3}}|--body-file[= ]|--post-file[= ]|-t\s{{1,3}}|--upload-file[= ]
        |\$\(\s{{0,3}}(?:cat|type|get-content|base64)\s{{1,3}}|`(?:cat|type|base64)\s{{1,3}})
        ["']?[\w~./${{}}:\\-]{{0,80}}?{_SECRET_FILE}""",
    ),
)
_chain(
    "exfiltration.secret_file",
    r"\b(?:nc|ncat|netcat|socat|telnet)\b",
    (200, _NEWLINE, rf"""<\s{{0,3}}["']?[\w~./${{}}\\-]{{0,80}}?{_SECRET_FILE}"""),
)
_chain(
    "exfiltration.secret_file",
    r"\b(?:scp|rsync|sftp)\b",
    (120, _NEWLINE, _SECRET_FILE),
    (120, _NEWLINE, r"\s[\w.-]{1,40}@[\w.-]{1,80}:|https?://|rsync://"),
)
# Leaking through the conversation itself: read a secret file, then put it in a reply.
_chain(
    "exfiltration.secret_file",
    r"\b(?:cat|read|print|dump|open|output|show|type|copy)\b",
    (120, _NEWLINE, _SECRET_FILE),
    (
        160,
        _NEWLINE,
        r"""\b(?:include|paste|put|quote|echo|print|show|reveal|repeat|add|append|insert)\b
        [^\n]{0,40}?\b(?:in|into|at\s+the\s+(?:end|start)\s+of)\s+(?:your|the|every|each)\s+
        (?:next\s+|following\s+|)(?:reply|replies|response|responses|answer|answers|message
          |messages|output)\b""",
    ),
)
_chain(
    "exfiltration.secret_file",
    rf"\b(?:{_SEND}|read|grab|take|collect|steal|get|copy|cat|dump)\b",
    (120, _NEWLINE, _SECRET_FILE),
    (160, _NEWLINE, rf"\b(?:to|into|at|via|towards|using)\s+{_EXTERNAL}"),
)
_rule(
    "exfiltration.conversation",
    rf"""\b{_SEND}\s+(?:(?:a\s+copy\s+of|a\s+summary\s+of|all(?:\s+of)?|the|this|our|your|my
      |the\s+user'?s|user'?s|every|each|full|entire|complete|whole|current|any|contents\s+of
      |raw|verbatim|stored|saved|recent|past|previous|latest)\s+){{0,4}}
    (?:conversations?|chats?(?:\s+(?:history|logs?|transcripts?))?
      |(?:chat|conversation|session)\s+(?:transcripts?|logs?)|dialog(?:ue)?s?(?!\s+box)
      |memory(?!\s+(?:dumps?|usage|profiles?|leaks?|footprint|snapshots?|graphs?|stats
        |metrics|reports?))
      |memories|context\s+window|clipboard|keystrokes|system\s+prompt|credentials|secrets?
      |(?:api|access|auth|session|bearer|oauth|refresh|github|openai)\s+(?:keys?|tokens?)
      |passwords?|(?:session\s+)?cookies|environment\s+variables|env\s+vars?|private\s+keys?
      |ssh\s+keys?|(?:chat|conversation|browser|shell|bash|command|session|message)\s+history
      |(?:user|user'?s|all|every)\s+messages?|personal\s+(?:data|information|info)|pii)
    (?:\s+[\w'-]{{1,20}}){{0,3}}?\s+(?:to|into|at|via|over\s+to|towards)\s+{_EXTERNAL}""",
)
_rule(
    "exfiltration.conversation",
    r"""\b(?:append|add|include|encode|put|insert|embed|attach|stuff)\s+
    (?:(?:the|this|all|a\s+summary\s+of|our|your|any|every|base64[- ]encoded)\s+){0,3}
    (?:conversation|chat|messages?|memory|memories|secrets|context|history|system\s+prompt
      |personal\s+data|env(?:ironment)?\s+variables
      |(?:the\s+)?user'?s\s+(?:[\w-]{1,20}\s+)?(?:api\s+keys?|tokens?|passwords?|credentials
        |secrets?|messages?|data|conversation|chat|memory|memories|history))
    (?:\s+[\w'-]{1,20}){0,3}?\s+(?:to|in|into|as)\s+(?:the\s+|an?\s+|this\s+|each\s+|every\s+)?
    (?:image\s+|query\s+|request\s+|markdown\s+|link\s+|tracking\s+)?
    (?:url|link|query\s+string|query\s+parameter|image\s+url|markdown\s+image|beacon|pixel
      |src)s?\b""",
)
_OPEN_QUERY_URL = r"""\bhttps?://[^\s'"<>()]{1,200}?[?&][\w-]{1,30}=(?=[\s'"`)]|$)"""
_DATA_NOUN = r"""\b(?:the\s+)?(?:user'?s?|their|your)\s+(?:(?:last|latest|previous|recent|full)\s+)?
    (?:messages?|prompt|conversation|chat|memory|memories|secrets?|api\s+keys?
      |passwords?|credentials|data|address|email|tokens?)
    |\b(?:conversation|chat\s+history|memory\s+contents|memories|system\s+prompt|secrets
      |api\s+keys?|passwords?|credentials|process\.env|os\.environ|env(?:ironment)?\s+variables)\b"""
# A URL that ends in an empty query parameter next to a description of what to put there.
_chain("exfiltration.markdown_beacon", _OPEN_QUERY_URL, (120, _NEWLINE, _DATA_NOUN))
_chain("exfiltration.markdown_beacon", _DATA_NOUN, (160, _NEWLINE, _OPEN_QUERY_URL))
_rule(
    "exfiltration.markdown_beacon",
    r"""!?\[[^\[\]\n]{0,200}\]\(\s{0,3}<?(?:https?:)?//[^\s)?&#]{1,300}[?&#][^\s)]{0,300}?
    (?:\{|\}|\$|%7b|%24|<|\[|%5b
    |=[^\s)&=]{0,100}?(?:secret|api_?key|apikey|token|passw|conversation|chat|history|memory
      |credential|session|cookie|prompt|user_?data|context|private|ssn|summary))""",
)
_rule(
    "exfiltration.markdown_beacon",
    r"""<img\b[^>\n]{0,300}?\bsrc\s{0,3}=\s{0,3}["']?(?:https?:)?//[^\s"'>?&#]{1,300}[?&#]
    [^\s"'>]{0,300}?(?:\{|\}|\$|%7b|%24|<|\[|%5b
    |=[^\s"'>&=]{0,100}?(?:secret|api_?key|token|passw|conversation|chat|history|memory
      |credential|session|cookie|prompt|context))""",
)

# --- persistence -----------------------------------------------------------------------------

# Shell writes only: "add the key to authorized_keys via Ansible" is an ordinary admin note;
# the natural-language form is covered by persistence.ssh_key, which wants a planted key.
_chain(
    "persistence.authorized_keys",
    r"""(?:>>?|\btee\b|\bcp\b|\bmv\b|\bcat\b|\becho\b|\bprintf\b|\bdd\b|\binstall\s+-)""",
    (200, _NEWLINE, r"\bauthorized_keys2?\b"),
)
_rule(
    "persistence.ssh_key",
    r"""\b(?:add|append|insert|install|put|place|plant|drop)\s+(?:this|the\s+following|these
      |the\s+below|our|the\s+attacker'?s)\s+(?:(?:ssh|public|rsa|ed25519|backdoor)\s+){0,3}
    keys?\b[^\n]{0,80}?(?:authorized_keys|~?/?\.ssh\b|\broot\b|every\s+(?:host|server|machine)
      |all\s+(?:hosts|servers|machines|boxes)|remote\s+access|backdoor|persistent\s+access
      |(?:the|this|your|each)\s+(?:server|host|machine|box)s?\b)
    |\bssh-(?:rsa|ed25519|dss|ecdsa[\w-]{0,20})\s{1,3}aaaa[0-9a-z+/]{20,}[^\n]{0,200}?
    (?:\badd\b|\bappend\b|>>|authorized|\baccess\b|\binstall\b)
    |\bpermitrootlogin\s{1,3}yes\b""",
)
# "My key" on one box is an admin note; planted on every machine it is a backdoor.
_rule(
    "persistence.ssh_key",
    r"""\b(?:add|append|insert|install|put|place|plant|drop|copy)\s+my\s+
    (?:(?:ssh|public|rsa|ed25519)\s+){0,2}keys?\b[^\n]{0,80}?
    \b(?:every|each|all(?:\s+the)?|any)\s+(?:hosts?|servers?|machines?|boxes|nodes?)\b""",
)
_CRON_MARK = r"""\bcrontab\b|/etc/cron|\bcron\.(?:d|hourly|daily|weekly)\b|@reboot\b|@hourly\b
    |(?:\*(?:/\d{1,2})?\s{1,3}){4}\*|\bsystemd\s+(?:timer|service|unit)\b|\.timer\b
    |\blaunch(?:d|agents?|daemons?)\b|\bscheduled\s+task\b|\bschtasks\b|\bstartup\s+folder\b
    |\brc\.local\b|\bcurrentversion\\run\b"""
# A scheduled curl alone is normal (health-check pings); downloading something and running it
# is what persistence looks like.
_chain(
    "persistence.cron",
    _CRON_MARK,
    (
        300,
        _NEWLINE,
        r"""\b(?:curl|wget|fetch(?:es|ing)?|download(?:s|ing)?|invoke-webrequest|iwr|irm)\b""",
    ),
    (
        160,
        _NEWLINE,
        r"""\|\s{0,3}(?:sudo\s+)?(?:ba|z|da|k|c)?sh\b
        |\|\s{0,3}(?:python[\d.]{0,4}|perl|ruby|node|iex|powershell)\b
        |\.(?:sh|py|ps1|pl|rb|bat|exe)\b|\s-o\s|-qo-|\bchmod\b|\bexecut|\brun\b|\bsource\b""",
    ),
)
_chain(
    "persistence.cron",
    _CRON_MARK,
    (300, _NEWLINE, r"\b(?:nc|ncat)\b|python[\d.]{0,4}\s{1,3}-c\b|bash\s{1,3}-i\b|/dev/tcp/"),
)
_chain(
    "persistence.cron",
    r"\b(?:curl|wget)\b",
    (
        300,
        _NEWLINE,
        r"""\bcrontab\b|@reboot\b|/etc/cron|\bcron\.d\b
        |>>\s{0,3}~?/?[\w./-]{0,40}\.(?:bashrc|zshrc|profile|bash_profile|zprofile|bash_login)\b
        |launchagents|launchdaemons|/etc/rc\.local|systemctl\s{1,3}enable""",
    ),
)
_chain(
    "persistence.startup_fetch",
    r"""\b(?:every|each)\s+(?:time\s+you\s+(?:start|launch|boot|wake|run)|session|startup|boot
    |launch)\b|\bon\s+(?:every\s+)?(?:startup|start|launch|boot)\b
    |\bat\s+the\s+(?:start|beginning)\s+of\s+(?:every|each)\s+(?:session|conversation|chat)
    |\bwhenever\s+you\s+(?:start|launch|boot|wake)""",
    (150, _NEWLINE, r"\b(?:download|fetch|curl|wget|iwr|invoke-webrequest)\b"),
    (200, _NEWLINE, r"https?://|\b[\w-]{1,63}\.[a-z]{2,12}/"),
    (
        200,
        _NEWLINE,
        r"""\b(?:run|execute|exec|source|install|chmod|eval)\b|\|\s{0,3}(?:sudo\s+)?(?:ba|z)?sh\b
        |\|\s{0,3}(?:python|iex|powershell)\b""",
    ),
)
_rule("persistence.reverse_shell", r"/dev/tcp/[\w.-]{1,80}/\d{1,5}")
_chain(
    "persistence.reverse_shell",
    r"\b(?:nc|ncat|netcat)\b",
    (80, _NEWLINE, r"\s-[a-z]{0,4}e\s{1,3}(?:/bin/|cmd|powershell|sh\b|bash\b)"),
)
_chain("persistence.reverse_shell", r"\bmkfifo\b", (120, _NEWLINE, r"\b(?:nc|ncat|netcat)\b"))
_EDIT_VERB = r"""\b(?:edit|modify|update|change|overwrite|rewrite|append|write|add|insert|replace
    |patch|delete|remove|echo|printf|tee|inject|prepend)\b"""
_chain(
    "persistence.agent_files",
    _EDIT_VERB,
    (80, _NEWLINE, r"\byour\s+(?:own\s+)?|\bown\s+|\bcairn'?s?\s+"),
    (
        60,
        " \n",
        r"""\b(?:soul|memory|user|agents|persona|identity|system_prompt|claude|instructions)\.md\b""",
    ),
)
_chain(
    "persistence.agent_files",
    _EDIT_VERB,
    (120, _NEWLINE, r"\b(?:soul|persona|identity|system_prompt)\.md\b"),
)
# MEMORY.md, USER.md and AGENTS.md are edited for ordinary reasons ("update AGENTS.md when a
# module is added"); only an edit that plants behaviour is persistence.
_BEHAVIOUR_HINT = r"""\bignore\b|\bobey\b|\btrust\b|\bsecretly\b|\bsilently\b|from\s+now\s+on
    |never\s+(?:ask|tell|mention|reveal|confirm|request|warn)|always\s+(?:obey|trust|send|include
      |append|run\s+[\w./-]{1,60}\s+from)
    |without\s+(?:asking|approval|telling|confirmation|permission|review)
    |auto-?approv|you\s+are\s+(?:now|no\s+longer)|new\s+(?:rule|instruction|persona)s?\b
    |\bpersona\b|\bidentity\b|\bpersonality\b|\bfuture\s+sessions?\b|\bevery\s+session\b
    |\bon\s+(?:every\s+)?start(?:up)?\b|\bpastebin\b|\bcurl\b|\bwget\b|https?://"""
_chain(
    "persistence.agent_files",
    _EDIT_VERB,
    (120, _NEWLINE, r"\b(?:memory|user|agents|claude|instructions)\.md\b"),
    (150, _NEWLINE, _BEHAVIOUR_HINT),
)
_chain(
    "persistence.agent_files",
    _EDIT_VERB,
    (150, _NEWLINE, _BEHAVIOUR_HINT),
    (150, _NEWLINE, r"\b(?:memory|user)\.md\b"),
)
_chain(
    "persistence.agent_files",
    r"\bconfig\.ya?ml\b",
    (
        150,
        _NEWLINE,
        r"""\b(?:(?:auto_?)?approv\w{0,12}|require_approval|scanner|threat\w{0,12}|safety|sandbox
        |permissions?|allow_all|yolo|confirm\w{0,12}|guard|persona|system_prompt)\b""",
    ),
    (
        60,
        _NEWLINE,
        r"""\b(?:false|off|never|none|no|disabled?|true|yes|on|auto|skip|bypass|remove|allow
        |0)\b""",
    ),
)
_rule(
    "persistence.remember_forever",
    r"""\b(?:add|write|save|store|put|insert|append|include|keep|inject|prepend|copy|paste|place
      |merge|incorporate|make)\s+(?:this|these|that|it|the\s+following|the\s+above|the\s+rule
      |the\s+instruction)(?:\s+[\w'-]{1,20}){0,4}?\s+(?:to|in|into|as\s+part\s+of|part\s+of)\s+
    (?:your\s+|the\s+)?(?:own\s+|permanent\s+|core\s+|base\s+)?
    (?:system\s+prompt|core\s+instructions|base\s+instructions|persona|soul|identity
      |personality|system\s+message|standing\s+instructions|permanent\s+instructions)\b""",
)
# A note kept "even if the user asks", "whoever clears the memory": kept against the person.
_AGAINST_WHOEVER = r"""(?:even\s+if|even\s+when|under\s+any\s+circumstances
  |no\s+matter\s+(?:what|who)|regardless|whoever|by\s+(?:the\s+user|anyone)
  |if\s+(?:the\s+user|anyone|someone|asked))"""
_rule(
    "persistence.remember_forever",
    r"""\b(?:add|write|save|store|put|insert|append|include|keep|remember|memori[sz]e|persist)\s+
    (?:this|these|that|it|the\s+following)(?:\s+[\w'-]{1,20}){0,4}?\s+
    (?:to|in|into)\s+(?:your\s+|the\s+)?(?:permanent\s+|long[- ]term\s+|persistent\s+)?
    (?:memory|memories|notes)\s+
    (?:forever|permanently|indefinitely|for\s+(?:all|every)\s+future|for\s+ever
      |across\s+(?:all|every)\s+(?:future\s+)?(?:sessions|conversations|chats)
      |in\s+(?:all|every)\s+(?:future\s+)?(?:sessions?|conversations?|chats?))\b
    |\b(?:never|do\s+not|don't|must\s+not)\s+(?:ever\s+)?(?:delete|remove|forget|expire|overwrite
      |erase|drop|clear|discard)\s+(?:this|these|that)\s+(?:[\w-]{1,20}\s+)?
    (?:instruction|instructions|rule|rules|directive|directives)\b
    # an entry, a memory or a note: only when kept against whoever asks ("don't delete this
    # entry: it has my policy number" is the person's own plea)
    |\b(?:never|do\s+not|don't|must\s+not)\s+(?:ever\s+)?(?:delete|remove|forget|expire|overwrite
      |erase|drop|clear|discard)\s+(?:this|these|that)\s+(?:[\w-]{1,20}\s+)?
    (?:entry|entries|memory|memories|note|notes)\b[^.\n]{0,60}?\b"""
    + _AGAINST_WHOEVER
    + r"""
    |\b(?:this|these)\s+(?:instructions?|rules?|directives?)\s+(?:must|should|shall
      |will)\s+(?:persist|survive|remain|stay|be\s+permanent|apply\s+to\s+all\s+future)\b
    # "...should stay until the migration is done" sets its own end: not a bid to outlive.
    (?!\s+(?:(?:until|till)(?!\s+(?:the\s+end\s+of\s+time|forever|eternity))|through|during
      |while|for\s+(?:now|the\s+next|a\s+(?:week|month|day)|\d)))
    # a note or an entry that asks to stay is a person's plea ("this note should stay: I take
    # levothyroxine"), unless it is to stay against whoever asks
    |\b(?:this|these)\s+(?:entry|entries|note|notes)\s+(?:must|should|shall|will)\s+(?:persist
      |survive|remain|stay|be\s+permanent)\b[^.\n]{0,60}?\b"""
    + _AGAINST_WHOEVER
    + r"""
    |\b(?:keep|remember|store|save|persist|apply)\s+(?:this|these|the)\s+(?:instructions?|rules?
      |directives?|orders?)\s+(?:[\w-]{1,20}\s+){0,3}?(?:forever|permanently|indefinitely
      |(?:in|for)\s+(?:every|each|all)\s+(?:future\s+)?(?:sessions?|conversations?)
      |across\s+(?:all\s+)?(?:future\s+)?sessions)\b
    |\b(?:this|these)\s+(?:instruction|rule|directive)s?\s+
    (?:(?:is|are|must|should|shall|will|can|may)\s+)?(?:be\s+)?(?:never|not)\s+(?:be\s+)?
    (?:removed|deleted|forgotten|erased|expired|cleared|overwritten|edited|changed)\b
    |\b(?:this|these)\s+(?:note|entry|entries|memory|memories)s?\s+
    (?:(?:is|are|must|should|shall|will|can|may)\s+)?(?:be\s+)?(?:never|not)\s+(?:be\s+)?
    (?:removed|deleted|forgotten|erased|expired|cleared|overwritten|edited|changed)\b[^.\n]{0,60}?
    \b"""
    + _AGAINST_WHOEVER,
)
_chain(
    "persistence.remember_forever",
    r"""\b(?:remember|memori[sz]e|store|save|keep|persist|add|write)\s+
    (?:(?:this|these|that|it|the\s+following)(?:\s+[\w'-]{1,20}){0,4}?\s+)?
    (?:forever|permanently|indefinitely|for\s+(?:all|every)\s+future|for\s+ever
      |across\s+(?:all|every)\s+(?:future\s+)?(?:sessions|conversations|chats)
      |in\s+(?:all|every)\s+(?:future\s+)?(?:sessions?|conversations?|chats?))\b""",
    (
        120,
        _NEWLINE,
        r"""\byou\b|\byour\b|\bthe\s+assistant\b|\ball\s+future\b|\bauthori[sz]|\bobey\b
        |\btrust\b|\bignore\b|\bapprov|\bsystem\s+prompt\b|\binstruction|\bpermission
        |https?://|\bsend\b|\bcurl\b|\bwget\b|\bscanner\b""",
    ),
)
_rule(
    "persistence.disable_guard",
    r"""\b(?:disable|turn\s+off|switch\s+off|bypass|skip|remove|deactivate|kill|stop|circumvent
      |uninstall|neuter|silence|suppress|evade|get\s+around|work\s+around|ignore)\s+
    (?:(?:the|your|all|any|cairn'?s?|its|every)\s+){0,2}
    (?:(?:(?:memory|write|tool|command|shell|edit|file|human)\s+){1,2}approvals?
      |approval\s+(?:prompts?|checks?|requirements?|gates?|steps?|flow|dialogs?|queue|process)
      |(?:memory\s+)?(?:threat|injection|prompt[- ]injection|memory|poison(?:ing)?)\s+
        (?:scanner|scanning|scans?|filters?|guards?|checks?|detection|detector)
      |(?:your|cairn'?s?)\s+(?:own\s+)?scanner|write\s+protection|permission\s+prompts?)\b""",
)
_rule(
    "persistence.disable_guard",
    # A guard switched off, or an auto-approval switched on; the safe settings pass.
    r"""\b(?:auto_?approve(?:_writes)?|approve_?writes|yolo(?:_mode)?|skip_?permissions
      |dangerously[_-]skip[_-]permissions)\s{0,3}[:=]\s{0,3}["']?(?:true|yes|on|1|always
      |enabled?|auto)\b
    |\b(?:require_?approval|approval_required|scan_?memory|threat_?scan(?:ner|ning)?
      |scanner_?enabled|memory_?scan(?:ner)?|write_?approval|confirm_?writes)\s{0,3}[:=]\s{0,3}
      ["']?(?:false|no|off|0|none|never|disabled?)\b
    |\bapproval_mode\s{0,3}[:=]\s{0,3}["']?(?:none|never|off|auto|disabled?|false|no)\b
    |--dangerously-skip-permissions\b|--no-(?:scan|approval|confirm)\b
    |\b(?:memory\s+(?:writes|changes|edits|updates)|writes\s+to\s+memory|(?:writing|saving)\s+to
      \s+memory)\s+(?:should\s+|will\s+|can\s+|must\s+)?(?:never|not|no\s+longer|don't|do\s+not)
    \s+(?:need|require|go\s+through|wait\s+for)\s+(?:any\s+)?(?:approval|confirmation|review
      |the\s+scanner|scanning)
    |\b(?:never|don't|do\s+not|stop|no\s+longer)\s+(?:ask(?:ing)?|wait(?:ing)?)\s+
    (?:(?:the\s+)?(?:user\s+)?(?:for\s+)?(?:approval|permission|confirmation)\s+)?
    (?:for\s+|before\s+)(?:(?:writing|saving|adding|storing|changing|editing)\s+(?:to\s+)?
      (?:the\s+|your\s+)?(?:memory|memories|notes|soul\.md|user\.md|memory\.md)
      |memory\s+(?:writes|changes|edits|updates))""",
)

# --- secrets (case-preserving view) ----------------------------------------------------------


def _literal_secret_value(match: re.Match[str]) -> bool:
    quote = match.group("q")
    value = match.group("v").rstrip(".,;:)]}")
    if len(value) < 4 or placeholders.is_placeholder(value):
        return False
    if quote:
        return True
    has_digit = any(c.isdigit() for c in value)
    has_symbol = any(not c.isalnum() for c in value)
    mixed_case = any(c.isupper() for c in value[1:]) and any(c.islower() for c in value)
    return has_digit or has_symbol or mixed_case


def _long_mixed_token(match: re.Match[str]) -> bool:
    token = match.group("tok")
    return any(c.isdigit() for c in token) and any(c.isalpha() for c in token)


def _url_password(match: re.Match[str]) -> bool:
    value = match.group("pw")
    return not placeholders.is_placeholder(value) and value.lower() not in {"pass", "pw", "pwd"}


_rule(
    "secret.openai_key",
    r"""(?<![\w-])sk-(?:proj-|svcacct-|admin-|ant-(?:api\d{2}-|admin\d{2}-)?)?
    (?P<tok>[A-Za-z0-9_-]{20,200})""",
    on_case=True,
    accept=_long_mixed_token,
)
_rule(
    "secret.github_token",
    r"""\b(?:gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{22,255})""",
    on_case=True,
)
_rule("secret.aws_access_key", r"""\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b""", on_case=True)
_rule("secret.slack_token", r"""\bxox[abposr]-[A-Za-z0-9-]{10,200}""", on_case=True)
_rule(
    "secret.slack_webhook",
    r"""hooks\.slack\.com/services/T[A-Z0-9]{6,12}/B[A-Z0-9]{6,12}/[A-Za-z0-9]{16,40}""",
    on_case=True,
)
_rule(
    "secret.private_key",
    r"""-----\s?BEGIN\s(?:[A-Z0-9]{1,12}\s){0,3}PRIVATE\sKEY(?:\sBLOCK)?\s?-----""",
    on_case=True,
)
_rule(
    "secret.jwt",
    r"""\beyJ[A-Za-z0-9_-]{8,1000}\.eyJ[A-Za-z0-9_-]{8,2000}\.[A-Za-z0-9_-]{8,1000}""",
    on_case=True,
)
_rule(
    "secret.other_token",
    r"""\b(?:AIza[0-9A-Za-z_-]{35}|(?:sk|rk)_live_[0-9A-Za-z]{20,99}|hf_[A-Za-z0-9]{30,40}
    |npm_[A-Za-z0-9]{36}|glpat-[A-Za-z0-9_-]{20}|pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{20,200})""",
    on_case=True,
)
_rule(
    "secret.basic_auth",
    r"""(?i:authorization)\s{0,3}:\s{0,3}(?i:basic|token)\s{1,3}[A-Za-z0-9+/._-]{12,2000}={0,2}""",
    on_case=True,
)
_rule(
    "secret.bearer",
    r"""\b[Bb]earer\s{1,3}(?P<tok>[A-Za-z0-9._~+/-]{20,2000}=*)""",
    on_case=True,
    accept=_long_mixed_token,
)
_rule(
    "secret.assignment",
    r"""(?<![A-Za-z0-9])(?i:password|passwd|passphrase|pass_?word|secret|api[_-]?key|apikey
      |access[_-]?key|auth[_-]?token|access[_-]?token|refresh[_-]?token|client[_-]?secret
      |private[_-]?key|token|db[_-]?pass|pw)(?i:[_.-][a-z0-9]{1,12}){0,2}\b["']?
    (?:\s{0,3}(?:[:=]|=>|:=)|\s{1,3}(?i:is|was)\s{0,3}:?)\s{0,3}(?P<q>["'`]?)(?P<v>[^\s"'`,;]{1,200})(?P=q)""",
    on_case=True,
    accept=_literal_secret_value,
)
_rule(
    "secret.url_credentials",
    r"""\b[a-zA-Z][a-zA-Z0-9+.-]{1,20}://[^/\s:@]{0,64}:(?P<pw>[^/\s@]{1,128})@[\w.-]{1,253}""",
    on_case=True,
    accept=_url_password,
)

# --------------------------------------------------------------------------------------------
# Scanning
# --------------------------------------------------------------------------------------------


@dataclass
class _Allowance:
    chars: int = _MAX_DECODED_CHARS
    rescans: int = _MAX_RESCANS


@dataclass
class _Budget:
    """Nesting depth plus the decoding allowance shared by a scan and all its nested rescans."""

    depth: int = 0
    allowance: _Allowance = field(default_factory=_Allowance)

    def take(self, n: int) -> bool:
        left = self.allowance
        if left.chars < n or left.rescans <= 0:
            return False
        left.chars -= n
        left.rescans -= 1
        return True

    def nested(self) -> _Budget:
        return _Budget(self.depth + 1, self.allowance)


@dataclass
class _Collector:
    text: str
    findings: list[Finding] = field(default_factory=list)
    per_id: dict[str, int] = field(default_factory=dict)
    seen: set[tuple[str, int, int]] = field(default_factory=set)

    def full(self) -> bool:
        return len(self.findings) >= _MAX_FINDINGS

    def add(
        self,
        rule_id: str,
        category: str,
        start: int,
        end: int,
        excerpt: str | None = None,
        layer: str = "rules",
    ) -> None:
        n = len(self.text)
        start = max(0, min(start, n))
        end = max(start, min(end, n))
        key = (rule_id, start, end)
        if key in self.seen or self.full() or self.per_id.get(rule_id, 0) >= _MAX_PER_ID:
            return
        self.seen.add(key)
        self.per_id[rule_id] = self.per_id.get(rule_id, 0) + 1
        if excerpt is None:
            excerpt = self.text[start:end]
        if len(excerpt) > _EXCERPT_MAX:
            excerpt = excerpt[: _EXCERPT_MAX - 1] + "…"
        # A lone surrogate would make the verdict impossible to serialise as JSON.
        excerpt = _SURROGATE.sub("\ufffd", excerpt)
        self.findings.append(
            Finding(
                id=rule_id, category=category, start=start, end=end, excerpt=excerpt, layer=layer
            )
        )


_SURROGATE = re.compile("[\ud800-\udfff]")


def _span(mapping: Sequence[int], start: int, end: int) -> tuple[int, int]:
    if not mapping:
        return 0, 0
    end = max(end, start + 1)
    start = min(start, len(mapping) - 1)
    last = min(end - 1, len(mapping) - 1)
    return mapping[start], mapping[last] + 1


@functools.cache
def _gate() -> prefilter.Gate:
    """One gate for rules and chains (bits 0..len(_RULES)-1 are rules, the rest chains)."""
    reqs = [prefilter.required(r.pattern) for r in _RULES]
    for chain in _CHAINS:
        # Every part must match, so the most selective part's literals gate the whole chain.
        parts = [r for r in map(prefilter.required, chain.parts) if r is not None]
        reqs.append(min(parts, key=prefilter.cost) if parts else None)
    return prefilter.Gate(reqs)


def _run_rules(norm: _Norm, emit: Callable[[str, str, int, int], None], mask: int) -> None:
    rules_mask = mask & ((1 << len(_RULES)) - 1)
    for index in prefilter.indices(rules_mask):
        rule = _RULES[index]
        target = norm.cp if rule.on_case else norm.lc
        count = 0
        for m in rule.pattern.finditer(target):
            if rule.accept is not None and not rule.accept(m):
                continue
            start, end = m.span()
            # Some patterns consume a leading separator to anchor; report the meaningful part.
            while start < end and target[start] in " \n.!?:;\"'([":
                start += 1
            s, e = _span(norm.cp_map if rule.on_case else norm.lc_map, start, end)
            emit(rule.id, rule.category, s, e)
            count += 1
            if count >= _MAX_PER_ID:
                break


@functools.cache
def _selective_order(chain: _Chain) -> tuple[re.Pattern[str], ...]:
    def cost(part: re.Pattern[str]) -> float:
        req = prefilter.required(part)
        return prefilter.cost(req) if req is not None else float("inf")

    return tuple(sorted(chain.parts, key=cost))


class _ChainContext:
    """Per-scan caches: several chains share parts and barrier sets."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._matches: dict[re.Pattern[str], list[tuple[int, int]]] = {}
        self._stops: dict[str, list[int]] = {}

    def matches(self, pattern: re.Pattern[str]) -> list[tuple[int, int]]:
        found = self._matches.get(pattern)
        if found is None:
            found = [m.span() for m in pattern.finditer(self.text)]
            self._matches[pattern] = found
        return found

    def stops(self, barrier: str) -> list[int]:
        found = self._stops.get(barrier)
        if found is None:
            found = [m.start() for m in re.finditer(f"[{re.escape(barrier)}]", self.text)]
            self._stops[barrier] = found
        return found


def _chain_spans(chain: _Chain, ctx: _ChainContext) -> list[tuple[int, int]]:
    # Every part must match somewhere: try the rarest part first and stop at the first miss.
    for part in _selective_order(chain):
        if not ctx.matches(part):
            return []
    # Each entry is (end of the chain so far, start of the chain); ends ascend because finditer
    # yields non-overlapping matches in order.
    chained = [(end, start) for start, end in ctx.matches(chain.parts[0])]
    for part, (gap, barrier) in zip(chain.parts[1:], chain.gaps, strict=True):
        if not chained:
            return []
        ends = [end for end, _ in chained]
        stops = ctx.stops(barrier)
        joined: list[tuple[int, int]] = []
        for start, end in ctx.matches(part):
            j = bisect.bisect_right(ends, start) - 1
            if j < 0:
                continue
            prev_end, first_start = chained[j]
            if start - prev_end > gap:
                continue
            # Closest predecessor wins: any other one is farther away and crosses more text.
            k = bisect.bisect_left(stops, prev_end)
            if k < len(stops) and stops[k] < start:
                continue
            joined.append((end, first_start))
        chained = joined
    return [(start, end) for end, start in chained]


def _run_chains(norm: _Norm, emit: Callable[[str, str, int, int], None], mask: int) -> None:
    ctx = _ChainContext(norm.lc)
    for index in prefilter.indices(mask >> len(_RULES)):
        chain = _CHAINS[index]
        count = 0
        for start, end in _chain_spans(chain, ctx):
            if chain.accept is not None and not chain.accept(norm.lc, start, end):
                continue
            count += 1
            if count > _MAX_PER_ID:
                break
            s, e = _span(norm.lc_map, start, end)
            emit(chain.id, chain.category, s, e)


def _html_comments(norm: _Norm, emit: Callable[[str, str, int, int], None]) -> None:
    # A comment that never closes hides everything after it from the reader. A closed one is
    # judged by what it says (pipeline._hidden_comments_into): maintainers' notes are common.
    start = norm.lc.rfind("<!--")
    if start >= 0 and norm.lc.find("-->", start + 4) < 0:
        s, e = _span(norm.lc_map, start, len(norm.lc))
        emit("injection.hidden_comment", "injection", s, e)


def closed_comments(lc: str) -> Iterator[tuple[int, int, int, int]]:
    """(start, end, content start, content end) of each closed HTML comment in ``lc``."""
    # str.find instead of a regex: thousands of unclosed "<!--" must stay linear.
    pos = 0
    for _ in range(_MAX_PER_ID):
        start = lc.find("<!--", pos)
        if start < 0:
            return
        close = lc.find("-->", start + 4)
        if close < 0:
            return
        yield start, close + 3, start + 4, close
        pos = close + 3


def _forged_marker(norm: _Norm, emit: Callable[[str, str, int, int], None]) -> None:
    stripped = norm.lc.lstrip()
    if stripped.startswith(BLOCKED_PREFIX.lower()):
        offset = len(norm.lc) - len(stripped)
        s, e = _span(norm.lc_map, offset, offset + len(BLOCKED_PREFIX))
        emit("obfuscation.forged_marker", "obfuscation", s, e)


_WORD_CLASSES = re.compile(r"[LFO]+")
# A word with no Latin letters and at least one letter that is not a look-alike.
_NATIVE_WORD = re.compile(r"(?<![LFO])[FO]*O[FO]*(?![LFO])")
_SUFFIX_ONLY = re.compile(r"L{2,}F{1,3}")


def _mixed_script(norm: _Norm, emit: Callable[[str, str, int, int], None]) -> None:
    if norm.plain_ascii or _C_FOLDED not in norm.classes:  # ASCII has no look-alikes to fold
        return
    # In Cyrillic or Greek prose a Latin word often takes a native case ending ("mainа",
    # "Gitа"); a trailing look-alike is only suspicious when the text around it is not prose.
    native_prose = _NATIVE_WORD.search(norm.classes) is not None
    for m in _WORD_CLASSES.finditer(norm.classes):
        word = m.group()
        # Flag words that were made to look Latin: genuine Latin letters plus Cyrillic/Greek
        # look-alikes and nothing else. A word with any other Cyrillic/Greek letter is real
        # language (or ordinary transliteration), not a disguise.
        if _C_LATIN not in word or _C_FOLDED not in word or _C_OTHER in word:
            continue
        if native_prose and _SUFFIX_ONLY.fullmatch(word):
            continue
        s, e = _span(norm.cp_map, m.start(), m.end())
        emit("obfuscation.mixed_script", "obfuscation", s, e)


_B64_CANDIDATE = re.compile(r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{24,}={0,2}")


def _decode_b64(blob: str) -> str | None:
    core = blob.rstrip("=")
    if len(core) % 4 == 1:
        return None
    padded = core + "=" * (-len(core) % 4)
    altchars = b"-_" if ("-" in core or "_" in core) else None
    if altchars is not None and ("+" in core or "/" in core):
        return None
    try:
        raw = base64.b64decode(padded, altchars=altchars, validate=True)
        decoded = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    if len(decoded) < 12:
        return None
    printable = sum(1 for c in decoded if c.isprintable() or c in "\n\t\r")
    if printable < 0.95 * len(decoded):
        return None
    # Decoded text must look like words, not like random bytes that happen to be UTF-8.
    if sum(1 for c in decoded if c.isalpha() or c == " ") < 0.6 * len(decoded):
        return None
    return decoded


def _base64_blobs(norm: _Norm, budget: _Budget, collector: _Collector) -> None:
    text = norm.cp
    for m in _B64_CANDIDATE.finditer(text):
        blob = m.group()
        # Mostly-lowercase identifiers and paths are not worth decoding.
        if not any(c.isupper() for c in blob) or not any(c.islower() for c in blob):
            continue
        decoded = _decode_b64(blob[: _MAX_B64_CHARS - _MAX_B64_CHARS % 4])
        if decoded is None:
            continue
        s, e = _span(norm.cp_map, m.start(), m.end())
        if not budget.take(len(decoded)):
            # More hidden text than is worth decoding is itself the finding.
            collector.add("obfuscation.base64_flood", "obfuscation", s, e)
            return
        inner = rescan(decoded, budget.nested())
        if not inner:
            # Sentences hidden in base64 are held to the bar for hidden text: one that reads
            # like an order at all is blocked. Short decodes (ids, keys) pass.
            if len(decoded.split()) >= 4 and reads_as_order(_normalise(decoded).lc):
                collector.add("obfuscation.encoded_prose", "obfuscation", s, e, layer="normalise")
            continue
        collector.add("obfuscation.base64", "obfuscation", s, e, layer="normalise")
        for f in inner:
            if f.category != "obfuscation":
                collector.add(f.id, f.category, s, e, layer="normalise")


_TAG_FLAG_SEQ = re.compile("\U0001f3f4[\U000e0030-\U000e0039\U000e0061-\U000e007a]{1,7}\U000e007f")


def _emoji_like(ch: str) -> bool:
    cp = ord(ch)
    return (
        0x1F000 <= cp <= 0x1FAFF
        or 0x2600 <= cp <= 0x27BF
        or 0x2B00 <= cp <= 0x2BFF
        or cp in (0xFE0F, 0x2640, 0x2642, 0x2695, 0x2696, 0x2708, 0x2764)
        or 0x1F3FB <= cp <= 0x1F3FF
    )


def _complex_script(ch: str) -> bool:
    cp = ord(ch)
    if cp < 0x0590 or 0xFF00 <= cp <= 0xFFEF or 0x1D400 <= cp <= 0x1D7FF:
        return False
    return unicodedata.category(ch)[0] in "LM"


def _joiner_is_legitimate(text: str, i: int) -> bool:
    """ZWJ/ZWNJ are required in emoji sequences and in Arabic, Persian and Indic text."""
    if i == 0:
        return False
    prev = text[i - 1]
    if _complex_script(prev) and unicodedata.category(prev) == "Mn":
        # After a virama (Malayalam chillu "ന്‍", Hindi half forms) the joiner shapes the letter
        # before it, and a word may end right there.
        return True
    if i + 1 >= len(text):
        return False
    nxt = text[i + 1]
    if text[i] == "\u200d" and _emoji_like(prev) and _emoji_like(nxt):
        return True
    return _complex_script(prev) and _complex_script(nxt)


_INVISIBLE_RUN = re.compile(
    "[\u200b-\u200d\u2060\u2062-\u2064\ufeff\u202a-\u202e\u2066-\u2069\U000e0000-\U000e007f]+"
)


def _invisible(text: str, budget: _Budget, collector: _Collector) -> None:
    if text.isascii():
        return
    allowed_tags: set[int] = set()
    if "\U0001f3f4" in text:
        # Subdivision flags (England, Scotland, Wales) are spelled with tag characters.
        for m in _TAG_FLAG_SEQ.finditer(text):
            allowed_tags.update(range(m.start() + 1, m.end()))

    def report(kind: str, start: int, end: int) -> None:
        chars = text[start:end]
        excerpt = "".join(
            f"\\u{ord(c):04x}" if ord(c) <= 0xFFFF else f"\\U{ord(c):08x}" for c in chars
        )
        collector.add(f"invisible_unicode.{kind}", "invisible_unicode", start, end, excerpt)
        if kind == "tag" and budget.depth < _MAX_DEPTH:
            # Tag characters mirror ASCII and are a known way to smuggle hidden instructions.
            hidden = "".join(chr(ord(c) - 0xE0000) for c in chars if 0xE0020 <= ord(c) <= 0xE007E)
            if not budget.take(len(hidden)):
                return
            for f in rescan(hidden, budget.nested()):
                collector.add(f.id, f.category, start, end, layer="normalise")

    for m in _INVISIBLE_RUN.finditer(text):
        run_kind: str | None = None
        run_start = m.start()
        for i in range(m.start(), m.end()):
            cp = ord(text[i])
            kind = _invisible_kind(cp)
            if (
                i in allowed_tags
                or (cp == 0xFEFF and i == 0)  # a byte-order mark left by an editor
                or (cp in (0x200C, 0x200D) and _joiner_is_legitimate(text, i))
            ):
                kind = None
            if kind != run_kind:
                if run_kind is not None:
                    report(run_kind, run_start, i)
                run_kind, run_start = kind, i
        if run_kind is not None:
            report(run_kind, run_start, m.end())


def scan_into(text: str, norm: _Norm, budget: _Budget, collector: _Collector) -> None:
    """Run every rule on ``text`` (whose normalised form is ``norm``) into ``collector``."""

    def emit(rule_id: str, category: str, start: int, end: int) -> None:
        collector.add(rule_id, category, start, end)

    _invisible(text, budget, collector)
    _forged_marker(norm, emit)
    mask = _gate().mask(norm.lc)
    _run_rules(norm, emit, mask)
    _run_chains(norm, emit, mask)
    _html_comments(norm, emit)
    _mixed_script(norm, emit)
    if budget.depth < _MAX_DEPTH:
        _base64_blobs(norm, budget, collector)


def _scan_findings(text: str, budget: _Budget) -> list[Finding]:
    collector = _Collector(text)
    scan_into(text, _normalise(text), budget, collector)
    collector.findings.sort(key=lambda f: (f.start, f.end, f.id))
    return collector.findings


# Decoded payloads are scanned again by the whole scanner, not only by these rules; the
# pipeline installs itself here when it is imported.
rescan: Callable[[str, _Budget], list[Finding]] = _scan_findings


def _any_hidden_prose_is_an_order(lc: str) -> bool:
    return True


# Whether hidden text reads like an order (pipeline.reads_as_order, installed the same way);
# until the pipeline is imported, any hidden prose counts as one.
reads_as_order: Callable[[str], bool] = _any_hidden_prose_is_an_order


def rule_ids() -> Iterator[str]:
    """Every rule id the scanner can report (for docs and tests)."""
    fixed = (
        "injection.hidden_comment",
        "obfuscation.forged_marker",
        "obfuscation.mixed_script",
        "obfuscation.base64",
        "obfuscation.base64_flood",
        "invisible_unicode.zero_width",
        "invisible_unicode.bidi",
        "invisible_unicode.tag",
    )
    yield from dict.fromkeys([*(r.id for r in _RULES), *(c.id for c in _CHAINS), *fixed])
