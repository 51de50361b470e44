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


def apply_system_scheme(app: QApplication) -> Callable[[Qt.ColorScheme | None], None]:
    """Use Fusion with the system's scheme now and whenever it changes; returns the
    connected updater (to disconnect it)."""
    app.setStyle("Fusion")

    def update(scheme: Qt.ColorScheme | None = None) -> None:
        dark = is_dark() if scheme is None else scheme == Qt.ColorScheme.Dark
        app.setPalette(palette_for(dark))

    update()
    app.styleHints().colorSchemeChanged.connect(update)
    return update
