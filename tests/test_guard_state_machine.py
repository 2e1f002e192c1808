"""A hypothesis state machine drives Session and ToolGuard against an independent model of the
``repeat`` rule (docs/spec.md §5.2; docs/rules.md).

Session ``s1`` is driven through a :class:`loopguard.session.Session` (its
``tool_call`` / ``tool_result`` / ``start_turn`` / ``start_attempt`` /
``reset``), session ``s2`` through the bare :class:`ToolGuard` both share.

The model is written from the rule's words, not from the guard's code: it keeps, per
session, every result each call returned (a list per call), where each call's current chain
of results starts, the requests the rule denied or let through as escape runs, and how many
new actions (first executions of a call) the session has seen.  Everything the rule decides
is read off those lists:

* a call's *run* is how many of the latest results of its chain are equal;
* its *limit* is ``repeat_limit``, plus ``polling_grace`` once two consecutive results of the
  call ever differed in the session;
* a request whose run reached the limit is denied -- unless the call's previous request was
  denied and escape runs are left (``escape_runs`` per run of equal results): then it runs once;
  an escape run that returns the same result again, with no escape runs left, locks the call;
* the execution that brings the run to ``max(2, limit)`` (not an escape run) gets a ``repeat``
  reminder; a locked call gets a ``locked`` one;
* with ``progress_resets_repeats``, a new action since the call last ran or was requested
  starts a new chain (and unlocks it).

Results are one-line strings and the arguments have no words, so ``drift`` never applies;
cycles, the repeat streak, ``unscoped_search`` and the circuit breaker are set out of reach
so that the only denials are the ``repeat`` rule's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from loopguard.guard import GUARD_RULES, ToolGuard, ToolGuardConfig
from loopguard.session import Session

SESSIONS = ("s1", "s2")
TOOLS = ("shell", "read_file", "job_output")  # job_output is excluded by default
ARGS = ({"n": 1}, {"n": 2})
RESULTS = ("r1", "r2", "r3")


@dataclass
class CallHistory:
    """What one call (tool + arguments) did in one session."""

    results: list[str] = field(default_factory=list)  # every result, oldest first
    chain_start: int = 0  # index in ``results`` where the current chain starts
    previous_denied: bool = False  # the call's last request was denied
    escapes_used: int = 0  # escape runs since its results last changed
    escaping: bool = False  # the pending execution is an escape run
    locked: bool = False
    actions_seen: int = 0  # the session's new actions when the call last ran or was requested

    def run(self) -> int:
        chain = self.results[self.chain_start :]
        count = 0
        for result in reversed(chain):
            if result != chain[-1]:
                break
            count += 1
        return count

    def ever_changed(self) -> bool:
        return any(a != b for a, b in zip(self.results, self.results[1:]))


@dataclass
class SessionHistory:
    calls: dict[tuple[str, int], CallHistory] = field(default_factory=dict)
    new_actions: int = 0


class Model:
    """The ``repeat`` rule read off each call's list of results (see the module docstring)."""

    def __init__(self, repeat_limit: int, escape_runs: int, grace: int, resets: bool) -> None:
        self.repeat_limit, self.escape_runs, self.grace, self.resets = repeat_limit, escape_runs, grace, resets
        self.sessions: dict[str, SessionHistory] = {}

    def _restart_after_progress(self, session: SessionHistory, call: CallHistory) -> None:
        if self.resets and call.actions_seen != session.new_actions:
            call.chain_start = len(call.results)
            call.locked = call.previous_denied = call.escaping = False
            call.escapes_used = 0
        call.actions_seen = session.new_actions

    def limit(self, call: CallHistory) -> int:
        return self.repeat_limit + (self.grace if call.ever_changed() else 0)

    def request(self, sid: str, tool: str, key: tuple[str, int]) -> str:
        if tool == "job_output":
            return "allow"
        session = self.sessions.setdefault(sid, SessionHistory())
        call = session.calls.get(key)
        if call is None:
            return "allow"
        self._restart_after_progress(session, call)
        if call.locked:
            return "deny"
        if call.run() < self.limit(call):
            return "allow"
        if call.previous_denied and call.escapes_used < self.escape_runs:
            call.escapes_used += 1
            call.escaping, call.previous_denied = True, False
            return "allow"
        call.previous_denied = True
        return "deny"

    def result(self, sid: str, tool: str, key: tuple[str, int], result: str) -> list[str]:
        if tool == "job_output":
            return []
        session = self.sessions.setdefault(sid, SessionHistory())
        first_time = key not in session.calls
        call = session.calls.setdefault(key, CallHistory())
        self._restart_after_progress(session, call)
        same = bool(call.results) and result == call.results[-1]
        escape_run, call.escaping, call.previous_denied = call.escaping, False, False
        call.results.append(result)
        if not same:
            call.escapes_used = 0
        if first_time:  # a new action: every other call's chain starts again
            session.new_actions += 1
            call.actions_seen = session.new_actions
        if escape_run:
            if same and call.escapes_used >= self.escape_runs:
                call.locked = True
                return ["locked"]
            return []
        return ["repeat"] if same and call.run() == max(2, self.limit(call)) else []


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
        expected = self.model.request(sid, tool, (tool, arg))
        assert decision.action == expected, (decision, expected)
        assert decision.rule in ("", *GUARD_RULES)
        if decision.action == "deny":
            assert decision.kind in ("repeat", "locked") and decision.rule == "repeat"
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
        assert all(i.rule in GUARD_RULES for i in interventions)
        got = [i.kind for i in interventions if i.rule == "repeat"]
        assert got == self.model.result(sid, tool, (tool, arg), result)

    @precondition(lambda self: hasattr(self, "guard") and self.pending is None)
    @rule(new_turn=st.booleans())
    def next_step(self, new_turn: bool) -> None:
        """A new user message or model request: the rule's state survives both (seed 001)."""
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
