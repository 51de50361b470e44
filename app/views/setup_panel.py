"""Model setup: shown while no model is chosen, never blocking the rest.

With nothing configured Cairn chats on its built-in offline model (SmolLM2-135M, in-process);
the panel then says so, says the model is small, and offers something stronger: the model
servers found on this machine, or any OpenAI-compatible URL with the *name* of the
environment variable holding its key (the key itself is never asked for or stored). When the
built-in model is not installed either, it says how to install it. Memory, sessions and every
other view stay usable without a model.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtWidgets import (
    QFormLayout,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

SERVER_ROLE = Qt.ItemDataRole.UserRole + 1
# Settings that describe the previous endpoint: cleared on a switch so, for one, the old key
# variable is never sent to the new host.
_NEW_ENDPOINT: dict[str, Any] = {"api_key_env": None, "context_length": None}


BUILTIN_TITLE = "<b>Chatting offline on the built-in model</b>"
BUILTIN_EXPLAIN = (
    "{name} runs inside Cairn: no server, nothing sent anywhere. It is small (135M "
    "parameters): answers are basic, and its memory and skill writes wait for your approval. "
    "A model server on this machine, or an OpenAI-compatible endpoint, gives far better "
    "answers."
)
CHOOSE_TITLE = "<b>Choose a model to chat with</b>"
CHOOSE_EXPLAIN = (
    "Memory, sessions and search work without one. Cairn talks to any "
    "OpenAI-compatible server: Ollama, LM Studio, llama.cpp, vLLM, OpenRouter…"
)


class SetupPanel(QFrame):
    detectRequested = Signal()
    modelChosen = Signal(object)  # a patch for config.yaml's `model` section

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.title = title = QLabel(CHOOSE_TITLE)
        self.explain = explain = QLabel(CHOOSE_EXPLAIN)
        explain.setWordWrap(True)
        self.on_builtin = False

        self.servers = QListWidget()
        self.servers.setMaximumHeight(96)
        self.servers.hide()  # until a search found something: an empty list is only noise
        self.servers.itemActivated.connect(self._use_server)
        self.detect_button = QPushButton("Look for servers on this machine")
        self.detect_button.clicked.connect(self._detect)
        self.use_server_button = QPushButton("Use selected server")
        self.use_server_button.clicked.connect(lambda: self._use_server(self.servers.currentItem()))
        self.use_server_button.setEnabled(False)
        self.servers.currentItemChanged.connect(
            lambda item, _old: self.use_server_button.setEnabled(item is not None)
        )

        self.url = QLineEdit()
        self.url.setPlaceholderText("https://openrouter.ai/api/v1")
        self.model_name = QLineEdit()
        self.model_name.setPlaceholderText("model name as the server knows it")
        self.key_env = QLineEdit()
        self.key_env.setPlaceholderText("OPENROUTER_API_KEY (the variable's name, not the key)")
        self.use_url_button = QPushButton("Use this endpoint")
        self.use_url_button.clicked.connect(self._use_url)
        form = QFormLayout()
        form.addRow("Base URL", self.url)
        form.addRow("Model", self.model_name)
        form.addRow("Key variable", self.key_env)

        self.status = QLabel()
        self.status.setWordWrap(True)

        buttons = QHBoxLayout()
        buttons.addWidget(self.detect_button)
        buttons.addWidget(self.use_server_button)
        buttons.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addWidget(title)
        layout.addWidget(explain)
        layout.addLayout(buttons)
        layout.addWidget(self.servers)
        layout.addLayout(form)
        layout.addWidget(self.use_url_button, 0, Qt.AlignmentFlag.AlignLeft)
        layout.addWidget(self.status)

    @Slot(object)
    def show_model(self, model: dict[str, Any]) -> None:
        """Follow the model the engine uses (a ChangeSet's ``model``): on the built-in one
        the panel says it is small and offers a stronger one; without any, it asks."""
        self.on_builtin = bool(model.get("builtin"))
        if self.on_builtin:
            name = str(model.get("name") or "built-in").split("/", 1)[-1]
            self.title.setText(BUILTIN_TITLE)
            self.explain.setText(BUILTIN_EXPLAIN.format(name=name))
        else:
            self.title.setText(CHOOSE_TITLE)
            self.explain.setText(CHOOSE_EXPLAIN)
            if not model.get("configured") and model.get("error"):
                self.show_error(str(model["error"]))
        self.setVisible(self.on_builtin or not model.get("configured"))

    def _detect(self) -> None:
        self.detect_button.setEnabled(False)
        self.status.setText("Looking for Ollama, LM Studio and llama.cpp…")
        self.detectRequested.emit()

    @Slot(object)
    def show_servers(self, servers: list[dict[str, Any]]) -> None:
        self.detect_button.setEnabled(True)
        self.servers.clear()
        for server in servers:
            for model in server.get("models") or [""]:
                label = f"{server['name']} — {model or 'no model listed'} ({server['base_url']})"
                item = QListWidgetItem(label)
                item.setData(SERVER_ROLE, {"base_url": server["base_url"], "model": model})
                self.servers.addItem(item)
        self.servers.setVisible(bool(servers))
        if servers:
            self.status.setText("Pick a model, or enter an endpoint below.")
            self.servers.setCurrentRow(0)
        else:
            self.status.setText("No model server found on this machine; enter an endpoint.")

    def _use_server(self, item: QListWidgetItem | None) -> None:
        if item is None:
            return
        found = item.data(SERVER_ROLE)
        patch = {"provider": "openai", "base_url": found["base_url"], **_NEW_ENDPOINT}
        if found.get("model"):
            patch["model"] = found["model"]
        self.modelChosen.emit(patch)

    def _use_url(self) -> None:
        url, model = self.url.text().strip(), self.model_name.text().strip()
        if not url.startswith(("http://", "https://")) or not model:
            self.status.setText("Enter an http(s) base URL and a model name.")
            return
        patch: dict[str, Any] = {
            "provider": "openai",
            "base_url": url,
            "model": model,
            **_NEW_ENDPOINT,
        }
        if self.key_env.text().strip():
            patch["api_key_env"] = self.key_env.text().strip()
        self.modelChosen.emit(patch)

    @Slot(str)
    def show_error(self, message: str) -> None:
        self.status.setText(message)
