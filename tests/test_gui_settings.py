"""The settings dialog over the engine's config models: what it shows, problems at the
field they concern, and a patch of only what changed."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from app.theme import palette_for, set_theme
from app.views.settings_dialog import SettingsDialog
from engine.config import Config, DisplayConfig, MemoryConfig, ModelConfig


@pytest.fixture
def config() -> Config:
    return Config(
        model=ModelConfig(
            provider="openai",
            base_url="http://127.0.0.1:1234/v1",
            model="qwen2.5-7b",
            api_key_env="LMSTUDIO_KEY",
        ),
        memory=MemoryConfig(write_approval=False, nudge_interval=10),
        display=DisplayConfig(memory_notifications="on"),
    )


@pytest.fixture
def dialog(qtbot: QtBot, config: Config) -> SettingsDialog:
    widget = SettingsDialog(config, "system")
    qtbot.addWidget(widget)
    widget.show()
    qtbot.waitExposed(widget)
    return widget


def test_it_shows_the_settings_and_saves_nothing_unchanged(dialog: SettingsDialog) -> None:
    assert dialog.base_url.text() == "http://127.0.0.1:1234/v1"
    assert dialog.model_name.text() == "qwen2.5-7b"
    assert dialog.key_env.text() == "LMSTUDIO_KEY"
    assert dialog.context.text() == "ask the server"
    assert dialog.memory_limit.value() == 2200 and dialog.user_limit.value() == 1375
    assert not dialog.approval.isChecked()
    assert dialog.notifications.currentData() == "on"
    assert not dialog.semantic.isChecked()
    assert dialog.errors == {}
    assert dialog.patch() == {}
    assert not dialog.save_button.isEnabled()  # nothing to save


@pytest.mark.parametrize(
    ("field", "value", "key", "said"),
    [
        ("key_env", "sk-or-v1-0123456789", "model.api_key_env", "not the key itself"),
        ("base_url", "localhost:1234", "model.base_url", "Start with http://"),
        ("base_url", "", "model.base_url", "address is needed"),
        ("model_name", "", "model.model", "Name the model"),
        ("context", 100, "model.context_length", "At least 512"),
    ],
)
def test_a_problem_is_shown_at_its_field_and_blocks_save(
    dialog: SettingsDialog, field: str, value: object, key: str, said: str
) -> None:
    widget = getattr(dialog, field)
    if isinstance(value, int):
        widget.setValue(value)
    else:
        widget.setText(value)
    assert said in dialog.errors[key]
    label = dialog._labels[key]
    assert label.isVisible() and said in label.text()
    # Only that field says so.
    assert [k for k, lab in dialog._labels.items() if lab.isVisible()] == [key]
    assert not dialog.save_button.isEnabled()
    assert "to fix before saving" in dialog.status.text()


def test_save_sends_only_what_changed(qtbot: QtBot, dialog: SettingsDialog) -> None:
    dialog.approval.setChecked(True)
    dialog.memory_limit.setValue(3000)
    dialog.nudge.setValue(0)
    dialog.context.setValue(32_768)
    dialog._select(dialog.notifications, "verbose")
    dialog._select(dialog.external, "holographic")
    dialog.semantic.setChecked(True)
    dialog.findChild(type(dialog.theme_buttons.buttons()[0]), "theme-dark").setChecked(True)
    assert dialog.nudge.text() == "never"
    assert dialog.save_button.isEnabled()
    with qtbot.waitSignal(dialog.saveRequested, timeout=1_000) as saved:
        dialog.save_button.click()
    patch, theme = saved.args
    assert patch == {
        "model": {"context_length": 32_768},
        "memory": {
            "write_approval": True,
            "memory_char_limit": 3000,
            "nudge_interval": 0,
            "provider": "holographic",
        },
        "display": {"memory_notifications": "verbose"},
        "sessions": {"semantic": True},
    }
    assert theme == "dark"
    assert dialog.isVisible() and dialog.status.text() == "Saving…"  # until the engine answers
    dialog.show_error("config.yaml is read-only")
    assert dialog.isVisible() and "read-only" in dialog.status.text()
    assert dialog.save_button.isEnabled()
    dialog.saved()
    assert not dialog.isVisible()
    # The patch is one config.yaml would take.
    merged = Config().model_dump()
    for section, keys in patch.items():
        merged[section].update(keys)
    Config.model_validate(merged)


def test_a_provider_without_a_server_needs_no_url(dialog: SettingsDialog) -> None:
    dialog.base_url.setText("")
    assert "model.base_url" in dialog.errors
    dialog._select(dialog.provider, "embedded")
    assert dialog.errors == {}
    assert dialog.patch()["model"]["provider"] == "embedded"


def test_the_theme_can_be_fixed_or_follow_the_system(qapp: QApplication) -> None:
    before = qapp.palette()
    try:
        set_theme(qapp, "dark")
        assert qapp.palette().color(qapp.palette().ColorRole.Window).lightness() < 60
        set_theme(qapp, "light")
        assert qapp.palette().color(qapp.palette().ColorRole.Window).lightness() > 180
        set_theme(qapp, "system")  # offscreen reports no dark scheme: light
        assert qapp.palette() == palette_for(dark=False)
    finally:
        set_theme(qapp, "system")
        qapp.setPalette(before)


def test_search_by_meaning_is_shown_but_not_offered_without_its_model(
    qtbot: QtBot, config: Config, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a machine without the semantic extra the option is there, greyed, and says what to
    install; nothing about it is saved."""
    from engine.sessions import meaning

    monkeypatch.setattr(meaning, "model_dir", lambda: None)
    widget = SettingsDialog(config, "system")
    qtbot.addWidget(widget)
    assert not widget.semantic.isEnabled()
    assert "semantic extra" in widget.semantic.toolTip()
    assert widget.patch() == {}
