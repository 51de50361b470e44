"""``cairn chat`` (the terminal REPL and ``-q`` one-shot) and ``cairn model`` (which model).

The reply runs on a worker thread so Ctrl-C on the main thread can stop it mid-stream: the
partial reply is kept in the transcript and the prompt comes back.

The engine is imported inside the handlers: every ``cairn`` command, ``cairn gui`` included,
loads this module to build its parser, and the agent's imports take about a second.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, TextIO

from engine.config import Config, ConfigError, ModelConfig, load_config, update_config

if TYPE_CHECKING:
    from engine.agent import Agent, AgentEvent, TurnResult


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    chat = sub.add_parser("chat", parents=[common], help="talk to the agent in the terminal")
    chat.add_argument("-q", "--query", help="send one message, print the reply and exit")
    chat.add_argument(
        "-c",
        "--continue",
        dest="continue_id",
        nargs="?",
        const="last",
        metavar="SESSION",
        help="go on with a stored conversation: the newest (default) or this id or id prefix",
    )
    chat.set_defaults(handler=_chat)

    model = sub.add_parser("model", parents=[common], help="show or choose the model")
    cmds = model.add_subparsers(dest="model_command", metavar="ACTION")
    model.set_defaults(handler=_model_overview)
    show = cmds.add_parser("show", parents=[common], help="the configured model (default)")
    show.set_defaults(handler=_model_show)
    use = cmds.add_parser("set", parents=[common], help="use an OpenAI-compatible endpoint")
    use.add_argument(
        "--provider",
        help="openai (any OpenAI-compatible server; the default with --base-url), embedded "
        "(the built-in model: llama.cpp in this process), local (llama-cpp-python, the "
        "optional `local` extra) or none (the built-in model when installed)",
    )
    use.add_argument("--base-url", help="e.g. http://127.0.0.1:11434/v1")
    use.add_argument("--model", dest="model_name", help="model name as the server knows it")
    use.add_argument("--api-key-env", help="name of the environment variable holding the key")
    use.add_argument("--context-length", type=int, help="tokens; default: asked of the server")
    use.add_argument("--gguf", help="a GGUF file for the embedded or local provider")
    use.set_defaults(handler=_model_set)
    detect = cmds.add_parser("detect", parents=[common], help="find model servers on this machine")
    detect.add_argument("--use", action="store_true", help="configure the first one found")
    detect.set_defaults(handler=_model_detect)


# -- chat ------------------------------------------------------------------------------------


class _Printer:
    """Writes agent events to a terminal as they happen."""

    def __init__(
        self, out: TextIO, err: TextIO, notifications: str, *, status: TextIO | None = None
    ) -> None:
        self.out, self.err = out, err
        # Where notices and tool lines go: the terminal's stdout in the REPL; stderr for a
        # one-shot (`cairn chat -q`), whose stdout is the reply alone, for pipes and scripts.
        self.status = status or out
        self.notifications = notifications
        self.mid_line = False
        self.held: list[AgentEvent] = []

    def __call__(self, event: AgentEvent) -> None:
        from engine.review import THREAD_NAME as REVIEW_THREAD

        if threading.current_thread().name == REVIEW_THREAD:
            # The review finishes whenever it finishes; printing then would cut into a
            # streaming reply or the prompt, so its notices wait for the next gap.
            self.held.append(event)
            return
        self._show(event)

    def flush_held(self) -> None:
        while self.held:
            self._show(self.held.pop(0))

    def _show(self, event: AgentEvent) -> None:
        from engine.agent import Notice, SessionStarted, TokenReceived, ToolFinished

        if isinstance(event, TokenReceived):
            self.out.write(event.text)
            self.out.flush()
            self.mid_line = not event.text.endswith("\n")
        elif isinstance(event, ToolFinished):
            self._line(f"  · {event.summary}", self.status)
        elif isinstance(event, Notice):
            if event.kind == "memory" and self.notifications == "off":
                return
            self._line(event.text, self.err if event.kind == "error" else self.status)
            # A compression's summary is for the model; the terminal gets the one line.
            quiet = event.kind in ("memory", "compression")
            if event.detail and (not quiet or self.notifications == "verbose"):
                self._line(event.detail, self.status)
        elif isinstance(event, SessionStarted) and event.reason in ("compression", "window"):
            self._line(f"  (continuing in session {event.session_id[:8]})", self.status)
        elif isinstance(event, SessionStarted) and event.reason == "continue":
            parent = (event.parent_session_id or "")[:8]
            self._line(f"  (continuing session {parent} as {event.session_id[:8]})", self.status)

    def _line(self, text: str, stream: TextIO | None = None) -> None:
        stream = stream or self.out
        if self.mid_line:
            self.out.write("\n")
            self.mid_line = False
        stream.write(text + "\n")
        stream.flush()

    def end_reply(self) -> None:
        if self.mid_line:
            self.out.write("\n")
            self.mid_line = False
        self.out.flush()


# -- stopping on signals ------------------------------------------------------------------

# SIGTERM (``kill``, ``timeout``, systemd, a desktop logout) and SIGHUP (the terminal went
# away) stop a reply the way Ctrl-C does: the partial reply is stored and the session ended.
STOP_SIGNALS = tuple(
    sig for sig in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if sig
)
# How long a stopped turn may take to wind down (store the partial reply, answer a tool's
# stop) before the process gives up on it; a supervisor's SIGKILL usually follows at 5-90 s.
STOP_GRACE_SECONDS = 5.0
# A background review still running when a signal stops the chat gets this long.
SIGNAL_REVIEW_GRACE_SECONDS = 2.0


class _Terminated(BaseException):
    """Raised on the main thread by a stop signal, like KeyboardInterrupt for SIGINT."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class _Signals:
    """Turns the stop signals into :class:`_Terminated` on the main thread, once."""

    def __init__(self) -> None:
        self.received: int | None = None
        self._armed = False
        self._previous: dict[int, Any] = {}

    @property
    def exit_code(self) -> int:
        # The shell's convention for "ended by signal N".
        return 128 + (self.received or 0)

    def _raise(self, signum: int, frame: FrameType | None) -> None:
        first = self.received is None
        self.received = self.received or signum
        if first and self._armed:
            self._armed = False  # a second signal must not cut into the cleanup it started
            raise _Terminated(signum)

    def disarm(self) -> None:
        """Further signals are noted, never raised: cleanup is running."""
        self._armed = False

    @contextlib.contextmanager
    def installed(self) -> Iterator[_Signals]:
        if threading.current_thread() is not threading.main_thread():
            yield self  # only the main thread may set handlers (a test calling main())
            return
        for sig in STOP_SIGNALS:
            self._previous[sig] = signal.signal(sig, self._raise)
        self._armed = True
        try:
            yield self
        finally:
            self._armed = False
            for sig, previous in self._previous.items():
                signal.signal(sig, previous)


def _send(agent: Agent, line: str, signals: _Signals | None = None) -> TurnResult:
    """Run one turn on a worker thread; Ctrl-C (or a stop signal) stops the reply, not the
    program: the turn winds down on its own thread and stores what had streamed."""
    from engine.agent import TurnResult

    box: dict[str, TurnResult] = {}
    done = threading.Event()

    def work() -> None:
        try:
            box["r"] = agent.send(line)
        finally:
            done.set()

    threading.Thread(target=work, daemon=True).start()
    # An Event, not Thread.join: a KeyboardInterrupt inside join can leave the thread looking
    # finished while it still runs.
    deadline: float | None = None
    while not done.is_set():
        try:
            done.wait(0.1)
        except KeyboardInterrupt:
            agent.cancel()
        except _Terminated:
            agent.cancel()
        if deadline is None and signals is not None and signals.received is not None:
            deadline = time.monotonic() + STOP_GRACE_SECONDS
        if deadline is not None and time.monotonic() > deadline:
            break
    return box.get("r", TurnResult(error="the reply failed unexpectedly", error_kind="internal"))


def _chat(args: argparse.Namespace) -> int:
    from engine.agent import Agent

    home = args.home_path
    config = load_config(home)
    printer = _Printer(
        sys.stdout,
        sys.stderr,
        config.display.memory_notifications,
        status=sys.stderr if args.query is not None else None,
    )
    quiet_json = bool(args.json and args.query is not None)
    signals = _Signals()
    agent: Agent | None = None
    with signals.installed():
        try:
            agent = Agent(
                home, config, source="cli", cwd=Path.cwd(), listener=None if quiet_json else printer
            )
            if args.continue_id is not None:
                _continue(agent, args.continue_id)
            if args.query is not None:
                return _one_shot(agent, args.query, args.json, printer, signals)
            return _repl(agent, printer, signals)
        except _Terminated:
            return signals.exit_code  # before a turn started, or at the prompt
        finally:
            signals.disarm()
            if agent is not None:
                stopped = signals.received is not None
                agent.close(
                    review_timeout=SIGNAL_REVIEW_GRACE_SECONDS if stopped else 30.0,
                    reason="signal" if stopped else "closed",
                )
            # The terminal may be gone (SIGHUP): what could not be printed is in the store.
            with contextlib.suppress(OSError):
                printer.flush_held()


def _continue(agent: Agent, given: str) -> None:
    """Continue the newest stored session (``last``) or the one ``given`` names; a
    :class:`CairnError` (none stored, unknown id) reaches the one handler as one line."""
    from engine.errors import CairnError

    store = agent.store
    if given == "last":
        # The newest conversation someone had (terminal or window), not a scheduled run's.
        newest = [s for s in store.list_sessions(limit=50) if s.source != "cron"]
        if not newest:
            raise CairnError("not_found", "no stored conversation to continue yet")
        info = newest[0]
    else:
        info = store.resolve(given)
    agent.continue_session(info.id)


def _one_shot(agent: Agent, text: str, as_json: bool, printer: _Printer, signals: _Signals) -> int:
    from engine.commands import RETRY, as_message, is_command, run_command
    from engine.errors import CairnError

    message = None
    if text.strip() == RETRY:  # with --continue: ask that conversation's last message again
        message = agent.take_back_last_turn()
        if message is None:
            raise CairnError("nothing_to_retry", "nothing to ask again: no message sent yet")
    elif is_command(text):
        outcome = run_command(agent, text)
        if as_json:
            print(
                json.dumps(
                    {"ok": outcome.ok, "text": outcome.text, "data": outcome.data},
                    ensure_ascii=False,
                    default=str,
                )
            )
        else:
            print(outcome.text)
        return 0 if outcome.ok else 1
    result = _send(agent, message if message is not None else as_message(text), signals)
    signals.disarm()
    with contextlib.suppress(OSError):
        printer.end_reply()
        printer.flush_held()
        if as_json:
            payload: dict[str, Any] = {
                "ok": result.error is None and not result.cancelled,
                "reply": result.reply,
                "session_id": agent.session_id,
                "tool_calls": [o.summary for o in result.outcomes],
                "cancelled": result.cancelled,
                "truncated": result.truncated,
            }
            if result.error:
                payload.update(error=result.error_kind, message=result.error)
            print(json.dumps(payload, ensure_ascii=False))
    if signals.received is not None:
        return signals.exit_code
    if result.cancelled:
        return 130  # Ctrl-C: the shell's code for SIGINT
    return 0 if result.error is None else 1


def _repl(agent: Agent, printer: _Printer, signals: _Signals) -> int:
    from engine.commands import RETRY, as_message, is_command, run_command

    with contextlib.suppress(ImportError):  # ↑ recalls earlier prompts where available
        import readline  # noqa: F401
    model = agent.provider.name if agent.has_model else "no model configured (see /help)"
    print(f"cairn chat · {model} · /help for commands · Ctrl-C stops a reply, Ctrl-D quits")
    while True:
        try:
            line = input("› ")
        except (EOFError, KeyboardInterrupt):
            print()
            return 0
        printer.flush_held()
        if not line.strip():
            continue
        if line.strip() == RETRY:
            # A streamed turn, which a slash command (text in, text out) cannot run.
            again = agent.take_back_last_turn()
            if again is None:
                print("  nothing to ask again yet")
                continue
            text = again  # as it was sent the first time
        elif is_command(line.strip()):
            print(run_command(agent, line.strip()).text)
            continue
        else:
            text = as_message(line)
        result = _send(agent, text, signals)
        if signals.received is not None:
            signals.disarm()
            with contextlib.suppress(OSError):
                printer.end_reply()
                print("  (stopped: the chat was asked to end)")
            return signals.exit_code
        printer.end_reply()
        if result.cancelled:
            print("  (stopped)")
        printer.flush_held()


# -- model -----------------------------------------------------------------------------------


NEXT_COMMANDS = """\
next:
  cairn chat                        talk to the model in the terminal (cairn gui: the window)
  cairn model detect --use          find a model server on this machine and use it
  cairn model set --base-url URL --model NAME [--api-key-env VARIABLE]
                                    use any OpenAI-compatible server
  cairn model set --context-length N
                                    override the window the server reports"""


def _model_overview(args: argparse.Namespace) -> int:
    """``cairn model`` alone: what is configured, and what to run next."""
    code = _model_show(args)
    if not args.json:
        print(NEXT_COMMANDS)
    return code


def _model_show(args: argparse.Namespace) -> int:
    from engine.providers import ProviderError, make_provider

    config = load_config(args.home_path)
    model = config.model
    # Declared fields only: a shared config.yaml may hold an inline key under `model`.
    payload: dict[str, Any] = {
        "ok": True,
        **model.model_dump(include=set(type(model).model_fields)),
    }
    lines: list[str] = []
    try:
        provider = make_provider(config)
        payload["name"] = provider.name
        if getattr(provider, "builtin", False):
            lines.append(
                f"model: {provider.name} (the built-in offline model: none is configured; "
                "it is small, so memory and skill writes wait for approval)"
            )
        else:
            lines.append(f"model: {provider.name} (provider {model.provider})")
        window = provider.context_length
        source = getattr(provider, "context_source", None) or (
            "config" if model.context_length else "default"
        )
        payload["context_window"] = window
        payload["context_source"] = source
        said = {
            "config": "from config.yaml",
            "server": "as the server reports it",
            "default": "a default: the server did not say",
        }.get(source, source)
        lines.append(f"window: {window:,} tokens ({said})")
    except ProviderError as exc:
        payload.update(ok=False, message=str(exc))
        if model.provider == "none":
            lines.append("no model is configured")
            with contextlib.suppress(Exception):
                from engine import builtin_model as builtin

                if (problem := builtin.missing(model.gguf_path)) is not None:
                    lines.append(problem)
        else:
            lines.append(str(exc))
    if args.json:
        print(json.dumps(payload, ensure_ascii=False, default=str))
    else:
        print("\n".join(lines))
    return 0 if payload["ok"] else 1


def _model_set(args: argparse.Namespace) -> int:
    from engine.providers.secrets import looks_like_secret, refuse_secret_message

    if args.api_key_env is not None and looks_like_secret(args.api_key_env):
        # Checked before anything is written: config.yaml must never hold the key.
        raise ConfigError(refuse_secret_message())
    chosen = (args.provider or "").strip().lower()
    if chosen in ("local", "embedded"):
        from engine.providers import ProviderError, make_provider

        gguf = args.gguf or load_config(args.home_path).model.gguf_path
        settings = ModelConfig(provider=chosen, gguf_path=gguf, context_length=args.context_length)
        try:  # a runtime or model file that is missing is said now, not at the first message
            make_provider(Config(model=settings)).check()  # type: ignore[attr-defined]
        except ProviderError as exc:
            raise ConfigError(str(exc)) from exc
    patch: dict[str, Any] = {}
    if args.provider is not None:
        patch["provider"] = args.provider
    elif args.base_url is not None:
        patch["provider"] = "openai"
    if args.base_url is not None or args.provider is not None:
        # A new endpoint: what described the old one (its key variable, window) no longer
        # applies, and keeping the old key variable would send that key to the new host.
        patch.update(api_key_env=None, context_length=None)
    for key, value in (
        ("base_url", args.base_url),
        ("model", args.model_name),
        ("api_key_env", args.api_key_env),
        ("context_length", args.context_length),
        ("gguf_path", args.gguf),
    ):
        if value is not None:
            patch[key] = value
    update_config(args.home_path, {"model": patch})
    return _model_show(args)


def _model_detect(args: argparse.Namespace) -> int:
    from engine.providers.detect import clean_model_name, detect_local_servers

    found = detect_local_servers()
    if args.json:
        print(json.dumps([s.model_dump() for s in found], ensure_ascii=False))
    elif not found:
        print("no model server found on this machine (looked for Ollama, LM Studio, llama.cpp)")
    else:
        for server in found:
            models = ", ".join(server.models[:5]) or "no models listed"
            print(f"{server.name}: {server.base_url} ({models})")
    if args.use and found:
        server = found[0]
        patch = {
            "provider": "openai",
            "base_url": server.base_url,
            "api_key_env": None,
            "context_length": None,
        }
        if server.models:
            patch["model"] = clean_model_name(server.models[0])
        update_config(args.home_path, {"model": patch})
        if not args.json:
            chosen = f", model {patch['model']}" if "model" in patch else ""
            print(f"using {server.name} at {server.base_url}{chosen}")
    return 0 if found else 1
