"""config.yaml as hostile or unlucky input: huge files, alias bombs, secrets pasted in the wrong
place, words another tool writes; and Cairn's own writes, which change only the changed key."""

from __future__ import annotations

import difflib
import time

import pytest

from engine.cli import main
from engine.config import MAX_CONFIG_BYTES, ConfigError, load_config, update_config
from engine.home import Home


def write(home: Home, text: str) -> None:
    home.root.mkdir(parents=True, exist_ok=True)
    home.config_file.write_text(text, encoding="utf-8")


def refused(home: Home) -> str:
    with pytest.raises(ConfigError) as err:
        load_config(home)
    return str(err.value)


def alias_bomb(levels: int, key: str = "memory_char_limit") -> str:
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for n in range(1, levels + 1):
        lines.append(f"a{n}: &a{n} [" + ", ".join([f"*a{n - 1}"] * 9) + "]")
    lines.append(f"memory:\n  {key}: *a{levels}")
    return "\n".join(lines) + "\n"


def test_a_huge_config_is_refused_at_once(home: Home, capsys: pytest.CaptureFixture[str]) -> None:
    """Tried: a config.yaml of more than the cap (a 50 MB one took 82 s on every command).
    The user sees one line saying it is too large, at once."""
    write(home, "memory:\n  memory_char_limit: 2200\n" + "# padding\n" * (MAX_CONFIG_BYTES // 10))
    started = time.process_time()
    code = main(["memory", "show", "--home", str(home.root)])
    assert time.process_time() - started < 5  # generous: parsing it would take far longer
    err = capsys.readouterr().err
    assert code == 1 and "larger than" in err and err.count("\n") == 1


@pytest.mark.parametrize("levels", [7, 9])
def test_an_alias_bomb_is_refused_without_expanding_it(
    home: Home, capsys: pytest.CaptureFixture[str], levels: int
) -> None:
    """Tried: nested aliases in a validated key (35 MB of error output at 7 levels, 1.2 GB and a
    hang at 9). The user sees one short line; nothing is expanded."""
    write(home, alias_bomb(levels))
    started = time.process_time()
    code = main(["memory", "show", "--home", str(home.root)])
    assert time.process_time() - started < 5
    err = capsys.readouterr().err
    assert code == 1 and "aliases" in err and len(err) < 500


def test_thousands_of_alias_uses_are_refused(home: Home) -> None:
    """Tried: one anchor used 5,000 times. Refused as too many aliases, naming the line."""
    write(home, "x: &x 1\nmany: [" + ", ".join(["*x"] * 5000) + "]\n")
    message = refused(home)
    assert "more than" in message and "aliases" in message and "line" in message


def test_a_value_that_refers_to_itself_is_refused(home: Home) -> None:
    """Tried: a list that contains itself through an alias (`&a [*a]`). A clear refusal."""
    write(home, "loop: &a [1, *a]\n")
    assert "refers to itself" in refused(home)


def test_a_long_bad_value_is_clipped_in_the_error(home: Home) -> None:
    """Tried: 10,000 characters where a number belongs. The error names the key and quotes a
    clipped piece, not the whole value."""
    write(home, "memory:\n  memory_char_limit: " + "x" * 10_000 + "\n")
    message = refused(home)
    assert "memory.memory_char_limit" in message and len(message) < 500


@pytest.mark.parametrize(
    "text",
    [
        "memory:\n  memory_char_limit: ghp_abcdefghijklmnopqrstuvwxyz0123456789\n",
        "model:\n  timeout: sk-proj-Zx81hQk2LmN0pQrStUvWxYz0123456789abcd\n",
        "model:\n  context_length: AKIAIOSFODNN7EXAMPLEKEY\n",
    ],
    ids=["github", "openai", "aws"],
)
def test_a_secret_pasted_into_a_setting_is_never_echoed(home: Home, text: str) -> None:
    """Tried: an API token pasted where a number belongs (the old error quoted it back, into
    terminals, logs and bug reports). The error names the key and hides the value."""
    write(home, text)
    secret = text.split(": ", 1)[1].strip()
    message = refused(home)
    assert secret not in message and secret[:12] not in message
    assert "looks like a secret" in message


@pytest.mark.parametrize("word", ["approve", "Approve", "on", "yes", "required"])
def test_approval_words_another_tool_writes_mean_on(home: Home, word: str) -> None:
    """Tried: `memory.write_approval: approve` as the reference writes it (Cairn refused to
    start). Read as on."""
    write(home, f"memory:\n  write_approval: {word}\n")
    assert load_config(home).memory.write_approval is True


def test_an_unknown_approval_word_means_off_with_a_warning(
    home: Home, caplog: pytest.LogCaptureFixture
) -> None:
    """Tried: `memory.write_approval: sometimes`. Cairn starts, approval is off, and a warning
    (stderr, in a terminal) says the word is unknown."""
    write(home, "memory:\n  write_approval: sometimes\n")
    assert load_config(home).memory.write_approval is False
    assert main(["memory", "show", "--home", str(home.root)]) == 0
    assert "'sometimes' is not a known word" in caplog.text


SHARED = """\
# Shared by two tools — keep these notes!
model:
  default: "nous/hermes-4-70b"   # the main model
  provider: openrouter
toolsets:
    - web      # browsing
    - terminal
memory:
  memory_enabled: yes
  # raise this when the file fills up
  memory_char_limit: 2200
  write_approval: approve
display: {skin: mono, memory_notifications: 'verbose'}
unknown_tool_section:
  nested: {keep: 'me', order: [3, 1, 2]}
"""


def test_a_config_write_changes_only_the_changed_key(
    home: Home, capsys: pytest.CaptureFixture[str]
) -> None:
    """Tried: `cairn memory approval off` on a commented, hand-formatted config.yaml shared
    with another tool (the old writer stripped comments, turned `yes` into `true` and
    re-indented lists). Exactly one line differs: the changed key."""
    write(home, SHARED)
    assert main(["memory", "approval", "off", "--home", str(home.root)]) == 0
    after = home.config_file.read_text("utf-8")
    changed = [
        line
        for line in difflib.ndiff(SHARED.splitlines(), after.splitlines())
        if line.startswith(("+ ", "- "))
    ]
    assert changed == ["-   write_approval: approve", "+   write_approval: false"]
    capsys.readouterr()


def test_a_new_key_is_added_and_everything_else_kept(home: Home) -> None:
    """Tried: an update adding keys to an existing section and a new one. The old text is
    all still there, line for line, in order."""
    write(home, SHARED)
    update_config(home, {"memory": {"user_char_limit": 1500}, "compression": {"threshold": 0.6}})
    after = home.config_file.read_text("utf-8").splitlines()
    kept = [line for line in after if line in SHARED.splitlines()]
    assert kept == [line for line in SHARED.splitlines() if line in after]
    assert len(kept) == len(SHARED.splitlines())
    config = load_config(home)
    assert config.memory.user_char_limit == 1500 and config.compression.threshold == 0.6


def test_every_yaml_file_cairn_reads_is_bounded(
    home: Home, capsys: pytest.CaptureFixture[str]
) -> None:
    """Tried: the 9-level alias bomb as cron/jobs.yaml (`cairn cron list`) and as a profile's
    config.yaml (`cairn profile list`, which peeks into each profile). Neither expands it:
    cron list is a one-line error; profile list lists the profile with the problem."""
    bomb = alias_bomb(9)
    home.cron_dir.mkdir(parents=True)
    (home.cron_dir / "jobs.yaml").write_text(bomb, encoding="utf-8")
    started = time.process_time()
    code = main(["cron", "list", "--home", str(home.root)])
    err = capsys.readouterr().err
    assert code == 1 and "aliases" in err and err.count("\n") == 1
    work = home.profiles_dir / "work"
    work.mkdir(parents=True)
    (work / "config.yaml").write_text(bomb, encoding="utf-8")
    code = main(["profile", "list", "--json", "--home", str(home.root)])
    out = capsys.readouterr().out
    assert code == 0 and "aliases" in out
    assert time.process_time() - started < 10


def test_a_word_yaml_1_1_reads_as_a_boolean_is_written_quoted(home: Home) -> None:
    """Tried: `display.memory_notifications: 'off'` written by Cairn into a commented config.
    A YAML 1.2 writer leaves `off` bare, which this file's YAML 1.1 reader takes for False
    (an invalid value, so Cairn would refuse its own file). It must read back as written, with
    the comments kept."""
    from engine.config import load_config, update_config

    home.root.mkdir(parents=True, exist_ok=True)
    home.config_file.write_text("# shared file\ndisplay:\n  memory_notifications: on  # chatty\n")
    update_config(home, {"display": {"memory_notifications": "off"}})
    assert load_config(home).display.memory_notifications == "off"
    text = home.config_file.read_text()
    assert "# shared file" in text and "# chatty" in text
    update_config(home, {"display": {"memory_notifications": "verbose"}})
    assert load_config(home).display.memory_notifications == "verbose"


def test_deeply_nested_yaml_is_a_clear_refusal(home: Home) -> None:
    """Tried: a config.yaml of 3,000 nested lists (far under the size cap). The YAML reader
    recursed past Python's limit and the error escaped every memory read as a bug."""
    from engine.config import ConfigError, load_config

    home.root.mkdir(parents=True, exist_ok=True)
    home.config_file.write_text("memory: " + "[" * 3000 + "]" * 3000 + "\n")
    with pytest.raises(ConfigError) as err:
        load_config(home)
    assert "nested too deeply" in str(err.value)
