"""Runs the scanner's layers in order and merges their findings.

1. ``rules`` and ``signals`` on the normalised text (one normalisation, one prefilter pass each);
2. ``normalise``: every disguise :mod:`.unfold` can undo is scanned again by the whole scanner
   (depth-limited and budgeted), findings reported at the disguised span;
3. ``model``: when nothing above fired, the linear model scores the text and its views.

Security work quotes attacks ("'ignore previous instructions' appears in their test corpus").
When every finding sits inside quotation marks, the text around the quotes talks *about* them
(phrase, payload, corpus, detector...) and that text is itself clean, the quoted findings are
dropped: the entry mentions an attack, it does not make one.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from engine.memory.threats import model, rules, signals, unfold
from engine.memory.threats.verdict import Finding


def _signals_into(norm: rules._Norm, collector: rules._Collector) -> None:
    def emit(rule_id: str, category: str, start: int, end: int, on_case: bool = False) -> None:
        s, e = rules._span(norm.cp_map if on_case else norm.lc_map, start, end)
        collector.add(rule_id, category, s, e, layer="signals")

    signals.run(norm.cp, norm.lc, emit)


def _views_into(text: str, budget: rules._Budget, collector: rules._Collector) -> None:
    for view in unfold.views(text):
        if not budget.take(len(view.text)):
            collector.add("obfuscation.decode_flood", "obfuscation", view.start, view.end,
                          layer="normalise")  # fmt: skip
            return
        # The model reads sentences; a respelled identifier ("OPENAI_API_KEY" read as words) is
        # not one, so only decoded text is given to it.
        inner = _findings(view.text, budget.nested(), use_model=view.how not in _RESPELLED)
        if view.how in _RESPELLED:
            # Read as letters, random tokens look like secrets, and invisible characters were
            # already reported on the text itself; only instructions count here.
            inner = [f for f in inner if f.category not in ("secret", "invisible_unicode")]
        known = {f.id for f in collector.findings}
        inner = [f for f in inner if f.id not in known]
        flagged = [f for f in inner if f.category != "obfuscation" or f.layer != "rules"]
        if not inner and not (view.prose_is_finding and unfold.is_prose(view.text)):
            continue
        collector.add(f"obfuscation.{view.how}", "obfuscation", view.start, view.end,
                      layer="normalise")  # fmt: skip
        for f in flagged or inner:
            collector.add(f.id, f.category, view.start, view.end, layer="normalise")


# Sentence ends and line breaks: the model judges one statement at a time, so that a long
# persona paragraph full of "you" and "the user" is not mistaken for an instruction, a heading is
# not read together with the command under it, and a finding points at what earned it.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n")  # the normalised text keeps one "\n" per break


def _model_into(text: str, norm: rules._Norm, collector: rules._Collector) -> None:
    lc = norm.lc
    if _SENTENCE_END.search(lc.rstrip()) is None:
        hit = model.judge(lc)
        if hit is not None:
            collector.add(f"{hit}.model", hit, 0, len(text), layer="model")
        return
    start = 0
    for m in [*_SENTENCE_END.finditer(lc), None]:
        end = m.start() if m is not None else len(lc)
        if lc[start:end].strip():
            hit = model.judge(lc[start:end])
            if hit is not None:
                s, e = rules._span(norm.lc_map, start, end)
                collector.add(f"{hit}.model", hit, s, e, layer="model")
        if m is not None:
            start = m.end()


_RESPELLED = frozenset({"padding", "leetspeak", "separators", "concatenation"})


def _findings(text: str, budget: rules._Budget, use_model: bool = True) -> list[Finding]:
    collector = rules._Collector(text)
    norm = rules._normalise(text)
    rules.scan_into(text, norm, budget, collector)
    _signals_into(norm, collector)
    for kind, start, end in unfold.padding(text):
        collector.add(f"invisible_unicode.{kind}", "invisible_unicode", start, end,
                      layer="normalise")  # fmt: skip
    if budget.depth < rules._MAX_DEPTH:
        _views_into(text, budget, collector)
    if use_model and not collector.findings:
        _model_into(text, norm, collector)
    found = collector.findings
    if found and budget.depth == 0:
        found = _drop_quoted_mentions(text, found)
    found.sort(key=lambda f: (f.start, f.end, f.id))
    return found


rules.rescan = lambda text, budget: _findings(text, budget)


def findings(text: str) -> list[Finding]:
    return _findings(text, rules._Budget())


# --- quoted attacks in security work ------------------------------------------------------------

_QUOTED = re.compile(
    r"""(?<!\w)'[^'\n]{4,200}'(?!\w)|"[^"\n]{4,200}"|“[^”\n]{4,200}”|‘[^’\n]{4,200}’|`[^`\n]{4,200}`"""
)
_MENTION = re.compile(
    r"""\b(?:phrases?|strings?|payloads?|examples?|corpus|corpora|detectors?|detects?|tests?
    |testing|such\s+as|like|lists?|quotes?|quoted|says|said|called|e\.g\.|appears?|contains?
    |blocks?|flag(?:s|ged)?|jailbreaks?|attacks?|attackers?|patterns?|samples?|research\w*|papers?
    |reports?|red[- ]team\w*|phishing|injections?|classifier|dataset|mentions?|why|warns?
    |training|workshop|slides?|talk|moderation|filter\w*)\b""",
    re.VERBOSE | re.IGNORECASE,
)
_MENTIONABLE = frozenset({"injection", "exfiltration", "persistence"})


def _drop_quoted_mentions(text: str, found: list[Finding]) -> list[Finding]:
    if not any(q in text for q in "'\"“‘`"):
        return found
    quotes = [m.span() for m in _QUOTED.finditer(text)]
    if not quotes:
        return found

    def quoted(f: Finding) -> bool:
        return f.category in _MENTIONABLE and any(s <= f.start and f.end <= e for s, e in quotes)

    if not all(quoted(f) for f in found):
        return found
    outside = _QUOTED.sub(" \u2026 ", text)
    if not _MENTION.search(outside) or _findings(outside, rules._Budget(depth=1)):
        return found
    return []


def rule_ids() -> Iterator[str]:
    fixed = (
        "injection.hidden_comment",
        "obfuscation.forged_marker",
        "obfuscation.mixed_script",
        "obfuscation.base64",
        "obfuscation.base64_flood",
        "obfuscation.encoded_prose",
        "obfuscation.decode_flood",
        "invisible_unicode.zero_width",
        "invisible_unicode.bidi",
        "invisible_unicode.tag",
        "invisible_unicode.padding",
        "invisible_unicode.variation_selector",
    )
    views = (f"obfuscation.{how}" for how in unfold.HOWS)
    models = (f"{category}.model" for category in model.CLASSES)
    yield from dict.fromkeys([*rules.rule_ids(), *signals.ids(), *fixed, *views, *models])
