"""Relevance of session_search on a small hand-written history: the expected conversations come
back near the top, whatever the backend does to keep queries fast.

The history is ~50 short sessions, written through ``SessionStore`` once per backend, with
common words ("docker", "error", "deploy") spread over many of them so that a query has noise to
rise above. Typos are not expected to match (there is no fuzzy search), so none is tested.

The last tests shrink the SQLite backend's ranking budget so that common terms exceed it, the
way they do in a history of a million messages, and check what the bounded path promises: the
newest matches of a common term, and rare terms found over the whole history.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from engine.config import Config
from engine.db import dispose_engines
from engine.home import Home
from engine.sessions import fts_sqlite
from engine.sessions.search import SessionSearch
from engine.sessions.store import NewMessage, SessionStore
from tests.conftest import open_store

T0 = 1_700_000_000.0  # 2023-11-14
DAY = 86_400.0


@dataclass
class S:
    """A session: its key (also its id), when it started, and its messages.

    A message is ``(role, content)``, ``(role, content, tool_name)`` or a dict of NewMessage
    fields.
    """

    key: str
    day: float
    messages: list[Any]
    source: str = "cli"
    parent: str | None = None
    title: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _call(command: str, name: str = "terminal") -> list[dict[str, Any]]:
    args = '{"command": "' + command + '"}'
    return [{"id": "call_1", "type": "function", "function": {"name": name, "arguments": args}}]


HISTORY: list[S] = [
    S(
        "pg-pool",
        1,
        [
            ("user", "The API started returning 500s this morning, the log says the pool is full."),
            ("assistant", "Let me look at the database settings and the error log."),
            (
                "tool",
                "sqlalchemy.exc.TimeoutError: QueuePool limit of size 5 overflow 10 reached, "
                "connection timed out, timeout 30.00",
                "terminal",
            ),
            (
                "assistant",
                "The connection pool exhausted its overflow. Raise pool_size or close sessions "
                "in the request handler.",
            ),
            ("user", "Raised pool_size to 20 and the errors stopped."),
        ],
    ),
    S(
        "pool-noise",
        1.5,
        [
            ("user", "The thread pool is exhausted when the connection to the bucket hangs."),
            ("assistant", "Add a timeout to the upload so a slow connection frees its thread."),
        ],
    ),
    S(
        "docker-buildkit",
        2,
        [
            ("user", "docker build is slow on CI, every layer rebuilds."),
            (
                "assistant",
                "Enable cache mounts: set DOCKER_BUILDKIT=1 and use --mount=type=cache for pip.",
            ),
            ("user", "With buildkit the image builds in 40 seconds instead of 6 minutes."),
        ],
    ),
    S(
        "docker-ports",
        2.5,
        [
            ("user", "docker compose up fails because port 5432 is already in use"),
            ("assistant", "Stop the local postgres or map the container port to 5433."),
        ],
    ),
    S(
        "docker-prune",
        3,
        [
            ("user", "the disk is full of old docker images"),
            ("assistant", "Run docker system prune to remove dangling images and containers."),
        ],
    ),
    S(
        "docker-logs",
        3.5,
        [
            ("user", "how do I follow the logs of a docker container"),
            ("assistant", "Use docker logs -f with the container name; add --since 10m."),
        ],
    ),
    S(
        "docker-network",
        4,
        [
            ("user", "two docker containers cannot reach each other, connection refused"),
            ("assistant", "Put both containers on the same user-defined docker network."),
        ],
    ),
    S(
        "invoice-totals",
        5,
        [
            ("user", "The monthly invoice totals are off by a few cents."),
            (
                "assistant",
                "compute_invoice_totals rounds each line before summing; round once at the end.",
            ),
            (
                "tool",
                "--- billing/totals.py\n+++ billing/totals.py\n"
                "@@ def compute_invoice_totals(lines):\n"
                "-    return sum(round(l.amount, 2) for l in lines)\n"
                "+    return round(sum(l.amount for l in lines), 2)",
                "patch",
            ),
        ],
        source="telegram",
    ),
    S(
        "invoice-user",
        5.5,
        [
            ("user", "send me the invoice for March when it is ready"),
            ("assistant", "Sure, I will send it once accounting closes the month."),
        ],
    ),
    S(
        "invoice-assistant",
        6,
        [
            ("user", "did accounting close April?"),
            ("assistant", "Yes. I attached the invoice PDF for April to the ticket."),
        ],
    ),
    S(
        "ws-reconnect",
        7,
        [
            ("user", "The desktop client loses the live feed after the laptop sleeps."),
            (
                "assistant",
                "WebSocketReconnectPolicy gives up after three attempts; make the backoff "
                "unlimited with a 30 s cap.",
            ),
        ],
    ),
    S(
        "cdn-incident",
        8,
        [
            ("user", "Images were broken for an hour yesterday."),
            (
                "assistant",
                "It was the CDN: see https://status.fastly.example/incidents/8812 for the report.",
            ),
        ],
        source="discord",
    ),
    S(
        "python-upgrade",
        9,
        [
            ("user", "Which Python should the build image use?"),
            ("assistant", "Pin v3.11.7; 3.12 breaks the wheels we build against."),
        ],
    ),
    S(
        "ui-panel",
        10,
        [
            ("user", "The session list flickers when I scroll."),
            (
                "assistant",
                "The flicker comes from app/widgets/session_panel.py, which repaints on every "
                "scroll event.",
            ),
        ],
    ),
    S(
        "oncall-mail",
        11,
        [
            ("user", "Who gets paged for the payment alerts?"),
            ("assistant", "Alerts go to ops-oncall@northwind.example and the on-call phone."),
        ],
        source="telegram",
    ),
    S(
        "zeroconf",
        12,
        [
            ("user", "The printer is not discovered on the office network."),
            ("assistant", "Discovery uses zeroconf multicast; the new VLAN blocks mDNS."),
        ],
    ),
    S(
        "oom",
        13,
        [
            ("user", "the worker pod keeps restarting"),
            {
                "role": "assistant",
                "content": "Let me describe the pod.",
                "tool_calls": _call("kubectl describe pod worker-7d9f"),
            },
            ("tool", "State: Terminated\n  Reason: OOMKilled\n  Exit Code: 137", "terminal"),
            ("assistant", "The pod runs out of memory; raise the memory limit to 2Gi."),
        ],
    ),
    S(
        "unique-violation",
        14,
        [
            ("user", "signups fail now and then with an error"),
            (
                "tool",
                "psycopg.errors.UniqueViolation: duplicate key value violates unique "
                'constraint "users_email_key"',
                "terminal",
            ),
            ("assistant", "Two signups raced; use INSERT ... ON CONFLICT DO NOTHING."),
        ],
    ),
    S(
        "redis-together",
        15,
        [
            ("user", "what should the session cache do when memory is full?"),
            ("assistant", "For a cache, allkeys-lru is the usual eviction policy on redis."),
        ],
    ),
    S(
        "redis-scattered",
        15.5,
        [
            ("user", "redis memory keeps growing"),
            ("assistant", "We could change the eviction settings."),
            ("user", "and what about the retention policy for logs?"),
        ],
    ),
    S(
        "redis-only",
        16,
        [
            ("user", "install redis on the staging box"),
            ("assistant", "apt install redis-server, then enable the service."),
        ],
    ),
    S(
        "birds",
        17,
        [
            ("user", "The kestrel camera in the north field is offline."),
            ("assistant", "The falcon relay on the barn roof powers it."),
            ("user", "Also check the osprey nest feed."),
        ],
    ),
    S(
        "falcon-framework",
        17.5,
        [
            ("user", "We use the falcon web framework for the API."),
            ("assistant", "falcon handles routing and middleware well."),
        ],
    ),
    S(
        "kestrel-server",
        18,
        [("user", "kestrel is the web server inside our ASP.NET service")],
    ),
    S(
        "tf-root",
        19,
        [
            ("user", "terraform state lock is stuck after the CI job was cancelled."),
            ("assistant", "Run terraform force-unlock with the lock ID from the error."),
        ],
    ),
    S(
        "tf-child",
        19.2,
        [
            ("user", "continuing: the terraform state lock came back after the retry."),
            ("assistant", "Then the cancelled job still holds it; check the runner."),
        ],
        parent="tf-root",
    ),
    S(
        "tf-other",
        20,
        [("user", "terraform state lock on the staging workspace again: two applies at once.")],
        source="discord",
    ),
    S(
        "report-q1",
        21,
        [("assistant", "Quarterly report generated: revenue up 4%, churn flat.")],
        source="cron",
    ),
    S(
        "report-q2",
        50,
        [("assistant", "Quarterly report generated: revenue up 6%, churn down.")],
        source="cron",
    ),
    S(
        "report-q3",
        80,
        [("assistant", "Quarterly report generated: revenue flat, churn up.")],
        source="cron",
    ),
    S(
        "cjk-db",
        81,
        [
            ("user", "我们讨论了数据库迁移的计划，下周开始。"),
            ("assistant", "好的，我会准备迁移脚本。"),
        ],
    ),
    S(
        "cjk-jp",
        82,
        [
            ("user", "設定ファイルの場所を教えてください。"),
            ("assistant", "ホームフォルダの config.yaml です。"),
        ],
    ),
    S(
        "nginx-certbot",
        83,
        [("user", "nginx reload after certbot renew fails with a permissions error.")],
    ),
    S(
        "nginx-timeout",
        84,
        [("user", "nginx upstream timeout on the /export endpoint, the error page shows 504.")],
    ),
    S(
        "k8s-ingress",
        85,
        [
            ("user", "the kubernetes ingress returns 404 for the new service"),
            ("assistant", "The ingress path needs a trailing wildcard."),
        ],
    ),
    S(
        "k8s-rollback",
        86,
        [
            ("user", "the payments release is broken, go back"),
            {
                "role": "assistant",
                "content": "Rolling back the deployment.",
                "tool_calls": _call("kubectl rollout undo deployment/payments"),
            },
            ("tool", "deployment.apps/payments rolled back", "terminal"),
        ],
    ),
    S(
        "cafe",
        87,
        [("user", "Update the café menu on the website, and the résumé page too.")],
    ),
    S(
        "mongo-dup",
        88,
        [
            ("user", "the import stopped half way"),
            (
                "tool",
                "E11000 duplicate key error collection: app.users index: email_1 dup key",
                "terminal",
            ),
        ],
    ),
    S(
        "deploy-friday",
        89,
        [
            ("user", "Can we deploy on Friday? The tests pass and the error rate is flat."),
            ("assistant", "Deploy before noon so there is time to roll back."),
        ],
    ),
    S(
        "flaky-tests",
        90,
        [
            ("user", "The integration tests are flaky again, the error is a timeout."),
            ("assistant", "The test waits on a fixed sleep; poll the port instead."),
        ],
    ),
    S(
        "standup",
        91,
        [
            ("user", "notes for standup: deploy went fine, one error in the logs, docker upgrade"),
            ("assistant", "Noted. I will post them in the channel."),
        ],
    ),
    S(
        "error-budget",
        92,
        [("user", "how much error budget is left this month after the deploy incident?")],
    ),
    S(
        "docker-upgrade",
        93,
        [
            ("user", "upgrade docker on the build machines"),
            ("assistant", "The new docker engine needs a restart of every runner."),
        ],
    ),
    S(
        "lunch",
        94,
        [("user", "what was the name of the ramen place near the office?")],
    ),
]


def _build(store: SessionStore, history: list[S]) -> None:
    for s in history:
        start = T0 + s.day * DAY
        store.create_session(
            session_id=s.key,
            source=s.source,
            title=s.title or s.key,
            parent_session_id=s.parent,
            started_at=start,
        )
        messages = []
        for i, m in enumerate(s.messages):
            fields = (
                dict(m)
                if isinstance(m, dict)
                else dict(zip(("role", "content", "tool_name"), m, strict=False))
            )
            messages.append(NewMessage(timestamp=start + 60 * (i + 1), **fields))
        store.append(s.key, messages)


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def search(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SessionSearch]:
    """The history written once per backend; every query test of the module reads it."""
    home = Home(tmp_path_factory.mktemp("relevance") / "home")
    store = open_store(request.param, home)
    _build(store, HISTORY)
    yield SessionSearch(store)
    store.engine.dispose()
    dispose_engines()


def ids(search: SessionSearch, query: str, **kw: Any) -> list[str]:
    return [r["session_id"] for r in search("discover", query=query, **kw)["results"]]


# (query, options, expected first result)
FIRST: list[tuple[str, dict[str, Any], str]] = [
    ('"connection pool exhausted"', {}, "pg-pool"),  # exact phrase; the words recur elsewhere
    ("connection pool exhausted", {}, "pg-pool"),
    ("compute_invoice_totals", {}, "invoice-totals"),  # snake_case identifier
    ("WebSocketReconnectPolicy", {}, "ws-reconnect"),  # CamelCase identifier
    ("ReconnectPolicy", {}, "ws-reconnect"),  # part of an identifier: substring search
    ("https://status.fastly.example/incidents/8812", {}, "cdn-incident"),
    ("v3.11.7", {}, "python-upgrade"),
    ("app/widgets/session_panel.py", {}, "ui-panel"),
    ("ops-oncall@northwind.example", {}, "oncall-mail"),
    ("docker buildkit", {}, "docker-buildkit"),  # a rare word among a common one
    ("buildkit", {}, "docker-buildkit"),
    ("zeroconf", {}, "zeroconf"),
    ("OOMKilled", {}, "oom"),  # tool output
    ("OOMKilled", {"role": "tool"}, "oom"),
    ("psycopg.errors.UniqueViolation", {}, "unique-violation"),
    ("E11000", {}, "mongo-dup"),
    ("rollout undo", {}, "k8s-rollback"),  # inside a tool call's arguments
    ("redis eviction policy", {}, "redis-together"),  # all words in one message beat scattered
    ("数据库迁移", {}, "cjk-db"),
    ("迁移", {}, "cjk-db"),  # two CJK characters: shorter than a trigram
    ("迁", {}, "cjk-db"),  # one
    ("場所", {}, "cjk-jp"),
    ("数据库 迁移", {}, "cjk-db"),  # a trigram term and a two-character one, both required
    ("設定ファイル", {}, "cjk-jp"),
    ("cafe", {}, "cafe"),  # diacritics folded
    ("resume", {}, "cafe"),
    ("CAFÉ", {}, "cafe"),  # in the query too
    # A rare word among common ones it lacks: no message holds all three, and the one with
    # the rare word beats the many newer ones with "error".
    ("printer error zeroconf", {}, "zeroconf"),
    ("quarterly report", {"order": "newest"}, "report-q3"),
    ("quarterly report", {"order": "oldest"}, "report-q1"),
    ("invoice", {"source": "telegram"}, "invoice-totals"),
]


@pytest.mark.parametrize(("query", "options", "expected"), FIRST, ids=[q for q, _, _ in FIRST])
def test_expected_session_comes_first(
    search: SessionSearch, query: str, options: dict[str, Any], expected: str
) -> None:
    found = ids(search, query, **options)
    assert found and found[0] == expected, found


# (query, options, expected somewhere in the top three)
TOP3: list[tuple[str, dict[str, Any], str]] = [
    ("kestrel falcon osprey", {}, "birds"),  # every word, each in a different message
    ("kube*", {}, "k8s-ingress"),
    ("nginx -certbot", {}, "nginx-timeout"),
    ("invoice", {"role": "assistant"}, "invoice-assistant"),
]


@pytest.mark.parametrize(("query", "options", "expected"), TOP3, ids=[q for q, _, _ in TOP3])
def test_expected_session_in_top_three(
    search: SessionSearch, query: str, options: dict[str, Any], expected: str
) -> None:
    assert expected in ids(search, query, **options)


def test_filters_keep_out_what_they_exclude(search: SessionSearch) -> None:
    assert "invoice-user" not in ids(search, "invoice", role="assistant", limit=10)
    assert "nginx-certbot" not in ids(search, "nginx -certbot", limit=10)
    assert set(ids(search, "invoice", source="telegram", limit=10)) == {"invoice-totals"}
    since = T0 + 30 * DAY
    assert ids(search, "quarterly report", since=since, order="oldest") == [
        "report-q2",
        "report-q3",
    ]
    until = T0 + 30 * DAY
    # Both words in one session before the bound; a session with one of them fills up to the
    # limit, and nothing after the bound comes back.
    before = ids(search, "quarterly report", until=until)
    assert before[0] == "report-q1" and not {"report-q2", "report-q3"} & set(before), before
    assert ids(search, "quarterly report", order="newest", limit=10) == [
        "report-q3",
        "report-q2",
        "report-q1",
    ]


def test_a_compressed_conversation_shows_once(search: SessionSearch) -> None:
    found = ids(search, "terraform state lock", limit=10)
    assert "tf-other" in found
    assert len({"tf-root", "tf-child"} & set(found)) == 1, found
    mine = ids(search, "terraform state lock", current_session_id="tf-child")
    assert mine[0] == "tf-other" and not {"tf-root", "tf-child"} & set(mine), mine


def test_the_card_shows_the_matching_message(search: SessionSearch) -> None:
    card = search("discover", query="OOMKilled")["results"][0]
    assert "OOMKilled" in card["snippet"]
    matched = [m for m in card["messages"] if m["id"] == card["match_message_id"]]
    assert matched and matched[0]["tool_name"] == "terminal"


def test_words_that_are_nowhere_find_nothing(search: SessionSearch) -> None:
    assert ids(search, "xylophonequartz") == []
    assert ids(search, "databse") == []  # typos are not corrected


# -- the bounded ranking path (SQLite) -------------------------------------------------------

OLD_RARE = "kestrelwing"
PLAIN = 30  # later sessions, each with two messages that say "deploy" and "canary"


@pytest.fixture
def bounded(home: Home, monkeypatch: pytest.MonkeyPatch) -> SessionSearch:
    store = SessionStore.open(home, Config())
    history = [
        S(
            "old",
            0,
            [
                ("user", f"deploy checklist for {OLD_RARE}"),
                ("assistant", "deploy the canary before the fleet"),
            ],
        )
    ]
    for i in range(1, PLAIN + 1):
        history.append(
            S(
                f"plain-{i:02d}",
                i,
                [
                    ("user", f"deploy number {i} is done"),
                    ("assistant", "the canary is healthy, the fleet follows"),
                ],
            )
        )
    _build(store, history)
    # Budgets far below the 31 messages that say "deploy": common terms exceed them, and
    # "few" is below them too, so the ranked path is the one exercised.
    monkeypatch.setattr(fts_sqlite, "RANK_BUDGET", 4)
    monkeypatch.setattr(fts_sqlite, "FILTERED_RANK_BUDGET", 4)
    monkeypatch.setattr(fts_sqlite, "FEW", 2)
    return SessionSearch(store)


def test_bounded_common_term_ranks_the_newest_matches(bounded: SessionSearch) -> None:
    newest = {f"plain-{i:02d}" for i in range(PLAIN - 3, PLAIN + 1)}
    found = ids(bounded, "deploy")
    assert len(found) == 3 and set(found) <= newest, found
    assert ids(bounded, "deploy", order="newest") == ["plain-30", "plain-29", "plain-28"]
    assert ids(bounded, "canary", order="oldest") == ["old", "plain-01", "plain-02"]


def test_bounded_rare_term_is_found_over_the_whole_history(bounded: SessionSearch) -> None:
    assert ids(bounded, OLD_RARE) == ["old"]
    assert ids(bounded, f"deploy {OLD_RARE}")[0] == "old"
    assert ids(bounded, f"checklist {OLD_RARE}")[0] == "old"


def test_bounded_phrase_of_common_words_in_old_history(bounded: SessionSearch) -> None:
    assert ids(bounded, '"deploy the canary"') == ["old"]


def test_bounded_common_term_with_a_date_filter_in_old_history(bounded: SessionSearch) -> None:
    assert ids(bounded, "deploy", until=T0 + 0.5 * DAY) == ["old"]
