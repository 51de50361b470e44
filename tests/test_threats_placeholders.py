"""One test of what stands where a secret goes, asked by every secret check."""

from __future__ import annotations

import pytest

from engine.memory import threats
from engine.memory.threats import placeholders


@pytest.mark.parametrize(
    "value",
    ["changeme", "<your key>", "$OPENAI_API_KEY", "os.environ['TOKEN']", "getpass.getpass()",
     "xxxx-xxxx", "********", "API_KEY_HERE", "see-1password-entry", "12345678",
     "https://vault.internal/secret/db", "ops@example.com", "todo", "replace_me"],
)  # fmt: skip
def test_values_that_stand_for_a_secret_are_placeholders(value: str) -> None:
    assert placeholders.is_placeholder(value)


@pytest.mark.parametrize("value", ["hunter2-Blue!9", "Zq8#kLm2pVw4", "s3cr3tP@ssw0rd2024"])
def test_written_secrets_are_not_placeholders(value: str) -> None:
    assert not placeholders.is_placeholder(value)


@pytest.mark.parametrize(
    ("assigned", "kept"),
    [
        # The same values through the rules' assignment and the signals' keyed value.
        ("password = changeme", False),
        ("db password: $DB_PASSWORD", False),
        ("Passwort: API_KEY_HERE", False),
        ("config: secret=API_KEY_HERE", False),
        ("password = Zq8#kLm2pVw4", True),
        ("Passwort: Zq8#kLm2pVw4x", True),
    ],
)
def test_every_secret_check_asks_the_same_question(assigned: str, kept: bool) -> None:
    assert ("secret" in threats.scan(assigned).categories) is kept


def test_filler_and_documented_samples_are_written_to_be_read() -> None:
    assert placeholders.written_to_be_read("ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "")
    assert placeholders.written_to_be_read("AKIAIOSFODNN7EXAMPLE", "the docs' sample key:")
    assert not placeholders.written_to_be_read("AKIAIOSFODNN7EXAMPLE", "prod key:")
