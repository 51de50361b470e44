"""Settings: the model, memory and display sections of config.yaml, and the window's theme.

The dialog edits a copy of the settings it was given and never writes anything: Save sends
``saveRequested(patch, theme)``, where ``patch`` holds only the keys that changed, in the
shape ``update_config`` merges into config.yaml (the engine writes it, keeping the file's
comments and other tools' keys). Each field is checked as it is typed, by the engine's own
pydantic models (:mod:`engine.config`), and a problem is shown under the field it concerns;
Save stays off while there is one. The API key itself is never asked for or stored: the
dialog takes the *name* of the environment variable that holds it.

The theme is the window's, not the engine's: it is kept in the home's ``desktop.ini`` by the
window (``system``, ``light`` or ``dark``).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError
from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import (
    QButtonGroup,
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QRadioButton,
    QSpinBox,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from app.views.memory_panel import REMOVED, shade
from engine.config import Config, DisplayConfig, MemoryConfig, ModelConfig, SessionsConfig
from engine.sessions import meaning

THEMES = ("system", "light", "dark")
PROVIDERS = [
    ("openai", "OpenAI-compatible server (Ollama, LM Studio, llama.cpp, vLLM, OpenRouter…)"),
    ("embedded", "Offline model, run by llama.cpp's server in the app"),
    ("local", "Offline model, a GGUF file run in-process"),
    ("none", "No model"),
]
NOTIFICATIONS = [
    ("on", "One line when memory changes"),
    ("verbose", "What changed, entry by entry"),
    ("off", "Nothing"),
]
EXTERNAL = [("", "None"), ("holographic", "Holographic fact store (built in)")]
# Said in the dialog's terms where the engine's message speaks of config keys.
FIELD_MESSAGES = {
    "model.api_key_env": (
        "The name of the environment variable that holds the key (like OPENROUTER_API_KEY), "
        "not the key itself: letters, digits and _ only."
    ),
}
SECTIONS: dict[str, type[BaseModel]] = {
    "model": ModelConfig,
    "memory": MemoryConfig,
    "display": DisplayConfig,
    "sessions": SessionsConfig,
}


def _combo(choices: list[tuple[str, str]], editable: bool = False) -> QComboBox:
    combo = QComboBox()
    combo.setEditable(editable)
    for value, label in choices:
        combo.addItem(label, value)
    return combo


class FieldError(QLabel):
    """The problem with one field, under it; hidden while there is none."""

    def __init__(self) -> None:
        super().__init__()
        self.setWordWrap(True)
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.hide()

    def show_error(self, text: str) -> None:
        self.setText(text)
        palette = self.palette()
        palette.setColor(QPalette.ColorRole.WindowText, shade(REMOVED))
        self.setPalette(palette)
        self.setVisible(bool(text))


class SettingsDialog(QDialog):
    saveRequested = Signal(object, str)  # config.yaml patch (changed keys only), theme

    def __init__(
        self, config: Config, theme: str = "system", parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Settings")
        self.config = config
        self.theme = theme if theme in THEMES else "system"
        self.errors: dict[str, str] = {}  # "section.key" -> problem
        self._labels: dict[str, FieldError] = {}

        # -- model --
        model = config.model
        self.provider = _combo(PROVIDERS)
        self._select(
            self.provider, model.provider if model.provider in dict(PROVIDERS) else "openai"
        )
        self.base_url = QLineEdit(model.base_url or "")
        self.base_url.setPlaceholderText("http://127.0.0.1:11434/v1")
        self.model_name = QLineEdit(model.model or "")
        self.model_name.setPlaceholderText("the model's name as the server knows it")
        self.key_env = QLineEdit(model.api_key_env or "")
        self.key_env.setPlaceholderText("OPENROUTER_API_KEY (the variable's name, not the key)")
        self.context = QSpinBox()
        self.context.setRange(0, 10_000_000)
        self.context.setSingleStep(1024)
        self.context.setSpecialValueText("ask the server")
        self.context.setSuffix(" tokens")
        self.context.setValue(model.context_length or 0)
        self.gguf = QLineEdit(model.gguf_path or "")
        self.gguf.setPlaceholderText("the bundled SmolLM2 model when empty")

        # -- memory --
        memory = config.memory
        self.approval = QCheckBox("Stage memory writes for my approval")
        self.approval.setChecked(bool(memory.write_approval))
        self.memory_limit = self._spin(memory.memory_char_limit, 1, 1_000_000, " chars")
        self.user_limit = self._spin(memory.user_char_limit, 1, 1_000_000, " chars")
        self.nudge = self._spin(memory.nudge_interval, 0, 10_000, " turns")
        self.nudge.setSpecialValueText("never")
        self.external = _combo(EXTERNAL, editable=True)
        self._select(self.external, memory.provider or "")
        self.notifications = _combo(NOTIFICATIONS)
        self._select(self.notifications, config.display.memory_notifications)
        self.semantic = QCheckBox("Search past sessions by meaning as well as by words")
        self.semantic.setChecked(config.sessions.semantic)
        if not meaning.available():
            # Shown, so that the option can be found, but not offered without its model.
            self.semantic.setEnabled(False)
            self.semantic.setToolTip(meaning.NOT_INSTALLED)

        # -- appearance --
        self.theme_buttons = QButtonGroup(self)
        theme_box = QWidget()
        theme_layout = QVBoxLayout(theme_box)
        for name, label in (
            ("system", "Follow the system"),
            ("light", "Light"),
            ("dark", "Dark"),
        ):
            button = QRadioButton(label)
            button.setObjectName(f"theme-{name}")
            button.setChecked(name == self.theme)
            self.theme_buttons.addButton(button)
            theme_layout.addWidget(button)
        theme_layout.addStretch(1)

        tabs = QTabWidget()
        tabs.addTab(
            self._form(
                [
                    ("Provider", "model.provider", self.provider),
                    ("Server URL", "model.base_url", self.base_url),
                    ("Model", "model.model", self.model_name),
                    ("Key variable", "model.api_key_env", self.key_env),
                    ("Context window", "model.context_length", self.context),
                    ("GGUF file", "model.gguf_path", self.gguf),
                ],
                "A new session starts on the new model; the conversation so far stays in the "
                "session list.",
            ),
            "Model",
        )
        tabs.addTab(
            self._form(
                [
                    ("Approval", "memory.write_approval", self.approval),
                    ("MEMORY.md limit", "memory.memory_char_limit", self.memory_limit),
                    ("USER.md limit", "memory.user_char_limit", self.user_limit),
                    ("Memory nudge every", "memory.nudge_interval", self.nudge),
                    ("External memory", "memory.provider", self.external),
                    ("Memory notices", "display.memory_notifications", self.notifications),
                    ("Session search", "sessions.semantic", self.semantic),
                ],
                "Limits apply to the next write; a file already over a smaller limit keeps its "
                "entries and only takes edits that shrink it. Search by meaning applies from "
                "the next session.",
            ),
            "Memory",
        )
        tabs.addTab(theme_box, "Appearance")
        self.tabs = tabs

        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel
        )
        self.save_button = self.buttons.button(QDialogButtonBox.StandardButton.Save)
        self.buttons.accepted.connect(self._save)
        self.buttons.rejected.connect(self.reject)
        self.status = QLabel()
        self.status.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.addWidget(tabs, 1)
        layout.addWidget(self.status)
        layout.addWidget(self.buttons)

        for line in (self.base_url, self.model_name, self.key_env, self.gguf):
            line.textChanged.connect(self.validate)
        for spin in (self.context, self.memory_limit, self.user_limit, self.nudge):
            spin.valueChanged.connect(self.validate)
        for combo in (self.provider, self.notifications):
            combo.currentIndexChanged.connect(self.validate)
        self.external.currentTextChanged.connect(self.validate)
        self.approval.toggled.connect(self.validate)
        self.semantic.toggled.connect(self.validate)
        self.theme_buttons.buttonToggled.connect(self.validate)
        self.resize(620, 440)
        self.validate()

    # -- building ----------------------------------------------------------------------------

    @staticmethod
    def _select(combo: QComboBox, value: str) -> None:
        index = combo.findData(value)
        if index >= 0:
            combo.setCurrentIndex(index)
        elif combo.isEditable():
            combo.setEditText(value)

    @staticmethod
    def _spin(value: int, low: int, high: int, suffix: str) -> QSpinBox:
        spin = QSpinBox()
        spin.setRange(low, high)
        spin.setGroupSeparatorShown(True)
        spin.setSuffix(suffix)
        spin.setValue(value)
        return spin

    def _form(self, rows: list[tuple[str, str, QWidget]], note: str) -> QWidget:
        page = QWidget()
        form = QFormLayout(page)
        for label, key, widget in rows:
            error = FieldError()
            self._labels[key] = error
            column = QWidget()
            inner = QVBoxLayout(column)
            inner.setContentsMargins(0, 0, 0, 0)
            inner.setSpacing(2)
            inner.addWidget(widget)
            inner.addWidget(error)
            form.addRow(label, column)
        hint = QLabel(note)
        hint.setWordWrap(True)
        form.addRow(hint)
        return page

    # -- values --------------------------------------------------------------------------------

    def chosen_theme(self) -> str:
        checked = self.theme_buttons.checkedButton()
        name = checked.objectName().removeprefix("theme-") if checked is not None else ""
        return name if name in THEMES else "system"

    def values(self) -> dict[str, dict[str, Any]]:
        """Every setting the dialog shows, as config.yaml would hold it."""
        external = self.external.currentData()
        if self.external.currentText() != self.external.itemText(self.external.currentIndex()):
            external = self.external.currentText().strip()  # typed: a plugin's name
        return {
            "model": {
                "provider": self.provider.currentData(),
                "base_url": self.base_url.text().strip() or None,
                "model": self.model_name.text().strip() or None,
                "api_key_env": self.key_env.text().strip() or None,
                "context_length": self.context.value() or None,
                "gguf_path": self.gguf.text().strip() or None,
            },
            "memory": {
                "write_approval": self.approval.isChecked(),
                "memory_char_limit": self.memory_limit.value(),
                "user_char_limit": self.user_limit.value(),
                "nudge_interval": self.nudge.value(),
                "provider": external or None,
            },
            "display": {"memory_notifications": self.notifications.currentData()},
            "sessions": {"semantic": self.semantic.isChecked()},
        }

    def patch(self) -> dict[str, dict[str, Any]]:
        """The keys whose value differs from the settings the dialog opened with."""
        patch: dict[str, dict[str, Any]] = {}
        for section, fields in self.values().items():
            current = getattr(self.config, section)
            for key, value in fields.items():
                before = getattr(current, key)
                if key == "write_approval":
                    before = bool(before)
                if value != before:
                    patch.setdefault(section, {})[key] = value
        return patch

    @Slot()
    def validate(self) -> bool:
        """Check every field with the engine's models; show each problem at its field."""
        errors: dict[str, str] = {}
        values = self.values()
        for section, model in SECTIONS.items():
            merged = {**getattr(self.config, section).model_dump(), **values[section]}
            try:
                model.model_validate(merged)
            except ValidationError as exc:
                for problem in exc.errors():
                    where = problem.get("loc") or ()
                    key = f"{section}.{where[0]}" if where else section
                    errors.setdefault(key, FIELD_MESSAGES.get(key) or _plain(problem))
        model = values["model"]
        if model["provider"] == "openai":
            url = model["base_url"] or ""
            if not url:
                errors.setdefault("model.base_url", "The server's address is needed.")
            elif not url.startswith(("http://", "https://")):
                errors.setdefault(
                    "model.base_url",
                    "Start with http:// or https:// (like http://127.0.0.1:1234/v1).",
                )
            if not model["model"]:
                errors.setdefault("model.model", "Name the model to use.")
        self.errors = errors
        for key, label in self._labels.items():
            label.show_error(errors.get(key, ""))
        changed = bool(self.patch()) or self.chosen_theme() != self.theme
        self.save_button.setEnabled(not errors and changed)
        if errors:
            self.status.setText(
                f"{len(errors)} setting{'s' if len(errors) != 1 else ''} to fix before saving."
            )
        else:
            self.status.setText("" if changed else "No changes.")
        return not errors

    def _save(self) -> None:
        if not self.validate():
            return
        # Open until the engine has written them: a refusal is shown here, nothing lost.
        self.save_button.setEnabled(False)
        self.status.setText("Saving…")
        self.saveRequested.emit(self.patch(), self.chosen_theme())

    def saved(self) -> None:
        """The engine wrote the settings."""
        self.accept()

    def show_error(self, message: str) -> None:
        """The engine refused the settings (config.yaml unwritable, say); the dialog stays."""
        self.status.setText(f"Not saved: {message}")
        self.save_button.setEnabled(not self.errors)


def _plain(problem: Any) -> str:
    """A pydantic problem as a sentence (without its ``Value error,`` prefix)."""
    message = str(problem.get("msg") or "not valid")
    message = message.removeprefix("Value error, ")
    kind = problem.get("type", "")
    context = problem.get("ctx") or {}
    if kind == "greater_than_equal" and "ge" in context:
        message = f"At least {context['ge']:,}."
    elif kind == "less_than_equal" and "le" in context:
        message = f"At most {context['le']:,}."
    return message[:1].upper() + message[1:]


__all__ = ["THEMES", "SettingsDialog"]
