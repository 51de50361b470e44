"""Operations on stored sessions a person asks for from the session list: rename, delete,
export, continue. Each goes through :class:`~engine.sessions.store.SessionStore` and says that the
session store changed, so every session list (this window's, another view's) rereads."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from engine.changes import Changes, events
from engine.errors import CairnError
from engine.ops import OpResult

if TYPE_CHECKING:
    from engine.agent import Agent
    from engine.sessions.store import SessionStore

SESSIONS = Changes(sessions=True)


class SessionOpError(CairnError):
    """A session operation refused; nothing changed."""


def _done(result: dict[str, object], initiator: str) -> OpResult:
    events.publish(SESSIONS, initiator)
    return OpResult.of(result, SESSIONS)


def session_rename(
    store: SessionStore, session_id: str, title: str, *, initiator: str = "foreground"
) -> OpResult:
    if not store.rename_session(session_id, title):
        raise SessionOpError("not_found", "that session is no longer stored")
    shown = " ".join(title.split()) or "(untitled)"
    return _done({"ok": True, "status": "applied", "message": f"renamed to “{shown}”"}, initiator)


def session_delete(
    store: SessionStore, session_ids: list[str], *, initiator: str = "foreground"
) -> OpResult:
    """Delete sessions and their messages; sessions continuing one keep their own."""
    deleted = [sid for sid in session_ids if store.delete_session(sid)]
    count = len(deleted)
    message = f"deleted {count} session{'s' if count != 1 else ''}"
    return _done(
        {"ok": True, "status": "applied", "message": message, "deleted": deleted}, initiator
    )


def sessions_export(store: SessionStore, session_ids: list[str], path: Path) -> OpResult:
    """Write sessions as JSONL (the format ``cairn sessions import`` reads). Changes nothing
    stored, so it announces nothing."""
    from engine.sessions.transfer import export_sessions

    tmp = path.with_name(path.name + ".part")
    try:
        with tmp.open("w", encoding="utf-8") as out:
            written = export_sessions(store, out, session_ids)
        tmp.replace(path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise SessionOpError("io", f"cannot write {path.name}: {exc.strerror}") from exc
    message = f"exported {written} session{'s' if written != 1 else ''} to {path.name}"
    return OpResult(status="applied", message=message, result={"ok": True, "message": message})


def session_continue(agent: Agent, session_id: str, *, initiator: str = "foreground") -> OpResult:
    """Go on with a stored conversation in ``agent``: a child session carrying its messages
    (:meth:`Agent.continue_session`). The result holds the conversation as ``session_search``
    reads it, for the chat to show as the live one."""
    agent.continue_session(session_id)
    changes = Changes(sessions=True, session=True)
    events.publish(changes, initiator)
    read = agent.search_tool({"mode": "read", "session_id": agent.session_id}, for_user=True)
    result: dict[str, object] = {
        "ok": True,
        "status": "applied",
        "message": "continuing the conversation",
        "session_id": agent.session_id,
        "parent_session_id": session_id,
        "transcript": read,
    }
    return OpResult.of(result, changes)
