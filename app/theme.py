"""Light or dark, following the system.

The Fusion style draws every widget from the palette, so one palette per scheme gives a
consistent look on every platform; the palette is swapped when the system scheme changes.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication

_DARK = {
    QPalette.ColorRole.Window: "#202124",
    QPalette.ColorRole.WindowText: "#e8eaed",
    QPalette.ColorRole.Base: "#17181a",
    QPalette.ColorRole.AlternateBase: "#26272b",
    QPalette.ColorRole.ToolTipBase: "#2d2e31",
    QPalette.ColorRole.ToolTipText: "#e8eaed",
    QPalette.ColorRole.PlaceholderText: "#9aa0a6",
    QPalette.ColorRole.Text: "#e8eaed",
    QPalette.ColorRole.Button: "#2d2e31",
    QPalette.ColorRole.ButtonText: "#e8eaed",
    QPalette.ColorRole.BrightText: "#ff8a80",
    QPalette.ColorRole.Link: "#8ab4f8",
    QPalette.ColorRole.Highlight: "#3d6fb6",
    QPalette.ColorRole.HighlightedText: "#ffffff",
}


def is_dark() -> bool:
    return QGuiApplication.styleHints().colorScheme() == Qt.ColorScheme.Dark


def palette_for(dark: bool) -> QPalette:
    if not dark:
        return QApplication.style().standardPalette()
    palette = QPalette()
    for role, color in _DARK.items():
        palette.setColor(role, QColor(color))
    disabled = QColor("#6f7378")
    for role in (
        QPalette.ColorRole.WindowText,
        QPalette.ColorRole.Text,
        QPalette.ColorRole.ButtonText,
    ):
        palette.setColor(QPalette.ColorGroup.Disabled, role, disabled)
    return palette


THEMES = ("system", "light", "dark")
_chosen = {"theme": "system"}  # the user's choice (Settings): system follows the desktop


def set_theme(app: QApplication, theme: str) -> None:
    """Light, dark, or whatever the system uses (and then follow its changes)."""
    _chosen["theme"] = theme if theme in THEMES else "system"
    if _chosen["theme"] == "system":
        app.setPalette(palette_for(is_dark()))
    else:
        app.setPalette(palette_for(_chosen["theme"] == "dark"))


def chosen_theme() -> str:
    return _chosen["theme"]


def apply_system_scheme(app: QApplication) -> Callable[[Qt.ColorScheme | None], None]:
    """Use Fusion with the system's scheme now and whenever it changes (unless a theme was
    chosen in the settings); returns the connected updater (to disconnect it)."""
    app.setStyle("Fusion")

    def update(scheme: Qt.ColorScheme | None = None) -> None:
        if _chosen["theme"] != "system":
            return
        dark = is_dark() if scheme is None else scheme == Qt.ColorScheme.Dark
        app.setPalette(palette_for(dark))

    update()
    app.styleHints().colorSchemeChanged.connect(update)
    return update
