"""The window follows the system's light or dark scheme, also when it changes while open."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from app.theme import apply_system_scheme


def test_palette_follows_the_scheme_and_its_changes(qapp: QApplication) -> None:
    app = qapp
    hints = app.styleHints()
    original_style = app.style().name()
    update = apply_system_scheme(app)  # offscreen reports no scheme: light
    try:
        assert app.style().name().lower() == "fusion"
        assert app.palette().window().color().lightness() > 128
        # The offscreen platform cannot switch schemes, so the system's notice is played here.
        hints.colorSchemeChanged.emit(Qt.ColorScheme.Dark)
        assert app.palette().window().color().lightness() < 128
        assert app.palette().text().color().lightness() > 128  # text stays readable
        hints.colorSchemeChanged.emit(Qt.ColorScheme.Light)
        assert app.palette().window().color().lightness() > 128
    finally:
        hints.colorSchemeChanged.disconnect(update)
        app.setStyle(original_style)
        app.setPalette(app.style().standardPalette())
