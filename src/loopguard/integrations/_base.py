"""The guarded iterators every adapter shares (sync and async; docs/spec.md §3).

An adapter supplies ``apply(chunk, guard) -> Action``: it reads the chunk by
field name (dicts and SDK objects alike, see :func:`field`) and reports its
events to the :class:`~loopguard.stream.StreamGuard`.  The iterators here
pass chunks through unchanged, stop where the guard says, close the
upstream, and keep the outcome.  An upstream error is recorded and re-raised
unchanged; the guard's own errors never reach the host.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import AsyncIterator, Callable, Generator, Iterator, Mapping
from typing import Any, Generic, TypeVar

from ..session import Session
from ..stream import Action, LoopGuardCancelled, StreamConfig, StreamGuard, StreamOutcome

__all__ = ["field", "is_mapping", "declares", "GuardedStream", "AsyncGuardedStream", "Apply"]

logger = logging.getLogger("loopguard.integrations")

T = TypeVar("T")
_MISSING = object()
_CONTINUE = Action.CONTINUE
_STOP_BEFORE = Action.STOP_BEFORE
_STOP_AFTER = Action.STOP_AFTER
Apply = Callable[[Any, StreamGuard], Action]


def field(obj: Any, name: str) -> Any:
    """``obj[name]`` for a mapping, else ``getattr(obj, name)``, else the
    pydantic ``model_extra`` entry (fields an SDK model does not declare, such
    as ``reasoning_content``); ``None`` when absent or unreadable."""
    if obj is None:
        return None
    if type(obj) is dict:  # the common case, without the ABC check
        return obj.get(name)
    try:
        if is_mapping(obj):
            return obj.get(name)
        extra = getattr(obj, "__pydantic_extra__", _MISSING)
        if extra is not _MISSING:  # a pydantic v2 model (the openai/anthropic SDK types)
            if isinstance(extra, dict) and name in extra:
                return extra[name]
            declared = getattr(type(obj), "__pydantic_fields__", None)
            if isinstance(declared, dict) and name not in declared:
                return None  # undeclared and not an extra: skip the slow missing-attribute path
        value = getattr(obj, name, None)
        if value is None:
            extra = getattr(obj, "model_extra", None)
            if isinstance(extra, Mapping):
                value = extra.get(name)
        return value
    except Exception:
        return None


_MAPPING_TYPES: dict[type, bool] = {}


def is_mapping(obj: Any) -> bool:
    """``isinstance(obj, Mapping)``, remembered per class (the ABC check costs ~0.3 µs; chunk
    classes are few).  Raises what the ABC check raises."""
    tp = type(obj)
    known = _MAPPING_TYPES.get(tp)
    if known is None:
        known = isinstance(obj, Mapping)
        if len(_MAPPING_TYPES) >= 1024:  # classes made on the fly: keep the table bounded
            _MAPPING_TYPES.clear()
        _MAPPING_TYPES[tp] = known
    return known


def declares(tp: type, present: tuple[str, ...], absent: tuple[str, ...] = ()) -> bool:
    """Whether ``tp`` is a pydantic v2 model class declaring every field of ``present`` and
    none of ``absent``: then :func:`field` of a declared name is the plain attribute, and of an
    undeclared one the ``__pydantic_extra__`` entry (adapters' fast paths read them so)."""
    fields = getattr(tp, "__pydantic_fields__", None)
    if not isinstance(fields, dict) or not hasattr(tp, "__pydantic_extra__"):
        return False
    if isinstance(tp, type) and issubclass(tp, Mapping):
        return False
    return all(n in fields for n in present) and not any(n in fields for n in absent)


def _unreadable() -> Action:
    """An adapter failed on a chunk (call from its ``except``): log it; the chunk passes."""
    logger.error("loopguard could not read a stream chunk; passing it through", exc_info=True)
    return Action.CONTINUE


def _close_sync(stream: Any) -> None:
    close = getattr(stream, "close", None)
    if callable(close):
        try:
            result = close()
            if inspect.isawaitable(result):  # an async close on a sync iterator: cannot await here
                getattr(result, "close", lambda: None)()
        except Exception:
            logger.info("closing the upstream stream failed", exc_info=True)


async def _close_async(stream: Any) -> None:
    for name in ("aclose", "close"):
        close = getattr(stream, name, None)
        if callable(close):
            try:
                result = close()
                if inspect.isawaitable(result):
                    await result
            except Exception:
                logger.info("closing the upstream stream failed", exc_info=True)
            return


class _Guarded(Generic[T]):
    def __init__(
        self, stream: Any, apply: Apply, *, config: StreamConfig | Mapping[str, Any] | None, session: Session | None
    ) -> None:
        self._stream = stream
        self._apply = apply
        self.guard = StreamGuard(session, config)
        self._iterator: Any = None
        self._done = False
        self._stop_after = False

    @property
    def outcome(self) -> StreamOutcome:
        """The stream's :class:`~loopguard.stream.StreamOutcome` (final once iteration ended)."""
        return self.guard.outcome

    @property
    def session(self) -> Session:
        """The session the stream belongs to."""
        return self.guard.session

    def _finish(self) -> StreamOutcome:
        self._done = True
        outcome = self.guard.finish()
        if outcome.cancelled and self.guard.config.on_rescue_cap == "raise":
            raise LoopGuardCancelled(outcome)
        return outcome

    def _fail(self, error: BaseException) -> None:
        self._done = True
        self.guard.fail(error)


class GuardedStream(_Guarded[T], Iterator[T]):
    """A sync iterator over the upstream's chunks, unchanged, until the guard stops it.

    Attributes
    ----------
    outcome : StreamOutcome
        After iteration: detection, cut, kept texts, completed tool calls, …
    guard : StreamGuard
        The guard (its ``session`` spans attempts).

    Use as an iterator or a context manager (``with guard_stream(...) as s``);
    :meth:`close` closes the upstream and finishes the outcome.
    """

    def __init__(
        self, stream: Any, apply: Apply, *, config: StreamConfig | Mapping[str, Any] | None, session: Session | None
    ) -> None:
        super().__init__(stream, apply, config=config, session=session)
        self._chunks: Generator[T, None, None] = self._run()

    def __iter__(self) -> Iterator[T]:
        """The chunks (a generator over the same state as :meth:`__next__`: a ``for`` loop
        resumes it directly, without a method call per chunk)."""
        return self._chunks

    def __next__(self) -> T:
        return next(self._chunks)

    def _run(self) -> Generator[T, None, None]:
        """Pass the upstream's chunks on until the guard stops it (``STOP_AFTER``: the chunk
        is passed on first); the end, an upstream error and the guard's stop finish the
        outcome.  Closed by :meth:`close`.  An exception thrown into the iteration
        (``generator.throw``) ends it as an upstream error does."""
        if self._done:
            return
        it = iter(self._stream)
        apply, guard = self._apply, self.guard
        chunk: Any = None
        try:
            for chunk in it:  # the upstream's errors leave through the handler below
                try:
                    action = apply(chunk, guard)
                except Exception:
                    action = _unreadable()
                if action is _CONTINUE:
                    yield chunk
                elif action is _STOP_BEFORE or action is _STOP_AFTER:
                    break
                else:
                    yield chunk
            else:
                action = None
        except GeneratorExit:
            raise
        except BaseException as exc:
            self._fail(exc)
            raise  # the host's error, unchanged
        if action is None:
            self._finish()
        elif action is _STOP_BEFORE:
            self._stop()
        else:
            self._stop_after = True
            yield chunk
            self._end()  # the chunk that closed a deferred cut was passed on: stop now

    def _end(self) -> None:
        if not self._done:  # the chunk that closed a deferred cut was passed on: stop now
            self._stop()

    def _stop(self) -> None:
        _close_sync(self._stream)
        self._finish()

    def close(self) -> None:
        """Close the upstream and finish the outcome (idempotent); the iteration ends."""
        try:
            self._chunks.close()
        except ValueError:  # closed from inside the iteration itself: it ends at its next step
            logger.info("guarded stream closed while it was running")
        if not self._done:
            _close_sync(self._stream)
            self._finish()

    def __enter__(self) -> GuardedStream[T]:
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        try:
            self.close()
        except LoopGuardCancelled:
            if exc_type is None:
                raise
            logger.info("rescue cap reached while the host's own exception propagates; not replacing it")


class AsyncGuardedStream(_Guarded[T], AsyncIterator[T]):
    """The ``async for`` twin of :class:`GuardedStream` (closes with ``await stream.close()``).

    Raises ``TypeError`` at construction for an upstream that is not async
    iterable (use the sync ``guard_stream`` for those).
    """

    def __init__(
        self, stream: Any, apply: Apply, *, config: StreamConfig | Mapping[str, Any] | None, session: Session | None
    ) -> None:
        if not hasattr(stream, "__aiter__"):
            raise TypeError(
                f"an async stream needs an async iterable upstream, not {type(stream).__name__} "
                "(use the sync guard_stream for that)"
            )
        super().__init__(stream, apply, config=config, session=session)

    def __aiter__(self) -> AsyncGuardedStream[T]:
        return self

    async def __anext__(self) -> T:
        if self._done:
            raise StopAsyncIteration
        if self._stop_after:
            await self._stop()
            raise StopAsyncIteration
        try:
            it = self._iterator
            if it is None:
                it = self._iterator = self._stream.__aiter__()
            chunk: T = await it.__anext__()
        except StopAsyncIteration:
            await self._afinish()
            raise
        except BaseException as exc:
            self._fail(exc)
            raise
        try:
            action = self._apply(chunk, self.guard)
        except Exception:
            action = _unreadable()
        if action is _CONTINUE:
            return chunk
        if action is Action.STOP_BEFORE:
            await self._stop()
            raise StopAsyncIteration
        if action is Action.STOP_AFTER:
            self._stop_after = True
        return chunk

    async def _stop(self) -> None:
        await _close_async(self._stream)
        await self._afinish()

    async def _afinish(self) -> None:
        """Finish the outcome; in a worker thread when the session's state is in a shared store
        (:attr:`ToolGuard.shared <loopguard.ToolGuard.shared>`): the end of the attempt asks Redis
        (the replay check, the rescue count), which must not block the event loop."""
        if self.guard.session.guard.shared:
            await asyncio.to_thread(self._finish)
        else:
            self._finish()

    async def close(self) -> None:
        """Close the upstream and finish the outcome (idempotent)."""
        if not self._done:
            await _close_async(self._stream)
            await self._afinish()

    async def __aenter__(self) -> AsyncGuardedStream[T]:
        return self

    async def __aexit__(self, exc_type: object, *exc: object) -> None:
        try:
            await self.close()
        except LoopGuardCancelled:
            if exc_type is None:
                raise
            logger.info("rescue cap reached while the host's own exception propagates; not replacing it")
