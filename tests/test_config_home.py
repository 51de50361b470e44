"""Home resolution, profiles and config.yaml: precedence, validation, unknown keys kept."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from engine.config import ConfigError, load_config, update_config
from engine.home import Home, HomeError, resolve_home


def test_home_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    env = {"CAIRN_HOME": str(tmp_path / "env")}
    assert resolve_home(tmp_path / "flag", environ=env).root == tmp_path / "flag"
    assert resolve_home(None, environ=env).root == tmp_path / "env"
    assert resolve_home(None, environ={}).root == tmp_path / "user" / ".cairn"


def test_profiles_are_separate_homes(tmp_path: Path) -> None:
    home = resolve_home(tmp_path, "work", environ={})
    assert home.root == tmp_path / "profiles" / "work"
    assert home.memories_dir == tmp_path / "profiles" / "work" / "memories"


@pytest.mark.parametrize("name", ["", "Work", "-x", "../evil", "a/b", "x" * 65, "é", "a b"])
def test_bad_profile_names_are_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(HomeError):
        resolve_home(tmp_path, name, environ={})


def test_home_that_is_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(HomeError, match="not a folder"):
        resolve_home(tmp_path / "file", environ={})


def test_defaults_without_a_file(tmp_path: Path) -> None:
    config = load_config(Home(tmp_path))
    assert config.memory.memory_char_limit == 2200
    assert config.memory.user_char_limit == 1375
    assert config.memory.write_approval is False
    assert config.memory.nudge_interval == 10
    assert config.display.memory_notifications == "on"


def test_yaml_on_off_words_mean_notification_modes(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text("display:\n  memory_notifications: off\n")
    assert load_config(Home(tmp_path)).display.memory_notifications == "off"


def test_invalid_value_names_key_and_file(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("memory:\n  memory_char_limit: lots\n")
    with pytest.raises(ConfigError) as err:
        load_config(Home(tmp_path))
    assert "memory.memory_char_limit" in str(err.value)
    assert str(path) in str(err.value)


@pytest.mark.parametrize(
    "text, fragment",
    [("memory: [1, 2", "not valid YAML at line"), ("- a\n- b\n", "must be a mapping")],
)
def test_malformed_yaml_is_a_clear_error(tmp_path: Path, text: str, fragment: str) -> None:
    (tmp_path / "config.yaml").write_text(text)
    with pytest.raises(ConfigError, match=fragment):
        load_config(Home(tmp_path))


HERMES_CONFIG = """\
model:
  default: nous/hermes-4-70b
  provider: openrouter
terminal:
  backend: docker
memory:
  memory_enabled: true
  memory_char_limit: 2200
  provider: holographic
  honcho:
    recallMode: hybrid
display:
  memory_notifications: verbose
  skin: mono
"""


def test_update_keeps_every_unknown_key(tmp_path: Path) -> None:
    home = Home(tmp_path)
    home.config_file.write_text(HERMES_CONFIG)
    update_config(home, {"memory": {"write_approval": True}})
    import yaml

    saved = yaml.safe_load(home.config_file.read_text())
    original = yaml.safe_load(HERMES_CONFIG)
    original["memory"]["write_approval"] = True
    assert saved == original


def test_invalid_update_leaves_file_byte_identical(tmp_path: Path) -> None:
    home = Home(tmp_path)
    home.config_file.write_text(HERMES_CONFIG)
    with pytest.raises(ConfigError, match=r"memory\.user_char_limit"):
        update_config(home, {"memory": {"user_char_limit": -5}})
    assert home.config_file.read_text() == HERMES_CONFIG


def test_forms_other_agents_write_are_read_not_refused(home: Home) -> None:
    """A shared config.yaml: a section with every key commented out, `auto` and empty
    strings for "use the main model", a bare model name."""
    home.root.mkdir(parents=True)
    home.config_file.write_text(
        "model: vendor/some-model\n"
        "memory:\n"
        "  # memory_char_limit: 3000\n"
        "auxiliary:\n"
        "  compression: {provider: auto, model: '', base_url: ''}\n"
        "  background_review: {provider: main}\n"
    )
    config = load_config(home)
    assert config.model.model == "vendor/some-model"
    assert config.memory.memory_char_limit == 2200
    assert config.auxiliary.compression.provider is None
    assert config.auxiliary.compression.model is None
    assert config.auxiliary.background_review.provider is None
    # Cairn's own change keeps the name where the other agent reads it.
    update_config(home, {"model": {"provider": "openai", "base_url": "http://127.0.0.1:1/v1"}})
    raw = yaml.safe_load(home.config_file.read_text())
    assert raw["model"]["default"] == "vendor/some-model"
    assert load_config(home).model.model == "vendor/some-model"
