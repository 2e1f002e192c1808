"""A session's state in a shared store (:class:`loopguard.RedisStore`): load, decide, and write
back with a compare-and-set on the session's version, again on a conflict; without the store
(an error, a timeout) the caller's fallback decides."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from ..observe import metrics
from ..store import StoreUnavailable
from . import codec
from .decisions import Decision, logger
from .state import SessionState, stable_hash

if TYPE_CHECKING:
    from ..store import RedisStore

__all__ = ["aapply", "apply", "backoff", "unavailable"]

T = TypeVar("T")

#: compare-and-set attempts before a decision is taken without the store (each conflict means
#: another replica wrote this session in between: the load and the decision are done again)
TRIES = 32

UNAVAILABLE = "store_unavailable"


def apply(
    store: RedisStore,
    session: str,
    make: Callable[[], SessionState],
    fn: Callable[[SessionState], T],
    fallback: Callable[[], T],
    *,
    write: bool = True,
) -> T:
    """``fn`` run on the session's stored state (``make()`` when there is none), the state
    written back when ``write``; ``fallback()`` when the store cannot be used."""
    for _ in range(TRIES):
        try:
            blob, version = store.get(session)
        except StoreUnavailable:
            return fallback()
        s = make() if blob is None else _decode(blob, make)
        result = fn(s)
        if not write:
            return result
        try:
            if store.put(session, codec.dump(s, store.limits), version):
                return result
        except StoreUnavailable:
            return fallback()
    logger.warning("state store: %d conflicting writes in a row; deciding without it", TRIES)
    return fallback()


async def aapply(
    store: RedisStore,
    session: str,
    make: Callable[[], SessionState],
    fn: Callable[[SessionState], T],
    fallback: Callable[[], T],
    *,
    write: bool = True,
) -> T:
    """:func:`apply` with the store's async twins (:meth:`RedisStore.aget`, :meth:`RedisStore.aput`):
    the same loads, decisions, writes and fallbacks, awaited on the running event loop, with a
    short random pause (:func:`backoff`) before each retry after a conflict."""
    for attempt in range(TRIES):
        if attempt:
            await backoff(attempt)
        try:
            blob, version = await store.aget(session)
        except StoreUnavailable:
            return fallback()
        s = make() if blob is None else _decode(blob, make)
        result = fn(s)
        if not write:
            return result
        try:
            if await store.aput(session, codec.dump(s, store.limits), version):
                return result
        except StoreUnavailable:
            return fallback()
    logger.warning("state store: %d conflicting writes in a row; deciding without it", TRIES)
    return fallback()


async def backoff(attempt: int) -> None:
    """A random pause after the ``attempt``-th conflict (up to ``attempt`` ms): two tasks of one
    event loop in lockstep would otherwise conflict the same way on every try."""
    await asyncio.sleep(random.random() * 0.001 * attempt)


def _decode(blob: bytes, make: Callable[[], SessionState]) -> SessionState:
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
