"""Anthropic Messages streams: guard, prune, resume (docs/spec.md §3).

Events are read by field name (``type`` first), so the ``anthropic`` SDK's
raw events (``client.messages.create(..., stream=True)``), the
``client.messages.stream(...)`` helper's ``MessageStream``, or plain dicts
all work; ``anthropic`` is never imported here.

* ``content_block_start``: a ``tool_use`` block starts a tool call keyed by
  the block ``index`` (with its ``id`` and ``name``); a ``text`` /
  ``thinking`` block's initial text, if any, is fed like a delta;
* ``content_block_delta``: ``text_delta`` (``text``) → answer text;
  ``thinking_delta`` (``thinking``) → reasoning; ``input_json_delta``
  (``partial_json``) → the arguments of the tool call at ``index``;
* ``content_block_stop``: the tool call at ``index`` is complete;
* ``message_delta`` / ``message_stop``: every open call is complete.

Everything else passes through unread: ``message_start``, ``ping``,
``error``, ``signature_delta`` and ``citations_delta``, ``server_tool_use``
blocks (run by Anthropic, not by the host), and the ``MessageStream``
helper's derived ``text`` / ``thinking`` / ``input_json`` / ``citation`` /
``signature`` events (their raw ``content_block_delta`` is read instead, so
nothing is counted twice); so do events whose fields have the wrong type.
Tool arguments are the ``partial_json`` text as streamed.

>>> events = [{"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}]
>>> events += [{"type": "content_block_delta", "index": 0,
...             "delta": {"type": "thinking_delta", "thinking": "Wait, recheck the sum. "}}] * 60
>>> stream = guard_stream(iter(events), config={"mode": "cut"})
>>> passed = sum(1 for _ in stream)
>>> passed < 61, stream.outcome.stopped, stream.outcome.channel, stream.outcome.detection.kind
(True, True, 'reasoning', 'cycle')
>>> request = resume_messages([{"role": "user", "content": "Add 17 and 25."}], stream.outcome)
>>> [m["role"] for m in request.messages], request.settings
(['user'], {'temperature': 1.0})
>>> request.messages[0]["content"].startswith("Add 17 and 25.\\n\\n[loopguard] Your previous reasoning")
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..session import Session
from ..stream import Action, LoopGuardCancelled, StreamConfig, StreamGuard, StreamOutcome
from . import openai as _openai
from ._base import AsyncGuardedStream, GuardedStream, field
from .openai import ResumeRequest

__all__ = [
    "apply_anthropic_event",
    "guard_stream",
    "aguard_stream",
    "resume_messages",
    "ResumeRequest",
    "LoopGuardCancelled",
]


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _index(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def apply_anthropic_event(event: Any, guard: StreamGuard) -> Action:
    """Report one Anthropic Messages stream event to ``guard``.

    Returns the guard's :class:`~loopguard.stream.Action` (``CONTINUE`` for
    events it does not read).  Fields of the wrong type are ignored.
    """
    kind = field(event, "type")
    if kind == "content_block_delta":
        delta = field(event, "delta")
        dtype = field(delta, "type")
        if dtype == "text_delta":
            text = _text(field(delta, "text"))
            return guard.text(text) if text is not None else Action.CONTINUE
        if dtype == "thinking_delta":
            thinking = _text(field(delta, "thinking"))
            return guard.reasoning(thinking) if thinking is not None else Action.CONTINUE
        if dtype == "input_json_delta":
            key = _index(field(event, "index"))
            if key is None or not guard.has_tool_call(key):  # not a tool_use block (e.g. server_tool_use)
                return Action.CONTINUE
            return guard.tool_args(key, field(delta, "partial_json"))
        return Action.CONTINUE
    if kind == "content_block_start":
        block = field(event, "content_block")
        btype = field(block, "type")
        if btype == "tool_use":
            key = _index(field(event, "index"))
            if key is None:
                return Action.CONTINUE
            return guard.tool_start(key, id=field(block, "id"), name=field(block, "name"))
        if btype == "text":
            text = _text(field(block, "text"))
            return guard.text(text) if text is not None else Action.CONTINUE
        if btype == "thinking":
            thinking = _text(field(block, "thinking"))
            return guard.reasoning(thinking) if thinking is not None else Action.CONTINUE
        return Action.CONTINUE
    if kind == "content_block_stop":
        key = _index(field(event, "index"))
        if key is None or not guard.has_tool_call(key):
            return Action.CONTINUE
        return guard.tool_end(key)
    if kind in ("message_delta", "message_stop"):
        guard.note_finish_reason(field(field(event, "delta"), "stop_reason"))
        return guard.close_open_calls()
    return Action.CONTINUE


def guard_stream(
    stream: Any, *, config: StreamConfig | Mapping[str, Any] | None = None, session: Session | None = None
) -> GuardedStream[Any]:
    """Guard a sync Anthropic Messages event stream (``client.messages.create(..., stream=True)``,
    the ``MessageStream`` of ``with client.messages.stream(...) as s``, or any iterable of event dicts).

    Parameters
    ----------
    stream : iterable of events
        Closed with ``stream.close()`` when the guard stops it.
    config : StreamConfig | Mapping | None
        ``mode`` (``"rescue"``), ``marker``, ``language``, rescue cap and
        retry settings (:class:`~loopguard.stream.StreamConfig`).
    session : Session | None
        The conversation (text detector config, rescue count, tool guard);
        a new one when ``None``.

    Returns
    -------
    GuardedStream
        Iterates the events unchanged until a cut, then stops; ``.outcome``
        (a :class:`~loopguard.stream.StreamOutcome`) after iteration.

    Raises
    ------
    LoopGuardCancelled
        from iteration, past ``max_consecutive_rescues`` with
        ``on_rescue_cap="raise"``.  The upstream's own errors propagate unchanged.
    """
    return GuardedStream(stream, apply_anthropic_event, config=config, session=session)


def aguard_stream(
    stream: Any, *, config: StreamConfig | Mapping[str, Any] | None = None, session: Session | None = None
) -> AsyncGuardedStream[Any]:
    """The ``async for`` form of :func:`guard_stream` (``AsyncAnthropic`` streams and
    ``AsyncMessageStream``; closed with ``await stream.close()``)."""
    return AsyncGuardedStream(stream, apply_anthropic_event, config=config, session=session)


def _role(message: Any) -> Any:
    return message.get("role") if isinstance(message, Mapping) else None


def _merge(previous: dict[str, Any], content: str, separator: str) -> dict[str, Any]:
    """``previous`` (a copy) with ``content`` added at the end of its content."""
    merged = dict(previous)
    old = merged.get("content")
    if isinstance(old, str):
        merged["content"] = old + separator + content if old else content
    elif isinstance(old, Sequence) and not isinstance(old, (bytes, bytearray)):
        merged["content"] = [*old, {"type": "text", "text": content}]
    else:
        merged["content"] = content
    return merged


def resume_messages(
    messages: Sequence[Mapping[str, Any]],
    outcome: StreamOutcome,
    *,
    config: StreamConfig | Mapping[str, Any] | None = None,
) -> ResumeRequest:
    """Build the resume request after a cut, in the Anthropic Messages format (spec §3).

    The same request as :func:`loopguard.integrations.openai.resume_messages`
    (the caller's messages, the kept answer text, a corrective note tagged
    ``[loopguard]``; never the loop text), made valid for the Messages API,
    whose turns alternate between ``user`` and ``assistant``:

    * the kept answer text (``outcome.kept_text``, with its marker line when
      the answer was cut) becomes an ``assistant`` message; when the
      request ended with an ``assistant`` message (a prefill, which the
      stream continued) it is appended to that message instead;
    * the note becomes a ``user`` message after it; when there is no kept
      answer text, the request's last message is the ``user`` turn the model
      was answering, and the note is appended to it (``"\\n\\n"`` + note for
      string content, one more ``{"type": "text"}`` block for block
      content, e.g. after ``tool_result`` blocks).  No text is invented for
      the model.

    Kept reasoning is never replayed (a pruned thinking block has no valid
    signature) and completed tool calls of the cut attempt are not either
    (they would need their results first; they are in ``outcome.tool_calls``).
    ``settings`` holds ``temperature`` only: the Messages API has no
    ``reasoning_effort`` (set ``thinking`` yourself to change the budget).

    Parameters
    ----------
    messages : sequence of message dicts
        The request's ``messages`` (copied, not modified; ``system`` is a
        separate parameter of the API and is not touched).
    outcome : StreamOutcome
        The cut stream's outcome.
    config : StreamConfig | Mapping | None
        For ``language`` and the retry settings.

    Raises
    ------
    TypeError
        for a non-sequence ``messages`` or a non-outcome.
    """
    base = _openai.resume_messages(messages, outcome, config=config)
    count = len(messages)
    out: list[dict[str, Any]] = list(base.messages[:count])
    for added in base.messages[count:]:
        role, content = added["role"], added["content"]
        if out and _role(out[-1]) == role and isinstance(content, str):
            out[-1] = _merge(out[-1], content, "" if role == "assistant" else "\n\n")
        else:
            out.append({"role": role, "content": content})
    settings = {k: v for k, v in base.settings.items() if k == "temperature"}
    return ResumeRequest(out, settings)
