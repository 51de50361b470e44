"""Guard against the PySide6 build that leaks references to None on every void call.

PySide6 6.12.0 on Python 3.11 aborts a long-running app with ``none_dealloc``; pyproject pins
around it. If a future upgrade brings it back, this fails long before users crash.
"""

from __future__ import annotations

import sys

from PySide6.QtCore import QObject


def test_void_calls_do_not_steal_none_references() -> None:
    obj = QObject()
    obj.setObjectName("warm-up")
    before = sys.getrefcount(None)
    for i in range(2000):
        obj.setObjectName(f"n{i % 7}")
    drift = sys.getrefcount(None) - before
    assert abs(drift) < 50, f"None refcount moved by {drift} over 2,000 void Qt calls"
