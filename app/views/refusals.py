"""Why the engine refused an edit, said to the person who made it.

The engine's messages are written for the model as much as for a user: they name
``operations`` batches, ``old_text`` and ``replace``. The panel and the journey edit one
entry through a dialog, so they say what happened in the dialog's terms, from the refusal's
stable ``error`` code and its details; a code not listed keeps the engine's own message.
"""

from __future__ import annotations

from typing import Any

FILES = {"memory": "MEMORY.md", "user": "USER.md"}


def refusal_text(result: dict[str, Any], filename: str = "") -> str:
    """One or two sentences for a person; ``filename`` names the file the dialog edits."""
    code = str(result.get("error") or "")
    message = str(result.get("message") or code or "the edit was refused")
    name = filename or FILES.get(str(result.get("target") or ""), "The file")
    if code == "overflow":
        limit, would_be = result.get("limit"), result.get("would_be")
        if isinstance(limit, int) and isinstance(would_be, int):
            return (
                f"Too long: {name} would hold {would_be:,} of its {limit:,} characters "
                f"({would_be - limit:,} over). Nothing was saved — shorten the text, or merge "
                "or delete other entries first."
            )
        return (
            f"Too long for {name}'s limit. Nothing was saved — shorten the text, or merge or "
            "delete other entries first."
        )
    if code == "blocked":
        kinds = (
            message.split("looks like ", 1)[-1].split(";", 1)[0] if "looks like" in message else ""
        )
        what = f" ({kinds})" if kinds else ""
        return (
            f"Not saved: the text looks like an instruction aimed at the assistant{what}. "
            "Memory is read into every conversation, so such text is refused."
        )
    if code in ("no_match", "stale", "conflict"):
        return (
            "This entry changed since you opened it (the assistant or another program edited "
            "it). Nothing was saved; copy your text, close this and edit the entry again."
        )
    if code == "ambiguous":
        return (
            "The entry could not be told apart from another one holding the same words. "
            "Nothing was saved; edit the file's entries so they differ."
        )
    if code == "disabled":
        return f"{name} is turned off in the settings; nothing was saved."
    if code == "not_found":
        return "It is no longer there (already changed or removed); nothing was saved."
    if code == "breaker":
        return "Too many edits in a short time; wait a moment and try again."
    # "io", "file", "invalid", "unsafe", "internal": the engine's words say what is wrong.
    return message[:1].upper() + message[1:]
