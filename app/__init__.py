"""Cairn's PySide6 desktop client. It calls the engine and never writes memory files itself."""
