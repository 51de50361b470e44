"""Cairn's agent engine: pure Python, never imports Qt, so it runs headless (CLI, cron, tests)."""

__version__ = "0.1.0"
