"""A session's state in a shared store (:class:`loopguard.RedisStore`): load, decide, and write
back with a compare-and-set on the session's version, again on a conflict; without the store
(an error, a timeout) the caller's fallback decides.

The loop itself is one sans-IO plan (:func:`_plan`): it asks for the store's reads and writes
and is told their replies; :func:`apply` answers it with the sync store methods, :func:`aapply`
with their async twins.  A decision that writes starts from the state the store last knew for
the session (``get(cached=True)``: no round trip when this replica decided for it before); a
conflict's reply carries the current state, on which the decision is taken again."""

from __future__ import annotations

import asyncio
import contextlib
import random
import threading
import time
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ..identity import session_key
from ..observe import metrics
from ..store import StoreUnavailable
from . import codec
from .decisions import Decision, logger
from .state import BoundedTable, SessionState, stable_hash

if TYPE_CHECKING:
    from ..store import RedisStore

__all__ = ["aapply", "apply", "backoff", "forget", "unavailable"]

T = TypeVar("T")

#: compare-and-set attempts before a decision is taken without the store (each conflict means
#: another replica wrote this session in between: the load and the decision are done again)
TRIES = 32

UNAVAILABLE = "store_unavailable"

#: a new session's state, and the decision taken on a session's state (which it updates)
Make = Callable[[], SessionState]
Decide = Callable[[SessionState], T]

#: what the plan asks its driver: ``("get", None)`` (the session's state and version, the
#: store's cached one if it has it), ``("load", None)`` (the same, from Redis), ``("put", (state,
#: version))`` (the compare-and-set write) or ``("pause", seconds)``
Request = tuple[str, tuple[bytes, int] | float | None]
#: the store's reply: a get's (state or ``None``, version); a put's ``True`` (written) or, on a
#: conflict, the current (state or ``None``, version); ``None`` when the store is unavailable
Reply = tuple[bytes | None, int] | bool | None


def _plan(
    store: RedisStore, make: Make, fn: Decide[T], fallback: Callable[[], T], write: bool
) -> Generator[Request, Reply, T]:
    """The load/decide/write loop without I/O: it yields its requests, is sent their replies
    (``None`` when the store is unavailable) and returns the result."""
    got = yield ("get", None)
    for attempt in range(TRIES):
        if not isinstance(got, tuple):
            return fallback()
        blob, version = got
        s = make() if blob is None else _decode(blob, make)
        result = fn(s)
        if not write:
            return result
        try:
            blob = codec.dump(s, store.limits)
        except ValueError:  # a state that cannot be made small enough: decided, not stored
            store.gave_up("encode", "a session state too large to store")
            return result
        done = yield ("put", (blob, version))
        if done is True:
            return result
        if attempt and isinstance(done, tuple):  # the first conflict may be a stale cached state
            yield ("pause", _pause(attempt))  # contention: writers in lockstep would starve one,
            done = yield ("load", None)  # and the state that came with the conflict is old now
        got = done  # the current state, or None (unavailable)
    store.gave_up("conflict", f"{TRIES} conflicting writes in a row")
    return fallback()


class _Run(Generic[T]):
    """A :func:`_plan` stepped by a driver: :meth:`send` a reply (``None`` first) and get the next
    request, or ``None`` once the plan has returned (its value then in :attr:`result`)."""

    def __init__(self, plan: Generator[Request, Reply, T]) -> None:
        self._plan = plan
        self.result: T

    def send(self, reply: Reply) -> Request | None:
        try:
            return self._plan.send(reply)
        except StopIteration as stop:
            self.result = stop.value
            return None


def apply(
    store: RedisStore, session: str, make: Make, fn: Decide[T], fallback: Callable[[], T], *, write: bool = True
) -> T:
    """``fn`` run on the session's stored state (``make()`` when there is none), the state
    written back when ``write``; ``fallback()`` when the store cannot be used."""
    run = _Run(_plan(store, make, fn, fallback, write))
    request = run.send(None)
    while request is not None:
        what, arg = request
        reply: Reply = None
        try:
            if isinstance(arg, float):
                time.sleep(arg)
            elif arg is None:
                reply = store.get(session, cached=write and what == "get")
            else:
                reply = _swapped(store.swap(session, *arg))
        except StoreUnavailable:
            pass
        request = run.send(reply)
    return run.result


async def aapply(
    store: RedisStore, session: str, make: Make, fn: Decide[T], fallback: Callable[[], T], *, write: bool = True
) -> T:
    """:func:`apply` with the store's async twins (:meth:`RedisStore.aget`, :meth:`RedisStore.aput`):
    the same loads, decisions, writes, pauses and fallbacks, awaited on the running event loop."""
    run = _Run(_plan(store, make, fn, fallback, write))
    request = run.send(None)
    while request is not None:
        what, arg = request
        reply: Reply = None
        try:
            if isinstance(arg, float):
                await asyncio.sleep(arg)
            elif arg is None:
                reply = await store.aget(session, cached=write and what == "get")
            else:
                reply = _swapped(await store.aswap(session, *arg))
        except StoreUnavailable:
            pass
        request = run.send(reply)
    return run.result


def _swapped(done: tuple[bool, bytes | None, int]) -> Reply:
    """A :meth:`~loopguard.RedisStore.swap` as the plan's reply: ``True``, or the current state."""
    return True if done[0] else (done[1], done[2])


async def backoff(attempt: int) -> None:
    """A random pause after the ``attempt``-th conflict (:func:`_pause`): two tasks of one
    event loop in lockstep would otherwise conflict the same way on every try."""
    await asyncio.sleep(_pause(attempt))


def _pause(attempt: int) -> float:
    """Seconds to pause after the ``attempt``-th conflict in a row: random, up to ``attempt`` ms
    (writers in lockstep, threads or tasks, would otherwise conflict the same way every time)."""
    return random.random() * 0.001 * attempt


def _decode(blob: bytes, make: Make) -> SessionState:
    fresh = make()
    try:
        return codec.load(blob, fresh.keys.limit, stable_hash)
    except ValueError as exc:
        logger.warning("state store: unreadable session state (%s); starting it afresh", exc)
        return fresh


def unavailable(tool: str, closed: bool) -> Decision:
    """The decision without the store: a plain allow (fail open) or a ``store_unavailable`` deny."""
    if not closed:
        metrics.fail_open()
        return Decision("allow", tool=tool, evidence={"store": "unavailable"})
    text = "[loopguard] The loop guard's shared state is unavailable, so this call was not run. Try it again shortly."
    return Decision("deny", UNAVAILABLE, text, UNAVAILABLE, tool, 0, {"store": "unavailable"})


def forget(
    remote: RedisStore | None,
    table: BoundedTable[str, Any],
    lock: threading.Lock | threading.RLock,
    session_id: Any,
    kind: str = "tg",
) -> None:
    """Forget one session's state (``session_id``) or every session's (``None``): in the shared
    store when there is one (its ``kind`` slots under its prefix; nothing happens when the store
    is unavailable), else in this process's ``table`` (under ``lock``).  The ``reset`` of
    :class:`~loopguard.ToolGuard` and :class:`~loopguard.LoopBrake`."""
    key = None if session_id is None else session_key(session_id)
    if remote is not None:
        with contextlib.suppress(StoreUnavailable):
            remote.delete(key, kind)
        return
    with lock:
        table.forget(key)
