"""The scanner's data model: a finding, a verdict, and the placeholder shown for a blocked entry.

Kept apart from the detectors so that importing the scanner's types (as ``cairn memory show`` and
the prompt builder do) costs nothing: rules are compiled and the model is loaded on first scan.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, computed_field, field_validator

CATEGORIES = (
    "injection",
    "exfiltration",
    "persistence",
    "secret",
    "invisible_unicode",
    "obfuscation",
)
# Which layer of the scanner decided: a named rule on the normalised text, a rule that fired on
# text decoded or unfolded from a disguise, a structural signal (who is addressed, what is asked
# for), or the linear model scoring what no rule names.
LAYERS = ("rules", "normalise", "signals", "model")
BLOCKED_PREFIX = "[BLOCKED:"


class Finding(BaseModel):
    """One match: which rule fired, which layer it belongs to, where in the caller's text."""

    model_config = ConfigDict(frozen=True)

    id: str
    category: str
    start: int
    end: int
    excerpt: str
    layer: str = "rules"

    @field_validator("category")
    @classmethod
    def _known_category(cls, value: str) -> str:
        if value not in CATEGORIES:
            raise ValueError(f"unknown category {value!r}")
        return value

    @field_validator("layer")
    @classmethod
    def _known_layer(cls, value: str) -> str:
        if value not in LAYERS:
            raise ValueError(f"unknown layer {value!r}")
        return value


class Verdict(BaseModel):
    """The scanner's decision for one entry; any finding blocks it."""

    model_config = ConfigDict(frozen=True)

    blocked: bool
    findings: list[Finding]

    @computed_field  # type: ignore[prop-decorator]
    @property
    def categories(self) -> list[str]:
        return sorted({f.category for f in self.findings})

    @computed_field  # type: ignore[prop-decorator]
    @property
    def layers(self) -> list[str]:
        """The layers that decided, in the order the scanner runs them."""
        found = {f.layer for f in self.findings}
        return [layer for layer in LAYERS if layer in found]


def placeholder(verdict: Verdict) -> str:
    """Text shown instead of a blocked entry, naming why it was withheld."""
    if not verdict.blocked:
        raise ValueError("placeholder() is only meaningful for a blocked verdict")
    cats = ", ".join(verdict.categories) or "unknown"
    return f"{BLOCKED_PREFIX} entry withheld ({cats}) — inspect it with `cairn memory show`]"
