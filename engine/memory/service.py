"""The memory service: the one entry point the tool, the CLI and the desktop client share.

It adds to the store what sits around a write: the approval gate, the queue, undo, and the
frozen prompt snapshot.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from enum import Enum
from typing import TYPE_CHECKING, Any

from engine.changes import Changes, events
from engine.config import Config, load_config, update_config
from engine.config_follow import FollowedConfig
from engine.home import Home
from engine.memory import threats
from engine.memory.approval import (
    Origin,
    PendingQueue,
    PendingWrite,
    memory_payload,
    payload_operations,
)
from engine.memory.entries import Target, parse, percent, prompt_block, prompt_view, usage
from engine.memory.errors import MemoryToolError
from engine.memory.history_file import LazyHistory
from engine.memory.operations import (
    ENTRIES_SHOWN_MIN,
    AddOp,
    RemoveOp,
    ReplaceOp,
    apply_to_entries,
    check_budget,
    parse_operations,
    preview,
    shown_entries,
)
from engine.memory.store import MemoryFile, MemoryStore, Op, WriteOutcome, refuse_blocked

if TYPE_CHECKING:
    from engine.memory.history import History, MemoryEvent

log = logging.getLogger(__name__)

# Called with (action, target, content) for each operation of a committed write: the content
# added, the new text of a replaced entry, or the entry removed.
CommitObserver = Callable[[str, Target, str], None]


def describe(ops: list[Op]) -> str:
    if len(ops) > 1:
        return f"{len(ops)} operations"
    op = ops[0]
    if isinstance(op, AddOp):
        return f"add {preview(op.content)!r}"
    if isinstance(op, ReplaceOp):
        return f"replace {preview(op.old_text, 30)!r} with {preview(op.content)!r}"
    return f"remove {preview(op.old_text)!r}"


def usage_of(target: Target, entries: list[str], limit: int) -> dict[str, Any]:
    chars = usage(entries)
    return {
        "target": target.value,
        "chars": chars,
        "limit": limit,
        "percent": percent(chars, limit),
        "entries": len(entries),
    }


class _This(Enum):
    SESSION = "the service's session"


# ``write(session_id=THIS_SESSION)``, the default: the write belongs to the session this
# service serves (the model's tool, the background review). A person's edit in the window or
# the journey passes ``session_id=None``: it belongs to no conversation, and the journey must
# not attribute the chunk to whichever chat happened to be open.
THIS_SESSION = _This.SESSION


class MemoryService:
    def __init__(
        self,
        home: Home,
        config: Config | None = None,
        *,
        session_id: str | None = None,
        create_database: bool = True,
    ) -> None:
        """``create_database`` off (read-only commands): a home with no database yet gets
        none; its history is simply empty."""
        self.home = home
        self._followed = FollowedConfig(home, config if config is not None else load_config(home))
        self.session_id = session_id
        # Opened on first use (SQLAlchemy, and for a new home the database): reading memory
        # needs neither. With ``create_database`` off and no database, there is none.
        self._history: LazyHistory | None = None
        if create_database or home.state_db.exists() or home.own_db.exists():
            self._history = LazyHistory(home)
        self.store = MemoryStore(home, self.config, self._history)
        self.queue = PendingQueue(home.pending_memory_dir, home=home)
        # Told about writes that reached the file (never staged ones), e.g. so an external
        # memory provider can mirror them.
        self.on_committed: list[CommitObserver] = []

    @property
    def history(self) -> History | None:
        """The change history, opened now if it was not; None when it is unavailable
        (:attr:`history_error` says why) or there is no database to keep it in."""
        return self._history.open() if self._history is not None else None

    @property
    def history_error(self) -> str | None:
        """Why the change history is unavailable (opening it first), or None."""
        if self._history is None:
            return None
        self._history.open()
        return self._history.error

    @property
    def config(self) -> Config:
        """The config as config.yaml says now: approval and limits switched in a terminal
        apply to this running service's next read and write."""
        current = self._followed.current()
        store = getattr(self, "store", None)  # None while __init__ builds the store
        if store is not None and store.config is not current:
            store.config = current
        return current

    @config.setter
    def config(self, value: Config) -> None:
        self._followed.replace(value)
        if getattr(self, "store", None) is not None:
            self.store.config = value

    # -- reading -------------------------------------------------------------------------

    def read(self, target: Target) -> MemoryFile:
        _ = self.config  # the limits as config.yaml says now
        return self.store.read(target)

    def rescan(self) -> list[int]:
        """Note edits made outside Cairn in the history; the ids of the events recorded.

        Unreadable files and an unavailable history are skipped (they are reported where the
        files are read or written).
        """
        ids = []
        for target in Target:
            try:
                ids.append(self.store.read_noting_edits(target)[1])
            except Exception as exc:  # said by whatever reads the file next, not here
                log.debug("could not check %s for external edits: %s", target.filename, exc)
        return [i for i in ids if i is not None]

    def prompt_snapshot(self) -> str:
        """Both memory blocks as the system prompt shows them at session start.

        An entry the scanner blocks is withheld behind a placeholder (it stays on disk for the
        user to inspect); an unreadable file becomes a notice, never a failed session.
        """
        blocks = []
        for target in Target:
            if not self.store.enabled(target):
                continue
            try:
                current, _ = self.store.read_noting_edits(target)
            except MemoryToolError as exc:
                blocks.append(f"[{target.filename} could not be loaded: {exc.message}]")
                continue
            # Bounded first: a file far over its limit is neither scanned nor sent whole.
            view = prompt_view(current.entries, current.limit)
            shown = []
            for entry in view.entries:
                verdict = threats.scan(entry)
                shown.append(threats.placeholder(verdict) if verdict.blocked else entry)
            block = prompt_block(target, shown, current.limit, chars=current.chars, view=view)
            if block:
                blocks.append(block)
        return "\n\n".join(blocks)

    # -- writing -------------------------------------------------------------------------

    def write(
        self,
        target: Target,
        operations: Any,
        *,
        origin: Origin = "foreground",
        session_id: str | _This | None = THIS_SESSION,
        precondition: Callable[[list[str]], None] | None = None,
    ) -> dict[str, Any]:
        """Apply (or, with approval on, stage) ``operations`` on ``target``.

        ``precondition`` is called with the file's current entries under the write's lock,
        before anything changes; raising a :class:`MemoryToolError` refuses the write (the
        journey's edit checks that the chunk it shows is still there). Staging skips it: an
        approval later applies the operations by the entries' exact text.
        """
        ops = parse_operations(operations)
        session = self.session_id if session_id is THIS_SESSION else session_id
        if self.config.memory.write_approval:
            return self._stage(target, ops, origin, session)
        outcome = self.store.write(
            target, ops, origin=origin, session_id=session, precondition=precondition
        )
        self._committed(ops, outcome, origin)
        return self._result(outcome, describe(ops))

    def _committed(self, ops: list[Op], outcome: WriteOutcome, initiator: str, **more: Any) -> None:
        if outcome.changed or more:
            changes = Changes(
                targets=frozenset({outcome.target.value}) if outcome.changed else frozenset()
            )
            events.publish(changes | Changes(**more), initiator)
        if not outcome.changed or not self.on_committed:
            return
        for op in ops:
            if isinstance(op, RemoveOp):
                # The whole entry that went, not the fragment that identified it.
                content = next((e for e in outcome.before.entries if op.old_text in e), op.old_text)
            else:
                content = op.content
            for observer in list(self.on_committed):
                try:
                    observer(op.action, outcome.target, content)
                except Exception:  # an observer's failure must not undo a committed write
                    log.exception("memory commit observer failed")

    def _stage(
        self, target: Target, ops: list[Op], origin: Origin, session_id: str | None
    ) -> dict[str, Any]:
        # Refuse now what could never be approved (poison, malformed, no match, overflow), so
        # the model hears about it in the same turn instead of leaving dead records behind.
        refuse_blocked(ops, "staged")
        current = self.store.read(target)
        after = apply_to_entries(current.entries, ops)
        check_budget(target, current.entries, after, current.limit, ops)
        summary = describe(ops)
        action = ops[0].action if len(ops) == 1 else "batch"
        record = self.queue.stage(
            action,
            summary,
            memory_payload(target.value, [op.model_dump() for op in ops]),
            origin,
            session_id,
        )
        self._log(target, "staged", pending_id=record.id, origin=origin, summary=summary)
        events.publish(Changes(pending=frozenset({"memory"})), origin)
        return {
            "ok": True,
            "status": "staged",
            "pending_id": record.id,
            "message": f"Staged for approval as {record.id} ({summary}); memory is unchanged "
            f"until it is approved.",
            "usage": usage_of(target, current.entries, current.limit),
        }

    def _log(self, target: Target, action: str, **kwargs: Any) -> None:
        if self.history is None:
            return
        try:
            self.history.record(
                target.value,
                action,
                pending_id=kwargs.pop("pending_id", None),
                origin=kwargs.pop("origin", "foreground"),
                session_id=self.session_id,
                detail=kwargs,
            )
        except Exception as exc:
            log.warning("memory history unavailable: %s", exc)

    def _result(self, outcome: WriteOutcome, summary: str, **extra: Any) -> dict[str, Any]:
        target = outcome.target
        use = usage_of(target, outcome.entries, outcome.before.limit)
        if outcome.changed:
            message = (
                f"{target.filename} updated: {summary} "
                f"({use['chars']:,}/{use['limit']:,} chars, {use['percent']}%)."
            )
        else:
            message = f"Nothing to change in {target.filename}: the entry is already there."
        if outcome.backup is not None and outcome.backup_reason == "foreign":
            message += (
                f" {target.filename} had been changed outside Cairn, and this change removes "
                "or rewrites text Cairn did not write; the file as it was was saved as "
                f"{outcome.backup.name} first."
            )
        elif outcome.backup is not None:
            message += (
                f" {target.filename} had been edited by hand in a form Cairn does not keep "
                f"verbatim; the edited file was saved as {outcome.backup.name} first."
            )
        if self.history_error:
            outcome.warnings.append(f"change history not recorded: {self.history_error}")
        return {
            "ok": True,
            "status": "applied" if outcome.changed else "unchanged",
            "message": message,
            "usage": use,
            # The live entries: the prompt's snapshot stays frozen for the session, so this is
            # where a model sees what its write left.
            "entries": shown_entries(outcome.entries, max(use["limit"], ENTRIES_SHOWN_MIN)),
            "event_id": outcome.event_id,
            "backup": str(outcome.backup) if outcome.backup else None,
            "warnings": outcome.warnings,
            **extra,
        }

    # -- approval ------------------------------------------------------------------------

    def pending(self) -> list[PendingWrite]:
        return self.queue.list()

    def set_approval(self, on: bool) -> dict[str, Any]:
        self.config = update_config(self.home, {"memory": {"write_approval": on}})
        self.store.config = self.config
        events.publish(Changes(config=frozenset({"memory.write_approval"})), "foreground")
        state = "on: writes are staged for review" if on else "off: writes apply at once"
        return {"ok": True, "write_approval": on, "message": f"Write approval is {state}."}

    def _staged(self, pending_id: str) -> tuple[PendingWrite, Target]:
        """The record ``pending_id`` and its target, or ``invalid`` saying what is wrong."""
        record = self.queue.get(pending_id)
        if record.subsystem != "memory":
            raise MemoryToolError(
                "not_found", f"pending write {pending_id!r} is not a memory write"
            )
        raw = record.payload.get("target", "memory")
        try:
            return record, Target(raw)
        except ValueError:
            raise MemoryToolError(
                "invalid",
                f"pending write {record.id} names the target {str(raw)[:40]!r}, which is "
                "neither memory nor user; kept for inspection, not applied",
                pending_id=record.id,
            ) from None

    def approve(self, pending_id: str) -> dict[str, Any]:
        with self.queue.settling():
            return self._approve(pending_id)

    def _approve(self, pending_id: str) -> dict[str, Any]:
        record, target = self._staged(pending_id)
        if self.history is not None and self.history.settled(record.id):
            # Applied before, and the file outlived it (a crash between the two steps).
            self.queue.discard(record.id)
            events.publish(Changes(pending=frozenset({"memory"})), "foreground")
            return {
                "ok": True,
                "status": "unchanged",
                "pending_id": record.id,
                "message": f"{record.id} was already settled; its leftover record was removed.",
            }
        try:
            ops = parse_operations(payload_operations(record.payload))
        except MemoryToolError as exc:
            raise MemoryToolError(
                "invalid",
                f"pending write {record.id} holds invalid operations ({exc.message}); kept "
                "for inspection, not applied",
                pending_id=record.id,
            ) from exc
        try:
            outcome = self.store.write(
                target,
                ops,
                origin=record.origin,
                session_id=record.session_id,
                action="approved",
                pending_id=record.id,
            )
        except MemoryToolError as exc:
            raise MemoryToolError(
                exc.code,
                f"approval of {record.id} failed, the staged write is kept: {exc.message}",
                pending_id=record.id,
                **exc.details,
            ) from exc
        self.queue.discard(record.id)
        self._committed(ops, outcome, "foreground", pending=frozenset({"memory"}))
        return self._result(
            outcome, f"approved {record.id} ({record.summary})", pending_id=record.id
        )

    def reject(self, pending_id: str) -> dict[str, Any]:
        with self.queue.settling():
            try:
                record, target = self._staged(pending_id)
            except MemoryToolError as exc:
                if exc.code != "invalid" or not self.queue.valid_id(pending_id):
                    raise
                # Rejecting is how a user clears a bad record: it goes, nothing is applied.
                self.queue.discard(pending_id)
                events.publish(Changes(pending=frozenset({"memory"})), "foreground")
                return {
                    "ok": True,
                    "status": "rejected",
                    "pending_id": pending_id,
                    "message": f"Rejected the invalid record {pending_id}; memory is unchanged.",
                }
            self.queue.discard(record.id)
        events.publish(Changes(pending=frozenset({"memory"})), "foreground")
        self._log(
            target,
            "rejected",
            pending_id=record.id,
            origin=record.origin,
            summary=record.summary,
            operations=payload_operations(record.payload),
        )
        return {
            "ok": True,
            "status": "rejected",
            "pending_id": record.id,
            "message": f"Rejected {record.id} ({record.summary}); memory is unchanged.",
        }

    def settle_all(self, approve: bool) -> list[dict[str, Any]]:
        """Approve or reject every pending write in order; each one's outcome, failures too.

        Approving skips invalid records (listed as such, left for inspection); one bad record
        never blocks the others."""
        settle: Callable[[str], dict[str, Any]] = self.approve if approve else self.reject
        outcomes = []
        for record in self.queue.list():
            try:
                outcomes.append(settle(record.id))
            except MemoryToolError as exc:
                outcomes.append(exc.to_dict())
        if approve:
            for bad in self.queue.invalid():
                outcomes.append(
                    {"ok": False, "error": "invalid", "skipped": True, "file": bad["file"],
                     "message": f"skipped {bad['file']}: {bad['reason']}"}
                )  # fmt: skip
        return outcomes

    def invalid_pending(self) -> list[dict[str, str]]:
        return self.queue.invalid()

    # -- history and undo ----------------------------------------------------------------

    def events(self, target: Target | None = None, limit: int | None = None) -> list[MemoryEvent]:
        if self.history is None and self.history_error is None:
            return []  # no database yet, and a read-only command does not create one
        if self.history is None:
            raise MemoryToolError("io", f"change history unavailable: {self.history_error}")
        return self.history.events(target.value if target else None, limit)

    def undo(self, event_id: int | None = None) -> dict[str, Any]:
        """Invert a committed change by applying its opposite through the normal write path."""
        if self.history is None:
            raise MemoryToolError("io", f"change history unavailable: {self.history_error}")
        candidates = self.history.undoable()
        if event_id is not None:
            candidates = [e for e in candidates if e.id == event_id]
            if not candidates:
                raise MemoryToolError(
                    "not_found", f"event #{event_id} is not a change that can be undone"
                )
        if not candidates:
            raise MemoryToolError("not_found", "nothing to undo")
        event = candidates[0]
        before = parse(event.state_before or "")
        after = parse(event.state_after or "")
        removed = [e for e in before if e not in after]
        added = [e for e in after if e not in before]
        ops: list[Op]
        if len(removed) == 1 and len(added) == 1:
            ops = [ReplaceOp(action="replace", old_text=added[0], content=removed[0])]
        else:
            ops = [RemoveOp(action="remove", old_text=a) for a in added]
            ops += [AddOp(action="add", content=r) for r in removed]
        if not ops:
            raise MemoryToolError("conflict", f"event #{event.id} changed nothing to undo")
        target = Target(event.target)

        def unchanged_since(entries: list[str]) -> None:
            missing = [a for a in added if a not in entries]
            if missing:
                raise MemoryToolError(
                    "conflict",
                    f"cannot undo #{event.id}: {preview(missing[0])!r} has changed since; "
                    "edit memory directly instead",
                )

        # The budget is not checked: the state undo returns to existed, and a cap lowered (or
        # a file grown outside Cairn) since must not make it unreachable.
        outcome = self.store.write(
            target,
            ops,
            action="undo",
            detail={"undoes": event.id},
            precondition=unchanged_since,
            enforce_budget=False,
        )
        self._committed(ops, outcome, "foreground")
        return self._result(outcome, f"undid #{event.id} ({event.action})", undone=event.id)
