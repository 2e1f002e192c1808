"""The guard's memory: per-session and per-call-key state, and :class:`BoundedTable`, the one
least-recently-used table every bounded map of the guard (and :class:`loopguard.LoopBrake`'s
per-session slots) is kept in."""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Callable, Hashable
from hashlib import blake2b
from typing import TYPE_CHECKING, Any, TypeVar

from .. import messages
from .streak import Streak

if TYPE_CHECKING:
    from .context import ShellFacts
    from .decisions import Decision

__all__ = ["BoundedTable", "KeyState", "SessionState", "stable_hash"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

#: "never": a call index far before any real one
FAR = 1_000_000
#: (call key, result hash) pairs a session remembers for "new information"
SEEN_MAX = 4096
#: call ids a session remembers (the dedupe of two wrappers on one call)
CALL_IDS_MAX = 256
#: tools whose last call a session remembers (as hashes) for rewording
REWORD_TOOLS = 64
#: bytes of line hashes a session keeps for ``drift`` (its recent results' content lines, hashed:
#: about 12,000 distinct lines); past it the oldest results are forgotten
DRIFT_BYTES = 1 << 20


def stable_hash(text: str) -> int:
    """A 64-bit hash of ``text`` that is the same in every process (BLAKE2b, 8 bytes, signed):
    what a session shared between replicas (:class:`loopguard.RedisStore`) hashes lines with."""
    return int.from_bytes(blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little", signed=True)


class BoundedTable(OrderedDict[K, V]):
    """An ordered map of at most ``limit`` entries; past it the oldest entry is dropped.

    ``use`` and ``remember`` make an entry the most recent; ``add`` keeps an existing entry
    where it is (a table of ids in the order they were first seen).

    Parameters
    ----------
    limit : int
        The most entries held (>= 1).

    Examples
    --------
    >>> table = BoundedTable[str, int](2)
    >>> table.remember("a", 1); table.remember("b", 2); table.use("a", int); table.remember("c", 3)
    1
    >>> list(table)
    ['a', 'c']
    """

    def __init__(self, limit: int = 1 << 62) -> None:
        super().__init__()
        self.limit = limit

    def trim(self) -> None:
        """Drop the oldest entries until at most ``limit`` are left."""
        while len(self) > self.limit:
            self.popitem(last=False)

    def use(self, key: K, make: Callable[[], V]) -> V:
        """The value of ``key`` (made by ``make()`` and added when absent), now the most recent."""
        value = self.get(key)
        if value is None:
            value = self[key] = make()
            self.trim()
        else:
            self.move_to_end(key)
        return value

    def remember(self, key: K, value: V) -> None:
        """Set ``key`` and make it the most recent."""
        self[key] = value
        self.move_to_end(key)
        self.trim()

    def forget(self, key: K | None) -> None:
        """Drop ``key`` (absent: nothing happens), or every entry when ``key`` is ``None``."""
        if key is None:
            self.clear()
        else:
            self.pop(key, None)

    def add(self, key: K, value: V) -> None:
        """Set ``key``; a new key is the most recent, an existing one keeps its place."""
        self[key] = value
        self.trim()


class RepeatStreak(Streak):
    """The ``repeat_streak`` rule's count: one fingerprint requested in a row, and the hash of
    its last result (``None`` before the first)."""

    __slots__ = ("result",)

    def __init__(self) -> None:
        super().__init__()
        self.result: str | None = None


#: :attr:`KeyState.head` of a key loaded from a shared store, which keeps no result text: the
#: denial then points at the conversation instead of quoting the result
HEAD_NOT_KEPT = "\x00loopguard: not kept"


class KeyState:
    """The ``repeat`` rule's state of one call key in one session."""

    __slots__ = (
        "tool",
        "last",
        "same",
        "epoch",
        "denied",
        "escapes",
        "escaping",
        "locked",
        "changed",
        "head",
        "error",
        "lang",
        "moved",
        "across",
        "ran_at",
        "changes",
        "new_changes",
        "effect_at",
    )

    def __init__(self, tool: str, epoch: int = 0) -> None:
        self.tool = tool
        self.last: str | None = None  # last result hash
        self.same = 0  # executions in a row that returned it
        self.epoch = epoch  # session progress epoch after its last execution
        self.denied = False  # the last request was denied
        self.escapes = 0  # escape runs used in this chain
        self.escaping = False  # the current execution is an escape run
        self.locked = False
        self.changed = False  # the key's result has changed before
        self.head = ""  # the start of the last result (for summaries, rendered only when denying)
        self.error = False
        self.lang = "en"
        self.moved = False  # the world changed since its last execution (seen by before_call)
        self.across = 0  # close executions in a row with the same result, changes in between or not
        self.ran_at = -FAR  # the session's execution count at its last execution
        self.changes = 0  # the session's count of state changes at its last execution
        self.new_changes = 0  # ... and of those made by calls never made before
        self.effect_at = 0  # the ``across`` count at which the next no-effect notice may come


class SessionState:
    """Everything the guard keeps about one session (bounded: see :class:`loopguard.ToolGuard`)."""

    __slots__ = (
        "keys",
        "seen",
        "recent",
        "recent_bytes",
        "epoch",
        "history",
        "cycle_noticed",
        "watch",
        "no_new",
        "breaker",
        "breaker_index",
        "calls",
        "replay",
        "signature",
        "streak",
        "strikes",
        "executions",
        "last_call",
        "blocked",
        "last_progress",
        "pending",
        "stalled",
        "call_ids",
        "lang",
        "frame",
        "frame_hist",
        "frame_digests",
        "drift_at",
        "changes",
        "new_changes",
        "reworded",
        "h",
    )

    def __init__(self, now: float, max_keys: int, h: Callable[[str], int] = hash) -> None:
        #: how lines, words and paths are hashed: ``hash`` in one process; a stable hash
        #: (:func:`stable_hash`) when the state is shared between processes
        self.h = h
        self.keys: BoundedTable[str, KeyState] = BoundedTable(max_keys)
        self.seen: BoundedTable[int, None] = BoundedTable(SEEN_MAX)  # hashes of (call key, result hash)
        # drift: (key, tool, hashes of its content lines, their bytes) of recent results
        self.recent: deque[tuple[str, str, frozenset[int], int]] = deque()
        self.recent_bytes = 0  # the bytes of the hashes in ``recent`` (at most DRIFT_BYTES)
        self.epoch = 0
        self.history: deque[tuple[str, str, str]] = deque()  # (key, result hash, tool) of executions
        self.cycle_noticed: set[tuple[int, int]] = set()
        # error_avoidance: (tool, its name family, hashes of its paths, the failure's words, calls since)
        self.watch: tuple[str, str, frozenset[int], frozenset[int], int] | None = None
        self.no_new = 0  # no_progress: calls in a row without new information
        self.breaker = 0  # circuit_breaker: calls with interventions since new information
        self.breaker_index = -1  # last call index counted in ``breaker``
        self.calls = 0
        self.executions = 0
        self.last_call: tuple[str, Any, Any, str, ShellFacts | None] | None = None
        self.blocked: set[str] = set()  # keys whose last request was denied or cancelled
        self.replay = False
        self.signature: str | None = None
        self.streak = RepeatStreak()  # repeat_streak
        self.strikes: deque[tuple[float, str]] = deque()
        self.last_progress = now
        self.pending = 0
        self.stalled = False
        self.call_ids: BoundedTable[Hashable, tuple[str, int, Decision | None]] = BoundedTable(CALL_IDS_MAX)
        self.lang = "en"
        self.drift_at = -FAR  # execution index of the last drift near-copy
        # per tool: (hashes of its last call's argument words, its call key, result hash, reworded calls in a row)
        self.reworded: BoundedTable[str, tuple[frozenset[int], str, str, int]] = BoundedTable(REWORD_TOOLS)
        self.changes = 0  # calls that changed the world (state changes) so far
        self.new_changes = 0  # ... made by calls never made before in the session
        self.frame_digests: set[str] = set()  # the result hashes in frame_hist
        self.frame: dict[int, int] = {}  # hash of an edge line -> how many of the recent results hold it
        self.frame_hist: deque[tuple[str, frozenset[int]]] = deque()  # (result hash, edge lines) of distinct results

    def pick_lang(self, language: str, sample: str) -> str:
        """The language of the next text (``language`` ``"auto"`` reads ``sample``; an empty
        sample keeps the session's last language), remembered as the session's."""
        lang = messages.pick_language(language, sample)
        if language == "auto" and not sample.strip():
            lang = self.lang
        self.lang = lang
        return lang
