"""session_search on a real SQLite store: what users search for is found, any query is safe."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text

from engine.sessions.search import SearchError, SessionSearch
from engine.sessions.store import Message, NewMessage, SessionStore


@pytest.fixture
def search(store: SessionStore) -> SessionSearch:
    return SessionSearch(store)


def _session(store: SessionStore, title: str, *texts: str, **kw) -> str:  # type: ignore[no-untyped-def]
    session = store.create_session(title=title, **kw)
    store.append(session.id, [NewMessage(role="user", content=t) for t in texts])
    return session.id


NEEDLES = {
    "url": ("Docs are at https://docs.example.com/v2/setup?lang=en", "https://docs.example.com"),
    "email": ("Send the invoice to billing@acme-corp.io please", "billing@acme-corp.io"),
    "version": ("We pinned v2.14.3 after the regression", "v2.14.3"),
    "path": ("The bug is in src/engine/memory/store.py line 40", "src/engine/memory/store.py"),
    "snake": ("Rename compute_total_price before release", "compute_total_price"),
    "camel": ("The SessionSearchWidget flickers on resize", "SessionSearchWidget"),
    "cjk": ("我们讨论了数据库迁移的计划", "数据库迁移"),
    "substring": ("Ticket ABC-12345 is blocked", "12345"),
}


@pytest.mark.parametrize("kind", sorted(NEEDLES))
def test_finds_what_tokenisers_usually_miss(
    store: SessionStore, search: SessionSearch, kind: str
) -> None:
    text, query = NEEDLES[kind]
    _session(store, "noise", "nothing relevant here", "weather talk and lunch plans")
    target = _session(store, kind, "intro line", text, "outro line")
    result = search("discover", query=query)
    assert [r["session_id"] for r in result["results"]] == [target], result
    card = result["results"][0]
    assert text in [m["content"] for m in card["messages"]]
    assert card["snippet"] and "[" in card["snippet"]


def test_matches_inside_tool_messages_and_tool_names(
    store: SessionStore, search: SessionSearch
) -> None:
    session = store.create_session()
    store.append(
        session.id,
        [
            NewMessage(role="user", content="run the thing"),
            NewMessage(role="tool", content="exit status 137 OOMKilled", tool_name="terminal"),
        ],
    )
    assert search("discover", query="OOMKilled")["results"][0]["session_id"] == session.id
    assert search("discover", query="terminal")["results"][0]["session_id"] == session.id


def test_lineage_shown_once_and_current_lineage_excluded(
    store: SessionStore, search: SessionSearch
) -> None:
    root = _session(store, "root", "kubernetes ingress setup")
    child = store.create_session(parent_session_id=root)
    store.add_message(child.id, "user", "kubernetes ingress again after compression")
    other = _session(store, "other", "kubernetes ingress on another cluster")
    found = [r["session_id"] for r in search("discover", query="kubernetes ingress")["results"]]
    assert len(found) == 2 and other in found and (root in found) != (child.id in found)
    mine = search("discover", query="kubernetes ingress", current_session_id=child.id)
    assert [r["session_id"] for r in mine["results"]] == [other]


def test_window_and_bookends(store: SessionStore, search: SessionSearch) -> None:
    texts = [f"filler message number {i}" for i in range(40)]
    texts[20] = "the unique zebra crossing"
    sid = _session(store, "long", *texts)
    card = search("discover", query="zebra", window=2)["results"][0]
    assert [m["content"] for m in card["messages"]] == texts[18:23]
    assert [m["content"] for m in card["first_messages"]] == texts[:3]
    assert [m["content"] for m in card["last_messages"]] == texts[-3:]
    assert card["session_id"] == sid


def test_limits_are_clamped(store: SessionStore, search: SessionSearch) -> None:
    for i in range(15):
        _session(store, f"s{i}", f"common topic {i}")
    assert len(search("discover", query="common topic", limit=1000)["results"]) == 10
    assert len(search("discover", query="common topic", limit=-4)["results"]) == 1
    assert len(search("discover", query="common topic")["results"]) == 3


def test_filters_role_source_dates_and_order(store: SessionStore, search: SessionSearch) -> None:
    old = store.create_session(source="cron", started_at=1_000_000.0)
    store.append(
        old.id, [NewMessage(role="assistant", content="backup report", timestamp=1_000_000.0)]
    )
    new = store.create_session(source="cli", started_at=2_000_000_000.0)
    store.append(
        new.id, [NewMessage(role="user", content="backup report", timestamp=2_000_000_000.0)]
    )

    def ids(**kw: object) -> list[str]:
        found = search("discover", query="backup report", limit=10, **kw)["results"]
        return [r["session_id"] for r in found]

    assert ids(role="user") == [new.id]
    assert ids(source="cron") == [old.id]
    assert ids(since="2000-01-01") == [new.id]
    assert ids(until="1990-01-01T00:00:00Z") == [old.id]
    assert ids(order="newest") == [new.id, old.id]
    assert ids(order="oldest") == [old.id, new.id]
    with pytest.raises(SearchError, match="not a date"):
        ids(since="last tuesday")


def test_date_bounds_hold_whatever_order_messages_were_written_in(
    store: SessionStore, search: SessionSearch
) -> None:
    """A history imported late (old dates, new ids) and a message whose date is edited later
    are still inside the id ranges that date bounds are turned into on SQLite."""
    day = 86_400.0
    recent = store.create_session(started_at=2_000_000_000.0)
    store.append(
        recent.id,
        [NewMessage(role="user", content=f"ledger entry {i}", timestamp=2e9 + i) for i in range(5)],
    )
    imported = store.create_session(started_at=1_000_000_000.0)
    store.append(
        imported.id,
        [NewMessage(role="user", content="ledger entry old", timestamp=1e9 + day)],
    )
    edited = store.create_session(started_at=2_000_000_100.0)
    store.append(edited.id, [NewMessage(role="user", content="ledger note", timestamp=2e9 + 99)])
    with store.engine.begin() as conn:
        conn.execute(
            text("UPDATE messages SET timestamp = :t WHERE session_id = :sid"),
            {"t": 1e9, "sid": edited.id},
        )

    def ids(**kw: object) -> set[str]:
        found = search("discover", query="ledger", limit=10, **kw)["results"]
        return {r["session_id"] for r in found}

    assert ids(until=1e9 + 2 * day) == {imported.id, edited.id}
    assert ids(since=2e9) == {recent.id}
    assert ids(since=1e9 + 0.5 * day, until=1e9 + 2 * day) == {imported.id}
    assert ids(since=3e9) == set()


def test_scroll_read_browse(store: SessionStore, search: SessionSearch) -> None:
    texts = [f"line {i}" for i in range(50)]
    sid = _session(store, "scrolling", *texts)
    ids = [m.id for m in store.messages(sid)]
    around = search("scroll", session_id=sid, anchor_id=ids[10], window=3)
    assert [m["content"] for m in around["messages"]] == texts[7:14]
    forward = search("scroll", session_id=sid, anchor_id=ids[-2], direction="forward", window=5)
    assert [m["content"] for m in forward["messages"]] == texts[-1:] and not forward["has_later"]
    back = search("scroll", session_id=sid, anchor_id=ids[2], direction="backward", window=99)
    assert [m["content"] for m in back["messages"]] == texts[:2] and not back["has_earlier"]
    read = search("read", session_id=sid)
    assert len(read["messages"]) == 20 and len(read["last_messages"]) == 10
    assert read["omitted"] == 20
    assert search("browse")["sessions"][0]["session_id"] == sid
    with pytest.raises(SearchError):
        search("scroll", session_id="missing")
    with pytest.raises(SearchError):
        search("teleport")


def _expected_scroll(
    messages: list[Message], anchor: int | None, direction: str, window: int
) -> tuple[list[int], bool, bool]:
    """What a scroll shows, from the whole session: its messages and whether there is more
    before and after them."""
    ids = [m.id for m in messages]
    if anchor is None:
        anchor = 0 if direction != "backward" else 2**62
    if direction == "around":
        before, after = [i for i in ids if i < anchor], [i for i in ids if i >= anchor]
        shown = before[-window:] + after[: window + 1]
        more = (len(before) > window, len(after) > window + 1)
    elif direction == "forward":
        after = [i for i in ids if i > anchor]
        shown, more = after[:window], (any(i <= anchor for i in ids), len(after) > window)
    else:
        before = [i for i in ids if i < anchor]
        shown, more = before[-window:], (len(before) > window, any(i >= anchor for i in ids))
    return shown, bool(shown) and more[0], bool(shown) and more[1]


def test_scroll_shows_each_side_of_its_anchor_and_whether_there_is_more(
    store: SessionStore, search: SessionSearch
) -> None:
    # Two sessions written in turns, so that neither one's ids are contiguous.
    ours = store.create_session(title="ours", source="telegram")
    other = store.create_session(title="other")
    for turn in range(12):
        store.append(ours.id, [NewMessage(role="user", content=f"ours {turn}")] * (turn % 3 + 1))
        store.append(other.id, [NewMessage(role="user", content=f"other {turn}")])
    messages = store.messages(ours.id)
    read = search("read", session_id=ours.id)  # the whole session: 24 messages
    assert len(read["messages"]) == len(messages) == 24
    shown_of = {m["id"]: m for m in read["messages"]}
    session = {k: v for k, v in read.items() if k not in ("mode", "messages", "omitted")}
    session.pop("last_messages")
    for anchor in [None, *(m.id for m in messages)]:
        for direction in ("around", "forward", "backward"):
            for window in (1, 2, 5, 20, 99):  # 99 is taken as the largest, 20
                got = search(
                    "scroll",
                    session_id=ours.id,
                    anchor_id=anchor,
                    direction=direction,
                    window=window,
                )
                expected = _expected_scroll(messages, anchor, direction, min(window, 20))
                shown = [m["id"] for m in got["messages"]]
                assert (shown, got["has_earlier"], got["has_later"]) == expected, (
                    anchor,
                    direction,
                    window,
                )
                assert got["messages"] == [shown_of[i] for i in shown]
                assert {k: got[k] for k in session} == session
    empty = store.create_session(title="empty")
    quiet = search("scroll", session_id=empty.id)
    assert quiet["messages"] == [] and not quiet["has_earlier"] and not quiet["has_later"]
    assert quiet["title"] == "empty"
    foreign = store.messages(other.id)[0].id
    with pytest.raises(SearchError, match="belongs to session"):
        search("scroll", session_id=ours.id, anchor_id=foreign)
    with pytest.raises(SearchError, match="belongs to session"):
        search("scroll", session_id="missing", anchor_id=foreign)
    with pytest.raises(SearchError, match="no message"):
        search("scroll", session_id=ours.id, anchor_id=10**9)
    with pytest.raises(SearchError, match="no message"):
        search("scroll", session_id="missing", anchor_id=10**9)


HOSTILE = [
    '"',
    '""',
    '"unclosed phrase',
    "(",
    ")",
    "((a)",
    "AND",
    "OR",
    "NOT",
    "a AND",
    "OR b",
    "NOT NOT",
    "*",
    "a*",
    "*a",
    "-",
    "--",
    "-a",
    "a -",
    "NEAR(a b)",
    "a:b",
    "col:value",
    "^start",
    "a + b",
    "{a b}",
    "[x]",
    "'single'",
    "\\",
    "\x00",
    "🙂",
    "🚀 launch",
    "数据",
    "x" * 2049,
    "a " * 1500,
    "\u202e reversed",
    "SELECT * FROM messages; --",
]


@pytest.mark.parametrize("query", HOSTILE)
def test_every_typed_query_is_accepted(
    store: SessionStore, search: SessionSearch, query: str
) -> None:
    _session(store, "t", "a b launch 数据库 start value")
    result = search("discover", query=query)
    assert isinstance(result["results"], list)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.text(max_size=300))
def test_arbitrary_text_never_raises(search: SessionSearch, query: str) -> None:
    search("discover", query=query)
