"""``cairn chat`` and ``cairn model`` as a user runs them, against a real server on loopback:
through the entry point in this process, and as real processes for stop signals and Ctrl-C."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from engine.config import load_config
from engine.home import Home
from engine.memory.entries import Target
from engine.memory.service import MemoryService
from engine.sessions.store import SessionStore
from tests.conftest import REPO
from tests.inprocess import cairn_here
from tests.scripted_server import ScriptedServer, reply, tool_calls


def test_one_shot_prints_the_reply_and_stores_the_session(
    model_home: Home, scripted: ScriptedServer
) -> None:
    scripted.add(
        tool_calls(("memory", {"action": "add", "content": "Prefers short answers"})),
        reply("Short answer."),
    )
    proc = cairn_here("chat", "-q", "keep it short", "--json", home=model_home)
    assert proc.returncode == 0, proc.stderr
    payload = json.loads(proc.stdout)
    assert payload["reply"] == "Short answer." and payload["ok"] is True
    assert payload["tool_calls"] == ["memory: added 1 entry (0%)"]  # 21 of 2,200 chars
    store = SessionStore.open(model_home)
    session = store.get_session(payload["session_id"])
    assert session is not None and session.source == "cli" and session.end_reason == "closed"
    assert MemoryService(model_home).read(Target.MEMORY).entries == ["Prefers short answers"]


def test_one_shot_streams_text_and_fails_clearly(
    model_home: Home, scripted: ScriptedServer
) -> None:
    scripted.add(reply("Streamed words arrive"))
    proc = cairn_here("chat", "-q", "hi", home=model_home)
    assert proc.returncode == 0 and proc.stdout.strip() == "Streamed words arrive"
    proc = cairn_here("chat", "-q", "hi again", home=model_home)  # the script is empty: HTTP 500
    assert proc.returncode == 1 and "server" in proc.stderr.lower()


def test_continue_goes_on_with_a_stored_conversation_in_a_child_session(
    model_home: Home, scripted: ScriptedServer
) -> None:
    """There was no way to go on with a past conversation: every chat started empty. Now
    `--continue` (newest) or `--continue ID-PREFIX` sends the stored messages along, in a
    child session that keeps the lineage; an unknown id is one line and exit 1."""
    scripted.add(reply("The cabin is booked for the 14th."))
    first = json.loads(cairn_here("chat", "-q", "book the cabin", "--json", home=model_home).stdout)
    scripted.add(reply("You booked it for the 14th."))
    proc = cairn_here("chat", "--continue", "-q", "when is the cabin?", "--json", home=model_home)
    assert proc.returncode == 0, proc.stderr
    second = json.loads(proc.stdout)
    sent = [m["content"] for m in scripted.chat_requests()[-1]["messages"][1:]]
    assert sent == ["book the cabin", "The cabin is booked for the 14th.", "when is the cabin?"]
    store = SessionStore.open(model_home)
    child = store.get_session(second["session_id"])
    assert child is not None and child.parent_session_id == first["session_id"]
    assert [m.content for m in store.messages(child.id)][-1] == "You booked it for the 14th."

    scripted.add(reply("Still the 14th."))
    by_prefix = cairn_here(
        "chat", "--continue", first["session_id"][:8], "-q", "sure?", home=model_home
    )
    assert by_prefix.returncode == 0 and by_prefix.stdout.strip() == "Still the 14th."
    assert f"continuing session {first['session_id'][:8]}" in by_prefix.stderr
    assert scripted.chat_requests()[-1]["messages"][1]["content"] == "book the cabin"

    missing = cairn_here("chat", "--continue", "ffffffffzz", "-q", "hi", home=model_home)
    assert missing.returncode == 1 and "no session 'ffffffffzz'" in missing.stderr
    assert "Traceback" not in missing.stderr and len(missing.stderr.strip().splitlines()) == 1


def test_a_one_shots_stdout_is_the_reply_alone(model_home: Home, scripted: ScriptedServer) -> None:
    """Tool lines and notices went to stdout with the reply, so `cairn chat -q … > file`
    or a pipe got them too. They go to stderr; stdout holds the reply."""
    scripted.add(
        tool_calls(("memory", {"action": "add", "content": "Prefers tea"})),
        reply("Noted: tea."),
    )
    proc = cairn_here("chat", "-q", "I prefer tea", home=model_home)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "Noted: tea."
    assert "· memory: added 1 entry" in proc.stderr


def test_without_a_model_chat_says_how_to_configure_one(home: Home) -> None:
    proc = cairn_here("chat", "-q", "hello", home=home)
    assert proc.returncode == 1
    assert "cairn model" in proc.stderr


def test_repl_runs_commands_and_turns_from_stdin(
    model_home: Home, scripted: ScriptedServer
) -> None:
    scripted.add(reply("First reply."))
    proc = cairn_here("chat", home=model_home, stdin="hello there\n/memory\n/help\n")
    assert proc.returncode == 0, proc.stderr
    assert "First reply." in proc.stdout
    assert "MEMORY.md: 0 entries" in proc.stdout and "/compress" in proc.stdout


def test_retry_asks_the_last_message_again_without_the_first_answer(
    model_home: Home, scripted: ScriptedServer
) -> None:
    """Regenerating sent the question again beside the first answer, so the model saw both
    the question twice and what it had said. `/retry` takes the last turn out of the context
    (the store keeps it: a search still finds the first answer) and asks again."""
    scripted.add(reply("Paris, I think."), reply("The capital is Canberra."))
    proc = cairn_here("chat", home=model_home, stdin="capital of Australia?\n/retry\n/retry\n")
    assert proc.returncode == 0, proc.stderr
    assert "Paris, I think." in proc.stdout and "The capital is Canberra." in proc.stdout
    sent = [m["content"] for m in scripted.chat_requests()[-1]["messages"][1:]]
    assert sent == ["capital of Australia?"]
    # The third line found the script empty (an HTTP error): nothing lost either way.
    store = SessionStore.open(model_home)
    [session] = store.list_sessions()
    stored = [(m.role, m.content) for m in store.messages(session.id)]
    assert stored[:4] == [
        ("user", "capital of Australia?"),
        ("assistant", "Paris, I think."),
        ("user", "capital of Australia?"),
        ("assistant", "The capital is Canberra."),
    ]
    # Nothing said yet: one line, exit 1.
    fresh = cairn_here("chat", "-q", "/retry", home=model_home)
    assert fresh.returncode == 1 and "nothing to ask again" in fresh.stderr


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_stops_the_reply_and_keeps_the_transcript(
    model_home: Home, scripted: ScriptedServer
) -> None:
    words = " ".join(f"w{i}" for i in range(200))
    scripted.add(reply(words, chunk_delay=0.05), reply("after the stop"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine.cli", "chat", "--home", str(model_home.root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=REPO,
        # Ctrl-C as a terminal delivers it: a run started in the background by a shell
        # inherits SIGINT ignored, and Python then installs no KeyboardInterrupt for it.
        preexec_fn=_default_sigint,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("count slowly\n")
    proc.stdin.flush()
    # A few streamed words on the terminal prove the reply is mid-stream.
    seen = _read_until(proc.stdout, "w3 ", timeout=30)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate("next\n", timeout=30)
    out = seen + out
    assert proc.returncode == 0, err
    assert "(stopped)" in out and "after the stop" in out
    store = SessionStore.open(model_home)
    (session,) = store.list_sessions()
    roles = [m.role for m in store.messages(session.id)]
    assert roles == ["user", "assistant", "user", "assistant"]
    partial = store.messages(session.id)[1].content
    assert partial.startswith("w0 ") and "w199" not in partial


def test_model_set_and_show_never_store_the_key(home: Home, scripted: ScriptedServer) -> None:
    proc = cairn_here(
        "model", "set", "--base-url", scripted.url, "--model", "m1",
        "--api-key-env", "CAIRN_TEST_KEY", "--json", home=home, env={"CAIRN_TEST_KEY": None},
    )  # fmt: skip
    # The variable is not set: the model is configured but not usable yet.
    assert proc.returncode == 1 and "CAIRN_TEST_KEY" in proc.stdout
    config = load_config(home)
    assert config.model.base_url == scripted.url and config.model.api_key_env == "CAIRN_TEST_KEY"
    text = home.config_file.read_text()
    assert "sk-" not in text
    proc = cairn_here("model", "set", "--api-key-env", "sk-live-123", home=home)
    assert proc.returncode == 1 and "environment variable" in proc.stderr
    assert "sk-live-123" not in home.config_file.read_text()


def test_switching_endpoints_drops_the_old_key_variable(home: Home) -> None:
    """The old endpoint's key variable must not be sent to a new host."""
    cairn_here(
        "model", "set", "--base-url", "https://one.example/v1", "--model", "m",
        "--api-key-env", "ONE_KEY", home=home,
    )  # fmt: skip
    assert load_config(home).model.api_key_env == "ONE_KEY"
    cairn_here("model", "set", "--base-url", "http://127.0.0.1:11434/v1", home=home)
    config = load_config(home)
    assert config.model.api_key_env is None and config.model.model == "m"
    # Changing only the window keeps the provider and endpoint.
    cairn_here("model", "set", "--context-length", "4096", home=home)
    config = load_config(home)
    assert config.model.provider == "openai" and config.model.context_length == 4096
    # A key written inline by another tool is never echoed.
    text = home.config_file.read_text().replace("model:\n", "model:\n  api_key: sk-inline\n", 1)
    home.config_file.write_text(text)
    proc = cairn_here("model", "--json", home=home)
    assert "sk-inline" not in proc.stdout and json.loads(proc.stdout)["context_length"] == 4096


def _read_until(stream: object, needle: str, timeout: float) -> str:
    """Read a child's stdout until ``needle`` appears (proof the stream reached the terminal),
    or fail after ``timeout`` seconds; never a fixed sleep."""
    import selectors

    fd = stream.fileno()  # type: ignore[attr-defined]
    seen = b""
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        deadline = time.monotonic() + timeout
        while needle.encode() not in seen:
            left = deadline - time.monotonic()
            assert left > 0, f"{needle!r} never appeared; saw {seen[-200:]!r}"
            if selector.select(left):
                chunk = os.read(fd, 4096)
                assert chunk, f"the child closed its output early; saw {seen[-200:]!r}"
                seen += chunk
    return seen.decode(errors="replace")


def _one_shot_child(home: Home, *extra: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "engine.cli", "chat", "--home", str(home.root), *extra],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=REPO,
    )


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_stop_signal_keeps_the_partial_reply_and_exits_non_zero(
    model_home: Home, scripted: ScriptedServer, signum: int
) -> None:
    """`timeout 10 cairn chat -q ...`, a logout or `kill` mid-reply: what had streamed is
    stored, the session is ended, and the one-shot says it did not finish (exit 128+N)."""
    words = " ".join(f"w{i}" for i in range(400))
    scripted.add(reply(words, chunk_delay=0.05))
    proc = _one_shot_child(model_home, "-q", "tell me a very long story")
    assert proc.stdout is not None and proc.stderr is not None
    try:
        _read_until(proc.stdout, "w3 ", timeout=30)  # tokens reached the terminal
        assert len(scripted.chat_requests()) == 1
        proc.send_signal(signum)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err = proc.stderr.read().decode()
    assert proc.returncode == 128 + signum, err
    assert "Traceback" not in err
    store = SessionStore.open(model_home)
    (session,) = store.list_sessions()
    messages = store.messages(session.id)
    assert [m.role for m in messages] == ["user", "assistant"]
    partial = messages[1].content
    assert partial.startswith("w0 w1 w2 w3 ") and "w399" not in partial
    ended = store.get_session(session.id)
    assert ended is not None and ended.ended_at is not None and ended.end_reason == "signal"


def test_a_stop_signal_at_the_repl_prompt_ends_the_session(
    model_home: Home, scripted: ScriptedServer
) -> None:
    """SIGTERM while the REPL waits for input (after one finished turn): the session is
    ended, not left open, and the exit code says a signal ended it."""
    scripted.add(reply("first answer done"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine.cli", "chat", "--home", str(model_home.root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=REPO,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    try:
        proc.stdin.write(b"hello\n")
        proc.stdin.flush()
        _read_until(proc.stdout, "first answer done", timeout=30)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + signal.SIGTERM, proc.stderr.read().decode()
    store = SessionStore.open(model_home)
    (session,) = store.list_sessions()
    assert [m.role for m in store.messages(session.id)] == ["user", "assistant"]
    ended = store.get_session(session.id)
    assert ended is not None and ended.end_reason == "signal"


# Written before the detector was tuned: names people give key variables, and keys in the
# shapes providers issue (made up here, none real).
VARIABLE_NAMES = [
    "OPENAI_API_KEY", "OPENROUTER_API_KEY", "GROQ_KEY_V2", "HF_TOKEN", "GITHUB_TOKEN",
    "AZURE_OPENAI_API_KEY_EASTUS2", "my_work_key", "Mistral_Api_Key_2024",
    "DEEPSEEK_API_KEY_PERSONAL", "LLM_KEY",
]  # fmt: skip
KEY_LIKE = [
    "ghp_" + "Zx81KqLm2Vb9Nw4Tr7Yp3Hs6Dc0Fg5Ju1",
    "github_pat_" + "11ABCDEFG0" + "x" * 20,
    "sk-proj-" + "Qw3Er5Ty7Ui9Op1As3Df5Gh7",
    "sk_live_" + "51HaBcDeFgHiJkLmNoPq",
    "xoxb-" + "123456789012-abcdefABCDEF",
    "glpat-" + "aB3cD5eF7gH9iJ1kL3mN",
    "AKIA" + "Q3EXAMPLE7KEY2ABCD",
    "hf_" + "pQrStUvWxYz0123456789AbCdEf",
    "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b",  # 40 hex digits
    "Tq8wZ2nV5xR1mK7pL4sJ9hG3dF6aB0cE",  # random alphanumerics, no prefix
]


@pytest.mark.parametrize("value", KEY_LIKE)
def test_model_set_refuses_a_key_given_as_the_variable_name(
    home: Home, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`cairn model set --api-key-env ghp_…`: the token would land in config.yaml. It is
    refused with a message asking for the variable's NAME, nothing is written, and the
    value is not echoed back."""
    from engine import cli

    before = home.config_file.read_bytes() if home.config_file.exists() else None
    assert cli.main(["model", "set", "--api-key-env", value, "--home", str(home.root)]) == 1
    err = capsys.readouterr().err
    assert "NAME of an environment variable" in err and value not in err
    after = home.config_file.read_bytes() if home.config_file.exists() else None
    assert after == before
    # The same check where a key reaches config.yaml by other means (another tool, an
    # editor): it is never looked up as a variable name, nor echoed.
    home.root.mkdir(parents=True, exist_ok=True)
    home.config_file.write_text(
        f"model:\n  provider: openai\n  base_url: http://127.0.0.1:9/v1\n  model: m\n"
        f"  api_key_env: {value}\n"
    )
    assert cli.main(["chat", "-q", "hi", "--home", str(home.root)]) == 1
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value):
        # Values not shaped like a name at all are refused by the config loader, whose
        # messages are not this check's concern.
        assert value not in capsys.readouterr().err


@pytest.mark.parametrize("name", VARIABLE_NAMES)
def test_model_set_accepts_ordinary_variable_names(home: Home, name: str) -> None:
    """Names people really give their key variables are never taken for keys."""
    from engine.providers.secrets import looks_like_secret

    assert not looks_like_secret(name)


def test_model_alone_shows_the_model_its_window_and_what_to_run_next(
    home: Home, capsys: pytest.CaptureFixture[str]
) -> None:
    """`cairn model` alone repeated "run `cairn model`"; it now says what is configured
    (the window included, as the server reports it) and lists the next commands."""
    from engine import cli

    assert cli.main(["model", "--home", str(home.root)]) == 1
    out = capsys.readouterr().out
    assert "no model is configured" in out and "cairn model detect --use" in out
    assert "run `cairn model`" not in out
    server = ScriptedServer(context_length=4096).start()
    try:
        update_config_model = {"provider": "openai", "base_url": server.url, "model": "m"}
        from engine.config import update_config

        update_config(home, {"model": update_config_model})
        assert cli.main(["model", "--home", str(home.root)]) == 0
        out = capsys.readouterr().out
        assert f"127.0.0.1:{server.port}/m" in out
        assert "window: 4,096 tokens (as the server reports it)" in out
        assert "cairn chat" in out
        assert cli.main(["model", "show", "--json", "--home", str(home.root)]) == 0
        payload = json.loads(capsys.readouterr().out)
        assert payload["context_window"] == 4096 and payload["context_source"] == "server"
    finally:
        server.stop()


def test_detect_use_stores_a_clean_model_name(
    home: Home, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """llama.cpp lists its model by the path it loaded (with a double slash when started as
    `-m /models//x.gguf`); `model detect --use` stored that path as the model name."""
    from engine import cli
    from engine.providers import detect

    server = ScriptedServer(model="/models//SmolLM2-135M-Instruct-Q8_0.gguf").start()
    try:
        monkeypatch.setattr(detect, "DEFAULT_PORTS", {detect.LLAMA_CPP: server.port})
        assert cli.main(["model", "detect", "--use", "--home", str(home.root)]) == 0
        out = capsys.readouterr().out
        assert "model SmolLM2-135M-Instruct-Q8_0.gguf" in out and "/models//" not in out
        assert load_config(home).model.model == "SmolLM2-135M-Instruct-Q8_0.gguf"
    finally:
        server.stop()
