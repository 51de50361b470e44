"""The normalise layer: undo disguises and hand the result back to the scanner.

Each detector here is gated by a cheap test (a character class search, a count of common words)
so ordinary text pays almost nothing. What it produces is a :class:`View`: text recovered from a
span of the entry (letters split by separators put back together, leetspeak read as letters,
padding characters read as spaces, base64/base32/hex/ROT13/URL/morse segments decoded, text
written backwards turned round). The pipeline scans every view with the other layers; a finding
in a view blocks the entry, reported at the view's span. Some disguises are findings by
themselves: invisible padding and variation-selector payloads (``invisible_unicode``), and
sentences hidden in an encoding (``obfuscation.encoded_prose``).
"""

from __future__ import annotations

import base64
import binascii
import codecs
import functools
import html
import quopri
import re
import string
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass

from engine.memory.threats import decoders, model

# Views are rescanned; a hostile entry must not turn that into unbounded work.
_MAX_VIEWS = 8
_MAX_VIEW_CHARS = 8192


# base64 is decoded by the rules layer (obfuscation.base64), which rescans through the pipeline.
HOWS = (
    "padding",
    "variation_selectors",
    "leetspeak",
    "separators",
    "concatenation",
    "base32",
    "hex",
    "morse",
    "html_entities",
    "unicode_escapes",
    "binary",
    "char_codes",
    "quoted_printable",
    "ascii85",
    "upside_down",
    "braille",
    "url_encoding",
    "rot13",
    "caesar",
    "reversed",
)


@dataclass(frozen=True)
class View:
    how: str  # which disguise was undone: "leetspeak", "base32", ...
    text: str
    start: int  # span of the original text the view was recovered from
    end: int
    prose_is_finding: bool = False  # decoded prose is itself suspicious for this encoding


# Words common in English instructions: a decoding that produces several of them is real text.
_COMMON = frozenset(
    [
        "the",
        "you",
        "your",
        "and",
        "all",
        "to",
        "of",
        "is",
        "a",
        "in",
        "this",
        "that",
        "it",
        "for",
        "on",
        "with",
        "be",
        "are",
        "as",
        "from",
        "now",
        "send",
        "ignore",
        "previous",
        "instructions",
        "prompt",
        "system",
        "rules",
        "user",
        "reveal",
        "every",
        "any",
        "not",
        "do",
        "print",
        "me",
        "my",
        "forget",
        "disregard",
        "override",
        "obey",
        "follow",
        "chat",
        "conversation",
        "keys",
        "key",
        "password",
        "secret",
        "data",
        "please",
        "must",
        "always",
        "never",
        "new",
        "only",
        "into",
        "at",
        "or",
        "an",
        "by",
        "then",
        "what",
        "out",
        "up",
    ]
)
_WORD = re.compile(r"[a-z]+")
_LEET_WORDS = _COMMON | frozenset(
    [
        "prior",
        "earlier",
        "above",
        "instruction",
        "rules",
        "guidelines",
        "directives",
        "override",
        "bypass",
        "admin",
        "root",
        "hidden",
        "system",
        "assistant",
        "restrictions",
        "filters",
        "policy",
        "safety",
        "approve",
        "execute",
        "run",
        "token",
        "tokens",
        "credentials",
        "history",
        "memory",
        "context",
        "reply",
        "answer",
        "respond",
    ]
)


def _english(text: str) -> int:
    # "a" is left out: text spelled letter by letter ("a n d", "a p p r o v a l s") is full of
    # it, and would read as more English than its own decoding.
    return sum(1 for w in _WORD.findall(text.lower()) if w in _COMMON and w != "a")


def _readable(decoded: str) -> bool:
    if len(decoded) < 8:
        return False
    printable = sum(1 for c in decoded if c.isprintable() or c in "\n\t\r")
    if printable < 0.95 * len(decoded):
        return False
    letters = sum(1 for c in decoded if c.isalpha() or c == " ")
    # A terse order ("disable memory write approval") has no function words; words the scanner
    # knows count as well.
    return letters >= 0.6 * len(decoded) and (_english(decoded) >= 2 or _known(decoded) >= 3)


# --- padding and variation selectors ----------------------------------------------------------

# Characters that render as nothing or as blank space: used to glue words together so that a
# phrase list misses them, or to pad a visible sentence with a hidden one.
_FILLERS = "\u115f\u1160\u3164\uffa0\u2800\u00ad\u180e\u17b4\u17b5"
_FILLER_RUN = re.compile(f"[{_FILLERS}]+")
_VS = re.compile("[\ufe00-\ufe0f\U000e0100-\U000e01ef]{2,}")
_HANGUL = re.compile("[\uac00-\ud7a3]")  # syllables: Korean text, not fillers alone


def _vs_byte(ch: str) -> int:
    cp = ord(ch)
    return cp - 0xFE00 if cp <= 0xFE0F else cp - 0xE0100 + 16


def padding(text: str) -> list[tuple[str, int, int]]:
    """Invisible padding findings: (kind, start, end) in the original text."""
    found: list[tuple[str, int, int]] = []
    if text.isascii():
        return found
    korean = _HANGUL.search(text) is not None
    for m in _FILLER_RUN.finditer(text):
        run = m.group()
        if run == "\u00ad" or (korean and "\u00ad" not in run):
            # One soft hyphen is a hyphenation hint; jamo fillers belong in Korean text.
            continue
        if set(run) == {"\u00ad"} and len(run) < 2:
            continue
        found.append(("padding", m.start(), m.end()))
    for m in _VS.finditer(text):
        # One selector picks an emoji or ideograph form; a run of them spells bytes.
        found.append(("variation_selector", m.start(), m.end()))
    return found


def _padding_views(text: str) -> list[View]:
    views: list[View] = []
    if text.isascii():
        return views
    if _FILLER_RUN.search(text):
        spaced = _FILLER_RUN.sub(lambda m: "" if set(m.group()) == {"\u00ad"} else " ", text)
        views.append(View("padding", spaced, 0, len(text)))
    for m in _VS.finditer(text):
        try:
            hidden = bytes(_vs_byte(c) for c in m.group()).decode("utf-8")
        except (UnicodeDecodeError, ValueError):
            continue
        views.append(View("variation_selectors", hidden, m.start(), m.end(), True))
    return views


# --- letters split or respelled ---------------------------------------------------------------

# A letter next to a digit or sign, on either side ("a1", "1a"); written to start at the sign, so
# that the search skips quickly to the few places where one occurs.
_LEET_GATE = re.compile(r"[0-9@$!|](?:(?<=[a-z].)|(?=[a-z]))", re.IGNORECASE)
_LEET_TOKEN = re.compile(r"(?<![\w$@!|])[a-z0-9][a-z0-9@$!|]*(?![\w$@!|])", re.IGNORECASE)
_LEET = str.maketrans({"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "@": "a",
                       "$": "s", "!": "i", "|": "l", "8": "b", "9": "g"})  # fmt: skip
# One separator repeated between single letters: "i.g.n.o.r.e", "i-g-n-o-r-e", "i g n o r e".
_SPLIT = re.compile(r"(?<![\w])[a-z](?P<sep>[ .\-_*·~|+/\\,:;])(?:[a-z](?P=sep)){2,}[a-z](?![\w])",
                    re.IGNORECASE)  # fmt: skip
# Whether _SPLIT matches at all, found from the first separator: quicker to search for.
_SPLIT_GATE = re.compile(r"([ .\-_*·~|+/\\,:;])(?<=(?<!\w)[a-z].)(?:[a-z]\1){2,}[a-z](?!\w)", re.I)
_CONCAT = re.compile(r"""["'`]\s{0,3}\+\s{0,3}["'`]""")
_UNDERSCORE_WORDS = re.compile(r"[a-z]_[a-z]", re.IGNORECASE)


# A respelled letter has letters after it ("1gn0r3", "4ll"); "ed25519", "x86" and "M3" are names.
_LEET_INSIDE = re.compile(r"[0-9@$!|][a-z]", re.IGNORECASE)


def _is_leet(token: str) -> bool:
    return len(token) >= 3 and _LEET_INSIDE.search(token) is not None


def _reads_as_leet(text: str) -> bool:
    """Two respelled tokens that read as instruction words ("1gn0r3", "pr3v10us"); "k8s" and
    "2fa" in a long note do not make it worth scanning twice."""
    hits = 0
    for token in _LEET_TOKEN.findall(text):
        # Most tokens are plain words, which cannot be respelled (a cheaper test first).
        if token.isalpha():
            continue
        if _is_leet(token) and token.lower().translate(_LEET) in _LEET_WORDS:
            hits += 1
            if hits >= 2:
                return True
    return False


def _respelled_views(text: str) -> list[View]:
    views: list[View] = []
    if _LEET_GATE.search(text) and _reads_as_leet(text):
        leet = _LEET_TOKEN.sub(
            lambda m: m.group().translate(_LEET) if _is_leet(m.group()) else m.group(),
            text,
        )
        if leet != text:
            views.append(View("leetspeak", leet, 0, len(text)))
    if _SPLIT_GATE.search(text):
        joined = _SPLIT.sub(lambda m: m.group().replace(m.group("sep"), ""), text)
        views.append(View("separators", joined, 0, len(text)))
    if "+" in text and _CONCAT.search(text):
        views.append(View("concatenation", _CONCAT.sub("", text), 0, len(text)))
    if text.count("_") >= 3 and text.count(" ") < 3 and len(_UNDERSCORE_WORDS.findall(text)) >= 3:
        views.append(View("separators", text.replace("_", " "), 0, len(text)))
    return views


# --- encodings --------------------------------------------------------------------------------

_B32 = re.compile(r"(?<![A-Za-z0-9])[A-Z2-7]{16,}={0,6}(?![A-Za-z0-9=])")
_HEX = re.compile(r"(?<![0-9a-fA-F])(?:(?:\\x|0x)?[0-9a-fA-F]{2}[ :]?){8,}(?![0-9a-fA-F])")
# Simple shapes searched first: the full patterns are only tried when one is present.
_B32_HINT = re.compile(r"[A-Z2-7]{16}")
# Sixteen hex digits, "\\xNN", or eight pairs split by spaces or colons; the two long forms share
# their first pair, so it is tried once per position.
_HEX_HINT = re.compile(
    r"[0-9a-fA-F]{2}(?:[0-9a-fA-F]{14}|(?:[ :][0-9a-fA-F]{2}){7})|\\x[0-9a-fA-F]{2}"
)
_MORSE_HINT = re.compile(r"[.-] {1,3}(?:/ {1,3})?[.-]{1,7} {1,3}[.-]")
# Character references and escapes as HTML, JSON and most languages write them, eight-bit binary,
# and character codes in decimal (String.fromCharCode, chr() lists): each a text spelled in
# numbers.
_ENTITY = re.compile(r"(?:&#(?:[0-9]{2,7}|[xX][0-9a-fA-F]{2,6});[ ]?){4,}")
_ENTITY_HINT = re.compile(r"&#[xX]?[0-9a-fA-F]{2,7};[ ]?&#")
_UESC = re.compile(r"(?:\\u[0-9a-fA-F]{4}|\\U[0-9a-fA-F]{8}|\\u\{[0-9a-fA-F]{1,6}\}){4,}")
_UESC_HINT = re.compile(r"\\u[0-9a-fA-F{][^\\]{0,8}\\u")
_UESC_ONE = re.compile(r"\\u\{([0-9a-fA-F]{1,6})\}|\\U([0-9a-fA-F]{8})|\\u([0-9a-fA-F]{4})")
_BINARY = re.compile(r"(?<![01])(?:[01]{8}[ ,]?){4,}(?![01])")
_BINARY_HINT = re.compile(r"[01]{8}[ ,]?[01]{8}[ ,]?[01]{8}")
_CODE = r"(?:3[2-9]|[4-9][0-9]|1[01][0-9]|12[0-6])"
_CODES = re.compile(rf"(?<![\d.]){_CODE}(?:(?:, ?| ){_CODE}){{5,}}(?![\d.])")
# Starts at a digit (then looks behind it) so that the search skips to digits quickly.
_CODES_HINT = re.compile(r"\d(?<![\d.]\d)\d{1,2}(?:, ?| )\d{2,3}(?:, ?| )\d{2,3}(?:, ?| )\d{2,3}")
# Quoted-printable (=69=67...), and Ascii85 between its <~ ~> delimiters.
_QP = re.compile(r"(?:=[0-9A-F]{2}){4,}(?:[^\s=]{0,3}(?:=[0-9A-F]{2}){2,})*")
_QP_HINT = re.compile(r"=[0-9A-F]{2}=[0-9A-F]{2}=[0-9A-F]{2}")
_A85 = re.compile(r"<~[!-u\sz]{10,}~>")
_A85_HINT = re.compile(r"<~[!-u]")
_DIGIT = re.compile(r"\d")
_URLENC = re.compile(r"(?:%[0-9a-fA-F]{2}){3,}")
_MORSE = re.compile(r"(?<![\w.-])[.\-]{1,7}(?:(?: {1,3}/ {1,3}| {1,3})[.\-]{1,7}){5,}(?![\w.-])")
_MORSE_CODE = {
    ".-": "a", "-...": "b", "-.-.": "c", "-..": "d", ".": "e", "..-.": "f", "--.": "g",
    "....": "h", "..": "i", ".---": "j", "-.-": "k", ".-..": "l", "--": "m", "-.": "n",
    "---": "o", ".--.": "p", "--.-": "q", ".-.": "r", "...": "s", "-": "t", "..-": "u",
    "...-": "v", ".--": "w", "-..-": "x", "-.--": "y", "--..": "z", "-----": "0",
    ".----": "1", "..---": "2", "...--": "3", "....-": "4", ".....": "5",
}  # fmt: skip


def _b32(blob: str) -> str | None:
    core = blob.rstrip("=")
    try:
        return base64.b32decode(core + "=" * (-len(core) % 8)).decode("utf-8")
    except (binascii.Error, ValueError):
        return None


def _hex(blob: str) -> str | None:
    digits = re.sub(r"\\x|0x|[ :]", "", blob)
    if len(digits) % 2:
        digits = digits[:-1]
    try:
        return bytes.fromhex(digits).decode("utf-8")
    except ValueError:
        return None


def _morse(blob: str) -> str | None:
    words = re.split(r" {1,3}/ {1,3}", blob)
    out = []
    for word in words:
        letters = [_MORSE_CODE.get(code) for code in word.split()]
        if None in letters:
            return None
        out.append("".join(letters))  # type: ignore[arg-type]
    return " ".join(out)


def _entities(blob: str) -> str | None:
    return html.unescape(blob.replace("; &#", ";&#"))


def _escapes(blob: str) -> str | None:
    def one(m: re.Match[str]) -> str:
        code = int(next(g for g in m.groups() if g), 16)
        return chr(code) if code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF else "\ufffd"

    return _UESC_ONE.sub(one, blob)


def _binary(blob: str) -> str | None:
    bits = re.sub(r"[ ,]", "", blob)
    try:
        return bytes(int(bits[i : i + 8], 2) for i in range(0, len(bits) - 7, 8)).decode("utf-8")
    except ValueError:
        return None


def _codes(blob: str) -> str | None:
    return "".join(chr(int(n)) for n in re.findall(r"\d+", blob))


def _quoted_printable(blob: str) -> str | None:
    try:
        return quopri.decodestring(blob.encode("ascii")).decode("utf-8")
    except (ValueError, UnicodeError):
        return None


def _ascii85(blob: str) -> str | None:
    try:
        return base64.a85decode(blob.encode("ascii"), adobe=True, ignorechars=b" \t\n\r").decode(
            "utf-8"
        )
    except (ValueError, UnicodeError):
        return None


# Each encoding with a test cheaper than its hint, on what the text must hold for the hint to
# match at all: hex, binary and character codes need a digit, morse a dash, the others their
# marker. Most texts pass none of them, and then no hint is searched.
_ENCODINGS: tuple[
    tuple[
        str,
        re.Pattern[str],
        Callable[[str], str | None],
        re.Pattern[str],
        Callable[[str, bool], bool],
    ],
    ...,
] = (
    ("base32", _B32, _b32, _B32_HINT, lambda text, digit: True),
    ("hex", _HEX, _hex, _HEX_HINT, lambda text, digit: digit),
    ("morse", _MORSE, _morse, _MORSE_HINT, lambda text, digit: "-" in text),
    ("html_entities", _ENTITY, _entities, _ENTITY_HINT, lambda text, digit: "&#" in text),
    ("unicode_escapes", _UESC, _escapes, _UESC_HINT, lambda text, digit: "\\u" in text),
    ("binary", _BINARY, _binary, _BINARY_HINT, lambda text, digit: digit),
    ("char_codes", _CODES, _codes, _CODES_HINT, lambda text, digit: digit),
    ("quoted_printable", _QP, _quoted_printable, _QP_HINT, lambda text, digit: "=" in text),
    ("ascii85", _A85, _ascii85, _A85_HINT, lambda text, digit: "<~" in text),
)


def _encoded_views(text: str) -> list[View]:
    views: list[View] = []
    digit = _DIGIT.search(text) is not None
    for how, pattern, decode, hint, may_hold in _ENCODINGS:
        if not may_hold(text, digit) or hint.search(text) is None:
            continue
        for m in pattern.finditer(text):
            decoded = decode(m.group().strip())
            if decoded is not None and _readable(decoded):
                views.append(View(how, decoded, m.start(), m.end(), True))
    if "%" in text and _URLENC.search(text):
        decoded = urllib.parse.unquote(text)
        if decoded != text:
            views.append(View("url_encoding", decoded, 0, len(text)))
    return views


# Any of these and the text reads forwards already (checked before counting words).
_FORWARD = (" the ", " you ", " and ", " to ", " of ", " is ", " in ", " for ", " with ")


def _rearranged_views(text: str) -> list[View]:
    """ROT13 and text written backwards: kept when they read as English and the text does not."""
    views: list[View] = []
    if any(w in text for w in _FORWARD):
        return views
    words = len(_WORD.findall(text.lower()))
    if words < 3:
        return views
    plain = _english(text)
    if plain * 4 >= words:
        return views
    for how, candidate in (("rot13", codecs.encode(text, "rot13")), ("reversed", text[::-1])):
        if _english(candidate) >= max(3, plain + 2):
            views.append(View(how, candidate, 0, len(text)))
    if not views:
        views.extend(_caesar_views(text))
    return views


_LOWER = string.ascii_lowercase
_SHIFTS = tuple(
    str.maketrans(
        _LOWER + _LOWER.upper(), _LOWER[k:] + _LOWER[:k] + (_LOWER[k:] + _LOWER[:k]).upper()
    )
    for k in range(1, 26)
)


@functools.cache
def _vocabulary() -> frozenset[str]:
    """Words the scanner knows: the instruction words above and every longer word the model was
    trained on (attack and benign alike), so that a decoding can be told from noise."""
    return _LEET_WORDS | frozenset(w for w in model.vocabulary() if len(w) >= 4 and w.isascii())


def _known(text: str) -> int:
    vocab = _vocabulary()
    return sum(1 for w in _WORD.findall(text.lower()) if w in vocab)


def _caesar_views(text: str) -> list[View]:
    # ROT13 is one of 25 shifts; "uhvsrqg zlwkrxw vdihwb" is ROT3. Trying all 25 would cost more
    # than the rest of the scan, so the shifts tried are those that turn the text's commonest
    # letters into English's commonest (e, t, a, o), and one is kept when most of its words
    # become words the scanner knows.
    plain = _known(text)
    if plain * 3 >= len(_WORD.findall(text.lower())):
        return []  # it reads already
    lower = text.lower()
    counts = sorted(((lower.count(c), c) for c in set(lower) if "a" <= c <= "z"), reverse=True)
    letters = sum(n for n, _ in counts)
    if letters < 12 or letters < 0.6 * len(text.replace(" ", "")):
        return []
    shifts = dict.fromkeys(
        (ord(target) - ord(c)) % 26
        for (_n, c), targets in zip(counts[:2], ("etao", "et"), strict=False)
        for target in targets
    )
    best, best_known = "", plain
    for k in shifts:
        if k == 0 or k == 13:  # unshifted, and ROT13 which is tried with its own name
            continue
        candidate = text.translate(_SHIFTS[k - 1])
        known = _known(candidate)
        if known > best_known:
            best, best_known = candidate, known
    if best and best_known >= max(3, 2 * plain + 2):
        return [View("caesar", best, 0, len(text))]
    return []


# Letters turned upside down (the text then also reads right to left) and Grade 1 braille: other
# alphabets for the same words, undone by a table.
_FLIPPED = "ɐɔǝɟƃɥᴉɾʞןɯɹʇʌʍʎ"
_UNFLIP = str.maketrans(
    {**dict(zip(_FLIPPED, "acefghijklmrtvwy", strict=True)), "ı": "i", "q": "b", "b": "q",
     "p": "d", "d": "p", "u": "n", "n": "u", "¡": "!", "¿": "?", "˙": ".", "'": ",", ",": "'"}
)  # fmt: skip
_BRAILLE = str.maketrans(
    dict(zip("⠁⠃⠉⠙⠑⠋⠛⠓⠊⠚⠅⠇⠍⠝⠕⠏⠟⠗⠎⠞⠥⠧⠺⠭⠽⠵⠀", "abcdefghijklmnopqrstuvwxyz ", strict=True))
)


def _letterlike_views(text: str) -> list[View]:
    if text.isascii():
        return []
    views: list[View] = []
    if sum(text.count(c) for c in _FLIPPED) >= 4:
        views.append(View("upside_down", text.translate(_UNFLIP)[::-1], 0, len(text)))
    if sum(1 for c in text if "\u2801" <= c <= "\u28ff") >= 6:
        views.append(View("braille", text.translate(_BRAILLE), 0, len(text)))
    return views


def views(text: str) -> list[View]:
    """Every disguise found in ``text``, undone (at most a few, each of bounded size)."""
    found = [
        *_padding_views(text),
        *_respelled_views(text),
        *_encoded_views(text),
        *_rearranged_views(text),
        *_letterlike_views(text),
    ]
    # Further disguises (:mod:`.decoders`), each behind its own cheap gate, kept when the
    # decoding reads as more English than the text did.
    candidates = decoders.candidates(text, _LEET_WORDS)
    if candidates:
        seen = {view.text for view in found}
        plain = _english(text)
        for how, decoded in candidates:
            if decoded not in seen and _english(decoded) >= max(2, plain + 2):
                found.append(View(how, decoded, 0, len(text)))
    if not found:
        return found  # most texts: nothing to undo
    out = []
    for view in found[:_MAX_VIEWS]:
        if view.text and view.text != text:
            if len(view.text) > _MAX_VIEW_CHARS:
                view = View(view.how, view.text[:_MAX_VIEW_CHARS], view.start, view.end,
                            view.prose_is_finding)  # fmt: skip
            out.append(view)
    return out


def is_prose(decoded: str) -> bool:
    """Several words of ordinary language: no reason to be hidden in an encoding."""
    return len(decoded.split()) >= 4 and _english(decoded) >= 2
