"""LiteLLM proxy guardrail: :class:`LoopGuardrail` (issue 19; ``docs/spec.md`` §3, §5.2).

One guardrail in the proxy's ``config.yaml`` guards both sides of every request:

* **pre-call** (``async_pre_call_hook``): the request's ``messages`` carry the whole
  conversation, so the tool guard is replayed over them *statelessly* -- a fresh
  :class:`~loopguard.ToolGuard` per request, each assistant ``tool_calls`` entry decided when
  its ``role: "tool"`` result comes (``before_call``, then ``after_call`` with the result), in
  order.  A call the guard denies or cancels has its tool result replaced by the guard's
  reason (``on_deny="rewrite"``, the default: the model reads why and takes another action),
  or, when its result is one of the tool messages that end the request, the request is
  refused with HTTP 400 (``on_deny="reject"``).  The history is the state, so every replica
  decides alike; earlier denied calls are rewritten again on every request, so the model always
  sees one history.  Reminders (``notice``) are appended to a ``str`` result, as
  :func:`loopguard.wrap_tool` does.  The scope rules (``unscoped_search``, ``root_search``) are
  off in the replay: they judge a call before it runs, and a history's calls have run.
* **streaming** (``async_post_call_streaming_iterator_hook``): ``/chat/completions`` chunks go
  through :func:`loopguard.integrations.openai.apply_chat_chunk` (OpenAI Responses events through
  :func:`~loopguard.integrations.responses.apply_response_event`) under a
  :class:`~loopguard.StreamGuard`; on a cut the upstream is closed and the stream ends with one
  final chunk (``on_cut="finish"``: ``finish_reason`` -- ``"stop"`` by default, ``"tool_calls"``
  when calls completed --, the marker line as content, and the outcome under a ``loopguard``
  key) or with LiteLLM's in-band error frame (``on_cut="error"``).
* ``/v1/messages`` streams reach the hook as raw SSE (``bytes``; LiteLLM 1.108 translates the
  upstream's events to Anthropic frames before the hook): the frames are read whole -- the
  chunks are re-cut at frame boundaries, so a frame may span chunks and a cut never falls inside
  one; the bytes passed are the upstream's own -- with
  :func:`~loopguard.integrations.anthropic.apply_anthropic_event`.  A cut ends the stream with
  the marker line (a ``text_delta`` in the open text block), ``content_block_stop`` for every
  open block, ``message_delta`` (``stop_reason``: ``"tool_use"`` when calls completed, else
  ``end_turn`` / ``max_tokens`` / ``refusal`` for ``finish_reason``; the outcome under
  ``loopguard``) and ``message_stop``; with ``on_cut="error"`` LiteLLM writes its Anthropic
  ``event: error`` frame.
* ``/v1/responses`` streams reach it as LiteLLM's Responses event objects: a cut ends with the
  marker line (``response.output_text.delta``), the ``…done`` events of the open text part and
  output item, then ``response.completed`` (``response.incomplete`` for ``length`` /
  ``content_filter``) carrying the output so far, the outcome under ``loopguard``;
  ``on_cut="error"`` gives LiteLLM's ``response.failed``.  LiteLLM 1.108's Responses iterator
  cannot close its upstream, so a cut also closes the iterator's HTTP ``response``.  Through
  LiteLLM's chat bridge (``use_chat_completions_api``; for ``/v1/messages``
  ``LITELLM_USE_CHAT_COMPLETIONS_URL_FOR_ANTHROPIC_MESSAGES``) the hook sees the same shapes and
  cuts alike, but LiteLLM 1.108's bridge iterators have no ``aclose``: the upstream is drained by
  LiteLLM, not closed.

Other chunk shapes pass through untouched.

A failure of loopguard itself (a bug, an unreadable request) never breaks the client's request
or stream: it is logged on ``loopguard.integrations`` and the request or chunks pass unchanged.
Tool arguments are never logged.

Configure it beside ``config.yaml`` with the one-line shim ``loopguard_litellm.py``::

    from loopguard.integrations.litellm import LoopGuardrail  # noqa: F401

and in ``config.yaml``::

    guardrails:
      - guardrail_name: loopguard
        litellm_params:
          guardrail: loopguard_litellm.LoopGuardrail
          mode: [pre_call, post_call]
          default_on: true
          on_deny: rewrite          # or reject
          on_cut: finish            # or error
"""

from __future__ import annotations

import copy
import importlib
import inspect
import json
import logging
import re
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..config import TextConfig
from ..guard import Decision, Intervention, ToolGuard, ToolGuardConfig
from ..session import Session
from ..stream import Action, StreamConfig, StreamGuard, StreamOutcome
from ._base import AsyncGuardedStream, _close_async, field
from .anthropic import apply_anthropic_event
from .openai import apply_chat_chunk
from .responses import apply_response_event

try:  # the host package, imported through importlib: mypy never walks LiteLLM's sources
    _CustomGuardrail: Any = importlib.import_module("litellm.integrations.custom_guardrail").CustomGuardrail
    _HTTPException: Any = importlib.import_module("fastapi").HTTPException
    _types: Any = importlib.import_module("litellm.types.utils")
    _CHUNK, _CHOICE, _DELTA = _types.ModelResponseStream, _types.StreamingChoices, _types.Delta
    # the events loopguard adds to a Responses stream: LiteLLM's own event base (extra fields
    # allowed), which the proxy serializes as JSON and whose response id it encrypts as the upstream's
    _EVENT: Any = importlib.import_module("litellm.types.llms.openai").BaseLiteLLMOpenAIResponseObject
except ImportError as _exc:  # pragma: no cover - tested in a subprocess without the package
    raise ImportError(
        f'loopguard.integrations.litellm needs LiteLLM\'s proxy: pip install "loopguard[litellm]" ({_exc})'
    ) from _exc

__all__ = [
    "LoopGuardrail",
    "LoopGuardStreamStopped",
    "ReplayedCall",
    "apply_litellm_chunk",
    "replay_tool_calls",
    "session_key",
]

logger = logging.getLogger("loopguard.integrations")

_SESSION_HEADERS = ("x-litellm-session-id", "x-session-id", "x-session-affinity")
_ON_DENY = ("rewrite", "reject")
_ON_CUT = ("finish", "error")
_FINISH_REASONS = ("stop", "length", "content_filter")


@dataclass(frozen=True)
class ReplayedCall:
    """One tool call of a request's history, as the replayed guard decided it.

    Attributes
    ----------
    call_index : int
        0-based position among the history's calls that have a result (the guard's
        ``Decision.call_index``).
    call_id : str | None
        The assistant message's ``tool_calls[*].id``.
    tool : str
        The tool name (never the arguments: they carry secrets).
    action : str
        ``allow`` | ``notice`` | ``deny`` | ``cancel``; ``cancel`` too when a result tripped the
        circuit breaker (``after_call``'s cancel intervention).
    rule : str
        The rule that acted (``""`` for a plain allow).
    text : str
        What the model reads: the deny or cancel reason (replacing the result), or the
        reminders appended to the result (``""`` when none).
    message_index : int
        Index in ``messages`` of the call's ``role: "tool"`` result.
    latest : bool
        The call's result is one of the ``role: "tool"`` messages that end the request (the
        round the request answers; nothing -- no assistant, user or system message -- follows).
    """

    call_index: int
    call_id: str | None
    tool: str
    action: str
    rule: str
    text: str
    message_index: int
    latest: bool

    @property
    def stopped(self) -> bool:
        """The guard refused the call (``deny`` or ``cancel``)."""
        return self.action in ("deny", "cancel")


def _content_text(content: Any) -> Any:
    """A tool message's content as the guard's result: the string, or the text parts joined."""
    if isinstance(content, list):
        parts = [field(p, "text") for p in content]
        return "".join(p for p in parts if isinstance(p, str))
    return content


def _pending_calls(message: Any) -> dict[str, tuple[str, Any]]:
    """An assistant message's tool calls by id: ``{id: (name, arguments)}`` (unnamed ones skipped)."""
    out: dict[str, tuple[str, Any]] = {}
    calls = field(message, "tool_calls")
    if not isinstance(calls, (list, tuple)):
        return out
    for call in calls:
        fn = field(call, "function")
        name, call_id = field(fn, "name"), field(call, "id")
        if isinstance(name, str) and name and isinstance(call_id, str):
            out[call_id] = (name, field(fn, "arguments"))
    return out


def _trailing_results(messages: Sequence[Any]) -> int:
    """The index where the ``role: "tool"`` messages that end ``messages`` start (``len`` when
    the last message is not a tool result): the results this request sends for the first time."""
    start = len(messages)
    while start > 0 and field(messages[start - 1], "role") == "tool":
        start -= 1
    return start


def _replay_config(config: ToolGuardConfig | Mapping[str, Any] | None) -> ToolGuardConfig:
    """The guard's configuration for a replay: the scope rules (``unscoped_search``,
    ``root_search``) off.  They judge a call by its arguments before it runs, and a history's
    calls have run: rewriting such a result would only throw away what the search found."""
    return ToolGuardConfig.coerce(config).replace(unscoped_search="allow", root_search="allow")


def _decide(
    guard: ToolGuard, sid: str, name: str, args: Any, result: Any, error: bool
) -> tuple[Decision, list[Intervention]]:
    """``before_call``, then (when it may run) ``after_call`` with the result the history holds."""
    decision = guard.before_call(sid, name, args)
    if decision.action in ("deny", "cancel"):
        return decision, []
    return decision, guard.after_call(sid, name, args, result, error=error)


def _replayed(decision: Decision, notes: list[Intervention], call_id: str, index: int, latest: bool) -> ReplayedCall:
    if decision.action in ("deny", "cancel"):
        return ReplayedCall(
            decision.call_index, call_id, decision.tool, decision.action, decision.rule, decision.reason, index, latest
        )
    texts = [decision.reason] if decision.action == "notice" and decision.reason else []
    texts += [n.text for n in notes]
    stop = next((n for n in notes if n.action == "cancel"), None)
    action = "cancel" if stop is not None else ("notice" if texts else "allow")
    rule = stop.rule if stop is not None else (decision.rule or (notes[0].rule if notes else ""))
    text = "".join("\n\n" + t for t in texts)
    return ReplayedCall(decision.call_index, call_id, decision.tool, action, rule, text, index, latest)


def replay_tool_calls(
    messages: Sequence[Any],
    *,
    config: ToolGuardConfig | Mapping[str, Any] | None = None,
    session_id: str = "litellm",
) -> list[ReplayedCall]:
    """Replay a Chat Completions history through a fresh :class:`~loopguard.ToolGuard`.

    Parameters
    ----------
    messages : sequence of message dicts (or objects with the same fields)
        ``role: "assistant"`` messages' ``tool_calls`` (``id``, ``function.name``,
        ``function.arguments``) and the ``role: "tool"`` results (``tool_call_id``,
        ``content``: a string or text parts), in order.  A call is decided when its result
        comes (``before_call`` then ``after_call``), as an agent runs it; calls without a
        result are not decided.  A tool result whose ``is_error`` is true is a failure.
    config : ToolGuardConfig | Mapping | None
        The guard's configuration (defaults: :class:`~loopguard.ToolGuardConfig`).
    session_id : str
        The session the guard's decision log records.

    Returns
    -------
    list[ReplayedCall]
        One per decided call, in order.

    Raises
    ------
    TypeError
        ``messages`` is not a sequence.  ``ConfigError`` for an invalid ``config``.
    """
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise TypeError(f"messages must be a sequence of message dicts, not {type(messages).__name__}")
    guard = ToolGuard(_replay_config(config))
    latest = _trailing_results(messages)
    pending: dict[str, tuple[str, Any]] = {}
    out: list[ReplayedCall] = []
    for i, message in enumerate(messages):
        role = field(message, "role")
        if role == "assistant":
            pending = _pending_calls(message)
        elif role == "tool":
            call_id = field(message, "tool_call_id")
            call = pending.pop(call_id, None) if isinstance(call_id, str) else None
            if call is None:
                continue
            result = _content_text(field(message, "content"))
            decision, notes = _decide(guard, session_id, call[0], call[1], result, field(message, "is_error") is True)
            out.append(_replayed(decision, notes, call_id, i, i >= latest))
    return out


def _rewritten(messages: list[Any], calls: list[ReplayedCall]) -> list[Any] | None:
    """``messages`` with each refused call's result replaced by the reason and the reminders
    appended to ``str`` results; ``None`` when nothing changes."""
    out: list[Any] | None = None
    for call in calls:
        if not call.text:
            continue
        message = messages[call.message_index]
        if not isinstance(message, Mapping):
            continue
        content = message.get("content")
        if call.stopped:
            new = call.text
        elif isinstance(content, str):
            new = content + call.text
        else:
            logger.info("loopguard reminder for %s not added (the tool result is not a str)", call.tool)
            continue
        if out is None:
            out = list(messages)
        replaced = copy.copy(dict(message))
        replaced["content"] = new
        out[call.message_index] = replaced
    return out


def session_key(request_data: Mapping[str, Any], user_api_key_dict: Any = None) -> str:
    """The conversation a request belongs to: ``litellm_session_id`` (the body's, then its
    ``metadata`` / ``litellm_metadata``'s ``litellm_session_id`` or ``session_id``), then the
    ``x-litellm-session-id`` / ``x-session-id`` / ``x-session-affinity`` header, then the
    caller's API key hash (``key:<hash>``), else ``"default"``.  Never raises."""
    try:
        value = request_data.get("litellm_session_id")
        if isinstance(value, str) and value:
            return value
        for bucket in ("metadata", "litellm_metadata"):
            meta = request_data.get(bucket)
            if isinstance(meta, Mapping):
                for name in ("litellm_session_id", "session_id"):
                    value = meta.get(name)
                    if isinstance(value, str) and value:
                        return value
        server = request_data.get("proxy_server_request")
        headers = server.get("headers") if isinstance(server, Mapping) else None
        if isinstance(headers, Mapping):
            lower = {str(k).lower(): v for k, v in headers.items()}
            for name in _SESSION_HEADERS:
                value = lower.get(name)
                if isinstance(value, str) and value:
                    return value
        key = getattr(user_api_key_dict, "api_key", None) or getattr(user_api_key_dict, "token", None)
        if isinstance(key, str) and key:
            return "key:" + key
    except Exception:
        logger.warning("loopguard could not read the request's session; using 'default'", exc_info=True)
    return "default"


class LoopGuardStreamStopped(Exception):
    """Raised inside the proxy's stream (``on_cut="error"``) so LiteLLM ends it with an in-band
    error frame ``data: {"error": {"message", "type", "param", "code"}}`` (the ``openai``
    client raises ``APIError``).

    Attributes
    ----------
    message : str
        The guard's reason (what was cut and why).
    type : str
        ``"loopguard_stream_stopped"``.
    param : str | None
        ``None``.
    status_code : int
        400.
    outcome : StreamOutcome
        The stream's outcome.
    """

    def __init__(self, message: str, outcome: StreamOutcome) -> None:
        super().__init__(message)
        self.message = message
        self.type = "loopguard_stream_stopped"
        self.param: str | None = None
        self.status_code = 400
        self.outcome = outcome


def _outcome_info(outcome: StreamOutcome) -> dict[str, Any]:
    """The ``loopguard`` field of the final chunk: what was cut, and the pruned texts."""
    verdict, detection = outcome.verdict, outcome.detection
    return {
        "stopped": outcome.stopped,
        "action": verdict.action if verdict is not None else "cut",
        "reason": verdict.reason if verdict is not None else "",
        "kind": detection.kind if detection is not None else None,
        "channel": outcome.channel,
        "cut": outcome.cut,
        "removed": outcome.removed,
        "should_resume": outcome.should_resume,
        "cancelled": outcome.cancelled,
        "kept_text": outcome.kept_text,
        "kept_reasoning": outcome.kept_reasoning,
    }


def _passthrough(chunk: Any, guard: StreamGuard) -> Action:
    return Action.CONTINUE


def apply_litellm_chunk(chunk: Any, guard: StreamGuard) -> Action:
    """:func:`~loopguard.integrations.openai.apply_chat_chunk` with a fast path for LiteLLM's
    common chunk (a ``ModelResponseStream`` with one choice, index 0, no finish reason, a
    ``Delta`` with a text ``content``, no tool calls, no reasoning): LiteLLM keeps those fields
    in ``__pydantic_extra__``, read here directly.  Same actions and outcome for every chunk."""
    if type(chunk) is _CHUNK:
        choices = chunk.__dict__.get("choices")  # a chunk built with model_construct may lack a field
        if type(choices) is list and len(choices) == 1 and type(choices[0]) is _CHOICE:
            extra = choices[0].__pydantic_extra__
            delta: Any = extra.get("delta") if extra else None
            if (
                type(delta) is _DELTA
                and extra.get("finish_reason") is None
                and extra.get("index") == 0
                and delta.__dict__.get("reasoning_content") is None
            ):
                fields = delta.__pydantic_extra__
                content = fields.get("content") if fields else None
                if type(content) is str and not fields.get("tool_calls") and fields.get("reasoning") is None:
                    return guard.text(content) if content else Action.CONTINUE
    return apply_chat_chunk(chunk, guard)


def _pick(chunk: Any) -> Any:
    """The adapter for a chunk's shape, or ``None`` (not known yet)."""
    if field(chunk, "choices") is not None:
        return apply_litellm_chunk
    kind = field(chunk, "type")
    if isinstance(kind, str) and kind.startswith("response."):
        return apply_response_event
    return None


def _router() -> Any:
    """A chunk reader that picks the route's adapter on the stream's first chunk that has a
    shape: Chat Completions chunks (``choices``), OpenAI Responses events (``type``
    ``response.*``); until then, and for any other shape, chunks pass through.  The first
    error of the adapter is logged (its type only) and the rest of the stream passes unread."""
    chosen: list[Any] = []

    def apply(chunk: Any, guard: StreamGuard) -> Action:
        try:
            if not chosen:
                reader = _pick(chunk)
                if reader is None:
                    return Action.CONTINUE
                chosen.append(reader)
            return chosen[0](chunk, guard)  # type: ignore[no-any-return]
        except Exception as exc:
            chosen[:] = [_passthrough]
            logger.error("loopguard could not read a stream chunk (%s); the rest passes unguarded", type(exc).__name__)
            return Action.CONTINUE

    return apply


def _failopen(reader: Any) -> Any:
    """``reader`` until its first error, which is logged (its type only); then the rest of the
    stream passes unread."""
    chosen = [reader]

    def apply(chunk: Any, guard: StreamGuard) -> Action:
        try:
            return chosen[0](chunk, guard)  # type: ignore[no-any-return]
        except Exception as exc:
            chosen[0] = _passthrough
            logger.error("loopguard could not read a stream chunk (%s); the rest passes unguarded", type(exc).__name__)
            return Action.CONTINUE

    return apply


# ------------------------------------------------------------- raw SSE (/v1/messages)

_DELIMITERS = ("\r\n\r\n", "\n\n", "\r\r")
_LINES = re.compile(r"\r\n|\r|\n")


def _frame_end(buffer: Any) -> int:
    """The end of ``buffer``'s first complete SSE frame (past its blank line), or -1."""
    best, end = -1, -1
    for delimiter in _DELIMITERS:
        d = delimiter.encode() if isinstance(buffer, bytes) else delimiter
        at = buffer.find(d)
        if at != -1 and (best == -1 or at < best):
            best, end = at, at + len(d)
    return end


class _Upstream:
    """The upstream after its ``first`` chunk was read: ``first``, then the rest.  With
    ``frames`` (a raw SSE stream: ``bytes`` or ``str`` chunks) the chunks are re-cut at frame
    boundaries, so that a cut never falls inside a frame: the bytes (or text) passed are the
    upstream's own, in order; only where one chunk ends and the next begins can change (the
    proxy itself writes raw SSE frame by frame).  Closing it closes the upstream."""

    def __init__(self, first: Any, iterator: Any, upstream: Any, frames: bool) -> None:
        self._pending: list[Any] = [first]
        self._iterator, self._upstream, self._frames = iterator, upstream, frames
        self._buffer: Any = None
        self._ended = False

    def __aiter__(self) -> _Upstream:
        return self

    async def __anext__(self) -> Any:
        while True:
            if self._pending:
                chunk = self._pending.pop(0)
            elif self._ended:
                raise StopAsyncIteration
            else:
                try:
                    chunk = await self._iterator.__anext__()
                except StopAsyncIteration:
                    self._ended = True
                    rest, self._buffer = self._buffer, None
                    if rest:  # an unterminated last frame: passed as it came
                        return rest
                    raise
            if not self._frames:
                return chunk
            if isinstance(chunk, bytearray):
                chunk = bytes(chunk)
            if not isinstance(chunk, (bytes, str)) or (self._buffer and type(chunk) is not type(self._buffer)):
                rest, self._buffer = self._buffer, None
                if rest:
                    self._pending.insert(0, chunk)
                    return rest
                return chunk
            buffer = self._buffer + chunk if self._buffer else chunk
            end = _frame_end(buffer)
            if end == -1:
                self._buffer = buffer
                continue
            self._buffer = buffer[end:] or None
            if self._buffer:
                self._pending.insert(0, self._buffer[:0])  # look for the next frame before reading on
            return buffer[:end]

    async def aclose(self) -> None:
        streams = [self._upstream] if self._iterator is self._upstream else [self._upstream, self._iterator]
        for stream in streams:
            await _close_async(stream)
            # LiteLLM 1.108's Responses iterator (under its router's fallback wrapper) has no close of
            # its own, so closing the wrapper leaves the upstream's HTTP response open: close that too
            http = getattr(stream, "response", None)
            if callable(getattr(http, "aclose", None)) and callable(getattr(http, "aiter_bytes", None)):
                await _close_async(http)


def _sse_data(frame: Any) -> Any:
    """The JSON value of one SSE frame's ``data:`` lines, or ``None`` (no data, not JSON)."""
    text = frame.decode("utf-8", "replace") if isinstance(frame, bytes) else frame
    data = [line[5:].removeprefix(" ") for line in _LINES.split(text) if line.startswith("data:")]
    if not data:
        return None
    try:
        return json.loads("\n".join(data))
    except ValueError:
        return None


def _sse_frame(kind: str, event: dict[str, Any], like: Any) -> Any:
    """One Anthropic SSE frame (``event:`` and ``data:`` lines), as bytes when ``like`` is."""
    frame = f"event: {kind}\ndata: {json.dumps(event)}\n\n"
    return frame.encode() if isinstance(like, bytes) else frame


_ANTHROPIC_STOP = {"stop": "end_turn", "length": "max_tokens", "content_filter": "refusal"}


class _AnthropicSSE:
    """Reads a ``/v1/messages`` stream's raw SSE frames with
    :func:`~loopguard.integrations.anthropic.apply_anthropic_event` and remembers, of the frames
    passed on, which content blocks are open, to end a cut stream well-formed."""

    def __init__(self) -> None:
        self._frame: Any = None
        self._event: Any = None
        self.open: dict[int, str] = {}  # index -> block type
        self.last_index = -1
        self.delta_sent = False
        self.sent = 0  # code points of answer text passed on
        self.like: Any = b""
        self.broken = False

    def apply(self, frame: Any, guard: StreamGuard) -> Action:
        event = _sse_data(frame)
        self._frame, self._event = frame, event
        if not isinstance(event, dict):
            return Action.CONTINUE
        return apply_anthropic_event(event, guard)

    def passed(self, frame: Any) -> None:
        """``frame`` went to the client."""
        if isinstance(frame, (bytes, str)):
            self.like = frame
        event = self._event if frame is self._frame else _sse_data(frame) if isinstance(frame, (bytes, str)) else None
        if not isinstance(event, dict):
            return
        kind, index = event.get("type"), event.get("index")
        if kind == "content_block_start" and isinstance(index, int):
            block = event.get("content_block")
            self.open[index] = str(block.get("type")) if isinstance(block, dict) else ""
            self.last_index = max(self.last_index, index)
        elif kind == "content_block_stop" and isinstance(index, int):
            self.open.pop(index, None)
        elif kind == "message_delta":
            self.delta_sent = True
        elif kind == "content_block_delta":
            delta = event.get("delta")
            text = delta.get("text") if isinstance(delta, dict) and delta.get("type") == "text_delta" else None
            self.sent += len(text) if isinstance(text, str) else 0

    def ending(self, outcome: StreamOutcome, finish_reason: str) -> list[Any]:
        """The frames that end the cut stream: the marker line in the open text block (the
        answer text was cut; a new text block when none is open), ``content_block_stop`` for
        every open block, ``message_delta`` (``stop_reason`` ``"tool_use"`` when calls
        completed, else ``finish_reason``'s counterpart -- ``end_turn`` for ``stop`` --, the
        outcome under ``loopguard``), ``message_stop``."""
        info, like, out = _outcome_info(outcome), self.like, []
        closing = _closing_text(outcome, self.sent)
        if closing is not None:
            text = [i for i, kind in self.open.items() if kind == "text"]
            index = text[-1] if text else self.last_index + 1
            if not text:
                block = {"type": "text", "text": ""}
                out.append(_sse_frame("content_block_start", {"type": "content_block_start", "index": index,
                                                              "content_block": block}, like))  # fmt: skip
                self.open[index] = "text"
            delta = {"type": "text_delta", "text": closing}
            out.append(_sse_frame("content_block_delta", {"type": "content_block_delta", "index": index,
                                                          "delta": delta}, like))  # fmt: skip
        for index in sorted(self.open):
            out.append(_sse_frame("content_block_stop", {"type": "content_block_stop", "index": index}, like))
        stop: dict[str, Any] = {"type": "message_stop"}
        if self.delta_sent:
            stop["loopguard"] = info
        else:
            reason = "tool_use" if outcome.tool_calls else _ANTHROPIC_STOP[finish_reason]
            message: dict[str, Any] = {"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": None},
                                       "usage": {"output_tokens": 0}, "loopguard": info}  # fmt: skip
            out.append(_sse_frame("message_delta", message, like))
        out.append(_sse_frame("message_stop", stop, like))
        return out


# ------------------------------------------------------------- Responses (/v1/responses)


def _plain(obj: Any) -> dict[str, Any]:
    """A Responses object (an SDK/LiteLLM model or a dict) as a JSON-ready dict."""
    if isinstance(obj, Mapping):
        return json.loads(json.dumps(obj, default=str))  # type: ignore[no-any-return]
    dump = getattr(obj, "model_dump", None)
    if callable(dump):
        return json.loads(json.dumps(dump(mode="json", exclude_none=True), default=str))  # type: ignore[no-any-return]
    return {}


def _kind(event: Any) -> str:
    kind = field(event, "type")
    kind = getattr(kind, "value", kind)  # LiteLLM's events carry a str enum
    return kind if isinstance(kind, str) else ""


class _ResponsesEnding:
    """Remembers, of the Responses events passed on, the response, the output items and their
    text parts, to end a cut stream well-formed."""

    def __init__(self) -> None:
        self.response: dict[str, Any] = {}
        self.items: dict[int, dict[str, Any]] = {}  # output_index -> item (as last seen)
        self.open_items: set[int] = set()
        self.parts: dict[tuple[int, int], dict[str, Any]] = {}  # (output_index, content_index) -> part
        self.open_parts: set[tuple[int, int]] = set()
        self.sequence = -1
        self.sent = 0  # code points of answer text passed on
        self.broken = False

    def passed(self, event: Any) -> None:
        kind = _kind(event)
        if not kind:
            return
        seq = field(event, "sequence_number")
        if isinstance(seq, int):
            self.sequence = max(self.sequence, seq)
        oi, ci = field(event, "output_index"), field(event, "content_index")
        if kind in ("response.created", "response.in_progress"):
            self.response = _plain(field(event, "response"))
        elif kind in ("response.output_item.added", "response.output_item.done") and isinstance(oi, int):
            self.items[oi] = _plain(field(event, "item"))
            (self.open_items.add if kind.endswith("added") else self.open_items.discard)(oi)
        elif kind in ("response.content_part.added", "response.content_part.done") and isinstance(oi, int):
            key = (oi, ci if isinstance(ci, int) else 0)
            part = _plain(field(event, "part"))
            if kind.endswith("added"):
                self.open_parts.add(key)
                self.parts[key] = part
            else:
                self.open_parts.discard(key)
                self.parts[key] = part
        elif kind == "response.output_text.delta" and isinstance(oi, int):
            key = (oi, ci if isinstance(ci, int) else 0)
            part = self.parts.setdefault(key, {"type": "output_text", "text": "", "annotations": []})
            delta = field(event, "delta")
            if isinstance(delta, str):
                part["text"] = str(part.get("text") or "") + delta
                self.sent += len(delta)

    def _event(self, kind: str, **fields: Any) -> Any:
        self.sequence += 1
        return _EVENT(type=kind, **fields, sequence_number=self.sequence)

    def ending(self, outcome: StreamOutcome, finish_reason: str) -> list[Any]:
        """The events that end the cut stream: the marker line as a last
        ``response.output_text.delta`` of the open text part (the answer text was cut), the
        ``…done`` events of every open part and item, then ``response.completed`` (``length`` /
        ``content_filter``: ``response.incomplete``) with the response's output so far; the
        outcome under ``loopguard`` on that last event."""
        out: list[Any] = []
        text_parts = sorted(k for k in self.open_parts if self.parts.get(k, {}).get("type") == "output_text")
        closing = _closing_text(outcome, self.sent)
        if closing is not None and text_parts:
            oi, ci = text_parts[-1]
            delta = closing
            self.parts[(oi, ci)]["text"] = str(self.parts[(oi, ci)].get("text") or "") + delta
            item_id = self.items.get(oi, {}).get("id")
            out.append(self._event("response.output_text.delta", item_id=item_id, output_index=oi,
                                   content_index=ci, delta=delta, logprobs=[]))  # fmt: skip
        for oi, ci in sorted(self.open_parts):
            part, item_id = self.parts.get((oi, ci), {}), self.items.get(oi, {}).get("id")
            if part.get("type") == "output_text":
                out.append(self._event("response.output_text.done", item_id=item_id, output_index=oi,
                                       content_index=ci, text=part.get("text") or "", logprobs=[]))  # fmt: skip
            out.append(self._event("response.content_part.done", item_id=item_id, output_index=oi,
                                   content_index=ci, part=part))  # fmt: skip
        for oi in sorted(self.open_items):
            item = dict(self.items[oi])
            if item.get("type") == "message":
                item["content"] = [self.parts[k] for k in sorted(self.parts) if k[0] == oi]
            item["status"] = "completed"
            self.items[oi] = item
            out.append(self._event("response.output_item.done", output_index=oi, item=item))
        response = dict(self.response)
        response["output"] = [self.items[oi] for oi in sorted(self.items)]
        if finish_reason == "stop":
            kind, response["status"] = "response.completed", "completed"
        else:
            kind, response["status"] = "response.incomplete", "incomplete"
            response["incomplete_details"] = {
                "reason": "max_output_tokens" if finish_reason == "length" else "content_filter"
            }
        info = _outcome_info(outcome)
        response["loopguard"] = info
        out.append(self._event(kind, response=response, loopguard=info))
        return out


def _failsafe(tracker: Any) -> Any:
    """``tracker.passed`` until its first error (logged, its type only; ``tracker.broken`` is
    set: a cut then ends the stream as is); then a no-op."""

    def call(chunk: Any) -> None:
        if tracker.broken:
            return
        try:
            tracker.passed(chunk)
        except Exception as exc:
            tracker.broken = True
            logger.error("loopguard could not follow the stream (%s); a cut ends it as is", type(exc).__name__)

    return call


def _closing_text(outcome: StreamOutcome, sent: int) -> str | None:
    """The answer text that ends a cut stream, after the ``sent`` code points of answer text the
    client has; ``None`` when the answer text was not cut.  When the client has less than the
    kept text (the chunk holding the loop's start was withheld whole), the rest of the kept text
    -- the marker line included -- so that the client's text is ``outcome.kept_text``; else the
    marker line after a line break."""
    if outcome.channel != "text" or not outcome.marker:
        return None
    if outcome.cut is not None and sent < outcome.cut:
        return outcome.kept_text[sent:]
    return "\n" + outcome.marker


def _answer_text(chunk: Any) -> int:
    """Code points of answer text in a Chat Completions chunk (its first choice's ``content``)."""
    choices = field(chunk, "choices")
    if not choices:
        return 0
    content = field(field(choices[0], "delta"), "content")
    return len(content) if isinstance(content, str) else 0


def _tail_chunk(last: Any, outcome: StreamOutcome, finish_reason: str, sent: int = 0) -> Any:
    """The final Chat Completions chunk after a cut, shaped like the upstream's ``last`` chunk
    (``id``, ``created``, ``model``): one choice with :func:`_closing_text` as content (when the
    answer text was cut; ``sent``: the answer text already passed), ``finish_reason`` (``"tool_calls"`` when calls completed before the
    cut) and the outcome under ``loopguard`` (also in ``provider_specific_fields``: LiteLLM's
    fast serializer drops other extra fields).  A dict when ``last`` is one; ``None`` for
    a Responses stream (it ends with the last event passed)."""
    if field(last, "choices") is None:
        return None
    info = _outcome_info(outcome)
    reason = "tool_calls" if outcome.tool_calls else finish_reason
    content = _closing_text(outcome, sent)
    head = {"id": field(last, "id"), "created": field(last, "created"), "model": field(last, "model")}
    if isinstance(last, Mapping):
        delta = {"content": content} if content is not None else {}
        choice = {"index": 0, "delta": delta, "finish_reason": reason}
        return {**head, "object": "chat.completion.chunk", "choices": [choice], "loopguard": info}
    choice = _CHOICE(index=0, delta=_DELTA(content=content), finish_reason=reason)
    return _CHUNK(
        **{k: v for k, v in head.items() if v is not None},
        object="chat.completion.chunk",
        choices=[choice],
        loopguard=info,
        provider_specific_fields={"loopguard": info},
    )


def _known_keys() -> frozenset[str]:
    """The keys LiteLLM itself gives a guardrail: ``CustomGuardrail``'s parameters and the
    fields of the config's ``litellm_params`` (empty when LiteLLM's classes cannot be read)."""
    try:
        params = inspect.signature(_CustomGuardrail.__init__).parameters
        fields = importlib.import_module("litellm.types.guardrails").LitellmParams.model_fields
        return frozenset(params) | frozenset(fields)
    except Exception:  # pragma: no cover - another LiteLLM layout: no warning rather than a wrong one
        return frozenset()


def _warn_unknown_keys(kwargs: Mapping[str, Any]) -> None:
    """Log the keys neither loopguard nor LiteLLM knows (a typo such as ``on_denny`` would
    otherwise be swallowed by ``CustomGuardrail(**kwargs)``); names only, never values."""
    known = _known_keys()
    unknown = sorted(k for k in kwargs if known and k not in known)
    if unknown:
        logger.warning("LoopGuardrail: unknown config keys ignored: %s", ", ".join(unknown))


def _check(name: str, value: Any, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise ValueError(f"LoopGuardrail: {name}={value!r} is invalid: must be one of {', '.join(allowed)}")
    return str(value)


class LoopGuardrail(_CustomGuardrail):  # type: ignore[misc]  # LiteLLM's class, imported as Any
    """LiteLLM proxy guardrail: tool-call loops in the request history, text loops in the stream.

    Parameters
    ----------
    on_deny : ``"rewrite"`` | ``"reject"``
        A refused call (deny or cancel) of the history: its tool result is replaced by the
        guard's reason (``"rewrite"``, default), or -- when its result is one of the tool messages
        that end the request (the round this request answers) -- the request is refused with
        HTTP 400 (``"reject"``; earlier refused calls are still rewritten).
    on_cut : ``"finish"`` | ``"error"``
        A cut stream ends with a final chunk (``"finish"``, default) or LiteLLM's in-band error
        frame carrying :class:`LoopGuardStreamStopped` (``"error"``).
    finish_reason : ``"stop"`` | ``"length"`` | ``"content_filter"``
        The final chunk's ``finish_reason`` when no tool call completed (default ``"stop"``).
    guard_config : ToolGuardConfig | Mapping | None
        The tool guard's configuration (``ToolGuardConfig`` keys).
    stream_config : StreamConfig | Mapping | None
        The stream policy (``mode``, ``marker``, ``language``; ``on_rescue_cap`` is always
        ``"return"``: the proxy cannot resume, the client reads ``should_resume``).
    text_config : TextConfig | str | None
        The text detectors' profile (``None``: ``"default"``); checked here.
    **kwargs
        LiteLLM's own guardrail keys (``guardrail_name`` -- default ``"loopguard"``,
        ``event_hook`` -- default ``[pre_call, post_call]``, ``default_on`` -- default True, …),
        passed to ``CustomGuardrail``.  The proxy passes every key of ``litellm_params`` here.

    Raises
    ------
    ValueError
        for an ``on_deny``, ``on_cut`` or ``finish_reason`` not listed above.
    ConfigError
        for an invalid ``guard_config``, ``stream_config`` or ``text_config``.
    """

    def __init__(
        self,
        *,
        on_deny: str = "rewrite",
        on_cut: str = "finish",
        finish_reason: str = "stop",
        guard_config: ToolGuardConfig | Mapping[str, Any] | None = None,
        stream_config: StreamConfig | Mapping[str, Any] | None = None,
        text_config: TextConfig | str | None = None,
        **kwargs: Any,
    ) -> None:
        self.on_deny = _check("on_deny", on_deny, _ON_DENY)
        self.on_cut = _check("on_cut", on_cut, _ON_CUT)
        self.finish_reason = _check("finish_reason", finish_reason, _FINISH_REASONS)
        self.guard_config: ToolGuardConfig | None = (
            None if guard_config is None else ToolGuardConfig.coerce(guard_config)
        )
        self.stream_config = StreamConfig.coerce(stream_config).replace(on_rescue_cap="return")
        self.text_config = text_config if isinstance(text_config, TextConfig) else TextConfig(text_config or "default")
        _warn_unknown_keys(kwargs)
        kwargs.setdefault("guardrail_name", "loopguard")
        kwargs.setdefault("default_on", True)
        if kwargs.get("event_hook") is None:
            hooks = importlib.import_module("litellm.types.guardrails").GuardrailEventHooks
            kwargs["event_hook"] = [hooks.pre_call, hooks.post_call]
        super().__init__(**kwargs)

    # ----------------------------------------------------------------- pre-call

    async def async_pre_call_hook(
        self, user_api_key_dict: Any, cache: Any, data: dict[str, Any], call_type: Any
    ) -> Any:
        """Replay ``data["messages"]``' tool calls (:func:`replay_tool_calls`) and rewrite the
        refused calls' results in ``data`` (returned; ``None`` when nothing changed).

        Raises
        ------
        fastapi.HTTPException
            400 with ``{"error": {"message": reason, "type": "loopguard", "code": "loopguard_<rule>"}}``
            when ``on_deny="reject"`` and a call of the latest round is refused.
        """
        refused: ReplayedCall | None = None
        try:
            messages = data.get("messages") if isinstance(data, Mapping) else None
            if not isinstance(messages, list) or not messages:
                return None
            sid = session_key(data, user_api_key_dict)
            calls = replay_tool_calls(messages, config=self.guard_config, session_id=sid)
            if self.on_deny == "reject":
                refused = next((c for c in calls if c.stopped and c.latest), None)
            rewritten = None if refused is not None else _rewritten(messages, calls)
        except Exception as exc:
            logger.error(
                "loopguard could not replay the request's tool calls (%s); passed unchanged", type(exc).__name__
            )
            return None
        if refused is not None:
            logger.info("loopguard refused a request: %s call %d (%s)", refused.tool, refused.call_index, refused.rule)
            error = {"message": refused.text, "type": "loopguard", "code": f"loopguard_{refused.rule}"}
            raise _HTTPException(status_code=400, detail={"error": error})
        if rewritten is None:
            return None
        data["messages"] = rewritten
        return data

    # ---------------------------------------------------------------- streaming

    def _guarded(
        self, upstream: _Upstream, reader: Any, request_data: Any, user_api_key_dict: Any
    ) -> AsyncGuardedStream[Any] | None:
        """The guarded upstream, or ``None`` (logged) when the guard cannot start."""
        try:
            sid = session_key(request_data if isinstance(request_data, Mapping) else {}, user_api_key_dict)
            session = Session(sid, text_config=self.text_config, guard_config=self.guard_config)
            return AsyncGuardedStream(upstream, reader, config=self.stream_config, session=session)
        except Exception as exc:
            logger.error("loopguard could not guard the stream (%s); it passes unguarded", type(exc).__name__)
            return None

    def _ending(self, guarded: AsyncGuardedStream[Any], last: Any, tracker: Any, sent: int) -> Any:
        """What ends a cut stream: the final chunks (a list), a :class:`LoopGuardStreamStopped`
        to raise, or ``None`` (not cut, or the ending could not be built: logged)."""
        try:
            outcome = guarded.outcome
            if not outcome.stopped:
                return None
            logger.info("loopguard cut a stream: %s", outcome.detection.kind if outcome.detection else "?")
            if self.on_cut == "error":
                reason = outcome.verdict.reason if outcome.verdict is not None else "loop detected"
                return LoopGuardStreamStopped(reason, outcome)
            if tracker is not None:
                return None if tracker.broken else tracker.ending(outcome, self.finish_reason)
            tail = _tail_chunk(last, outcome, self.finish_reason, sent)
            return None if tail is None else [tail]
        except Exception as exc:
            logger.error("loopguard could not end the cut stream (%s); it ends as is", type(exc).__name__)
            return None

    async def async_post_call_streaming_iterator_hook(
        self, user_api_key_dict: Any, response: Any, request_data: dict[str, Any]
    ) -> AsyncGenerator[Any, None]:
        """Pass the upstream's chunks on until the guard cuts the stream, then close the
        upstream and end the stream (``on_cut``).  The first chunk picks the reader:
        ``bytes``/``str`` (the raw SSE of ``/v1/messages``) -> Anthropic events, re-cut at frame
        boundaries; ``response.*`` events (``/v1/responses``) -> Responses events; chunks with
        ``choices`` -> Chat Completions.  Declared on this class itself: LiteLLM only chains an
        iterator hook found in the concrete class's ``__dict__`` (a subclass must declare it
        again, calling ``super()``)."""
        iterator = response.__aiter__()
        try:
            first = await iterator.__anext__()
        except StopAsyncIteration:
            return
        tracker: Any = None
        try:
            frames = isinstance(first, (bytes, bytearray, str))
            upstream = _Upstream(first, iterator, response, frames)
            if frames:
                tracker = _AnthropicSSE()
                reader = _failopen(tracker.apply)
            else:
                if _kind(first).startswith("response."):
                    tracker = _ResponsesEnding()
                reader = _router()
        except Exception as exc:  # pragma: no cover - plain constructors
            logger.error("loopguard could not guard the stream (%s); it passes unguarded", type(exc).__name__)
            upstream, reader = _Upstream(first, iterator, response, False), None
        guarded = None if reader is None else self._guarded(upstream, reader, request_data, user_api_key_dict)
        if guarded is None:
            async for chunk in upstream:
                yield chunk
            return
        passed = None if tracker is None else _failsafe(tracker)
        last: Any = first  # the shape of the final chunk (the first one when none passed)
        sent = 0
        try:
            async for chunk in guarded:
                last = chunk
                if passed is not None:
                    passed(chunk)
                else:
                    sent += _answer_text(chunk)
                yield chunk
        finally:
            try:
                await guarded.close()  # idempotent: closes the upstream when the client went away
            except Exception as exc:
                logger.error("loopguard could not close the stream (%s)", type(exc).__name__)
        ending = self._ending(guarded, last, tracker, sent)
        if isinstance(ending, LoopGuardStreamStopped):
            raise ending
        for chunk in ending or ():
            yield chunk
