"""Tool calling for models whose chat template cannot carry tools.

Small local models, and servers whose chat template drops the ``tools`` field, still call
tools reliably when the tools are described in the prompt and the reply is constrained by a
JSON schema (a grammar in llama.cpp) to exactly one of ``{"reply": "..."}`` or
``{"tool": "<name>", "arguments": {...}}``. This module builds that prompt and schema,
translates the OpenAI-shaped history into plain system/user/assistant turns any template
accepts, streams the reply's text while its JSON is still arriving, and turns the finished
JSON back into a :class:`Reply`. The in-process GGUF provider and the OpenAI-compatible one
(for such servers) share it.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Sequence
from typing import Any

from engine.providers.base import ChatMessage, Reply, TokenCallback, ToolCall, Usage

__all__ = ["ReplyStream", "plain_messages", "tool_schema", "translate_constrained"]


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts: keep the text ones
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content)


def _call_json(call: dict[str, Any]) -> str:
    function = call.get("function") or {}
    raw = function.get("arguments") or "{}"
    try:
        arguments = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        arguments = raw
    return json.dumps({"tool": function.get("name", ""), "arguments": arguments})


def _tool_prompt(tools: Sequence[dict[str, Any]]) -> str:
    lines = [
        # No placeholder inside the reply's quotes: small models copy "<your answer>"
        # as the answer itself.
        "You can use tools. Answer with exactly one JSON object: "
        '{"reply": "..."} to answer the user, with your whole answer written out in place '
        'of the dots, or {"tool": "TOOL NAME", "arguments": {...}} to call a tool. '
        "After a tool call you will get its result.",
        "Tools:",
    ]
    for tool in tools:
        function = tool.get("function", tool)
        parameters = json.dumps(function.get("parameters") or {}, separators=(",", ":"))
        lines.append(
            f"- {function.get('name')}: {function.get('description', '')} "
            f"Arguments schema: {parameters}"
        )
    return "\n".join(lines)


def plain_messages(
    messages: Sequence[ChatMessage], tools: Sequence[dict[str, Any]] | None
) -> list[dict[str, str]]:
    """OpenAI messages as system/user/assistant text turns any chat template accepts.

    Consecutive turns of one role are merged: some templates insist roles alternate.
    """
    names: dict[str, str] = {}
    turns: list[dict[str, str]] = []

    def add(role: str, text: str) -> None:
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"] += "\n\n" + text
        else:
            turns.append({"role": role, "content": text})

    if tools:
        add("system", _tool_prompt(tools))
    for message in messages:
        role = message.get("role", "user")
        text = _text(message.get("content"))
        if role == "assistant":
            calls = message.get("tool_calls") or []
            for call in calls:
                names[str(call.get("id"))] = str((call.get("function") or {}).get("name", ""))
            parts = [text] if text else []
            parts += [_call_json(call) for call in calls]
            if not calls and tools:
                # Show the model its own earlier answers in the format it must keep using.
                parts = [json.dumps({"reply": text})]
            add("assistant", "\n".join(parts))
        elif role == "tool":
            name = names.get(str(message.get("tool_call_id")), "") or message.get("name", "")
            add("user", f"Result of the tool {name}:\n{text}")
        elif role == "system":
            # Merged into one leading system turn: templates reject a system turn later on.
            if turns and turns[0]["role"] == "system":
                turns[0]["content"] += "\n\n" + text
            elif turns:
                turns.insert(0, {"role": "system", "content": text})
            else:
                add("system", text)
        else:
            add("user", text)
    return turns


def tool_schema(tools: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The JSON schema the reply must match: a reply, or a call of one of ``tools``."""
    options: list[dict[str, Any]] = [
        {
            "type": "object",
            # Not empty: an empty reply is what a small model falls back to when unsure.
            "properties": {"reply": {"type": "string", "minLength": 1}},
            "required": ["reply"],
            "additionalProperties": False,
        }
    ]
    for tool in tools:
        function = tool.get("function", tool)
        parameters = function.get("parameters") or {"type": "object", "properties": {}}
        options.append(
            {
                "type": "object",
                "properties": {"tool": {"const": function["name"]}, "arguments": parameters},
                "required": ["tool", "arguments"],
                "additionalProperties": False,
            }
        )
    return {"anyOf": options}


_REPLY_START = re.compile(r'\s*\{\s*"reply"\s*:\s*"')
# The opening is a handful of characters (the grammar allows some whitespace); past this
# much without it, the reply is a tool call or not JSON at all, and nothing is streamed.
_START_LIMIT = 256
_PLAIN = re.compile(r'[^"\\]+')
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


class ReplyStream:
    """Streams the text of ``{"reply": "..."}`` while the JSON is still being generated.

    Linear in the length of the reply: each piece is decoded once, from where the last one
    stopped; an escape cut off between two pieces waits for its rest, and the high half of
    a ``\\uD83D\\uDE00`` pair waits for its low half (half a pair is not a character).
    """

    def __init__(self) -> None:
        self._head = ""  # what came before the reply's text started (or all of it, if never)
        self._body: str | None = None  # undecoded text of the string, from a cut escape on
        self._parts: list[str] = []
        self._high: str | None = None  # a decoded high surrogate waiting for its pair
        self._closed = False

    @property
    def sent(self) -> str:
        """The reply's text streamed so far."""
        return "".join(self._parts)

    def feed(self, piece: str) -> str:
        if self._closed or not piece:
            return ""
        if self._body is None:
            if len(self._head) > _START_LIMIT:
                return ""
            self._head += piece
            match = _REPLY_START.match(self._head)
            if match is None:
                return ""
            self._body, self._head = self._head[match.end() :], ""
        else:
            self._body += piece
        new = self._decode()
        if new:
            self._parts.append(new)
        return new

    def _decode(self) -> str:
        body = self._body or ""
        out: list[str] = []
        index = 0
        while index < len(body):
            plain = _PLAIN.match(body, index)
            if plain is not None:
                self._flush_high(out)
                out.append(plain.group())
                index = plain.end()
                continue
            if body[index] == '"':
                self._flush_high(out)
                self._closed = True
                index = len(body)
                break
            # An escape: whole, or wait for the rest of it.
            kind = body[index + 1 : index + 2]
            size = 6 if kind == "u" else 2
            if index + size > len(body):
                break
            if kind == "u":
                try:
                    code = int(body[index + 2 : index + 6], 16)
                except ValueError:
                    self._closed = True  # not JSON: the finished reply is read whole instead
                    break
                char = chr(code)
                if 0xDC00 <= code <= 0xDFFF and self._high is not None:
                    out.append(
                        (self._high + char).encode("utf-16", "surrogatepass").decode("utf-16")
                    )
                    self._high = None
                else:
                    self._flush_high(out)
                    if 0xD800 <= code <= 0xDBFF:
                        self._high = char
                    else:
                        out.append(char)
            elif kind in _ESCAPES:
                self._flush_high(out)
                out.append(_ESCAPES[kind])
            else:
                self._closed = True
                break
            index += size
        self._body = body[index:]
        return "".join(out)

    def _flush_high(self, out: list[str]) -> None:
        # A high surrogate followed by anything but its low half stands alone, as JSON has it.
        if self._high is not None:
            out.append(self._high)
            self._high = None


def translate_constrained(
    text: str,
    shown: ReplyStream,
    finish: str | None,
    usage: Usage,
    on_token: TokenCallback | None,
) -> Reply:
    try:
        data = json.loads(text, strict=False)
    except ValueError:
        # Cut short by max_tokens: keep what was readable of the reply.
        return Reply(content=shown.sent, finish_reason=finish or "length", usage=usage)
    if isinstance(data, dict) and isinstance(data.get("tool"), str):
        arguments = data.get("arguments", {})
        call = ToolCall(
            id=f"call_{uuid.uuid4().hex[:16]}",
            name=data["tool"],
            arguments=json.dumps(arguments if arguments is not None else {}),
        )
        return Reply(tool_calls=[call], finish_reason="tool_calls", usage=usage)
    if isinstance(data, dict) and isinstance(data.get("reply"), str):
        content = data["reply"]
    else:
        # The schema could not be compiled to a grammar and plain JSON came back.
        content = text
    rest = content[len(shown.sent) :] if content.startswith(shown.sent) else ""
    if rest and on_token is not None:
        on_token(rest)
    return Reply(content=content, finish_reason=finish or "stop", usage=usage)
