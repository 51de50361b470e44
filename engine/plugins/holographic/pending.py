"""Fact store writes waiting for approval, in ``<home>/pending/facts/<id>.json``.

The same record format and rules as memory's queue (:class:`PendingQueue`): staging checks a
write now, approving replays it against the store as it is then, and a record is settled at
most once, under the queue's lock. The switch is memory's: ``memory.write_approval``, read from
config.yaml as it is at each write.
"""

from __future__ import annotations

from typing import Any

from engine.config import Config, load_config
from engine.config_follow import FollowedConfig
from engine.home import Home
from engine.memory.approval import Origin, PendingQueue, PendingWrite
from engine.memory.errors import MemoryToolError
from engine.plugins.holographic.store import FactStore, FactStoreError

SUBSYSTEM = "facts"


def fact_queue(home: Home) -> PendingQueue:
    return PendingQueue(home.pending_dir / SUBSYSTEM, SUBSYSTEM, home)


class FactStaging:
    """What the ``fact_store`` tool asks before a write: stage it? and where."""

    def __init__(
        self,
        home: Home,
        config: Config,
        origin: Origin = "foreground",
        session_id: str | None = None,
    ) -> None:
        self.queue = fact_queue(home)
        self._followed = FollowedConfig(home, config)
        self.origin: Origin = origin
        self.session_id = session_id

    def wanted(self) -> bool:
        return bool(self._followed.current().memory.write_approval)

    def stage(self, action: str, summary: str, request: dict[str, Any]) -> str:
        record = self.queue.stage(
            action, summary, {"request": request}, self.origin, self.session_id
        )
        return record.id


class FactApprovals:
    """Settling staged fact writes: the user is the reviewer, so approval applies them."""

    def __init__(self, home: Home) -> None:
        self.home = home
        self.queue = fact_queue(home)

    def pending(self) -> list[PendingWrite]:
        return self.queue.list()

    def approve(self, pending_id: str) -> dict[str, Any]:
        from engine.plugins.holographic.tool import FactStoreTool

        with self.queue.settling():
            record = self.queue.get(pending_id)
            store = FactStore(self.home.memory_store_db)
            try:
                result = FactStoreTool(store).apply(dict(record.payload.get("request") or {}))
            except FactStoreError as exc:
                result = exc.to_dict()
            finally:
                store.close()
            if not result.get("ok"):
                raise MemoryToolError(
                    str(result.get("error") or "invalid"),
                    f"approval of {record.id} failed, the staged write is kept: "
                    f"{result.get('message')}",
                    pending_id=record.id,
                )
            self.queue.discard(record.id)
        return {
            **result,
            "status": "applied",
            "pending_id": record.id,
            "message": f"Approved {record.id} ({record.summary}).",
        }

    def reject(self, pending_id: str) -> dict[str, Any]:
        with self.queue.settling():
            record = self.queue.get(pending_id)
            self.queue.discard(record.id)
        return {
            "ok": True,
            "status": "rejected",
            "pending_id": record.id,
            "message": f"Rejected {record.id} ({record.summary}); the fact store is unchanged.",
        }


def staging_for(home: Home, config: Config | None = None, **kwargs: Any) -> FactStaging:
    return FactStaging(home, config if config is not None else load_config(home), **kwargs)
