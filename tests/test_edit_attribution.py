"""Whose write is it? A person's edit in the window's memory panel or in the journey was
recorded with the session of whatever chat happened to be open, so the journey showed the
chunk as learned or changed in that conversation. The model's writes belong to its
session; a person's edits belong to none."""

from __future__ import annotations

from engine import ops
from engine.home import Home
from engine.journey import delete_chunk, edit_chunk, node_id
from engine.memory.entries import Target
from engine.memory.service import MemoryService
from engine.memory.tool import MemoryTool


def sessions_of(service: MemoryService) -> list[str | None]:
    history = service.history
    assert history is not None
    return [e.session_id for e in history.events(target="memory", newest_first=False)]


def test_the_models_writes_carry_its_session_and_a_persons_edits_carry_none(home: Home) -> None:
    service = MemoryService(home, session_id="chat-1")
    tool = MemoryTool(service)
    tool({"action": "add", "target": "memory", "content": "Deploys go out on Tuesdays"})
    # The panel's edit and the journey's edit and delete, while chat-1 is the open chat.
    panel = ops.memory_write(
        service,
        Target.MEMORY,
        [{"action": "add", "content": "The staging DB is db3"}],
        by_hand=True,
    )
    assert panel.ok and panel.status == "applied"
    first = node_id(Target.MEMORY, 0, "Deploys go out on Tuesdays")
    assert edit_chunk(service, first, "Deploys go out on Wednesdays")["status"] == "applied"
    second = node_id(Target.MEMORY, 1, "The staging DB is db3")
    assert delete_chunk(service, second)["status"] == "applied"
    # A write through the op without by_hand is the session's, as the tool's is.
    ops.memory_write(service, Target.MEMORY, [{"action": "add", "content": "Backups at 03:00"}])
    assert sessions_of(service) == ["chat-1", None, None, None, "chat-1"]
