"""JSONL import and export on both backends: streaming, batches, bad lines, round trips."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError

from engine.db import dispose_engines
from engine.home import Home
from engine.sessions import maintenance, transfer
from engine.sessions.search import SessionSearch
from engine.sessions.store import NewMessage, SessionStore
from engine.sessions.transfer import ImportReport, export_sessions, import_sessions


def _line(sid: str, *texts: str, **fields: object) -> str:
    session = {
        "id": sid,
        "source": "cli",
        "title": f"title of {sid}",
        "started_at": 1_700_000_000.0,
        "messages": [
            {"role": "user" if i % 2 == 0 else "assistant", "content": t, "timestamp": 1.7e9 + i}
            for i, t in enumerate(texts)
        ],
        **fields,
    }
    return json.dumps(session, ensure_ascii=False)


def _export(store: SessionStore) -> str:
    out = io.StringIO()
    export_sessions(store, out)
    return out.getvalue()


def _message_total(store: SessionStore) -> int:
    with store.engine.connect() as conn:
        return int(conn.execute(text("SELECT count(*) FROM messages")).scalar_one())


def _fill(store: SessionStore) -> None:
    """Every kind of session and message the store holds."""
    root = store.create_session(
        session_id="root",
        source="gui",
        platform="linux",
        title="Deploy — ünïcode 🚀 数据库",
        model="some-model",
        system_prompt="be brief",
        started_at=1_700_000_000.123456,
    )
    store.append(
        root.id,
        [
            NewMessage(role="system", content="sys", timestamp=1_700_000_000.5),
            NewMessage(role="user", content='line one\nline two "quoted" \\ tab\t', timestamp=1),
            NewMessage(
                role="assistant",
                content="",
                tool_calls=[{"id": "c1", "function": {"name": "terminal", "arguments": "{}"}}],
                timestamp=2.25,
                token_count=12,
            ),
            NewMessage(
                role="tool", content="exit 0", tool_name="terminal", tool_call_id="c1", timestamp=3
            ),
        ],
    )
    store.end_session(root.id, "compression", ended_at=1_700_000_100.0)
    child = store.create_session(
        session_id="child", parent_session_id="root", started_at=1_700_000_100.0
    )
    store.add_message(child.id, "user", "continued after compression", timestamp=1_700_000_101)
    store.create_session(session_id="grandchild", parent_session_id="child", started_at=1.8e9)
    store.create_session(session_id="empty", title=None, started_at=1_600_000_000)


def test_round_trip_gives_identical_lines(tmp_path: Path, store: SessionStore) -> None:
    _fill(store)
    first = _export(store)
    assert len(first.splitlines()) == 4
    other = SessionStore.open(Home(tmp_path / "other"))
    report = import_sessions(other, io.StringIO(first))
    assert (report.sessions_imported, report.messages_imported, report.errors) == (4, 5, [])
    assert _export(other) == first
    # What the lines carry is what the store had.
    for sid in ("root", "child", "grandchild", "empty"):
        assert other.get_session(sid) == store.get_session(sid)
        assert [m.model_dump(exclude={"id"}) for m in other.messages(sid)] == [
            m.model_dump(exclude={"id"}) for m in store.messages(sid)
        ]
    assert other.get_session("grandchild").root_session_id == "root"  # type: ignore[union-attr]


def test_export_puts_parents_first_and_can_pick_sessions(store: SessionStore) -> None:
    _fill(store)
    # A child that started before its parent (clock skew) still comes after it.
    store.create_session(session_id="early-child", parent_session_id="empty", started_at=1)
    ids = [json.loads(line)["id"] for line in _export(store).splitlines()]
    assert ids.index("empty") < ids.index("early-child")
    assert ids.index("root") < ids.index("child") < ids.index("grandchild")
    out = io.StringIO()
    assert export_sessions(store, out, ["child", "missing", "root"]) == 2
    assert [json.loads(line)["id"] for line in out.getvalue().splitlines()] == ["root", "child"]


def test_reimport_adds_nothing(store: SessionStore) -> None:
    lines = [_line(f"s{i}", "hello", "world") for i in range(5)]
    first = import_sessions(store, lines)
    again = import_sessions(store, lines, batch_size=2)
    assert (first.sessions_imported, first.messages_imported) == (5, 10)
    assert (again.sessions_imported, again.messages_imported, again.sessions_skipped) == (0, 0, 5)
    assert store.count_sessions() == 5 and _message_total(store) == 10
    # The same id twice in one file: the second is skipped, in the same batch or another.
    twice = import_sessions(store, [_line("t", "a"), _line("t", "b"), _line("u", "c")])
    assert (twice.sessions_imported, twice.sessions_skipped) == (2, 1)
    assert [m.content for m in store.messages("t")] == ["a"]


def test_malformed_lines_are_reported_and_the_rest_imported(store: SessionStore) -> None:
    big_text = "needle " + "x" * (5 * 1024 * 1024)
    big_valid = _line("big", big_text)
    big_broken = big_valid[: len(big_valid) // 2]
    lines = [
        _line("ok1", "first good line"),  # 1
        '{"id": "bad-json", "messages": [',  # 2
        json.dumps({"id": 7, "started_at": 1, "messages": []}),  # 3 wrong type
        json.dumps({"id": "no-messages", "started_at": 1}),  # 4
        _line("bad-role", "x").replace('"assistant"', '"robot"').replace('"user"', '"robot"'),
        json.dumps(
            {"id": "bad-ts", "started_at": 1, "messages": [{"role": "user", "timestamp": "soon"}]}
        ),  # 6
        "",  # 7 blank
        "   \t",  # 8 blank
        big_valid,  # 9
        big_broken,  # 10
        "[1, 2, 3]",  # 11 not an object
        json.dumps({"id": "ms", "started_at": 1_700_000_000_000, "messages": []}),  # 12
        json.dumps(
            {
                "id": "calls",
                "started_at": 1,
                "messages": [{"role": "tool", "timestamp": 1, "tool_calls": "nope"}],
            }
        ),
        _line("ok2", "last good line"),  # 14
    ]
    report = import_sessions(store, iter(lines), batch_size=3)
    errors = {e.line: e.message for e in report.errors}
    assert sorted(errors) == [2, 3, 4, 5, 6, 10, 11, 12, 13]
    assert "not valid JSON" in errors[2]
    assert errors[3].startswith("id: ")
    assert errors[4] == "messages: Field required"
    assert errors[5].startswith("messages[0].role: ") and "'user'" in errors[5]
    assert errors[6].startswith("messages[0].timestamp: not an ISO 8601")
    assert "not valid JSON" in errors[10] and len(errors[10]) < 300  # never echoes the line
    assert "JSON object" in errors[11]
    assert "milliseconds" in errors[12]
    assert errors[13].startswith("messages[0].tool_calls")
    assert report.errors_total == 9
    assert (report.sessions_imported, report.lines_read) == (3, 14)
    assert store.messages("big")[0].content == big_text
    assert store.has_sessions(["ok1", "ok2", "big"]) == {"ok1", "ok2", "big"}
    assert SessionSearch(store)("discover", query="needle")["results"][0]["session_id"] == "big"


def test_times_iso_or_unix_seconds(store: SessionStore) -> None:
    stamps = [
        "2026-01-31T09:30:00Z",
        "2026-01-31T10:30:00+01:00",
        "2026-01-31T09:30:00",
        1769851800,
    ]
    session = {
        "id": "times",
        "started_at": "2026-01-31",
        "messages": [{"role": "user", "content": str(s), "timestamp": s} for s in stamps],
    }
    report = import_sessions(store, [json.dumps(session)])
    assert report.errors == []
    assert {m.timestamp for m in store.messages("times")} == {1769851800.0}
    info = store.get_session("times")
    assert info is not None and info.started_at == 1769817600.0 and info.source == "import"


def test_counters_and_tool_calls(store: SessionStore) -> None:
    session = {
        "id": "calls",
        "source": "cli",
        "started_at": 1,
        "messages": [
            {"role": "assistant", "content": None, "timestamp": 1, "tool_calls": [{}, {}]},
            {"role": "tool", "content": "r1", "timestamp": 2, "tool_name": "t"},
            {"role": "assistant", "content": "x", "timestamp": 3, "tool_calls": [{"a": 1}]},
            {"role": "assistant", "content": "y", "timestamp": 4, "tool_calls": []},
        ],
    }
    import_sessions(store, [json.dumps(session)])
    info = store.get_session("calls")
    assert info is not None and (info.message_count, info.tool_call_count) == (4, 3)
    assert store.messages("calls")[0].content == ""
    if store.engine.dialect.name == "sqlite":
        assert maintenance.check(store).counters_wrong == 0


def test_lineage_parents_before_after_and_missing(store: SessionStore) -> None:
    store.create_session(session_id="stored-root")
    store.create_session(session_id="stored-child", parent_session_id="stored-root")
    lines = [
        _line("late-child", "a", parent_session_id="late-parent"),  # parent comes later
        _line("grand", "b", parent_session_id="late-child"),
        _line("late-parent", "c", parent_session_id="stored-child"),
        _line("orphan", "d", parent_session_id="never-seen"),
        _line("self", "e", parent_session_id="self"),
        _line("loop-a", "f", parent_session_id="loop-b"),
        _line("loop-b", "g", parent_session_id="loop-a"),
    ]
    report = import_sessions(store, lines, batch_size=1)
    assert report.sessions_imported == 7
    roots = {sid: store.get_session(sid) for sid in ("late-child", "grand", "late-parent")}
    assert {s.root_session_id for s in roots.values() if s} == {"stored-root"}
    assert roots["late-child"].parent_session_id == "late-parent"  # type: ignore[union-attr]
    orphan = store.get_session("orphan")
    assert orphan is not None and (orphan.parent_session_id, orphan.root_session_id) == (
        None,
        "orphan",
    )
    own = store.get_session("self")
    assert own is not None and own.parent_session_id is None and own.root_session_id == "self"
    a, b = store.get_session("loop-a"), store.get_session("loop-b")
    assert a is not None and b is not None
    assert a.root_session_id == b.root_session_id == "loop-a"  # linked once, no cycle
    assert report.parents_missing == 3  # never-seen, self, and the cycle's closing link


def test_streams_and_commits_batch_by_batch(home: Home, store: SessionStore) -> None:
    seen: list[int] = []
    checked: list[int] = []

    def lines() -> Iterator[str]:
        for i in range(10):
            if i == 6:
                # Batches of 2: three have been committed; a second connection sees them.
                reader = SessionStore(store.engine)
                checked.append(reader.count_sessions())
            seen.append(i)
            yield _line(f"s{i}", f"message {i}")

    calls: list[tuple[int, int]] = []
    report = import_sessions(store, lines(), batch_size=2, progress=lambda *a: calls.append(a))
    assert checked == [6] and seen == list(range(10))
    assert calls[:3] == [(2, 2), (4, 4), (6, 6)] and calls[-1] == (10, 10)
    assert isinstance(report, ImportReport) and report.messages_per_second > 0


def test_imported_and_later_messages_are_indexed(home: Home, store: SessionStore) -> None:
    store.create_session(session_id="existing")
    store.add_message("existing", "user", "written before the import")
    import_sessions(store, [_line(f"s{i}", f"imported zebra {i}", "more") for i in range(30)])
    if store.engine.dialect.name == "sqlite":
        report = maintenance.check(store)
        assert report.ok, report
    # Appends after the import are indexed too.
    store.add_message("existing", "user", "afterwards a platypus")
    search = SessionSearch(store)
    assert search("discover", query="platypus")["results"][0]["session_id"] == "existing"
    assert len(search("discover", query="zebra", limit=10)["results"]) == 10
    assert search("discover", query="imported zebra 17")["results"][0]["session_id"] == "s17"
    dispose_engines()


def test_rejects_bad_batch_size(store: SessionStore) -> None:
    with pytest.raises(ValueError):
        import_sessions(store, [], batch_size=0)


def test_a_batch_the_database_refuses_is_retried_session_by_session(
    store: SessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = transfer._Importer._insert

    def refuse_poison(self, conn, batch):  # type: ignore[no-untyped-def]
        if any(session.id == "poison" for _, session in batch):
            raise IntegrityError("INSERT …", {}, Exception("CHECK constraint failed"))
        return original(self, conn, batch)

    monkeypatch.setattr(transfer._Importer, "_insert", refuse_poison)
    lines = [_line("a", "x"), _line("poison", "y"), _line("b", "z")]
    report = import_sessions(store, lines, batch_size=10)
    assert report.sessions_imported == 2 and store.has_sessions(["a", "b"]) == {"a", "b"}
    assert [(e.line, e.message) for e in report.errors] == [
        (2, "the database refused this session: CHECK constraint failed")
    ]


def test_large_imports_leave_merged_indexes(
    store: SessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large import ends by merging each full-text index into one segment; searching and the
    integrity check still agree afterwards."""
    monkeypatch.setattr(transfer, "OPTIMIZE_AFTER", 10)
    lines = [_line(f"big{i}", f"bulk import line {i}", "pelican sighting") for i in range(20)]
    assert import_sessions(store, lines, batch_size=3).messages_imported == 40
    if store.engine.dialect.name == "sqlite":
        assert maintenance.check(store).ok
    found = SessionSearch(store)("discover", query="bulk import line 7")["results"]
    assert found[0]["session_id"] == "big7"
