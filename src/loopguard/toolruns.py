"""Runs of consecutive identical tool calls, for the offline scanner (spec §4, §5.1, §6).

Two calls are identical when their :func:`call_hash` is equal (same tool,
same arguments).  A run of two or more is a *finding*; a run of
``max_repeats`` (default 3, the seed loop brake's default: the brake denies
the call whose streak reaches 3) or more is a *loop* unless its results
change (polling that makes progress is not a loop; unlogged results count as
unchanged).  Findings carry the tool
name, the call indices, a 12-hex hash prefix and whether every result was
identical too -- never the arguments or results, which may hold secrets.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from . import identity
from .guard.streak import runs
from .identity import hash_prefix
from .terminal import redacted_name

if TYPE_CHECKING:
    from .guard import ToolGuardConfig
    from .logs.session import Conversation, Message

__all__ = [
    "DEFAULT_MAX_REPEATS",
    "ConversationGuard",
    "GuardFinding",
    "RunFinder",
    "ToolRun",
    "call_hash",
    "find_runs",
    "guard_conversation",
    "hash_prefix",
]

#: A run of this many identical calls is a loop (the seed brake's ``max_repeats``).
DEFAULT_MAX_REPEATS = 3


def call_hash(tool: str, args: Any) -> str:
    """The identity of a tool call: :func:`loopguard.identity.call_hash` (spec §4).

    Logs may hold values canonical JSON refuses (``NaN``/``Infinity`` tokens,
    huge numbers); such a call is hashed over Python's sorted-key JSON instead,
    so the scan goes on (its hash then differs from a JavaScript deployment's).

    Examples
    --------
    >>> call_hash("grep", {"pattern": "x"}) == call_hash("grep", '{"pattern":"x"}')
    True
    """
    try:
        return identity.call_hash(tool, args)
    except (TypeError, ValueError):
        text = json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=repr)
        return hashlib.sha256(f"{tool}\n{text}".encode("utf-8", "surrogatepass")).hexdigest()


class CallLike(Protocol):
    """What :func:`find_runs` needs of a call (e.g. :class:`loopguard.logs.ToolCall`)."""

    @property
    def name(self) -> str: ...
    @property
    def args(self) -> Any: ...
    @property
    def result(self) -> Any: ...
    @property
    def error(self) -> bool: ...
    @property
    def where(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class ToolRun:
    """A run of consecutive identical tool calls.

    Attributes
    ----------
    tool : str
        The tool name.
    digest : str
        The full call hash (only :attr:`hash_prefix` is ever shown).
    calls : tuple[int, ...]
        0-based indices of the calls in their conversation's call sequence.
    where : tuple[dict, ...]
        Where each call sits in the file.
    results_identical : bool | None
        ``True`` when every call has a result and all results (and error
        flags) are equal, ``False`` when they differ, ``None`` when some call
        has no result in the log.
    max_repeats : int
        The loop threshold the run was judged with.
    """

    tool: str
    digest: str
    calls: tuple[int, ...]
    where: tuple[dict[str, Any], ...]
    results_identical: bool | None
    max_repeats: int = DEFAULT_MAX_REPEATS

    @property
    def count(self) -> int:
        """How many identical calls in a row."""
        return len(self.calls)

    @property
    def loop(self) -> bool:
        """Whether the run is a loop: ``count >= max_repeats`` and results not seen to change."""
        return self.count >= self.max_repeats and self.results_identical is not False

    @property
    def hash_prefix(self) -> str:
        """12 hex digits of the call hash."""
        return hash_prefix(self.digest)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (no arguments, no results; the tool name redacted)."""
        return {
            "tool": redacted_name(self.tool),
            "count": self.count,
            "calls": list(self.calls),
            "where": [dict(w) for w in self.where],
            "hash_prefix": self.hash_prefix,
            "results_identical": self.results_identical,
            "loop": self.loop,
        }


def _result_key(call: CallLike) -> str | None:
    if call.result is None:
        return None
    return json.dumps([bool(call.error), call.result], sort_keys=True, ensure_ascii=False, default=repr)


def _results_identical(run: Sequence[CallLike]) -> bool | None:
    keys = [_result_key(call) for call in run]
    if any(key is None for key in keys):
        return None
    return len(set(keys)) == 1


def find_runs(
    calls: Sequence[CallLike], *, min_count: int = 2, max_repeats: int = DEFAULT_MAX_REPEATS
) -> list[ToolRun]:
    """Find runs of consecutive identical calls.

    Parameters
    ----------
    calls : Sequence[CallLike]
        One conversation's tool calls in order.
    min_count : int
        Shortest run reported (default 2).
    max_repeats : int
        Runs this long or longer are loops (default 3).

    Returns
    -------
    list[ToolRun]
        In order of their first call.

    Examples
    --------
    >>> from loopguard.logs import ToolCall
    >>> calls = [ToolCall("ls", {}, "a"), ToolCall("ls", {}, "a"), ToolCall("ls", {}, "a")]
    >>> [(r.tool, r.calls, r.results_identical, r.loop) for r in find_runs(calls)]
    [('ls', (0, 1, 2), True, True)]
    """
    found: list[ToolRun] = []
    hashes = [call_hash(call.name, call.args) for call in calls]
    for start, end in runs(hashes):
        if end - start >= min_count:
            run = calls[start:end]
            found.append(
                ToolRun(
                    tool=calls[start].name,
                    digest=hashes[start],
                    calls=tuple(range(start, end)),
                    where=tuple(dict(call.where) for call in run),
                    results_identical=_results_identical(run),
                    max_repeats=max_repeats,
                )
            )
    return found


@dataclass(frozen=True)
class GuardFinding:
    """What :class:`loopguard.ToolGuard` decided about one logged call (spec §5.2, §6).

    Attributes
    ----------
    call : int
        0-based index of the call in its conversation's call sequence.
    tool : str
        The tool name.
    action : str
        ``"notice"``, ``"deny"`` or ``"cancel"``.
    kind : str
        The rule's kind (``repeat``, ``locked``, ``drift``, ``cycle``, …).
    rule : str
        The rule (one of :data:`loopguard.GUARD_RULES`: ``repeat``, ``drift``, ``cycle``, …).
    digest : str
        The call hash (only :attr:`hash_prefix` is ever shown).
    where : dict
        Where the call sits in the file.
    evidence : dict
        The rule's numbers and hash prefixes (never arguments or results).
    """

    call: int
    tool: str
    action: str
    kind: str
    rule: str
    digest: str
    where: dict[str, Any]
    evidence: dict[str, Any]

    @property
    def hash_prefix(self) -> str:
        """12 hex digits of the call hash."""
        return hash_prefix(self.digest)

    @property
    def stops(self) -> bool:
        """The guard would have stopped this call (deny or cancel)."""
        return self.action in ("deny", "cancel")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (no arguments, no results; the tool name redacted)."""
        return {
            "call": self.call,
            "tool": redacted_name(self.tool),
            "action": self.action,
            "kind": self.kind,
            "rule": self.rule,
            "hash_prefix": self.hash_prefix,
            "where": dict(self.where),
            "evidence": dict(self.evidence),
        }


def guard_conversation(conversation: Conversation, config: ToolGuardConfig | None = None) -> list[GuardFinding]:
    """Replay one logged conversation through a fresh :class:`loopguard.ToolGuard`.

    Each assistant message is an attempt: its stream signature goes to
    :meth:`~loopguard.ToolGuard.observe_attempt` (replay mode), then each of
    its calls goes through ``before_call`` and, unless denied or cancelled,
    ``after_call`` with the logged result.  A call whose result is not in the
    log skips ``after_call``: only the argument-based rules (``unscoped_search``,
    ``repeat_streak``) can fire on it.

    Parameters
    ----------
    conversation : loopguard.logs.Conversation
        From :func:`loopguard.logs.read_log`.
    config : ToolGuardConfig | None
        The guard's configuration (default: the defaults).

    Returns
    -------
    list[GuardFinding]
        Every non-allow decision and every intervention, in call order.

    Examples
    --------
    >>> from loopguard.logs import Conversation, Message, ToolCall
    >>> calls = [ToolCall("ls", {"path": "."}, "a.txt") for _ in range(3)]
    >>> conversation = Conversation({}, [Message(0, {}, tool_calls=calls)])
    >>> [(f.call, f.action, f.kind) for f in guard_conversation(conversation)]
    [(1, 'notice', 'repeat'), (2, 'deny', 'repeat')]
    """
    guard = ConversationGuard(config)
    found: list[GuardFinding] = []
    for message in conversation.messages:
        found += guard.message(message)
    return found


class ConversationGuard:
    """:func:`guard_conversation` one message at a time, for a conversation read as a stream.

    Parameters
    ----------
    config : ToolGuardConfig | None
        The guard's configuration (default: the defaults).

    Attributes
    ----------
    calls : int
        The calls seen so far (the next call's 0-based index).
    """

    def __init__(self, config: ToolGuardConfig | None = None) -> None:
        from .guard import ToolGuard

        self._guard = ToolGuard(config if config is not None else _default_config())
        self.calls = 0

    def message(self, message: Message) -> list[GuardFinding]:
        """Replay the conversation's next assistant message (as :func:`guard_conversation` does).

        Returns
        -------
        list[GuardFinding]
            The message's non-allow decisions and interventions, in call order.
        """
        guard = self._guard
        found: list[GuardFinding] = []
        guard.observe_attempt(
            "log",
            reasoning=message.reasoning,
            text=message.text,
            tool_calls=[(c.name, c.args) for c in message.tool_calls],
        )
        for c in message.tool_calls:
            index = self.calls
            digest = call_hash(c.name, c.args)
            decision = guard.before_call("log", c.name, c.args)
            if decision.action != "allow" and decision.kind is not None:
                found.append(
                    GuardFinding(
                        index,
                        c.name,
                        decision.action,
                        decision.kind,
                        decision.rule,
                        digest,
                        dict(c.where),
                        dict(decision.evidence),
                    )
                )
            if decision.allowed and c.result is not None:
                for iv in guard.after_call("log", c.name, c.args, c.result, error=bool(c.error)):
                    found.append(
                        GuardFinding(
                            index, c.name, iv.action, iv.kind, iv.rule, digest, dict(c.where), dict(iv.evidence)
                        )
                    )
            self.calls += 1
        return found


class RunFinder:
    """:func:`find_runs` one call at a time: memory is the current run, not the conversation.

    Parameters
    ----------
    min_count : int
        Shortest run reported (default 2).
    max_repeats : int
        Runs this long or longer are loops (default 3).

    Attributes
    ----------
    calls : int
        The calls seen so far (the next call's 0-based index).
    """

    def __init__(self, *, min_count: int = 2, max_repeats: int = DEFAULT_MAX_REPEATS) -> None:
        self.min_count = min_count
        self.max_repeats = max_repeats
        self.calls = 0
        self._digest: str | None = None
        self._tool = ""
        self._start = 0
        self._where: list[dict[str, Any]] = []
        self._first_key: str | None = None
        self._unlogged = False
        self._differ = False

    def add(self, call: CallLike) -> ToolRun | None:
        """Take the next call; the run it ends, if that run is reported (else ``None``)."""
        digest = call_hash(call.name, call.args)
        done = None
        if digest != self._digest:
            done = self.finish()
            self._digest, self._tool, self._start = digest, call.name, self.calls
        key = _result_key(call)
        if not self._where:
            self._first_key = key
        elif key != self._first_key:
            self._differ = True
        self._unlogged = self._unlogged or key is None
        self._where.append(dict(call.where))
        self.calls += 1
        return done

    def finish(self) -> ToolRun | None:
        """End the current run (at the end of the conversation); it, if it is reported."""
        where, self._where = self._where, []
        unlogged, self._unlogged = self._unlogged, False
        differ, self._differ = self._differ, False
        if len(where) < self.min_count or self._digest is None:
            return None
        return ToolRun(
            tool=self._tool,
            digest=self._digest,
            calls=tuple(range(self._start, self._start + len(where))),
            where=tuple(where),
            results_identical=None if unlogged else not differ,
            max_repeats=self.max_repeats,
        )


@functools.lru_cache(maxsize=1)
def _default_config() -> ToolGuardConfig:
    """The default guard configuration, validated once: a scan replays every conversation with a
    guard of its own, and the config is frozen (nothing here changes it)."""
    from .guard import ToolGuardConfig as Config

    return Config()
