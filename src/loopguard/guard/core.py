"""The :class:`ToolGuard`: sessions, locking and the two seams (``before_call``, ``after_call``);
the rules are in their own modules and run in order by :mod:`loopguard.guard.ladder`."""

from __future__ import annotations

import asyncio
import hashlib
import threading
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, TypeVar

from ..identity import session_key
from ..observe import events
from ..observe import log as obs_log
from ..store import MemoryStore, RedisStore
from ..terminal import shown_name
from . import ladder, shared, strikes, timers
from .config import ToolGuardConfig
from .context import Call, ShellFacts, Tools, parse_args
from .decisions import Decision, Intervention, logger
from .repeat import attempt_signature
from .state import BoundedTable, SessionState, stable_hash

__all__ = ["ToolGuard"]

T = TypeVar("T")


def _check_tool(tool: Any) -> str:
    if not isinstance(tool, str):
        raise TypeError(f"tool must be a non-empty str, not {type(tool).__name__}")
    if not tool:
        raise TypeError("tool must be a non-empty str, got ''")
    return tool


def _check_call_id(call_id: Any) -> None:
    if call_id is not None:
        try:
            hash(call_id)
        except TypeError:
            raise TypeError(f"call_id must be hashable (a str or int), not {type(call_id).__name__}") from None


#: call ids longer than this (code points) are kept as a digest: the state, shared or not, stays
#: small whatever id a client sends
CALL_ID_CHARS = 128


def call_id_key(call_id: Hashable) -> Hashable:
    """How a session keeps a host's call id: a ``str`` of at most :data:`CALL_ID_CHARS` code
    points or an ``int`` within 64 bits as it is, a longer one as ``"sha256:"`` + its hex digest."""
    if isinstance(call_id, str):
        if len(call_id) <= CALL_ID_CHARS:
            return call_id
        return "sha256:" + hashlib.sha256(call_id.encode("utf-8", "surrogatepass")).hexdigest()
    if isinstance(call_id, int) and not isinstance(call_id, bool) and not -(1 << 63) <= call_id < 1 << 63:
        return "sha256:int:" + hashlib.sha256(hex(call_id).encode()).hexdigest()
    return call_id


class ToolGuard:
    """Outcome-aware tool-loop guard for many sessions (spec §5.2; the rules: ``docs/rules.md``).

    Parameters
    ----------
    config : ToolGuardConfig | Mapping | None
        The configuration (``None`` = defaults; a mapping goes through
        :meth:`ToolGuardConfig.from_mapping`).
    clock : callable returning seconds, optional
        Time source for the ``stall`` and ``strikes`` rules; inject a fake clock in tests.
        Default ``time.monotonic``, or ``time.time`` with a shared store (:class:`~loopguard.RedisStore`):
        the timestamps in the store are read by every replica, whose monotonic clocks do not
        agree; a clock given with a shared store must agree across replicas too.
    store : MemoryStore | RedisStore | None
        Where the per-session state is kept: this process (``None`` or :class:`~loopguard.MemoryStore`,
        the default) or Redis, shared by replicas (:class:`~loopguard.RedisStore`: each call loads
        the session, decides and writes it back with a compare-and-set; see :mod:`loopguard.store`).
    on_store_error : ``"open"`` | ``"closed"``
        Without the shared store (Redis down or slow): ``"open"`` (default) allows every call
        and observes nothing; ``"closed"`` denies every call (``rule="store_unavailable"``).
        Either way no store exception reaches the caller.

    Thread-safe: one lock guards all sessions.  Memory: at most
    ``max_sessions`` sessions (least recently used evicted), each with at
    most ``max_keys_per_session`` call keys, 4096 seen (key, result) pairs,
    the line hashes of ``overlap_window`` results (at most 1 MiB:
    :data:`~loopguard.guard.state.DRIFT_BYTES`), 256 call ids, the last calls of
    64 tools and a few dozen history entries.  Results are kept as hashes, but for
    the start of each key's last result (``result_summary_chars`` x 2 + 256 code
    points, for the "Previous result" summary of a denial); a call's arguments are
    held from its ``before_call`` to its ``after_call`` (the session's next call at
    the latest), as hashes after.

    Raises
    ------
    ConfigError
        for an invalid configuration.
    TypeError
        for a ``config`` of another type, a ``clock`` that is not callable or does
        not return an int or float, or a ``store`` that is not a store.
    ValueError
        for an ``on_store_error`` other than ``"open"`` or ``"closed"``.

    Examples
    --------
    >>> guard = ToolGuard()
    >>> for _ in range(2):
    ...     guard.before_call("s1", "grep", {"pattern": "x", "path": "src"}).action
    ...     [i.kind for i in guard.after_call("s1", "grep", {"pattern": "x", "path": "src"}, "a.py:3: x")]
    'allow'
    []
    'allow'
    ['repeat']
    >>> guard.before_call("s1", "grep", {"pattern": "x", "path": "src"}).action
    'deny'
    """

    def __init__(
        self,
        config: ToolGuardConfig | Mapping[str, Any] | None = None,
        *,
        clock: Callable[[], float] | None = None,
        store: MemoryStore | RedisStore | None = None,
        on_store_error: str = "open",
    ) -> None:
        config = ToolGuardConfig.coerce(config)
        if clock is None:
            clock = time.time if getattr(store, "shared", False) else time.monotonic
        if not callable(clock):
            raise TypeError("clock must be a callable returning seconds")
        now = clock()
        if isinstance(now, bool) or not isinstance(now, (int, float)):
            raise TypeError(f"clock must return seconds as an int or float, not {type(now).__name__}")
        self.config: ToolGuardConfig = config
        self._clock = clock
        self._sessions: BoundedTable[str, SessionState] = BoundedTable(config.max_sessions)
        self._lock = threading.RLock()
        self._tools = Tools(config)
        self._remote = _remote(store, on_store_error)
        self._closed = on_store_error == "closed"

    def __repr__(self) -> str:
        return f"ToolGuard(sessions={len(self._sessions)})"

    def __len__(self) -> int:
        """The number of sessions with state in this process (0 with a shared store)."""
        return len(self._sessions)

    def _session(self, session_id: Any) -> SessionState:
        return self._sessions.use(
            session_key(session_id), lambda: SessionState(self._clock(), self.config.max_keys_per_session)
        )

    def _held(self, session_id: Any) -> SessionState | None:
        """The session's state if held (its place in the LRU order unchanged)."""
        return self._sessions.get(session_key(session_id))

    def _with(self, session_id: Any, fn: Callable[[SessionState], T], fallback: T, *, write: bool = True) -> T:
        """``fn`` on the session's state: held here, or loaded from the shared store and written
        back (``write``); ``fallback`` when the shared store cannot be used."""
        if self._remote is None:
            with self._lock:
                return fn(self._session(session_id))
        return shared.apply(self._remote, session_key(session_id), self._fresh, fn, lambda: fallback, write=write)

    async def _awith(self, session_id: Any, fn: Callable[[SessionState], T], fallback: T, *, write: bool = True) -> T:
        """:meth:`_with` awaited: ``redis.asyncio`` with a shared store, the same call in memory."""
        if self._remote is None:
            return self._with(session_id, fn, fallback, write=write)
        key = session_key(session_id)
        return await shared.aapply(self._remote, key, self._fresh, fn, lambda: fallback, write=write)

    def _fresh(self) -> SessionState:
        """A new session's state in the shared store (stable hashes, its ``keys`` limit)."""
        assert self._remote is not None
        keys = min(self.config.max_keys_per_session, self._remote.limits.keys)
        return SessionState(self._clock(), keys, stable_hash)

    def _call(self, s: SessionState, tool: str, args: Any, key: str, facts: ShellFacts | None, index: int = 0) -> Call:
        return Call(self.config, s, tool, args, key, facts, self._clock, lambda kind: self._strike(s, kind), index)

    def _strike(self, s: SessionState, kind: str) -> Intervention | None:
        return strikes.strike(self.config, s, kind, self._clock)

    def reset(self, session_id: Any = None) -> None:
        """Forget one session's state (``session_id`` given) or every session's (with a shared
        store: every session under its prefix; nothing happens when the store is unavailable)."""
        shared.forget(self._remote, self._sessions, self._lock, session_id)

    def dispose(self) -> None:
        """Forget all state held in this process; the guard stays usable.  A shared store's
        sessions are left to the other replicas (:meth:`reset` with no session id deletes them)."""
        if self._remote is None:
            self.reset()

    # ---------------------------------------------------------- before_call

    def before_call(self, session_id: Any, tool: str, args: Any, *, call_id: Hashable | None = None) -> Decision:
        """Decide about a tool call before it runs (the ``tools/pre-execute`` seam of seed 001).

        Parameters
        ----------
        session_id : Any
            The session (``None`` → ``"default"``; see :func:`loopguard.session_key`).
        tool : str
            The tool name (non-empty).
        args : Any
            The arguments: a JSON-like value or a JSON string (parsed first).
        call_id : hashable, optional
            The host's call id: a request seen twice with the same id (two
            wrappers) is decided once; the second sight returns the first
            decision.

        Returns
        -------
        Decision
            ``allow`` | ``notice`` | ``deny`` | ``cancel`` with kind, rule, reason, evidence.

        Raises
        ------
        TypeError
            when ``tool`` is not a non-empty ``str`` or ``call_id`` is not hashable
            (nothing is recorded).
        """
        started = time.perf_counter() if obs_log.ON else 0.0
        tool, parsed, key, facts = self._identity(tool, args, call_id)
        if self._remote is not None:
            decision, again = shared.apply(
                self._remote,
                session_key(session_id),
                self._fresh,
                lambda s: self._before(s, tool, args, parsed, key, facts, call_id),
                lambda: (shared.unavailable(tool, self._closed), False),
            )
        else:
            with self._lock:
                decision, again = self._before(self._session(session_id), tool, args, parsed, key, facts, call_id)
        return _logged(session_id, decision, again, started)

    async def abefore_call(self, session_id: Any, tool: str, args: Any, *, call_id: Hashable | None = None) -> Decision:
        """:meth:`before_call` for async hosts: with a :class:`~loopguard.RedisStore` the session is
        loaded and written with ``redis.asyncio`` (the event loop is never blocked on Redis); with
        the in-memory store it is :meth:`before_call`.  Same parameters, decision, fail-open or
        fail-closed behaviour and errors."""
        if self._remote is None:
            return self.before_call(session_id, tool, args, call_id=call_id)
        started = time.perf_counter() if obs_log.ON else 0.0
        tool, parsed, key, facts = self._identity(tool, args, call_id)
        decision, again = await shared.aapply(
            self._remote,
            session_key(session_id),
            self._fresh,
            lambda s: self._before(s, tool, args, parsed, key, facts, call_id),
            lambda: (shared.unavailable(tool, self._closed), False),
        )
        return _logged(session_id, decision, again, started)

    def _identity(self, tool: Any, args: Any, call_id: Any) -> tuple[str, Any, str, ShellFacts | None]:
        """The checked tool name, the parsed arguments, the call key and the shell facts."""
        tool = _check_tool(tool)
        _check_call_id(call_id)
        parsed = parse_args(args)
        key, facts = self._tools.identity(tool, parsed)
        return tool, parsed, key, facts

    def _before(
        self, s: SessionState, tool: str, args: Any, parsed: Any, key: str, facts: ShellFacts | None, call_id: Any
    ) -> tuple[Decision, bool]:
        """The decision, and whether it is the one already given to this ``call_id``."""
        if call_id is not None:
            call_id = call_id_key(call_id)
            seen = s.call_ids.get(call_id)
            if seen is not None and seen[0] == key and seen[2] is not None:
                return seen[2], True
        s.last_call = (tool, args, parsed, key, facts)
        decision = ladder.before(self._call(s, tool, parsed, key, facts), self._tools)
        if decision.allowed:
            s.blocked.discard(key)
        else:
            if len(s.blocked) >= self.config.max_keys_per_session:
                s.blocked.clear()
            s.blocked.add(key)
        if call_id is not None:
            s.call_ids.add(call_id, (key, decision.call_index, decision))
        return decision, False

    # ----------------------------------------------------------- after_call

    def after_call(
        self,
        session_id: Any,
        tool: str,
        args: Any,
        result: Any,
        *,
        error: bool = False,
        call_id: Hashable | None = None,
    ) -> list[Intervention]:
        """Observe a tool result (the ``tools/post-execute`` seam of seed 001).

        Parameters
        ----------
        session_id, tool, args, call_id
            As for :meth:`before_call` (a ``call_id`` whose result was
            already observed is ignored: ``[]``).
        result : str | bytes | JSON-like
            The tool's result; hashed canonically after normalisation
            (:mod:`loopguard.results`).
        error : bool
            The tool failed (part of the result hash; starts an ``error_avoidance`` watch).

        Returns
        -------
        list[Intervention]
            Reminders (``repeat``, ``drift``, ``error_avoidance``, ``cycle``), the
            progress anchor (``no_progress``) and the ``circuit_breaker``
            (``action="cancel"``), in that order.  A result the host reports for a
            request that was denied or cancelled is ignored (``[]``).

        Raises
        ------
        TypeError
            when ``tool`` is not a non-empty ``str`` or ``error`` is not a bool.
        """
        started = time.perf_counter() if obs_log.ON else 0.0
        tool = _check_result(tool, call_id, error)
        out: list[Intervention]
        if self._remote is not None:
            none: list[Intervention] = []
            out = self._with(session_id, lambda s: self._after(s, tool, args, result, error, call_id), none)
        else:
            with self._lock:
                out = self._after(self._session(session_id), tool, args, result, error, call_id)
        if out or obs_log.ON:
            events.tool_interventions(session_id, out, "tool_result", started)
        return out

    async def aafter_call(
        self,
        session_id: Any,
        tool: str,
        args: Any,
        result: Any,
        *,
        error: bool = False,
        call_id: Hashable | None = None,
    ) -> list[Intervention]:
        """:meth:`after_call` for async hosts (``redis.asyncio`` with a
        :class:`~loopguard.RedisStore`, :meth:`after_call` itself otherwise).  Same parameters,
        returns and errors; ``[]`` when the store is unavailable."""
        if self._remote is None:
            return self.after_call(session_id, tool, args, result, error=error, call_id=call_id)
        started = time.perf_counter() if obs_log.ON else 0.0
        tool = _check_result(tool, call_id, error)
        none: list[Intervention] = []
        out = await shared.aapply(
            self._remote,
            session_key(session_id),
            self._fresh,
            lambda s: self._after(s, tool, args, result, error, call_id),
            lambda: none,
        )
        if out or obs_log.ON:
            events.tool_interventions(session_id, out, "tool_result", started)
        return out

    def _after(
        self, s: SessionState, tool: str, args: Any, result: Any, error: bool, call_id: Any
    ) -> list[Intervention]:
        last = s.last_call
        if last is not None and last[1] is args and last[0] == tool:
            parsed, key, facts = last[2], last[3], last[4]  # the object before_call just hashed
        else:
            parsed = parse_args(args)
            key, facts = self._tools.identity(tool, parsed)
        s.last_call = None
        if key in s.blocked:
            # the host reports the result of a request that was denied or cancelled (the seed
            # routes denials through the result pipeline): the tool did not run, nothing to learn
            logger.debug("after_call of a denied %s request ignored", shown_name(tool))
            return []
        index = _result_index(s, key, call_id)
        if index is None:
            return []
        return ladder.after(self._call(s, tool, parsed, key, facts, index), self._tools, result, error)

    # ------------------------------------------------------- replay mode

    def observe_attempt(
        self, session_id: Any, *, reasoning: str = "", text: str = "", tool_calls: Sequence[tuple[str, Any]] = ()
    ) -> bool:
        """Record one model attempt's stream signature (replay mode of the ``repeat`` rule;
        seed 001 ``agent/assistant-stream``).

        Parameters
        ----------
        reasoning, text : str
            The attempt's reasoning and answer text.
        tool_calls : sequence of (tool, args)
            The calls the attempt made.

        Returns
        -------
        bool
            True when replay mode is on: this attempt's signature (at least
            ``min_replay_chars`` code points) equals the previous attempt's.
            Replay mode lowers the ``repeat`` limit to 1 until an attempt differs.

        Raises
        ------
        TypeError
            when ``reasoning`` or ``text`` is not a ``str``.
        """
        signature, size = _signature(reasoning, text, tool_calls)
        return self._with(session_id, lambda s: self._attempt(s, signature, size), False)

    async def aobserve_attempt(
        self, session_id: Any, *, reasoning: str = "", text: str = "", tool_calls: Sequence[tuple[str, Any]] = ()
    ) -> bool:
        """:meth:`observe_attempt` awaited (``redis.asyncio`` with a :class:`~loopguard.RedisStore`,
        the sync method in memory): same parameters, returns and errors."""
        signature, size = _signature(reasoning, text, tool_calls)
        return await self._awith(session_id, lambda s: self._attempt(s, signature, size), False)

    def _attempt(self, s: SessionState, signature: str, size: int) -> bool:
        if not self.config.replay_detection:
            s.replay = False
            return False
        long_enough = size >= self.config.min_replay_chars
        s.replay = long_enough and signature == s.signature
        s.signature = signature if long_enough else None
        if s.replay:
            logger.info("replay mode: two identical attempts in a row")
        return s.replay

    def replay_mode(self, session_id: Any = None) -> bool:
        """Whether the session is in replay mode (the ``repeat`` limit is 1)."""
        if self._remote is not None:
            return self._with(session_id, lambda s: s.replay, False, write=False)
        with self._lock:
            s = self._held(session_id)
            return bool(s and s.replay)

    # ------------------------------------------------------ stall, strikes

    def note_progress(self, session_id: Any = None) -> None:
        """A progress event (step start/end, model output, a tool call or result: the ``stall`` rule).

        With a :class:`~loopguard.RedisStore`, called on a thread that runs an event loop (a
        :class:`~loopguard.Session` fed by an async stream adapter), the note is written by a task
        of that loop (:meth:`anote_progress`) instead of blocking the loop on Redis: no decision
        waits for it (:meth:`RedisStore.aclose <loopguard.RedisStore.aclose>` does), and a note
        that lands late never moves the session's progress back."""
        now = self._clock()
        if self._remote is not None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                loop = None
            if loop is not None:
                task = loop.create_task(self._anote(session_id, now))
                task.add_done_callback(_noted)
                self._remote.track(task)  # held until done (a task only weakly held may vanish); aclose waits
                return
        self._with(session_id, lambda s: timers.progressed(s, now), None)

    async def anote_progress(self, session_id: Any = None) -> None:
        """:meth:`note_progress` awaited on the running event loop (``redis.asyncio`` with a
        :class:`~loopguard.RedisStore`; the in-memory note otherwise)."""
        await self._anote(session_id, self._clock())

    async def _anote(self, session_id: Any, now: float) -> None:
        await self._awith(session_id, lambda s: timers.progressed_at(s, now), None)

    def note_change(self, session_id: Any = None) -> None:
        """The world changed where the guard cannot see it (the user acted, a file changed
        outside the tools, another agent wrote): every call's ``repeat`` chain starts again, as
        after a call that changes the world (``docs/tools.md``, State changes).  Tool state
        is kept (unlike :meth:`reset`)."""
        self._with(session_id, _changed, None)

    def check_stall(self, session_id: Any = None) -> Intervention | None:
        """The ``stall`` rule: an intervention (``kind="stalled"``, ``rule="stall"``) when no
        progress event came for ``stall_minutes`` (``stall_minutes_with_tool`` while a tool
        call is pending), once per stall; it is recorded as a ``strikes`` strike and has
        ``action="cancel"`` when the strikes reach ``strikes_before_cancel``.
        ``None`` otherwise."""
        found = self._with(session_id, lambda s: timers.check_stall(self.config, s, self._clock), None)
        return _recorded(session_id, found, "stall")

    async def acheck_stall(self, session_id: Any = None) -> Intervention | None:
        """:meth:`check_stall` awaited (``redis.asyncio`` with a :class:`~loopguard.RedisStore`,
        the sync method in memory): same returns."""
        found = await self._awith(session_id, lambda s: timers.check_stall(self.config, s, self._clock), None)
        return _recorded(session_id, found, "stall")

    def strike(self, session_id: Any, kind: str) -> Intervention | None:
        """The ``strikes`` rule: record a strong signal (``"text_loop"``, ``"stalled"``,
        ``"repeat_streak"``); returns a cancel intervention when
        ``strikes_before_cancel`` strikes fall within ``strike_window_minutes``
        (the strikes are then cleared), else ``None``.

        Raises
        ------
        TypeError
            when ``kind`` is not a non-empty ``str``.
        """
        return _recorded(session_id, self.strike_unlogged(session_id, kind), "strike")

    async def astrike(self, session_id: Any, kind: str) -> Intervention | None:
        """:meth:`strike` awaited (``redis.asyncio`` with a :class:`~loopguard.RedisStore`, the
        sync method in memory): same returns and errors."""
        _check_kind(kind)
        found = await self._awith(session_id, lambda s: self._strike(s, kind), None)
        return _recorded(session_id, found, "strike")

    def strike_unlogged(self, session_id: Any, kind: str) -> Intervention | None:
        """:meth:`strike` without its decision record: for a caller that records the decision
        the strike is part of (a :class:`~loopguard.Session`'s text-loop stop).  Same returns
        and errors."""
        _check_kind(kind)
        return self._with(session_id, lambda s: self._strike(s, kind), None)

    def strikes(self, session_id: Any = None) -> int:
        """Strikes currently inside the window."""
        if self._remote is not None:
            return self._with(session_id, self._in_window, 0, write=False)
        with self._lock:
            s = self._held(session_id)
            if s is None:
                return 0
            return self._in_window(s)

    def _in_window(self, s: SessionState) -> int:
        strikes.expire(self.config, s, self._clock)
        return len(s.strikes)

    def cancel_pending(self, session_id: Any = None) -> None:
        """The host cancelled the turn: calls still pending will never report a
        result, so the ``stall`` rule goes back to ``stall_minutes``."""
        if self._remote is not None:
            self._with(session_id, _not_pending, None)
            return
        with self._lock:
            s = self._held(session_id)
            if s is not None:
                s.pending = 0
                s.last_call = None

    @property
    def shared(self) -> bool:
        """Whether the sessions' state is in a shared store (a :class:`~loopguard.RedisStore`:
        each decision asks it), not in this process."""
        return self._remote is not None

    @property
    def clock(self) -> Callable[[], float]:
        """The clock this guard reads (seconds, monotonic by default; the ``clock=`` argument).

        Read-only: a :class:`~loopguard.Session` reads it so its own timers agree with the guard's.
        """
        return self._clock

    def pending_tools(self, session_id: Any = None) -> int:
        """Tool calls allowed by :meth:`before_call` whose result has not been seen."""
        if self._remote is not None:
            return self._with(session_id, lambda s: s.pending, 0, write=False)
        with self._lock:
            s = self._held(session_id)
            return s.pending if s else 0


def _check_result(tool: Any, call_id: Any, error: Any) -> str:
    """The checked tool name of an ``after_call`` (``call_id`` and ``error`` checked too)."""
    name = _check_tool(tool)
    _check_call_id(call_id)
    if not isinstance(error, bool):
        raise TypeError(f"error must be a bool, not {type(error).__name__}")
    return name


def _logged(session_id: Any, decision: Decision, again: bool, started: float) -> Decision:
    """The decision, recorded once (not when it is the one already given to this call id; an
    allow only when the log asks for allows), after the state was written."""
    if not again and (decision.action != "allow" or obs_log.EAGER):
        events.tool_decision(session_id, decision, started)
    return decision


def _check_kind(kind: Any) -> None:
    if not isinstance(kind, str) or not kind:
        raise TypeError("kind must be a non-empty str")


def _signature(reasoning: Any, text: Any, tool_calls: Sequence[tuple[str, Any]]) -> tuple[str, int]:
    """An attempt's signature and size (:func:`~loopguard.guard.repeat.attempt_signature`), its texts checked."""
    if not isinstance(reasoning, str) or not isinstance(text, str):
        raise TypeError("reasoning and text must be str")
    return attempt_signature(reasoning, text, tool_calls)


def _recorded(session_id: Any, found: Intervention | None, seam: str) -> Intervention | None:
    """``found``, recorded in the decision log when there is one."""
    if found is not None:
        events.tool_interventions(session_id, (found,), seam)
    return found


def _noted(task: asyncio.Task[None]) -> None:
    """A progress note's task is done: an unexpected error is logged (its type only), never raised."""
    if not task.cancelled() and task.exception() is not None:
        logger.warning("progress note not written: %s", type(task.exception()).__name__)


def _changed(s: SessionState) -> None:
    s.epoch += 1
    s.changes += 1
    s.new_changes += 1


def _not_pending(s: SessionState) -> None:
    s.pending = 0
    s.last_call = None


def _remote(store: Any, on_store_error: Any) -> RedisStore | None:
    """The shared store (``None`` for the in-process default), the arguments checked."""
    if on_store_error not in ("open", "closed"):
        raise ValueError(f"on_store_error must be 'open' or 'closed', not {on_store_error!r}")
    if store is None or isinstance(store, MemoryStore):
        return None
    if not isinstance(store, RedisStore):
        raise TypeError(f"store must be a MemoryStore or a RedisStore, not {type(store).__name__}")
    return store


def _result_index(s: SessionState, key: str, call_id: Hashable | None) -> int | None:
    """The call index a result belongs to (the last request's, or its call id's), ``None``
    for a call id whose result was already observed."""
    index = s.calls - 1
    if call_id is not None:
        call_id = call_id_key(call_id)
        seen = s.call_ids.get(call_id)
        if seen is not None and seen[0] == key and seen[2] is None:
            return None
        if seen is not None and seen[0] == key:
            index = seen[1]
        s.call_ids.add(call_id, (key, index, None))
    return max(index, 0)
