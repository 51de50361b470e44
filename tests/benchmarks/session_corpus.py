"""A deterministic synthetic corpus of agent sessions, as JSONL lines, for the search benchmark.

    python tests/benchmarks/session_corpus.py --messages 1000 > corpus.jsonl

Nothing is downloaded: the vocabulary is made here from a seeded random generator. It has a few
dozen English function words at the top, a few hundred real technical words spread over the
upper ranks and 50,000 pronounceable pseudo-words (made from syllables without ``q``, ``x`` or
``z``), drawn with Zipf-Mandelbrot weights, so a handful of words are in most messages and most
words are rare. Sessions hold 20-200 messages of users, assistants and tools: prose, code
blocks, tool calls, stack traces, JSON, shell and test output, file paths, URLs, e-mail
addresses, version strings, snake_case and CamelCase identifiers, commit hashes and some CJK
text. A tenth of the sessions continue the one before (``parent_session_id``), as compressed
conversations do. Timestamps increase through the corpus, so message ids follow time as they
do in use.

Each session is generated from its own seed, so any one can be rebuilt on its own (the
benchmark samples phrases that way) and ``Corpus.lines()`` streams one session at a time: a
million messages never sit in memory.

Needles are messages planted at known sessions (spread from the oldest to the newest part of the
history), each with the query that should find it. Most carry a token that occurs nowhere
else (``quixotrelm`` or words containing ``qx``, which no generated word has; CJK characters the
generator never uses); the others are built only from common parts (a version like 4.12.7, a
path like ``src/app/cache.py``, a phrase of everyday words) to show what ranking does when every
part of the query is common.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

SEED = 20_240_601
BASE_TIME = 1_672_531_200.0  # 2023-01-01T00:00:00Z
VOCAB_SIZE = 50_000
ZIPF_S, ZIPF_Q = 1.0, 2.7
MIN_LEN, MAX_LEN = 20, 200
CONTINUED = 0.1  # share of sessions that continue the one before after a compression


def _words(text: str) -> list[str]:
    return text.split()


FUNCTION_WORDS = _words(
    "the to and of a in is it that for you this on with be as are not have i we can but if or "
    "your at by from was will do so an all there what which would should could my just now then "
    "use when also more one about like need some get make out up no how here its they has our "
    "than only into been other new see first any after after way want did these two"
)

TECH_WORDS = _words(
    "error file test run build config server python docker function data user table query "
    "please before keys staging rotate friday meeting after queue billing rename cache "
    "model request response value code line type version update install package module class "
    "method return import string list object key index cache memory session message database "
    "api endpoint token client service container image deploy release branch commit merge "
    "pull push repo script command output input log debug warning exception trace stack "
    "thread process timeout retry connection socket port host network proxy certificate tls "
    "http https json yaml toml csv schema migration column row sql postgres sqlite redis "
    "kafka queue worker job task cron scheduler event handler callback async await future "
    "promise loop iterator generator decorator context manager lock mutex race deadlock "
    "pointer reference heap allocation leak garbage collector compile compiler linker binary "
    "library dependency lockfile pip npm cargo poetry venv virtualenv kernel driver cpu gpu "
    "disk volume mount filesystem path directory folder permission root sudo chmod owner "
    "group shell bash zsh terminal editor vim emacs vscode plugin extension theme window "
    "widget layout render frame pixel font color style css html javascript typescript react "
    "component state props hook router route middleware auth login password secret vault "
    "encrypt decrypt hash signature jwt oauth scope permission role admin tenant billing "
    "invoice payment customer order cart checkout product price discount coupon report "
    "dashboard metric latency throughput benchmark profile flamegraph regression baseline "
    "fixture mock stub assert coverage lint format ruff mypy pytest unittest integration "
    "staging production rollback canary feature flag toggle experiment cluster node pod "
    "kubernetes helm ingress namespace replica autoscaler terraform ansible backup restore "
    "snapshot archive compress gzip tarball upload download bucket storage blob stream "
    "buffer chunk batch pipeline transform parse serialize encode decode unicode utf8 regex "
    "pattern match search filter sort rank score relevance vector embedding prompt agent "
    "tool skill memory gateway telegram discord slack email notify webhook alert incident "
    "outage monday friday weekend morning tonight deadline meeting review ticket issue bug "
    "fix patch hotfix changelog ledger reconcile snapshots"
)

TOOLS = ("terminal", "read_file", "search_files", "web_search", "patch", "browser", "execute_code")
SOURCES = (("cli", 60), ("telegram", 15), ("discord", 10), ("cron", 10), ("api", 5))

DIRS = _words(
    "src app engine tests lib cmd internal pkg docs scripts config api core utils services "
    "models handlers migrations static templates build dist tools web server client"
)
EXTS = ("py", "ts", "js", "go", "rs", "md", "yaml", "json", "toml", "sql", "sh", "tsx")
HOSTS = (
    "github.com",
    "docs.python.org",
    "stackoverflow.com",
    "readthedocs.io",
    "developer.mozilla.org",
    "kubernetes.io",
    "example.com",
    "grafana.internal.example",
    "ci.example.org",
    "www.sqlite.org",
)
MAIL_DOMAINS = ("example.com", "acme.io", "corp.example.org", "mail.test", "users.noreply.dev")
EXCEPTIONS = (
    "ValueError",
    "KeyError",
    "TypeError",
    "RuntimeError",
    "TimeoutError",
    "ConnectionResetError",
    "FileNotFoundError",
    "PermissionError",
    "sqlite3.OperationalError",
    "json.decoder.JSONDecodeError",
    "AssertionError",
    "ImportError",
)
CJK_WORDS = _words(
    "数据库 服务器 部署 配置文件 错误日志 性能测试 用户界面 网络连接 缓存 内存泄漏 "
    "代码审查 版本发布 测试用例 接口 认证 权限 备份 恢复 日志 监控 告警 "
    "任务 队列 线程 进程 超时 重试 索引 查询 "
    "設定ファイル エラーが発生しました データベース サーバー テスト デプロイ ログ キャッシュ "
    "한국어 서버 배포 데이터베이스 오류"
)
CJK_GLUE = ("的", "和", "，", "在", "需要", "已经", "还是", "の", "を", "が")

# Some needles are made only of common parts; the generator never writes these exact strings,
# so the needle stays the one place they occur.
COMMON_VERSION = "4.12.7"
COMMON_PATH = "src/app/cache.py"
COMMON_PHRASE = "please rotate the staging keys before friday"


@dataclass(frozen=True)
class Needle:
    """A planted message and the query that should find it.

    ``fractions`` place it in the history (0 = oldest session, 1 = newest); with more than
    one the query is run with ``order="newest"`` and the newest copy must come first.
    """

    name: str
    kind: str  # "rare" (a unique token) or "common" (only common parts)
    content: str
    query: str
    fractions: tuple[float, ...]
    role: str = "user"
    tool_name: str | None = None
    filters: dict[str, Any] = field(default_factory=dict)


NEEDLES: tuple[Needle, ...] = (
    Needle(
        "rare word",
        "rare",
        "Turns out the flaky part was quixotrelm, the old sidecar nobody remembered.",
        "quixotrelm",
        (0.03,),
    ),
    Needle(
        "rare + common",
        "rare",
        "The docker build only fails when the qxvandle cache layer is reused from yesterday.",
        "docker qxvandle",
        (0.17,),
    ),
    Needle(
        "url",
        "rare",
        "The panel is at https://grafana.qxinternal.example/d/xk42/latency-p99?orgId=3 now.",
        "https://grafana.qxinternal.example/d/xk42/latency-p99",
        (0.29,),
        role="assistant",
    ),
    Needle(
        "e-mail",
        "rare",
        "Forward the invoice dispute to marguerite.okonkwo@qxfabrik.io before the audit.",
        "marguerite.okonkwo@qxfabrik.io",
        (0.41,),
    ),
    Needle(
        "path",
        "rare",
        "The bug lives in src/qxledger/reconcile_batches.py around line 212.",
        "src/qxledger/reconcile_batches.py",
        (0.55,),
        role="assistant",
    ),
    Needle(
        "CamelCase",
        "rare",
        "QxTelemetryFlushWorker drops spans when the exporter queue is full.",
        "QxTelemetryFlushWorker",
        (0.66,),
    ),
    Needle(
        "tool output",
        "rare",
        "Traceback (most recent call last):\n"
        '  File "gateway/pay.py", line 88, in charge\n'
        "    raise QxPaymentGatewayTimeout(resp)\n"
        "QxPaymentGatewayTimeout: upstream 504 after 30000ms",
        "QxPaymentGatewayTimeout",
        (0.08,),
        role="tool",
        tool_name="terminal",
    ),
    Needle(
        "tool output, role=tool",
        "rare",
        "$ make deploy\nERR_QX_4471 certificate chain incomplete for api.example.com",
        "ERR_QX_4471",
        (0.47,),
        role="tool",
        tool_name="terminal",
        filters={"role": "tool"},
    ),
    Needle(
        "snake_case",
        "rare",
        "Call qx_reconcile_ledger_snapshots() after the nightly import finishes.",
        "qx_reconcile_ledger_snapshots",
        (0.78,),
    ),
    Needle(
        "CJK",
        "rare",
        "会议记录：鲸鱼迁徙项目的数据库迁移计划推迟到下周。",
        "鲸鱼迁徙",
        (0.22,),
    ),
    Needle(
        "CJK, recent",
        "rare",
        "备忘：熊猫饲养系统的告警阈值要调整。",
        "熊猫饲养",
        (0.97,),
    ),
    Needle(
        "order=newest",
        "rare",
        "Reminder: the qxheron migration window is Sunday night.",
        "qxheron",
        (0.12, 0.5, 0.88),
        filters={"order": "newest"},
    ),
    Needle(
        "source filter",
        "rare",
        "Alarm from the qxmarmot backup job: the snapshot is 3 days old.",
        "qxmarmot backup",
        (0.35,),
        filters={"source": "cron"},
    ),
    Needle(
        "version, common parts",
        "common",
        f"We pinned libfoo to {COMMON_VERSION} after the regression.",
        COMMON_VERSION,
        (0.06,),
    ),
    Needle(
        "path, common parts",
        "common",
        f"The race is in {COMMON_PATH} where the cache is refreshed.",
        COMMON_PATH,
        (0.38,),
        role="assistant",
    ),
    Needle(
        "phrase, common words",
        "common",
        f"Ops note: {COMMON_PHRASE}, the old ones expire.",
        f'"{COMMON_PHRASE}"',
        (0.26,),
    ),
    Needle(
        "phrase, common words, recent",
        "common",
        "Heads up: we should rename the billing queue after the meeting.",
        '"rename the billing queue after the meeting"',
        (0.93,),
    ),
)


def _pseudo_words(rng: random.Random, count: int, taken: set[str]) -> list[str]:
    onsets = _words("b c d f g h j k l m n p r s t v w br ch cr dr fl gr kl pl pr sh st tr th")
    vowels = _words("a e i o u ai ea ou io")
    codas = ["", "", "", "n", "r", "l", "s", "m", "nd", "rt", "st", "ck"]
    out: list[str] = []
    seen = set(taken)
    while len(out) < count:
        syllables = rng.choices((1, 2, 3, 4), weights=(2, 5, 4, 1))[0]
        word = "".join(rng.choice(onsets) + rng.choice(vowels) for _ in range(syllables))
        word += rng.choice(codas)
        if len(word) >= 3 and word not in seen:
            seen.add(word)
            out.append(word)
    return out


def build_vocabulary(seed: int = SEED) -> list[str]:
    """Words by rank: function words first, technical words spread over the upper ranks."""
    rng = random.Random(seed)
    tech = list(dict.fromkeys(w for w in TECH_WORDS if w not in FUNCTION_WORDS))
    head = list(dict.fromkeys(FUNCTION_WORDS))
    pseudo = _pseudo_words(rng, VOCAB_SIZE, set(head) | set(tech))
    vocab = head[:]
    # Technical words from just below the function words to rank ~6,000, denser near the top.
    slots: dict[int, str] = {}
    for i, word in enumerate(tech):
        slots[max(len(head) + int((i**1.6) * 0.4), max(slots, default=0) + 1)] = word
    it = iter(pseudo)
    rank = len(vocab)
    while len(vocab) < len(head) + len(tech) + VOCAB_SIZE:
        word = slots.pop(rank, None)
        vocab.append(word if word is not None else next(it, None) or slots.pop(min(slots)))
        rank += 1
    return vocab


@dataclass
class _Session:
    index: int
    length: int
    started_at: float
    continues: bool  # a compressed continuation of the session before it (same lineage)


class Corpus:
    """``messages`` messages in sessions of 20-200, deterministic for a seed."""

    def __init__(self, messages: int, seed: int = SEED) -> None:
        if messages < MIN_LEN:
            raise ValueError(f"at least {MIN_LEN} messages")
        self.total = messages
        self.seed = seed
        self.vocab = build_vocabulary(seed)
        self.cum = list(
            itertools.accumulate(
                1.0 / (r + ZIPF_Q) ** ZIPF_S for r in range(1, 1 + len(self.vocab))
            )
        )
        self.mid_ranks = (300, 6000)  # identifiers are made of words from these ranks
        self.sessions = self._layout()
        self.needles = self._place_needles()

    # -- layout -----------------------------------------------------------------------

    def _layout(self) -> list[_Session]:
        rng = random.Random(self.seed + 1)
        sessions: list[_Session] = []
        left, at = self.total, BASE_TIME
        while left > 0:
            length = min(left, rng.randint(MIN_LEN, MAX_LEN))
            continues = bool(sessions) and rng.random() < CONTINUED
            sessions.append(_Session(len(sessions), length, at, continues))
            # The next session starts after this one ends (<= ~1 min per message) plus a gap.
            at += length * 60 + rng.uniform(600, 86_400)
            left -= length
        return sessions

    def _place_needles(self) -> dict[int, dict[int, Needle]]:
        """session index -> {message position -> needle}."""
        placed: dict[int, dict[int, Needle]] = {}
        last = len(self.sessions) - 1
        for n, needle in enumerate(NEEDLES):
            for fraction in needle.fractions:
                index = round(fraction * last)
                length = self.sessions[index].length
                slots = placed.setdefault(index, {})
                position = (3 + n * 7) % max(1, length - 2)
                while position in slots:
                    position = (position + 1) % length
                slots[position] = needle
        return placed

    def session_id(self, index: int) -> str:
        return f"bench-{self.seed % 10_000:04d}-{index:07d}"

    def needle_sessions(self, needle: Needle) -> list[str]:
        """Ids of the sessions holding ``needle``, oldest first."""
        return [
            self.session_id(i)
            for i, slots in sorted(self.needles.items())
            if any(n is needle for n in slots.values())
        ]

    def source_of(self, index: int) -> str:
        for needle in self.needles.get(index, {}).values():
            if "source" in needle.filters:
                return needle.filters["source"]
        rng = random.Random(self.seed * 7 + index)
        return rng.choices([s for s, _ in SOURCES], weights=[w for _, w in SOURCES])[0]

    # -- text -------------------------------------------------------------------------

    def words(self, rng: random.Random, k: int) -> list[str]:
        return rng.choices(self.vocab, cum_weights=self.cum, k=k)

    def _mid_word(self, rng: random.Random) -> str:
        low, high = self.mid_ranks
        return self.vocab[min(high, low + int(rng.paretovariate(1.2) * 40) - 40)]

    def snake(self, rng: random.Random) -> str:
        return "_".join(self._mid_word(rng) for _ in range(rng.randint(2, 3)))

    def camel(self, rng: random.Random) -> str:
        return "".join(self._mid_word(rng).capitalize() for _ in range(rng.randint(2, 3)))

    def path(self, rng: random.Random) -> str:
        parts = rng.sample(DIRS, rng.randint(1, 3))
        path = "/".join(parts) + "/" + self.snake(rng) + "." + rng.choice(EXTS)
        return path if path != COMMON_PATH else "src/app/main.py"

    def url(self, rng: random.Random) -> str:
        host = rng.choice(HOSTS)
        segments = "/".join(self._mid_word(rng) for _ in range(rng.randint(1, 3)))
        url = f"https://{host}/{segments}"
        if rng.random() < 0.3:
            url += f"?{self._mid_word(rng)}={rng.randint(1, 999)}"
        return url

    def email(self, rng: random.Random) -> str:
        return f"{self._mid_word(rng)}.{self._mid_word(rng)}@{rng.choice(MAIL_DOMAINS)}"

    def version(self, rng: random.Random) -> str:
        v = f"{rng.randint(0, 5)}.{rng.randint(0, 30)}.{rng.randint(0, 20)}"
        if v == COMMON_VERSION:
            v = "4.12.8"
        return ("v" if rng.random() < 0.4 else "") + v

    def cjk(self, rng: random.Random) -> str:
        parts = []
        for _ in range(rng.randint(2, 5)):
            parts += [rng.choice(CJK_WORDS), rng.choice(CJK_GLUE)]
        return "".join(parts[:-1]) + "。"

    def sentence(self, rng: random.Random) -> str:
        words = self.words(rng, rng.randint(4, 18))
        r = rng.random()
        if r < 0.06:
            words.insert(rng.randrange(len(words)), self.path(rng))
        elif r < 0.09:
            words.insert(rng.randrange(len(words)), self.url(rng))
        elif r < 0.12:
            words.insert(rng.randrange(len(words)), self.version(rng))
        elif r < 0.15:
            words.insert(rng.randrange(len(words)), "`" + self.snake(rng) + "`")
        elif r < 0.17:
            words.insert(rng.randrange(len(words)), self.camel(rng))
        elif r < 0.18:
            words.insert(rng.randrange(len(words)), self.email(rng))
        text = " ".join(words)
        return text[0].upper() + text[1:] + rng.choice(".....?!:")

    def prose(self, rng: random.Random, low: int, high: int) -> str:
        out = " ".join(self.sentence(rng) for _ in range(rng.randint(low, high)))
        if rng.random() < 0.02:
            out += " " + self.cjk(rng)
        return out

    def code_block(self, rng: random.Random) -> str:
        fn, arg, other = self.snake(rng), self._mid_word(rng), self._mid_word(rng)
        cls = self.camel(rng)
        lang = rng.choice(("python", "python", "bash", "sql", "typescript"))
        if lang == "python":
            body = (
                f"def {fn}({arg}, {other}=None):\n"
                f"    result = {cls}({arg}).{self.snake(rng)}()\n"
                f"    if result is None:\n"
                f'        raise ValueError("{" ".join(self.words(rng, 4))}")\n'
                f"    return result"
            )
        elif lang == "bash":
            folder = self.path(rng).rsplit("/", 1)[0]
            body = f"cd {folder} && pip install {arg}=={self.version(rng).lstrip('v')}"
        elif lang == "sql":
            body = (
                f"SELECT {arg}, count(*) FROM {fn} "
                f"WHERE {other} > {rng.randint(1, 500)} GROUP BY {arg};"
            )
        else:
            body = f"export function {cls}({arg}: string): number {{\n  return {other}.length;\n}}"
        return f"```{lang}\n{body}\n```"

    def hexid(self, rng: random.Random, n: int) -> str:
        return f"{rng.getrandbits(4 * n):0{n}x}"

    def tool_output(self, rng: random.Random, tool: str) -> str:
        if tool == "web_search":
            results = [
                {
                    "title": " ".join(self.words(rng, 6)),
                    "url": self.url(rng),
                    "snippet": self.sentence(rng),
                }
                for _ in range(rng.randint(2, 5))
            ]
            return json.dumps({"query": " ".join(self.words(rng, 3)), "results": results})
        if tool == "read_file":
            return f"# {self.path(rng)}\n" + self.code_block(rng)
        if tool == "search_files":
            return "\n".join(
                f"{self.path(rng)}:{rng.randint(1, 900)}: {' '.join(self.words(rng, 6))}"
                for _ in range(rng.randint(2, 8))
            )
        kind = rng.random()
        if kind < 0.25:
            frames = "\n".join(
                f'  File "{self.path(rng)}", line {rng.randint(1, 2000)}, in {self.snake(rng)}\n'
                f"    {self.snake(rng)}({self._mid_word(rng)})"
                for _ in range(rng.randint(2, 6))
            )
            exc = rng.choice(EXCEPTIONS)
            return f"Traceback (most recent call last):\n{frames}\n{exc}: {self.sentence(rng)}"
        if kind < 0.45:
            return json.dumps(
                {
                    "status": rng.choice(("ok", "error", "pending")),
                    "id": self.hexid(rng, 12),
                    "items": [
                        {self.snake(rng): rng.randint(0, 10_000)} for _ in range(rng.randint(1, 6))
                    ],
                    "message": self.sentence(rng),
                }
            )
        if kind < 0.6:
            lines = [
                f"-rw-r--r-- 1 dev dev {rng.randint(100, 99_999):>6} Mar {rng.randint(1, 28):>2} "
                f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d} "
                f"{self.snake(rng)}.{rng.choice(EXTS)}"
                for _ in range(rng.randint(3, 10))
            ]
            return "$ ls -l\n" + "\n".join(lines)
        if kind < 0.75:
            lines = [f"{self.hexid(rng, 7)} {self.sentence(rng)}" for _ in range(rng.randint(2, 6))]
            return "$ git log --oneline\n" + "\n".join(lines)
        if kind < 0.9:
            tests = [
                f"tests/test_{self.snake(rng)}.py::test_{self.snake(rng)} "
                + rng.choice(("PASSED", "PASSED", "PASSED", "FAILED", "SKIPPED"))
                for _ in range(rng.randint(3, 10))
            ]
            return (
                "$ pytest -q\n"
                + "\n".join(tests)
                + f"\n{len(tests)} tests in {rng.uniform(0.1, 30):.2f}s"
            )
        pkgs = [
            f"{self._mid_word(rng)}-{self.version(rng).lstrip('v')}"
            for _ in range(rng.randint(1, 5))
        ]
        return "$ pip install -r requirements.txt\nSuccessfully installed " + " ".join(pkgs)

    # -- sessions ---------------------------------------------------------------------

    def session(self, index: int) -> dict[str, Any]:
        meta = self.sessions[index]
        rng = random.Random(self.seed * 1_000_003 + index)
        planted = self.needles.get(index, {})
        messages: list[dict[str, Any]] = []
        at = meta.started_at
        pending_tool: str | None = None
        role = "user"
        for position in range(meta.length):
            at += rng.uniform(1, 50)
            needle = planted.get(position)
            if needle is not None:
                message = {"role": needle.role, "content": needle.content, "timestamp": at}
                if needle.tool_name:
                    message["tool_name"] = needle.tool_name
                messages.append(message)
                role = "assistant" if needle.role == "user" else "user"
                continue
            if pending_tool is not None:
                message = {
                    "role": "tool",
                    "content": self.tool_output(rng, pending_tool),
                    "timestamp": at,
                    "tool_name": pending_tool,
                }
                pending_tool, role = None, "assistant"
            elif role == "user":
                message = {"role": "user", "content": self.prose(rng, 1, 3), "timestamp": at}
                role = "assistant"
            else:
                content = self.prose(rng, 1, 5)
                if rng.random() < 0.2:
                    content += "\n\n" + self.code_block(rng)
                message = {"role": "assistant", "content": content, "timestamp": at}
                if rng.random() < 0.4:
                    pending_tool = rng.choice(TOOLS)
                    args = {"command": f"{self._mid_word(rng)} {self.path(rng)}"}
                    message["tool_calls"] = [
                        {
                            "id": "call_" + self.hexid(rng, 8),
                            "type": "function",
                            "function": {"name": pending_tool, "arguments": json.dumps(args)},
                        }
                    ]
                    role = "assistant"
                else:
                    role = "user" if rng.random() < 0.8 else "assistant"
            messages.append(message)
        session: dict[str, Any] = {
            "id": self.session_id(index),
            "source": self.source_of(index),
            "title": " ".join(self.words(rng, rng.randint(3, 6))).capitalize(),
            "started_at": meta.started_at,
            "messages": messages,
        }
        if meta.continues:
            session["parent_session_id"] = self.session_id(index - 1)
        return session

    def lines(self) -> Iterator[str]:
        """One JSON line per session, oldest first, generated as they are read."""
        for index in range(len(self.sessions)):
            yield json.dumps(self.session(index), ensure_ascii=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(argv)
    for line in Corpus(args.messages, args.seed).lines():
        sys.stdout.write(line + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
