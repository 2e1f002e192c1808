"""OpenAI Responses API streams: guard and prune (docs/spec.md §3).

Events are read by field name (``type`` first), so the ``openai`` SDK's
event objects (``client.responses.create(..., stream=True)`` or the
``client.responses.stream(...)`` helper), or plain dicts, all work;
``openai`` is never imported here.

* ``response.output_text.delta``: ``delta`` → answer text;
* ``response.reasoning_text.delta`` (raw chain of thought, open models) and
  ``response.reasoning_summary_text.delta`` (OpenAI models' summaries):
  ``delta`` → reasoning;
* ``response.output_item.added`` with ``item.type == "function_call"``: a
  tool call starts, keyed by ``item.id``, with ``item.call_id`` and
  ``item.name``;
* ``response.function_call_arguments.delta``: ``delta`` → the arguments of
  the call ``item_id``;
* ``response.function_call_arguments.done``: the call is complete
  (``arguments``, the full text, replaces the fragments);
* ``response.output_item.done`` with a ``function_call`` item: the call is
  complete (``item.arguments``);
* ``response.completed`` / ``response.incomplete`` / ``response.failed``:
  every open call is complete.

Every other event (``response.created``, ``…content_part.added``, ``…done``
of text, built-in tool events, ``error``, …) passes through unread; so do
events whose fields have the wrong type.  Tool calls are keyed by the item
id (``item_id`` of the argument events); when a stream carries no item id,
by ``output_index``.

When a cut waits for an open function call (spec §2.6) it happens right
after the event that completes the call (usually
``response.function_call_arguments.done``): that event is passed on, the
call's later ``response.output_item.done`` is not; ``outcome.tool_calls``
has the call whole.

>>> events = [{"type": "response.reasoning_summary_text.delta", "delta": "Wait, recheck the sum. "}] * 60
>>> stream = guard_response_stream(iter(events), config={"mode": "cut"})
>>> passed = sum(1 for _ in stream)
>>> passed < 60, stream.outcome.stopped, stream.outcome.channel, stream.outcome.detection.kind
(True, True, 'reasoning', 'cycle')
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..session import Session
from ..stream import Action, LoopGuardCancelled, StreamConfig, StreamGuard
from ._base import AsyncGuardedStream, GuardedStream, field

__all__ = [
    "apply_response_event",
    "guard_response_stream",
    "aguard_response_stream",
    "LoopGuardCancelled",
]

_REASONING = frozenset({"response.reasoning_text.delta", "response.reasoning_summary_text.delta"})
_END = frozenset({"response.completed", "response.incomplete", "response.failed"})


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _index(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _item_key(item_id: Any, output_index: Any) -> str | int | None:
    """The call's key: its item id, else its output index, else ``None`` (unusable)."""
    return _text(item_id) or _index(output_index)


def apply_response_event(event: Any, guard: StreamGuard) -> Action:
    """Report one Responses API stream event to ``guard``.

    Returns the guard's :class:`~loopguard.stream.Action` (``CONTINUE`` for
    events it does not read).  Fields of the wrong type are ignored.
    """
    kind = field(event, "type")
    if not isinstance(kind, str):
        return Action.CONTINUE
    if kind == "response.output_text.delta":
        delta = _text(field(event, "delta"))
        return guard.text(delta) if delta is not None else Action.CONTINUE
    if kind in _REASONING:
        delta = _text(field(event, "delta"))
        return guard.reasoning(delta) if delta is not None else Action.CONTINUE
    if kind == "response.function_call_arguments.delta":
        key = _item_key(field(event, "item_id"), field(event, "output_index"))
        if key is None:
            return Action.CONTINUE
        return guard.tool_args(key, field(event, "delta"))
    if kind == "response.function_call_arguments.done":
        key = _item_key(field(event, "item_id"), field(event, "output_index"))
        if key is None:
            return Action.CONTINUE
        return guard.tool_end(key, arguments=field(event, "arguments"), name=field(event, "name"))
    if kind in ("response.output_item.added", "response.output_item.done"):
        item = field(event, "item")
        if field(item, "type") != "function_call":
            return Action.CONTINUE
        key = _item_key(field(item, "id"), field(event, "output_index"))
        if key is None:
            return Action.CONTINUE
        call_id, name = field(item, "call_id"), field(item, "name")
        if kind == "response.output_item.added" or not guard.has_tool_call(key):
            action = guard.tool_start(key, id=call_id, name=name)
            if action.stop or kind == "response.output_item.added":
                return action
        return guard.tool_end(key, arguments=field(item, "arguments"), name=name)
    if kind in _END:
        guard.note_finish_reason(kind.rpartition(".")[2])  # completed | incomplete | failed
        return guard.close_open_calls()
    return Action.CONTINUE


def guard_response_stream(
    stream: Any, *, config: StreamConfig | Mapping[str, Any] | None = None, session: Session | None = None
) -> GuardedStream[Any]:
    """Guard a sync Responses API event stream (``client.responses.create(..., stream=True)``,
    the ``client.responses.stream(...)`` helper's stream, or any iterable of event dicts).

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
    return GuardedStream(stream, apply_response_event, config=config, session=session)


def aguard_response_stream(
    stream: Any, *, config: StreamConfig | Mapping[str, Any] | None = None, session: Session | None = None
) -> AsyncGuardedStream[Any]:
    """The ``async for`` form of :func:`guard_response_stream` (``AsyncOpenAI`` streams; closed
    with ``await stream.close()``)."""
    return AsyncGuardedStream(stream, apply_response_event, config=config, session=session)
