"""An OpenAI-compatible chat server on loopback that answers from a script.

Tests queue steps (a reply, tool calls, an HTTP error, a hang, a malformed body, a stream cut
short); each request to ``/v1/chat/completions`` consumes the next step, streamed as SSE when
the request asks for ``stream``. Every request body is kept for assertions. When the script
runs out the server answers 500 so a test that under-scripts fails loudly.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Step:
    kind: str  # reply | error | hang | malformed | cut
    content: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: str = ""
    seconds: float = 0.0
    # Reply text is streamed in these pieces (default: word by word).
    chunks: list[str] | None = None
    chunk_delay: float = 0.0
    cut_after: int = 0
    usage: dict[str, int] | None = None
    # The finish_reason sent (default: "tool_calls" with calls, else "stop").
    finish: str | None = None


def reply(
    content: str = "",
    *,
    chunks: list[str] | None = None,
    chunk_delay: float = 0.0,
    usage: dict[str, int] | None = None,
    finish: str | None = None,
) -> Step:
    return Step(
        "reply",
        content=content,
        chunks=chunks,
        chunk_delay=chunk_delay,
        usage=usage,
        finish=finish,
    )


def tool_calls(*calls: tuple[str, Any], content: str = "") -> Step:
    """A reply calling tools; each call is ``(name, arguments)`` where arguments is a dict
    (sent as JSON) or a string (sent verbatim, e.g. broken JSON)."""
    made = []
    for index, (name, arguments) in enumerate(calls):
        text = arguments if isinstance(arguments, str) else json.dumps(arguments)
        made.append(
            {
                "id": f"call_{index}_{int(time.time() * 1e6) % 10**8}",
                "name": name,
                "arguments": text,
            }
        )
    return Step("reply", content=content, tool_calls=made)


def error(
    status: int, message: str = "scripted failure", headers: dict[str, str] | None = None
) -> Step:
    body = json.dumps({"error": {"message": message, "type": "scripted", "code": status}})
    return Step("error", status=status, body=body, headers=headers or {})


def hang(seconds: float) -> Step:
    return Step("hang", seconds=seconds)


def malformed(body: str = "{not json") -> Step:
    return Step("malformed", body=body)


def cut(content: str, after: int) -> Step:
    """Stream ``after`` word chunks of ``content``, then drop the connection mid-reply."""
    return Step("cut", content=content, cut_after=after)


Responder = Callable[[dict[str, Any]], Step | None]


class ScriptedServer:
    def __init__(
        self,
        model: str = "scripted-model",
        context_length: int = 8192,
        *,
        port: int = 0,
        props: dict[str, Any] | None = None,
        advertise_window: bool = True,
        info_delay: float = 0.0,
    ) -> None:
        """``port`` 0 picks a free one (a test restarting "the same server" passes the
        first one's); ``props`` replaces llama.cpp's ``/props`` answer; with
        ``advertise_window`` False the server says nothing of its window (as cloud APIs);
        ``info_delay`` seconds pass before ``/models`` and ``/props`` answer (a server still
        loading its model when the client starts)."""
        self.info_delay = info_delay
        self.model = model
        self.context_length = context_length
        self.props = props
        self.advertise_window = advertise_window
        self.requests: list[dict[str, Any]] = []
        self._steps: deque[Step] = deque()
        self._lock = threading.Lock()
        # Consulted before the queue: returns a step for requests it recognises (a summariser
        # call, a background review) so those do not need a place in the main script.
        self.responders: list[Responder] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    # -- lifecycle ---------------------------------------------------------------------

    def start(self) -> ScriptedServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -- scripting ---------------------------------------------------------------------

    def add(self, *steps: Step | Iterable[Step]) -> None:
        with self._lock:
            for step in steps:
                if isinstance(step, Step):
                    self._steps.append(step)
                else:
                    self._steps.extend(step)

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._steps)

    def chat_requests(self) -> list[dict[str, Any]]:
        with self._lock:
            return [r for r in self.requests if r.get("_path", "").endswith("/chat/completions")]

    def _next(self, body: dict[str, Any]) -> Step:
        for responder in self.responders:
            step = responder(body)
            if step is not None:
                return step
        with self._lock:
            if self._steps:
                return self._steps.popleft()
        return error(500, "the test script has no step left for this request")

    # -- HTTP ----------------------------------------------------------------------------

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def log_message(self, format: str, *args: Any) -> None:  # quiet test output
                pass

            def do_GET(self) -> None:
                with server._lock:
                    server.requests.append({"_path": self.path, "_method": "GET"})
                if server.info_delay and self.path.rstrip("/").endswith(("/models", "/props")):
                    time.sleep(server.info_delay)
                if self.path.rstrip("/").endswith("/models"):
                    entry: dict[str, Any] = {
                        "id": server.model,
                        "object": "model",
                        "owned_by": "scripted",
                    }
                    if server.advertise_window:
                        entry["context_length"] = server.context_length
                    self._json(200, {"object": "list", "data": [entry]})
                elif self.path.rstrip("/").endswith("/props") and not server.advertise_window:
                    self._json(404, {"error": {"message": "not found"}})
                elif self.path.rstrip("/").endswith("/props"):
                    props = server.props or {
                        "default_generation_settings": {"n_ctx": server.context_length}
                    }
                    self._json(200, props)
                else:
                    self._json(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    self._json(400, {"error": {"message": "request body is not JSON"}})
                    return
                body["_path"] = self.path
                body["_headers"] = dict(self.headers)
                with server._lock:
                    server.requests.append(body)
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._json(404, {"error": {"message": "not found"}})
                    return
                step = server._next(body)
                # The client may hang up (cancelled or timed out): nothing left to tell it.
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self._answer(step, bool(body.get("stream")))

            def _json(
                self, status: int, payload: Any, headers: dict[str, str] | None = None
            ) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def _answer(self, step: Step, stream: bool) -> None:
                if step.kind == "hang":
                    time.sleep(step.seconds)
                    step = reply("late reply")
                if step.kind == "error":
                    data = step.body.encode()
                    self.send_response(step.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for key, value in step.headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(data)
                    return
                if step.kind == "malformed" and not stream:
                    data = step.body.encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                if not stream:
                    self._json(200, self._completion(step))
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.end_headers()
                if step.kind == "malformed":
                    self._event(self._chunk({"role": "assistant", "content": ""}))
                    self.wfile.write(f"data: {step.body}\n\n".encode())
                    self.wfile.flush()
                    return
                pieces = step.chunks if step.chunks is not None else _words(step.content)
                if step.kind == "cut":
                    for piece in pieces[: step.cut_after]:
                        self._event(self._chunk({"content": piece}))
                    # Close without a finish_reason or [DONE]: the reply was cut mid-stream.
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self._event(self._chunk({"role": "assistant", "content": ""}))
                for piece in pieces:
                    if step.chunk_delay:
                        time.sleep(step.chunk_delay)
                    self._event(self._chunk({"content": piece}))
                for index, call in enumerate(step.tool_calls):
                    # Arguments arrive in two pieces, as real servers split them.
                    args = call["arguments"]
                    half = len(args) // 2
                    self._event(
                        self._chunk(
                            {
                                "tool_calls": [
                                    {
                                        "index": index,
                                        "id": call["id"],
                                        "type": "function",
                                        "function": {
                                            "name": call["name"],
                                            "arguments": args[:half],
                                        },
                                    }
                                ]
                            }
                        )
                    )
                    self._event(
                        self._chunk(
                            {
                                "tool_calls": [
                                    {"index": index, "function": {"arguments": args[half:]}}
                                ]
                            }
                        )
                    )
                finish = step.finish or ("tool_calls" if step.tool_calls else "stop")
                self._event(self._chunk({}, finish=finish))
                usage = step.usage or {"prompt_tokens": 10, "completion_tokens": 5}
                self._event(
                    {
                        "id": "chatcmpl-scripted",
                        "object": "chat.completion.chunk",
                        "created": int(time.time()),
                        "model": server.model,
                        "choices": [],
                        "usage": {**usage, "total_tokens": sum(usage.values())},
                    }
                )
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

            def _event(self, payload: dict[str, Any]) -> None:
                self.wfile.write(f"data: {json.dumps(payload)}\n\n".encode())
                self.wfile.flush()

            def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
                return {
                    "id": "chatcmpl-scripted",
                    "object": "chat.completion.chunk",
                    "created": int(time.time()),
                    "model": server.model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                }

            def _completion(self, step: Step) -> dict[str, Any]:
                message: dict[str, Any] = {"role": "assistant", "content": step.content}
                if step.tool_calls:
                    message["tool_calls"] = [
                        {
                            "id": c["id"],
                            "type": "function",
                            "function": {"name": c["name"], "arguments": c["arguments"]},
                        }
                        for c in step.tool_calls
                    ]
                usage = step.usage or {"prompt_tokens": 10, "completion_tokens": 5}
                return {
                    "id": "chatcmpl-scripted",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": server.model,
                    "choices": [
                        {
                            "index": 0,
                            "message": message,
                            "finish_reason": "tool_calls" if step.tool_calls else "stop",
                        }
                    ],
                    "usage": {**usage, "total_tokens": sum(usage.values())},
                }

        return Handler


def _words(text: str) -> list[str]:
    """``text`` split after each space, so joining the pieces gives it back exactly."""
    pieces, start = [], 0
    for index, char in enumerate(text):
        if char == " ":
            pieces.append(text[start : index + 1])
            start = index + 1
    if start < len(text):
        pieces.append(text[start:])
    return pieces
