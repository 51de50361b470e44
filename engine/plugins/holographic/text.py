"""Words, keywords and entity names as the fact store compares them."""

from __future__ import annotations

import re

__all__ = [
    "NEGATIONS",
    "STOPWORDS",
    "capitalised_names",
    "entity_key",
    "keywords",
    "ngrams",
    "stem",
    "words",
]

_WORD = re.compile(r"\w+(?:[.+#-]\w+)*")
_CONTRACTIONS = (
    (re.compile(r"\bcan[’']t\b", re.IGNORECASE), "can not"),
    (re.compile(r"\bwon[’']t\b", re.IGNORECASE), "will not"),
    (re.compile(r"n[’']t\b", re.IGNORECASE), " not"),
    (re.compile(r"[’']s\b", re.IGNORECASE), ""),
)

NEGATIONS = frozenset({"not", "no", "never", "none", "nobody", "nothing", "neither", "nor"})

# Function words carry no topic; "not" and friends are kept apart (NEGATIONS), since they are
# what turns a fact into its opposite.
_STOPWORD_TEXT = """
    a about above after again against all also am an and any are as at be because been before
    being below between both but by could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself of off on once only or other our ours ourselves out
    over own same she should so some such than that the their theirs them themselves then
    there these they this those through to too under until up very was we were what when
    where which while who whom why will with would you your yours yourself yourselves can
    s t
    """
STOPWORDS = frozenset(_STOPWORD_TEXT.split())


def words(text: str) -> list[str]:
    """The casefolded words of ``text``; "doesn't" reads as "does not", "Bram's" as "bram"."""
    for pattern, replacement in _CONTRACTIONS:
        text = pattern.sub(replacement, text)
    return _WORD.findall(text.casefold())


def stem(word: str) -> str:
    """A light suffix stripper: enough for "deploys"/"deploy" and "libraries"/"library"."""
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "shes", "ches", "xes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    if word.endswith("ing") and len(word) > 5:
        return word[:-3]
    if word.endswith("ed") and len(word) > 4:
        return word[:-2]
    return word


def keywords(text: str, *, keep_negations: bool = False) -> list[str]:
    """Stems of the topic words of ``text``, in order, repeats kept."""
    kept = []
    for word in words(text):
        if word in NEGATIONS:
            if keep_negations:
                kept.append(word)
            continue
        if word in STOPWORDS:
            continue
        kept.append(stem(word))
    return kept


def entity_key(name: str) -> str:
    """The form entity names are matched in: "Alice  Moreau" and "alice moreau" are one."""
    return " ".join(words(name))


def ngrams(tokens: list[str], longest: int = 4) -> set[str]:
    """Every run of 1..``longest`` consecutive tokens, space-joined."""
    found = set()
    for size in range(1, longest + 1):
        for start in range(len(tokens) - size + 1):
            found.add(" ".join(tokens[start : start + size]))
    return found


_NAME_PART = re.compile(r"[A-Z][\w.+#-]*|[A-Za-z]*[A-Z][\w.+#-]*")
# Capitalised only because they begin a sentence, or too common to be names.
_NOT_NAMES = STOPWORDS | {"user", "users", "project", "team", "yes", "ok"}


def capitalised_names(text: str, *, sentence_initial: bool = True) -> list[str]:
    """Likely names in ``text``: runs of capitalised words ("Alice Moreau", "PostgreSQL").

    A single plain capitalised word opening a sentence ("Sprint retrospectives …") is usually
    an ordinary word; ``sentence_initial=False`` leaves those out (a word with more capitals or
    digits, like "PostgreSQL" or "A100", is kept wherever it stands).
    """
    names: list[str] = []
    run: list[str] = []
    run_opens_sentence = False
    opens_sentence = True

    def close() -> None:
        plain = len(run) == 1 and run[0][1:].islower()
        if run and (sentence_initial or not (run_opens_sentence and plain)):
            names.append(" ".join(run))
        run.clear()

    for token in re.findall(r"[\w.+#-]+|[^\w\s]", text):
        ends_sentence = token in (".", "!", "?", ":") or token.endswith(".")
        token = token.rstrip(".")
        if token and _NAME_PART.fullmatch(token) and token.casefold() not in _NOT_NAMES:
            if not run:
                run_opens_sentence = opens_sentence
            run.append(token)
        else:
            close()
        opens_sentence = ends_sentence
        if ends_sentence:
            close()
    close()
    seen: set[str] = set()
    unique = []
    for name in names:
        key = entity_key(name)
        if key and key not in seen:
            seen.add(key)
            unique.append(name)
    return unique
