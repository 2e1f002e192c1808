"""OpenAI-compatible streams: guard, prune, resume (docs/spec.md §3).

Chunks are read by field name, so the ``openai`` SDK's objects (any
version), LiteLLM's, or plain dicts all work; ``openai`` is never imported
here.  Chat Completions chunks: ``choices[0].delta.content`` → text;
``delta.reasoning_content`` (DeepSeek, SGLang, LiteLLM) or
``delta.reasoning`` (vLLM, OpenRouter, Ollama) → reasoning (the first that is
a non-empty ``str``); ``delta.tool_calls[*]`` fragments by ``index``, complete
at ``finish_reason`` or the end of the stream (fragments of parallel calls may
interleave, so a cut found while calls stream waits for that point).  Only choice
0 is guarded (``n > 1`` streams pass their other choices through).

>>> chunks = [{"choices": [{"index": 0, "delta": {"reasoning_content": "Wait, recheck the sum. "}}]}] * 60
>>> stream = guard_stream(iter(chunks), config={"mode": "cut"})
>>> passed = sum(1 for _ in stream)
>>> passed < 60, stream.outcome.stopped, stream.outcome.detection.kind
(True, True, 'cycle')
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .. import messages as _messages
from ..session import Session
from ..stream import Action, LoopGuardCancelled, StreamConfig, StreamGuard, StreamOutcome
from ._base import AsyncGuardedStream, GuardedStream, declares, field

__all__ = [
    "guard_stream",
    "aguard_stream",
    "apply_chat_chunk",
    "resume_messages",
    "ResumeRequest",
    "create_with_rescue",
    "acreate_with_rescue",
    "RescueResult",
    "LoopGuardCancelled",
]


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


_CONTINUE = Action.CONTINUE
#: SDK classes the fast path reads by attribute (``_base.declares``), and those it may not.
_CHUNKS: set[type] = set()
_CHOICES: set[type] = set()
_DELTAS: set[type] = set()
_NOT_CHUNKS: set[type] = set()
_NOT_CHOICES: set[type] = set()
_NOT_DELTAS: set[type] = set()
_CHOICE_FIELDS = ("delta", "index", "finish_reason")
_DELTA_FIELDS = ("content", "tool_calls")
_REASONING = ("reasoning_content", "reasoning")
_NONE = object()
_DICT, _LIST = dict, list  # module globals: one lookup each instead of builtins' two


def _admit(known: set[type], refused: set[type], tp: type, present: tuple[str, ...], absent: tuple[str, ...]) -> bool:
    """Whether the SDK fast path may read ``tp`` by attribute (``_base.declares``), remembered."""
    if tp in known:
        return True
    if tp in refused:
        return False
    ok = declares(tp, present, absent)
    table = known if ok else refused
    if len(table) >= 256:  # classes made on the fly: keep the tables bounded
        table.clear()
    table.add(tp)
    return ok


def apply_chat_chunk(chunk: Any, guard: StreamGuard) -> Action:
    """Report one Chat Completions chunk's events to ``guard`` (choice 0 only).

    Returns the first stopping :class:`~loopguard.stream.Action`, else
    ``CONTINUE``.  Fields of the wrong type are ignored.  The common chunk (exactly one
    choice, ``index`` 0, no finish reason, a delta with no tool calls: a plain dict, or an
    SDK object whose pydantic classes declare those fields and not the reasoning ones) takes
    a fast path with the same result; any other chunk is read field by field.
    """
    content: Any = None
    reasoning: Any = _NONE  # the delta's reasoning fields, when it names one
    try:
        if chunk.__class__ is _DICT:
            choices = chunk["choices"]
            if choices.__class__ is _LIST and len(choices) == 1:
                choice = choices[0]
                if choice.__class__ is _DICT and choice["finish_reason"] is None and choice["index"] == 0:
                    delta = choice["delta"]
                    if delta.__class__ is _DICT:
                        if len(delta) == 1:  # a raw SSE delta: {"content": ...} alone, usually
                            content = delta.get("content")
                        elif not delta.get("tool_calls"):
                            content = delta.get("content")
                            if "reasoning_content" in delta or "reasoning" in delta:
                                reasoning = (delta.get("reasoning_content"), delta.get("reasoning"))
        elif type(chunk) in _CHUNKS or _admit(_CHUNKS, _NOT_CHUNKS, type(chunk), ("choices",), ()):
            choices = chunk.choices
            if type(choices) is list and len(choices) == 1:
                choice = choices[0]
                if (
                    (type(choice) in _CHOICES or _admit(_CHOICES, _NOT_CHOICES, type(choice), _CHOICE_FIELDS, ()))
                    and choice.finish_reason is None
                    and choice.index == 0
                ):
                    delta = choice.delta
                    if (
                        type(delta) in _DELTAS or _admit(_DELTAS, _NOT_DELTAS, type(delta), _DELTA_FIELDS, _REASONING)
                    ) and not delta.tool_calls:
                        content = delta.content
                        extra = delta.__pydantic_extra__
                        if extra and ("reasoning_content" in extra or "reasoning" in extra):
                            reasoning = (extra.get("reasoning_content"), extra.get("reasoning"))
    except (KeyError, AttributeError):  # a field missing: read the chunk field by field
        return _apply_fields(chunk, guard)
    if reasoning is _NONE:
        if content.__class__ is str:  # the common chunk: a text delta
            return guard.text(content) if content else _CONTINUE
        return _apply_fields(chunk, guard)
    return _reasoning_delta(chunk, guard, reasoning, content)


def _reasoning_delta(chunk: Any, guard: StreamGuard, fields: tuple[Any, Any], content: Any) -> Action:
    """The fast path of a common chunk whose delta names a reasoning field: the reasoning
    (``reasoning_content``, else ``reasoning``) or the text, whichever the delta has; both
    are read field by field (reasoning first)."""
    text = _text(fields[0]) or _text(fields[1])
    content = _text(content)
    if text is None:
        return guard.text(content) if content is not None else _CONTINUE
    if content is None:
        return guard.reasoning(text)
    return _apply_fields(chunk, guard)


def _apply_fields(chunk: Any, guard: StreamGuard) -> Action:
    """:func:`apply_chat_chunk` for any chunk shape, field by field."""
    choices = field(chunk, "choices")
    if not isinstance(choices, (list, tuple)):
        return Action.CONTINUE
    for choice in choices:
        index = field(choice, "index")
        if index not in (0, None):
            continue
        delta = field(choice, "delta")
        if delta is not None:
            reasoning = _text(field(delta, "reasoning_content")) or _text(field(delta, "reasoning"))
            if reasoning is not None:
                action = guard.reasoning(reasoning)
                if action.stop:
                    return action
            content = _text(field(delta, "content"))
            if content is not None:
                action = guard.text(content)
                if action.stop:
                    return action
            calls = field(delta, "tool_calls")
            if isinstance(calls, (list, tuple)):
                for call in calls:
                    key = field(call, "index")
                    if isinstance(key, bool) or not isinstance(key, int):
                        continue
                    fn = field(call, "function")
                    # fragments of parallel calls may interleave: a call is complete only at
                    # finish_reason (or the end of the stream), never because another index began
                    action = guard.tool_args(key, field(fn, "arguments"), id=field(call, "id"), name=field(fn, "name"))
                    if action.stop:
                        return action
        finish = _text(field(choice, "finish_reason"))
        if finish is not None:
            guard.note_finish_reason(finish)
            action = guard.close_open_calls()
            if action.stop:
                return action
    return Action.CONTINUE


def guard_stream(
    stream: Any, *, config: StreamConfig | Mapping[str, Any] | None = None, session: Session | None = None
) -> GuardedStream[Any]:
    """Guard a sync Chat Completions stream (``client.chat.completions.create(..., stream=True)``,
    a LiteLLM stream, or any iterable of chunk dicts).

    Parameters
    ----------
    stream : iterable of chunks
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
        Iterates the chunks unchanged until a cut, then stops; ``.outcome``
        (a :class:`~loopguard.stream.StreamOutcome`) after iteration.

    Raises
    ------
    LoopGuardCancelled
        from iteration, past ``max_consecutive_rescues`` with
        ``on_rescue_cap="raise"``.  The upstream's own errors propagate unchanged.
    """
    return GuardedStream(stream, apply_chat_chunk, config=config, session=session)


def aguard_stream(
    stream: Any, *, config: StreamConfig | Mapping[str, Any] | None = None, session: Session | None = None
) -> AsyncGuardedStream[Any]:
    """The ``async for`` form of :func:`guard_stream` (``AsyncOpenAI`` streams; closed with
    ``await stream.close()``)."""
    return AsyncGuardedStream(stream, apply_chat_chunk, config=config, session=session)


@dataclass(frozen=True)
class ResumeRequest:
    """The next request after a rescue (spec §3, resume).

    Attributes
    ----------
    messages : list[dict]
        The caller's messages (copied), then the pruned assistant message
        (when it kept any answer text besides the marker; never the loop
        after the cut), then a short corrective note tagged ``[loopguard]``:
        a new user message after the assistant message, or, when there is no
        assistant message to add (a reasoning loop), appended to the last
        user message so that roles keep alternating (an earlier loopguard
        note there is replaced, not stacked).
    settings : dict
        ``temperature`` / ``reasoning_effort`` from ``retry_temperature`` /
        ``retry_reasoning_effort`` (empty when ``retry_requests`` is 0).
    """

    messages: list[dict[str, Any]]
    settings: dict[str, Any]

    def kwargs(self) -> dict[str, Any]:
        """``{"messages": ..., **settings}`` to merge into ``create(...)`` arguments."""
        return {"messages": self.messages, **self.settings}


def resume_messages(
    messages: Sequence[Mapping[str, Any]],
    outcome: StreamOutcome,
    *,
    config: StreamConfig | Mapping[str, Any] | None = None,
    include_reasoning: bool = False,
) -> ResumeRequest:
    """Build the resume request after a cut (spec §3): never the loop text.

    Parameters
    ----------
    messages : sequence of message dicts
        The request that looped (copied, not modified).
    outcome : StreamOutcome
        The cut stream's outcome.
    config : StreamConfig | Mapping | None
        For ``language`` and the retry settings.
    include_reasoning : bool
        Put the kept (pruned) reasoning on the assistant message as
        ``reasoning_content`` (off by default: several servers reject it in
        requests).

    Completed tool calls of the cut attempt are not replayed (they would need
    their results first); they are in ``outcome.tool_calls``.

    Raises
    ------
    TypeError
        for a non-sequence ``messages`` or a non-outcome.
    """
    if not isinstance(outcome, StreamOutcome):
        raise TypeError(f"outcome must be a StreamOutcome, not {type(outcome).__name__}")
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise TypeError(f"messages must be a sequence of message dicts, not {type(messages).__name__}")
    cfg = StreamConfig.coerce(config)
    out = [copy.copy(dict(m)) if isinstance(m, Mapping) else m for m in messages]
    assistant: dict[str, Any] = {"role": "assistant", "content": outcome.kept_text}
    if include_reasoning and outcome.kept_reasoning:
        assistant["reasoning_content"] = outcome.kept_reasoning
    body = outcome.kept_text
    if outcome.channel == "text" and outcome.marker and body.endswith(outcome.marker):
        body = body[: -len(outcome.marker)]  # the marker alone is no answer
    if body.strip() or len(assistant) > 2:
        out.append(assistant)
    channel = outcome.channel or "reasoning"
    lang = _messages.pick_language(cfg.language, outcome.kept_text or outcome.kept_reasoning)
    note = _messages.render(
        "resume",
        lang,
        channel="reasoning" if channel == "reasoning" else "answer",
        channel_zh="推理" if channel == "reasoning" else "回答",
        count=outcome.removed,
    )
    last = out[-1] if out else None
    if isinstance(last, dict) and last.get("role") == "user":
        # no assistant turn to add: keep roles alternating (strict chat templates reject two user
        # turns) by adding the note to the last user message, replacing an earlier loopguard note
        content = last.get("content")
        if isinstance(content, str):
            head = content.split(_NOTE_SEPARATOR + _messages.SOURCE_TAG, 1)[0]
            last["content"] = (head + _NOTE_SEPARATOR if head else "") + note
        elif isinstance(content, list):
            parts = [
                p
                for p in content
                if not (isinstance(p, dict) and str(p.get("text", "")).startswith(_messages.SOURCE_TAG))
            ]
            last["content"] = [*parts, {"type": "text", "text": note}]
        else:
            out.append({"role": "user", "content": note})
    else:
        out.append({"role": "user", "content": note})
    settings = cfg.retry_settings() if cfg.retry_requests > 0 else {}
    return ResumeRequest(out, settings)


_NOTE_SEPARATOR = "\n\n"


@dataclass(frozen=True)
class RescueResult:
    """What :func:`create_with_rescue` got.

    Attributes
    ----------
    text, reasoning : str
        The final attempt's kept answer text and reasoning (pruned if it was cut).
    tool_calls : tuple
        The final attempt's completed tool calls.
    outcomes : tuple[StreamOutcome, ...]
        Every attempt's outcome, in order.
    rescues : int
        How many times the stream was cut and resumed.
    cancelled : bool
        The last attempt looped past ``max_consecutive_rescues``.
    messages : list[dict]
        The messages of the last request sent.
    """

    text: str
    reasoning: str
    tool_calls: tuple[Any, ...]
    outcomes: tuple[StreamOutcome, ...]
    rescues: int
    cancelled: bool
    messages: list[dict[str, Any]]


def _prepare(kwargs: dict[str, Any], session: Session | None) -> tuple[list[Any], Session]:
    if "messages" not in kwargs:
        raise TypeError("create_with_rescue needs messages=[...]")
    messages = list(kwargs.pop("messages"))
    kwargs["stream"] = True
    return messages, session if session is not None else Session()


def create_with_rescue(
    client: Any,
    *,
    config: StreamConfig | Mapping[str, Any] | None = None,
    session: Session | None = None,
    **kwargs: Any,
) -> RescueResult:
    """``client.chat.completions.create(stream=True, **kwargs)`` under the guard, resuming
    after each cut (cut → prune → resume, spec §3), for any OpenAI-compatible client.

    Each cut closes the HTTP response, builds :func:`resume_messages` and sends
    the next request with the retry settings (for ``retry_requests``
    requests; a request the server refuses with HTTP 400/422 because of them
    is sent once more without them); a normal completion ends it.  Past ``max_consecutive_rescues``
    the result has ``cancelled=True`` (or :class:`LoopGuardCancelled` is raised
    with ``on_rescue_cap="raise"``).

    Raises
    ------
    TypeError
        without ``messages``.  Client errors propagate unchanged.
    """
    cfg = StreamConfig.coerce(config)
    messages, session = _prepare(kwargs, session)
    outcomes: list[StreamOutcome] = []
    while True:
        settings = cfg.retry_settings() if session.take_retry() else {}
        try:
            stream = client.chat.completions.create(messages=messages, **{**kwargs, **settings})
        except Exception as exc:
            if not settings or not _rejected(exc):
                raise
            _log_dropped(settings, exc)  # a server that does not take temperature/reasoning_effort
            stream = client.chat.completions.create(messages=messages, **kwargs)
        with guard_stream(stream, config=cfg, session=session) as guarded:
            for _ in guarded:
                pass
        outcome = guarded.outcome
        outcomes.append(outcome)
        if not outcome.should_resume:
            return _result(outcome, outcomes, messages)
        messages = resume_messages(messages, outcome, config=cfg).messages


async def acreate_with_rescue(
    client: Any,
    *,
    config: StreamConfig | Mapping[str, Any] | None = None,
    session: Session | None = None,
    **kwargs: Any,
) -> RescueResult:
    """The ``AsyncOpenAI`` form of :func:`create_with_rescue`."""
    cfg = StreamConfig.coerce(config)
    messages, session = _prepare(kwargs, session)
    outcomes: list[StreamOutcome] = []
    while True:
        settings = cfg.retry_settings() if session.take_retry() else {}
        try:
            stream = await client.chat.completions.create(messages=messages, **{**kwargs, **settings})
        except Exception as exc:
            if not settings or not _rejected(exc):
                raise
            _log_dropped(settings, exc)
            stream = await client.chat.completions.create(messages=messages, **kwargs)
        async with aguard_stream(stream, config=cfg, session=session) as guarded:
            async for _ in guarded:
                pass
        outcome = guarded.outcome
        outcomes.append(outcome)
        if not outcome.should_resume:
            return _result(outcome, outcomes, messages)
        messages = resume_messages(messages, outcome, config=cfg).messages


def _rejected(exc: BaseException) -> bool:
    """A request refused as invalid (HTTP 400/422): e.g. a model that takes no ``reasoning_effort``."""
    status = getattr(exc, "status_code", None)
    if status is None:
        status = getattr(getattr(exc, "response", None), "status_code", None)
    return status in (400, 422)


def _log_dropped(settings: Mapping[str, Any], exc: BaseException) -> None:
    import logging

    logging.getLogger("loopguard.integrations").warning(
        "the resume request was refused with the retry settings %s (%s); sent again without them",
        sorted(settings),
        type(exc).__name__,
    )


def _result(outcome: StreamOutcome, outcomes: list[StreamOutcome], messages: list[Any]) -> RescueResult:
    return RescueResult(
        text=outcome.kept_text,
        reasoning=outcome.kept_reasoning,
        tool_calls=outcome.tool_calls,
        outcomes=tuple(outcomes),
        rescues=sum(1 for o in outcomes if o.should_resume),
        cancelled=outcome.cancelled,
        messages=messages,
    )
