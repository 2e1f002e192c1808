"""A hypothesis state machine drives Session and ToolGuard against a small model of D1 (spec §5.2; seed 001).

Session ``s1`` is driven through a :class:`loopguard.session.Session` (its
``tool_call`` / ``tool_result`` / ``start_turn`` / ``start_attempt`` /
``reset``), session ``s2`` through the bare :class:`ToolGuard` both share.

The model keeps, per session and call key, the last result, how many
executions in a row returned it, whether the last request was denied, the
escape runs used, the lock, and whether the key's result ever changed; per
session, the (key, result) pairs seen and a progress epoch (new information
from a call never made before breaks every other key's chain).  Results are one-line strings, so D2 never
applies; cycles, the repeat streak, D5 and the circuit breaker are set out of
reach so that the only denials are D1's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from loopguard.guard import ToolGuard, ToolGuardConfig
from loopguard.session import Session

SESSIONS = ("s1", "s2")
TOOLS = ("shell", "read_file", "job_output")  # job_output is excluded by default
ARGS = ({"n": 1}, {"n": 2})
RESULTS = ("r1", "r2", "r3")


@dataclass
class _Key:
    last: str | None = None
    same: int = 0
    denied: bool = False
    escapes: int = 0
    escaping: bool = False
    locked: bool = False
    changed: bool = False
    epoch: int = 0


@dataclass
class _Session:
    keys: dict[tuple[str, int], _Key] = field(default_factory=dict)
    seen: set[tuple[tuple[str, int], str]] = field(default_factory=set)
    epoch: int = 0


class Model:
    """The D1 rules of guard.py, written as plainly as possible."""

    def __init__(self, repeat_limit: int, escape_runs: int, grace: int, resets: bool) -> None:
        self.repeat_limit, self.escape_runs, self.grace, self.resets = repeat_limit, escape_runs, grace, resets
        self.sessions: dict[str, _Session] = {}

    def _s(self, sid: str) -> _Session:
        return self.sessions.setdefault(sid, _Session())

    def _break(self, s: _Session, k: _Key, *, escaping_too: bool) -> None:
        if self.resets and k.epoch != s.epoch:
            k.same, k.locked, k.denied, k.escapes = 0, False, False, 0
            if escaping_too:
                k.escaping = False
                k.epoch = s.epoch

    def before(self, sid: str, tool: str, key: tuple[str, int]) -> str:
        if tool == "job_output":
            return "allow"
        s = self._s(sid)
        k = s.keys.get(key)
        if k is None:
            return "allow"
        self._break(s, k, escaping_too=True)
        if k.locked:
            return "deny"
        limit = self.repeat_limit + (self.grace if k.changed else 0)
        if k.last is not None and k.same >= limit:
            if k.denied and k.escapes < self.escape_runs:
                k.escapes += 1
                k.escaping, k.denied = True, False
                return "allow"
            k.denied = True
            return "deny"
        return "allow"

    def after(self, sid: str, tool: str, key: tuple[str, int], result: str) -> list[str]:
        if tool == "job_output":
            return []
        s = self._s(sid)
        k = s.keys.get(key)
        fresh = k is None
        if k is None:
            k = s.keys[key] = _Key(epoch=s.epoch)
        self._break(s, k, escaping_too=False)
        out = []
        limit = self.repeat_limit + (self.grace if k.changed else 0)
        if k.escaping:
            k.escaping = False
            if result == k.last:
                k.same += 1
                if k.escapes >= self.escape_runs:
                    k.locked = True
                    out.append("locked")
            else:
                k.last, k.same, k.escapes, k.changed = result, 1, 0, True
        elif result == k.last:
            k.same += 1
            if k.same == max(2, limit):
                out.append("repeat")
        else:
            if k.last is not None:
                k.changed = True
            k.last, k.same, k.escapes = result, 1, 0
        k.denied = False
        if (key, result) not in s.seen:
            s.seen.add((key, result))
            if fresh:  # only a call never made before can have changed the world
                s.epoch += 1
        k.epoch = s.epoch
        return out


class GuardMachine(RuleBasedStateMachine):
    @initialize(
        repeat_limit=st.integers(1, 3),
        escape_runs=st.integers(0, 2),
        grace=st.integers(0, 2),
        resets=st.booleans(),
    )
    def setup(self, repeat_limit: int, escape_runs: int, grace: int, resets: bool) -> None:
        config = ToolGuardConfig(
            repeat_limit=repeat_limit,
            escape_runs=escape_runs,
            polling_grace=grace,
            progress_resets_repeats=resets,
            circuit_break_after=10**6,
            repeat_call_limit=10**6,
            cycle_notice_periods=10**5,
            cycle_deny_periods=10**5,
            cycle_max_period=2,
            anchor_window=10**6,
        )
        self.guard = ToolGuard(config)
        self.session = Session("s1", guard=self.guard)
        self.model = Model(repeat_limit, escape_runs, grace, resets)
        self.pending: tuple[str, str, int] | None = None

    @precondition(lambda self: hasattr(self, "guard") and self.pending is None)
    @rule(sid=st.sampled_from(SESSIONS), tool=st.sampled_from(TOOLS), arg=st.integers(0, 1))
    def request(self, sid: str, tool: str, arg: int) -> None:
        if sid == "s1":
            verdict = self.session.tool_call(tool, ARGS[arg])
            decision = verdict.decision
            assert decision is not None and verdict.action == decision.action
        else:
            decision = self.guard.before_call(sid, tool, ARGS[arg])
        expected = self.model.before(sid, tool, (tool, arg))
        assert decision.action == expected, (decision, expected)
        if decision.action == "deny":
            assert decision.kind in ("repeat", "locked") and decision.rule == "D1"
        else:
            self.pending = (sid, tool, arg)

    @precondition(lambda self: hasattr(self, "guard") and self.pending is not None)
    @rule(result=st.sampled_from(RESULTS))
    def respond(self, result: str) -> None:
        assert self.pending is not None
        sid, tool, arg = self.pending
        self.pending = None
        if sid == "s1":
            interventions = self.session.tool_result(tool, ARGS[arg], result).interventions
        else:
            interventions = tuple(self.guard.after_call(sid, tool, ARGS[arg], result))
        got = [i.kind for i in interventions if i.rule == "D1"]
        assert got == self.model.after(sid, tool, (tool, arg), result)

    @precondition(lambda self: hasattr(self, "guard") and self.pending is None)
    @rule(new_turn=st.booleans())
    def next_step(self, new_turn: bool) -> None:
        """A new user message or model request: D1 state survives both (seed 001)."""
        if new_turn:
            self.session.start_turn()
        self.session.start_attempt()

    @precondition(lambda self: hasattr(self, "guard") and self.pending is None)
    @rule(sid=st.sampled_from(SESSIONS))
    def reset(self, sid: str) -> None:
        if sid == "s1":
            self.session.reset()
        else:
            self.guard.reset(sid)
        self.model.sessions.pop(sid, None)

    @invariant()
    def sessions_bounded(self) -> None:
        if hasattr(self, "guard"):
            assert len(self.guard) <= len(SESSIONS)


TestGuardMachine = GuardMachine.TestCase
