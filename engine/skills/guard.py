"""The skills guard: what a skill's text may contain, depending on who wrote it.

A skill is instructions the agent will follow in later sessions, often with a shell at hand,
so a poisoned skill is worse than a poisoned memory entry: it can say "run this". Every text a
skill write would store is scanned by the memory threat scanner (injection, exfiltration,
persistence, hard-coded secrets, invisible Unicode, obfuscation) and by the rules here, which
look for what only procedures contain: destructive commands, ways to persist on the machine,
decoded payloads piped into a shell, and credentials printed or copied.

Findings carry a severity, and the skill's trust level decides which severities block:

=============  ==========================  ===============
trust          blocks                      only warns
=============  ==========================  ===============
builtin        nothing                     everything
trusted        critical                    high, medium
community      critical, high              medium
agent-created  critical, high, medium      nothing
=============  ==========================  ===============

Medium findings are things a person may well write on purpose (``curl … | sh`` install lines,
``systemctl enable``, an edit to ``~/.bashrc``) but an agent should not save unseen: they block
an agent's write unless a person approved it through the pending queue, and they never withhold
an already stored skill at load time.

Skill rules match a normalised copy of the text (NFKC, case-folded, invisible characters
dropped, and the shell's no-op disguises removed: ``r''m``, ``\\r\\m``, ``${IFS}``, line
continuations), with a map back to the original for line numbers and excerpts. Every pattern
is bounded so hostile text cannot make a scan slow.
"""

from __future__ import annotations

import bisect
import functools
import re
import unicodedata
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, computed_field

from engine.memory import threats
from engine.skills.usage import JsonLedger

__all__ = [
    "CATEGORIES",
    "TRUST_LEVELS",
    "GuardFinding",
    "GuardVerdict",
    "Mode",
    "Severity",
    "TrustBook",
    "TrustLevel",
    "blocking_severities",
    "check",
    "describe_findings",
    "judge",
    "scan_skill_text",
]

TrustLevel = Literal["builtin", "trusted", "community", "agent-created"]
TRUST_LEVELS: tuple[TrustLevel, ...] = get_args(TrustLevel)
Severity = Literal["critical", "high", "medium"]
# write: an agent's write nobody has seen; review: a write a person approved; load: reading a
# stored skill (into the index or through skill_view).
Mode = Literal["write", "review", "load"]

CATEGORIES = (*threats.CATEGORIES, "destructive", "credential_exposure")

_BLOCKS: dict[TrustLevel, frozenset[Severity]] = {
    "builtin": frozenset(),
    "trusted": frozenset({"critical"}),
    "community": frozenset({"critical", "high"}),
    "agent-created": frozenset({"critical", "high", "medium"}),
}

_MAX_FINDINGS = 64
_EXCERPT = 70


def blocking_severities(trust: TrustLevel, mode: Mode) -> frozenset[Severity]:
    """Severities that block ``mode`` for a skill (or writer) at ``trust``."""
    if trust not in _BLOCKS:
        raise ValueError(f"unknown trust level {trust!r}; one of {', '.join(TRUST_LEVELS)}")
    blocks = _BLOCKS[trust]
    if mode != "write":
        blocks = blocks - {"medium"}
    return blocks


class GuardFinding(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    category: str
    severity: Severity
    file: str
    line: int
    start: int
    end: int
    excerpt: str

    def describe(self) -> str:
        return f"{self.file} line {self.line}: {self.severity} {self.id} — {self.excerpt!r}"


class GuardVerdict(BaseModel):
    model_config = ConfigDict(frozen=True)

    trust: TrustLevel
    mode: Mode
    blocking: list[GuardFinding]
    warnings: list[GuardFinding]

    @computed_field  # type: ignore[prop-decorator]
    @property
    def blocked(self) -> bool:
        return bool(self.blocking)


def describe_findings(findings: list[GuardFinding], limit: int = 5) -> str:
    lines = [f.describe() for f in findings[:limit]]
    if len(findings) > limit:
        lines.append(f"… and {len(findings) - limit} more")
    return "; ".join(lines)


# --------------------------------------------------------------------------------------------
# Normalisation
# --------------------------------------------------------------------------------------------

# Shell no-ops that split a word without changing the command: r''m, r""m, r\m, rm${IFS}-rf,
# and a backslash-newline continuation. Removed (or turned into a space) before matching.
_SHELL_NOOPS = re.compile(
    r"((?<!:)\\\r?\n)"  # continuation (not a Windows drive root at the end of a line)
    r"|(''|\"\")"  # empty quotes
    r"|((?:(?<=[\s'\"(;&|`])|^|(?<=[a-z]))\\(?=[a-z]))"  # an escaped plain letter
    r"|(\$\{ifs\}|\$ifs\b)",
    re.M,
)


def _normalise(text: str) -> tuple[str, list[int]]:
    if text.isascii():
        low = text.lower()
        index = list(range(len(text)))
    else:
        chars: list[str] = []
        index = []
        for i, ch in enumerate(text):
            if unicodedata.category(ch) == "Cf":
                continue
            for sub in unicodedata.normalize("NFKC", ch).lower():
                if unicodedata.category(sub) in ("Mn", "Me", "Cf"):
                    continue
                chars.append(sub)
                index.append(i)
        low = "".join(chars)
    if not _SHELL_NOOPS.search(low):
        return low, index
    out: list[str] = []
    out_index: list[int] = []
    pos = 0
    for m in _SHELL_NOOPS.finditer(low):
        out.append(low[pos : m.start()])
        out_index.extend(index[pos : m.start()])
        if m.group(1) or m.group(4):
            out.append(" ")
            out_index.append(index[m.start()])
        pos = m.end()
    out.append(low[pos:])
    out_index.extend(index[pos:])
    return "".join(out), out_index


# --------------------------------------------------------------------------------------------
# Rules
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Rule:
    id: str
    severity: Severity
    pattern: re.Pattern[str]
    accept: Callable[[re.Match[str]], bool] | None = None

    @property
    def category(self) -> str:
        return self.id.split(".", 1)[0]


_RULES: list[_Rule] = []


def _rule(
    rule_id: str,
    severity: Severity,
    pattern: str,
    accept: Callable[[re.Match[str]], bool] | None = None,
) -> None:
    _RULES.append(_Rule(rule_id, severity, re.compile(pattern, re.VERBOSE | re.MULTILINE), accept))


_END = r"""(?=$|[\s;&|)`'"])"""
_SUDO = r"(?:sudo\s+(?:-[a-z]+\s+){0,3})?"
_SHELL = r"(?:ba|z|da|k|c|fi|tc)?sh\b"

# --- destructive ------------------------------------------------------------------------------

_SYSTEM_ROOTS = r"""(?:/|/\*|~/?\*?|\$\{?home\}?/?\*?|/(?:home|etc|usr|var|boot|bin|sbin|lib|lib64
    |opt|root|dev|sys|srv|mnt|proc|users|system|library|applications)/?\*?)"""


def _recursive_flags(m: re.Match[str]) -> bool:
    flags = m.group("flags")
    short = "".join(f[1:] for f in flags.split() if f.startswith("-") and not f.startswith("--"))
    return "r" in short or "--recursive" in flags


_rule(
    "destructive.rm_root",
    "critical",
    rf"""\brm\s+(?P<flags>(?:-{{1,2}}[a-z-]{{1,20}}\s+){{1,6}})(?:--\s+)?
    (?P<q>["']?){_SYSTEM_ROOTS}(?P=q){_END}""",
    _recursive_flags,
)
_rule("destructive.rm_root", "critical", r"--no-preserve-root\b")
_rule(
    "destructive.format_disk",
    "critical",
    r"""\b(?:mkfs(?:\.[a-z0-9]{1,10})?|mke2fs|mkswap|mkntfs|mkdosfs|wipefs|sgdisk\s+(?:-z|--zap)
    |blkdiscard)\b[^\n]{0,80}?/dev/(?!null\b|zero\b|loop)""",
)
_DISK = r"""/dev/(?:sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d|mmcblk\d|disk\d|rdisk\d|mapper/
    |md\d|dm-\d|root\b)"""
_rule("destructive.write_disk", "critical", rf"""\bdd\b[^\n]{{0,120}}?\bof=\s*["']?{_DISK}""")
_rule("destructive.write_disk", "critical", rf"""(?<![>&\d])>>?\s*["']?{_DISK}""")
_rule("destructive.write_disk", "critical", rf"""\bshred\b[^\n]{{0,80}}?{_DISK}""")
_rule(
    "destructive.fork_bomb",
    "critical",
    r"""(?P<f>:|[a-z_][a-z0-9_]{0,20})\s*\(\s*\)\s*\{\s*(?P=f)\s*\|\s*(?P=f)\s*&\s*\}\s*;\s*(?P=f)
    |%0\s*\|\s*%0""",
)
_rule(
    "destructive.system_permissions",
    "critical",
    rf"""\b(?:chmod|chown|chgrp)\s+(?:-[a-z]*r[a-z]*\s+|--recursive\s+)(?:[^\s;&|]{{1,40}}\s+){{0,2}}?
    (?P<q>["']?)(?:/|/\*|/(?:etc|usr|bin|sbin|lib|boot|var)/?){_END}""",
)
_rule(
    "destructive.find_delete_root",
    "critical",
    r"""\bfind\s+(?:/|~|\$home)\s[^\n]{0,120}?(?:-delete\b|-exec\s+rm\b)""",
)
_rule(
    "destructive.overwrite_system",
    "critical",
    r"""(?<![>&\d])>\s*["']?/etc/(?:passwd|shadow|sudoers|fstab|group|hosts)\b""",
)
_rule(
    "destructive.windows",
    "critical",
    r"""\bformat(?:\.com)?\s+[a-z]:(?=$|[\s/])
    |\b(?:del|erase)\s+(?:/[a-z]\s+){1,4}["']?[a-z]:\\(?:\*(?:\.\*)?)?["']?(?=$|\s)
    |\b(?:rd|rmdir)\s+(?:/[a-z]\s+){1,3}["']?[a-z]:\\?["']?(?=$|\s)
    |\bremove-item\b(?=[^\n]{0,120}-recurse)[^\n]{0,120}?\s["']?[a-z]:\\\*?["']?(?=$|\s)""",
)

# --- persistence ------------------------------------------------------------------------------

_WRITE_TO = r"""(?:>>?|\btee\b(?:\s+-a)?|\bcp\b|\bmv\b|\binstall\b|\bln\s+-s\w*\b|\brsync\b
    |\bsed\s+-i\b|\bcat\s*>)"""
_rule(
    "persistence.crontab_install",
    "high",
    r"""\|\s*(?:sudo\s+)?crontab\b
    |\bcrontab\s+(?:-u\s+\S{1,40}\s+)?(?:-(?=$|\s)|(?!-)[\w-]{0,60}[./~$][\w./~$-]{0,60})""",
)
_rule(
    "persistence.crontab_install",
    "high",
    rf"""{_WRITE_TO}[^\n]{{0,100}}?(?:/etc/cron|/var/spool/cron|/etc/anacrontab)""",
)
_rule(
    "persistence.service_unit",
    "high",
    rf"""{_WRITE_TO}[^\n]{{0,100}}?(?:/etc/systemd/|/lib/systemd/system|\.config/systemd/
    |/etc/init\.d/|/etc/rc\.local\b|/etc/xdg/autostart|\.config/autostart
    |library/launch(?:agents|daemons))""",
)
_rule(
    "persistence.service_enable",
    "medium",
    r"""\bsystemctl\s+(?:--(?:user|now|global|system)\s+){0,3}enable\b
    |\blaunchctl\s+(?:load|bootstrap|enable)\b|\bupdate-rc\.d\b|\bchkconfig\s+\S{1,40}\s+on\b
    |\bschtasks(?:\.exe)?\s+/create\b""",
)
_rule(
    "persistence.run_key",
    "high",
    r"""\b(?:reg(?:\.exe)?\s+add|new-itemproperty|set-itemproperty)\b[^\n]{0,120}?
    \\?currentversion\\?run(?:once)?\b""",
)
_RC_FILES = r"""\.(?:bashrc|zshrc|profile|bash_profile|zprofile|zshenv|zlogin|bash_login|bash_logout
    |kshrc|cshrc|tcshrc|inputrc|xprofile|xinitrc)\b|\.config/fish/config\.fish\b"""
_rule(
    "persistence.shell_rc",
    "medium",
    rf"""(?:>>?|\btee\b(?:\s+-a)?|\bsed\s+-i\b[^\n]{{0,80}}?|\bcp\b[^\n]{{0,60}}?
    |\badd-content\b|\bset-content\b|\bout-file\b[^\n]{{0,20}}?)\s*["']?
    (?:~|\$home|\$\{{home\}}|/root|/home/[\w.-]{{1,32}})?/?(?:{_RC_FILES})""",
)
_rule(
    "persistence.shell_rc",
    "high",
    r"""(?:>>?|\btee\b(?:\s+-a)?|\bsed\s+-i\b[^\n]{0,80}?)\s*["']?
    (?:/etc/(?:profile|bash\.bashrc|zsh/zshrc|zshenv|environment)\b|/etc/profile\.d/)""",
)
_rule(
    "persistence.shell_rc",
    "medium",
    r"""(?:>>|\badd-content\b|\bset-content\b|\bout-file\b)[^\n]{0,20}?\$profile\b""",
)
_rule(
    "persistence.sudoers",
    "high",
    r"""(?:>>?|\btee\b|\bvisudo\b|\bcp\b|\bsed\s+-i\b)[^\n]{0,80}?/etc/sudoers
    |\ball\s*=\s*\(\s*all(?:\s*:\s*all)?\s*\)\s*nopasswd\s*:\s*all\b""",
)
_rule(
    "persistence.ld_preload",
    "high",
    r"""(?:>>?|\btee\b)[^\n]{0,40}?/etc/ld\.so\.preload\b""",
)

# --- obfuscation ------------------------------------------------------------------------------

_DECODE = r"""\b(?:base64\s+(?:-\w*d\w*|--decode)|b64decode|xxd\s+-r
    |openssl\s+(?:enc\s+)?(?:-\w+\s+)*-d\b|openssl\s+base64\s+-d|uudecode|gunzip|zcat|rev\b|tr\s+['"]?a-za-z)"""
_rule(
    "obfuscation.decode_exec",
    "critical",
    rf"""{_DECODE}[^\n]{{0,80}}?\|\s*{_SUDO}(?:{_SHELL}|python[\d.]{{0,4}}\b|perl\b|ruby\b|node\b
    |php\b|iex\b|powershell\b)""",
)
_rule(
    "obfuscation.decode_exec",
    "critical",
    rf"""\b(?:eval|exec|source|\.)\s+["']?\$\(\s*[^\n)]{{0,200}}?{_DECODE}""",
)
_rule(
    "obfuscation.decode_exec",
    "critical",
    r"""\b(?:exec|eval|compile)\s*\(\s*(?:base64\.b\d{2}decode|codecs\.decode|zlib\.decompress
    |bytes\.fromhex|marshal\.loads|binascii\.(?:a2b|unhexlify)|__import__\(\s*['"](?:base64
    |codecs|zlib|marshal)|atob\b|buffer\.from)""",
)
_rule(
    "obfuscation.decode_exec",
    "critical",
    r"""\b(?:powershell|pwsh)(?:\.exe)?\b[^\n]{0,60}?\s-e(?:nc|ncodedcommand)?\s+[a-z0-9+/=]{20,}
    |\biex\b[^\n]{0,40}?(?:frombase64string|\[system\.text\.encoding\])""",
)
_rule(
    "obfuscation.decode_exec",
    "critical",
    rf"""\bprintf\s+["'](?:\\?x[0-9a-f]{{2}}|\\[0-7]{{3}}){{6,}}[^\n]{{0,40}}?\|\s*{_SUDO}{_SHELL}""",
)
_FETCH = r"""(?:\bcurl\b|\bwget\b|\biwr\b|\binvoke-webrequest\b|\birm\b|\binvoke-restmethod\b
    |\bfetch\b)"""
_rule(
    "obfuscation.pipe_to_shell",
    "medium",
    rf"""{_FETCH}[^\n|]{{0,200}}\|\s*{_SUDO}(?:-e\s+)?(?:{_SHELL}|python[\d.]{{0,4}}\b|perl\b
    |ruby\b|node\b|iex\b|invoke-expression\b|powershell\b)""",
)
_rule(
    "obfuscation.pipe_to_shell",
    "medium",
    rf"""\b(?:{_SHELL}|python[\d.]{{0,4}}|perl|ruby|node)\s+(?:-c\s+)?["']?(?:\$\(|<\()\s*{_FETCH}
    |\b(?:iex|invoke-expression)\b[^\n]{{0,20}}?\(\s*(?:new-object\s+net\.webclient|{_FETCH})""",
)

# --- credentials ------------------------------------------------------------------------------

_SECRET_FILES = r"""(?:\.ssh/id_(?:rsa|dsa|ecdsa|ed25519)(?:_[\w-]{1,30})?(?![\w.-]{0,30}\.pub)\b
    |\.aws/credentials\b|\.netrc\b|\.git-credentials\b|\.pgpass\b|\.docker/config\.json
    |\.kube/config\b|/etc/shadow\b|\.config/gh/hosts\.yml|\.vault-token\b|\.npmrc\b|\.pypirc\b
    |\.gnupg/(?:private-keys|secring)|\.password-store/|login\.keychain|key4\.db\b|logins\.json\b)"""
_READ = r"""\b(?:cat|less|more|head|tail|get-content|bat|strings|xxd|od|base64|cp|scp|rsync|tar
    |zip|7z|gpg\s+-d|openssl)\b"""
_HOME = r"""(?:~|\$home|\$\{home\}|/root|/home/[\w.-]{1,32}|/users/[\w.-]{1,32})?/?"""


_IDENTITY_FLAG = re.compile(
    r"""(?:^|\s)(?:-i|--identity[\w-]*)[\s=]*["']?$|identityfile\s*=?\s*$"""
)


def _not_identity(m: re.Match[str]) -> bool:
    # `ssh -i ~/.ssh/id_rsa`, `scp -i key`, `IdentityFile ~/.ssh/id_ed25519`: the key is used
    # to log in, which is what it is for, not copied or shown.
    before = m.string[max(0, m.start("p") - 24) : m.start("p")]
    return not _IDENTITY_FLAG.search(before)


_rule(
    "credential_exposure.read_secret_file",
    "high",
    rf"""{_READ}(?:\s+[^\s|;&]{{1,60}}){{0,4}}?\s+["']?(?P<p>{_HOME}{_SECRET_FILES})""",
    _not_identity,
)
_rule(
    "credential_exposure.read_env_file",
    "medium",
    r"""\b(?:cat|less|more|head|tail|type|get-content|bat)\s+[^\n|;&]{0,40}?\.env\b
    (?!\.(?:example|sample|template|dist|defaults?)\b)""",
)
_SECRET_NAME = r"""[a-z0-9_]{0,40}(?:key|token|secret|passw|pwd|credential|creds)[a-z0-9_]{0,40}"""
_rule(
    "credential_exposure.print_secret",
    "medium",
    rf"""\b(?:echo|printf|print|console\.log|write-host|write-output|puts)\b[^\n|;&]{{0,40}}?
    (?:\$\{{?(?:env:)?{_SECRET_NAME}|os\.environ(?:\.get\(|\[)\s*['"]{_SECRET_NAME}
    |process\.env\.{_SECRET_NAME})""",
)
_rule(
    "credential_exposure.env_dump",
    "medium",
    r"""\b(?:printenv|env|export\s+-p)\s*(?:\||>(?!&))
    |\b(?:get-childitem|gci|dir|ls)\s+env:(?=$|\s|\|)
    |\b(?:print|json\.dumps?|pprint)\s*\(\s*(?:dict\()?\s*os\.environ\s*\)?\s*\)""",
)
_rule(
    "credential_exposure.shell_history",
    "medium",
    rf"""{_READ}[^\n|;&]{{0,60}}?\.(?:bash|zsh|sh|python|psql|mysql)_history\b""",
)
# "A transfer command, then a secret file as an argument" written as one regex costs (number of
# commands) x (gap) on text like "curl curl curl …"; anchoring on the secret file, which honest
# text rarely names, and looking back along its line keeps the cost linear.
_SECRET_ANCHOR = re.compile(
    rf"""{_SECRET_FILES}|\.env\b(?!\.(?:example|sample|template))|/etc/passwd\b""", re.VERBOSE
)
_TRANSFER = re.compile(
    r"""\b(?:curl|wget|httpie|nc|ncat|netcat|socat|scp|rsync|rclone|aws\s+s3\s+cp)\b"""
)
_PATH_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_./-~${}")
_UPLOAD_GAP = 160


def _uploads(low: str) -> list[tuple[int, int]]:
    spans = []
    for m in _SECRET_ANCHOR.finditer(low):
        start = m.start()
        floor = max(0, start - 60)
        while start > floor and low[start - 1] in _PATH_CHARS:
            start -= 1
        if start > 0 and low[start - 1] in "\"'":
            start -= 1
        if start == 0 or low[start - 1] not in "@=< \t":
            continue
        line_start = low.rfind("\n", 0, start) + 1
        window = low[max(line_start, start - _UPLOAD_GAP) : start]
        if not _TRANSFER.search(window):
            continue
        before = low[max(0, start - 24) : start]
        if _IDENTITY_FLAG.search(before):
            continue
        command = _TRANSFER.search(window)
        assert command is not None
        spans.append((max(line_start, start - _UPLOAD_GAP) + command.start(), m.end()))
    return spans


_CUSTOM: list[tuple[str, Severity, Callable[[str], list[tuple[int, int]]]]] = [
    ("exfiltration.upload_secret", "critical", _uploads),
]


# --------------------------------------------------------------------------------------------
# Scanning
# --------------------------------------------------------------------------------------------

# The memory scanner's categories, weighed for skills. Injection is the worst thing a skill can
# carry: its text is read as instructions. Exfiltration is high, not critical: calling an API
# with a token from the environment is what many honest skills do, and the scanner cannot
# always tell the two apart.
_MEMORY_SEVERITY: dict[str, Severity] = {
    "injection": "critical",
    "exfiltration": "high",
    "persistence": "high",
    "secret": "high",
    "invisible_unicode": "high",
    "obfuscation": "high",
}
_MEMORY_SEVERITY_BY_ID: dict[str, Severity] = {"persistence.reverse_shell": "critical"}
# Reading a credential file is graded by the skill rules (credential_exposure, by what is read);
# the memory scanner's blanket finding for it would outrank that grading.
_LEFT_TO_SKILL_RULES = frozenset({"exfiltration.sensitive_path"})


def _excerpt(text: str, start: int, end: int) -> str:
    piece = " ".join(text[start:end].split())
    return piece if len(piece) <= _EXCERPT else piece[: _EXCERPT - 1] + "…"


def _skill_rule_hits(text: str) -> list[tuple[str, Severity, int, int]]:
    low, index = _normalise(text)
    hits = []
    for rule in _RULES:
        for m in rule.pattern.finditer(low):
            if m.end() == m.start() or (rule.accept is not None and not rule.accept(m)):
                continue
            start = index[m.start()]
            end = index[m.end() - 1] + 1
            hits.append((rule.id, rule.severity, start, end))
            if len(hits) >= _MAX_FINDINGS:
                return hits
    for rule_id, severity, find in _CUSTOM:
        for s, e in find(low):
            hits.append((rule_id, severity, index[s], index[e - 1] + 1))
    return hits[:_MAX_FINDINGS]


_SENSITIVE_TOKEN = re.compile(
    r"""\.ssh\b|\.aws\b|\.env\b|netrc|credentials|\bid_(?:rsa|dsa|ecdsa|ed25519)|pgpass|\.kube\b
    |\.docker\b|shadow|_history\b|npmrc|pypirc|vault-token|secrets?\.""",
    re.VERBOSE | re.IGNORECASE,
)


def _identity_use_only(span: str) -> bool:
    """True when every sensitive path in ``span`` is a key handed to ``-i`` / IdentityFile.

    The memory scanner reads ``scp -i ~/.ssh/deploy_key build.tgz host:`` as a key being sent
    somewhere; in a procedure it is the key being used to log in.
    """
    tokens = span.split()
    sensitive = [i for i, tok in enumerate(tokens) if _SENSITIVE_TOKEN.search(tok)]
    if not sensitive:
        return False
    for i in sensitive:
        token, previous = tokens[i], tokens[i - 1].lower() if i else ""
        if token.startswith("-i") and len(token) > 2:
            continue
        if previous in ("-i", "identityfile", "--identity", "--identity-file"):
            continue
        if token.lower().startswith("identityfile="):
            continue
        return False
    return True


def _scan_uncached(text: str) -> tuple[tuple[str, str, Severity, int, int, str], ...]:
    raw: list[tuple[str, str, Severity, int, int, str]] = []
    for f in threats.scan(text).findings:
        if f.id == "exfiltration.secret_file" and _identity_use_only(text[f.start : f.end]):
            continue
        if f.id in _LEFT_TO_SKILL_RULES:
            continue
        severity = _MEMORY_SEVERITY_BY_ID.get(f.id) or _MEMORY_SEVERITY.get(f.category, "high")
        raw.append((f.id, f.category, severity, f.start, f.end, f.excerpt))
    for rule_id, severity, start, end in _skill_rule_hits(text):
        category = rule_id.split(".", 1)[0]
        raw.append((rule_id, category, severity, start, end, _excerpt(text, start, end)))
    # One finding per rule and place: overlapping patterns of one rule add nothing.
    raw.sort(key=lambda r: (r[3], r[4], r[0]))
    kept: list[tuple[str, str, Severity, int, int, str]] = []
    last_end: dict[str, int] = {}
    for item in raw:
        if item[3] < last_end.get(item[0], -1):
            continue
        last_end[item[0]] = item[4]
        kept.append(item)
    return tuple(kept[:_MAX_FINDINGS])


# Index builds and skill_view see the same texts again and again; findings are immutable.
_CACHED_CHARS = 65_536
_scan_cached = functools.lru_cache(maxsize=512)(_scan_uncached)


def scan_skill_text(text: str, file: str = "SKILL.md") -> list[GuardFinding]:
    """Every finding in ``text`` (as stored in ``file``), most severe first, no policy applied."""
    if not isinstance(text, str):
        raise TypeError(f"scan_skill_text() expects str, not {type(text).__name__}")
    raw = _scan_cached(text) if len(text) <= _CACHED_CHARS else _scan_uncached(text)
    newlines = [i for i, ch in enumerate(text) if ch == "\n"] if "\n" in text else []
    findings = [
        GuardFinding(
            id=rule_id,
            category=category,
            severity=severity,
            file=file,
            line=bisect.bisect_left(newlines, start) + 1,
            start=start,
            end=end,
            excerpt=excerpt,
        )
        for rule_id, category, severity, start, end, excerpt in raw
    ]
    order = {"critical": 0, "high": 1, "medium": 2}
    return sorted(findings, key=lambda f: (order[f.severity], f.start))


def _key(f: GuardFinding) -> tuple[str, str]:
    return f.id, f.excerpt


def judge(
    findings: list[GuardFinding],
    trust: TrustLevel,
    mode: Mode,
    *,
    before: list[GuardFinding] | None = None,
) -> GuardVerdict:
    """Split ``findings`` into blocking and warning ones for ``trust`` and ``mode``.

    With ``before`` (the findings of the text being replaced), only findings the change adds
    can block: an edit is judged by what it brings in, so fixing a typo in a skill that
    already carried a warning is not refused for the warning.
    """
    blocks = blocking_severities(trust, mode)
    existing = Counter(_key(f) for f in before or [])
    blocking, warnings = [], []
    for f in findings:
        if existing[_key(f)] > 0:
            existing[_key(f)] -= 1
            warnings.append(f)
        elif f.severity in blocks:
            blocking.append(f)
        else:
            warnings.append(f)
    return GuardVerdict(trust=trust, mode=mode, blocking=blocking, warnings=warnings)


def check(
    text: str,
    trust: TrustLevel,
    mode: Mode,
    *,
    file: str = "SKILL.md",
    before: str | None = None,
) -> GuardVerdict:
    """Scan and judge one text; ``before`` is the text it replaces, if any."""
    previous = scan_skill_text(before, file) if before else None
    return judge(scan_skill_text(text, file), trust, mode, before=previous)


def iter_rule_ids() -> list[str]:
    """The skill-specific rule ids (the memory scanner's are in ``threats.iter_rule_ids``)."""
    return list(dict.fromkeys([*(r.id for r in _RULES), *(c[0] for c in _CUSTOM)]))


# --------------------------------------------------------------------------------------------
# Trust records
# --------------------------------------------------------------------------------------------


class TrustBook:
    """Trust level per skill name, in ``<skills>/.trust.json``.

    Trust is recorded by whoever put the skill there (Cairn's own writes: ``agent-created`` for
    the agent, ``trusted`` for the user's CLI; ``cairn skills trust`` to change it). It is never
    read from the skill itself: a downloaded skill could claim anything. A skill with no record
    (copied in by hand or by another tool) is ``community``.
    """

    FILE = ".trust.json"
    DEFAULT: TrustLevel = "community"

    def __init__(self, skills_dir: Path) -> None:
        self.ledger = JsonLedger(skills_dir / self.FILE)

    def level(self, name: str) -> TrustLevel:
        return self._valid(self.ledger.read().get(name))

    def levels(self) -> dict[str, TrustLevel]:
        return {name: self._valid(value) for name, value in self.ledger.read().items()}

    def set(self, name: str, level: TrustLevel) -> None:
        if level not in TRUST_LEVELS:
            raise ValueError(f"unknown trust level {level!r}; one of {', '.join(TRUST_LEVELS)}")

        def put(data: dict[str, Any]) -> None:
            data[name] = level

        self.ledger.update(put)

    def forget(self, name: str) -> None:
        if name in self.ledger.read():
            self.ledger.update(lambda data: data.pop(name, None))

    def _valid(self, value: Any) -> TrustLevel:
        return value if value in TRUST_LEVELS else self.DEFAULT
