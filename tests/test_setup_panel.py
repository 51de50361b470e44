"""The setup panel follows the model the engine uses: on the built-in one it stays up, says
the model is small and offers something stronger; with a chosen model it goes away."""

from __future__ import annotations

from pytestqt.qtbot import QtBot

from app.views.setup_panel import SetupPanel


def test_on_the_built_in_model_the_panel_says_it_is_small_and_offers_servers(
    qtbot: QtBot,
) -> None:
    panel = SetupPanel()
    qtbot.addWidget(panel)
    panel.show()
    panel.show_model(
        {"configured": True, "builtin": True, "name": "built-in/SmolLM2-135M-Instruct.Q4_1"}
    )
    assert panel.isVisible() and panel.on_builtin
    assert "built-in" in panel.title.text()
    text = panel.explain.text()
    assert "SmolLM2-135M-Instruct.Q4_1" in text and "small" in text and "approval" in text
    assert panel.detect_button.isEnabled() and panel.use_url_button.isEnabled()
    chosen: list[object] = []
    panel.modelChosen.connect(chosen.append)
    panel.show_servers(
        [{"name": "Ollama", "base_url": "http://127.0.0.1:11434/v1", "models": ["qwen3:8b"]}]
    )
    assert panel.servers.isVisible()
    panel.use_server_button.click()
    assert chosen == [
        {
            "provider": "openai",
            "base_url": "http://127.0.0.1:11434/v1",
            "model": "qwen3:8b",
            "api_key_env": None,
            "context_length": None,
        }
    ]
    # A server chosen: the panel goes; nothing at all: it asks, with the reason.
    panel.show_model({"configured": True, "builtin": False, "name": "127.0.0.1:11434/qwen3:8b"})
    assert not panel.isVisible()
    panel.show_model({"configured": False, "error": "no model is configured: install it"})
    assert panel.isVisible() and not panel.on_builtin
    assert "Choose a model" in panel.title.text()
    assert "install it" in panel.status.text()
