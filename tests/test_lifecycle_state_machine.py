"""Stateful tests of :class:`Session` and :class:`StreamGuard` against plain models (docs/spec.md §0,
§2.4, §2.6, §3).

Each model is a few lines of plain Python per spec rule, written from the spec, not from the code:
which lifecycle state follows which call, what is refused in which state, and, for the one simple
stream the spec pins down exactly, where the verdict comes and where the cut falls.

The simple stream: the text detectors run the ``cycle`` kind only (``TextConfig("rescue",
enabled=("cycle",))``), and the looping channel carries ``UNIT`` (30 code points, smallest period
30) repeated from the attempt's start.  Spec §2.4: at a checkpoint ``n`` (a multiple of
``check_every`` = 200, and once more at the end of the stream) the detector fires when the text is
at least ``max(600, 3 * 30)`` code points long, and then ``start = 0`` and ``cut = 30`` (keep the
first copy).  So the stop verdict comes with the delta that reaches 600 code points, with
``position == 600`` and ``cut == 30``; an attempt that ends between checkpoints with 600 or more
code points gets it from the final checkpoint.  The other channel carries prose that never
repeats (no verdict).  The stall nudge and text strikes are off (other rules, other tests).
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from loopguard import Session, SessionConfig, SessionState, StreamGuard, StreamState, TextConfig
from loopguard.stream import Action

UNIT = "Wait, let me recheck the sum. "
PERIOD = len(UNIT)
FIRES_AT = 600  # max(cycle_min_chars=600, cycle_min_copies=3 * PERIOD), a checkpoint (multiple of 200)
LOOP = UNIT * 400
_WORDS = ["".join(random.Random(i).choice("abcdefghijklmnopqrstuvwxyz") for _ in range(1 + i % 9)) for i in range(4000)]
PROSE = " ".join(random.Random(7).sample(_WORDS, len(_WORDS)))  # never three copies of anything


def _config() -> TextConfig:
    return TextConfig("rescue", enabled=("cycle",))


def _session() -> Session:
    return Session(
        "model",
        text_config=_config(),
        config=SessionConfig(stall_calls=0, text_strikes=False),
        clock=lambda: 0.0,
    )


# --------------------------------------------------------------------------- Session


class SessionMachine(RuleBasedStateMachine):
    """``Session`` against a model of its lifecycle and of the simple stream's verdicts."""

    def __init__(self) -> None:
        super().__init__()
        self.session = _session()
        self.state = "idle"
        self.turn = 0  # turns started
        self.attempt = 0  # attempts started in the turn
        self.loop = 0  # code points of the looping channel (reasoning) in the open attempt
        self.prose = 0  # code points of the clean channel (text) in the open attempt
        self.stop: Any = None  # the open attempt's stop verdict
        self.turn_reasoning = 0
        self.turn_text = False

    # the model's own moves, one per spec rule
    def _open_turn(self) -> None:
        self.turn, self.attempt, self.state = self.turn + 1, 0, "turn"
        self.turn_reasoning, self.turn_text = 0, False

    def _open_attempt(self) -> None:
        if self.state in ("attempt", "stopped"):
            self._close_attempt()
        if self.state == "idle":
            self._open_turn()
        self.attempt, self.state = self.attempt + 1, "attempt"
        self.loop = self.prose = 0
        self.stop = None

    def _close_attempt(self) -> bool:
        """End the open attempt; whether the final checkpoint stopped it."""
        fired = self.stop is None and self.loop >= FIRES_AT
        self.turn_reasoning += self.loop
        self.turn_text = self.turn_text or self.prose > 0
        self.state = "turn"
        return fired

    def _refused(self, call: Any) -> bool:
        if self.state != "disposed":
            return False
        with pytest.raises(RuntimeError, match="session disposed"):
            call()
        return True

    @rule()
    def start_turn(self) -> None:
        if self._refused(self.session.start_turn):
            return
        self.session.start_turn()
        if self.state in ("attempt", "stopped"):
            self._close_attempt()
        self._open_turn()

    @rule()
    def start_attempt(self) -> None:
        if self._refused(self.session.start_attempt):
            return
        self.session.start_attempt()
        self._open_attempt()

    @rule(size=st.integers(1, 90))
    def feed_loop(self, size: int) -> None:
        piece = LOOP[self.loop : self.loop + size] if self.state in ("attempt", "stopped") else LOOP[:size]
        if self._refused(lambda: self.session.feed(piece, "reasoning")):
            return
        verdict = self.session.feed(piece, "reasoning")
        if self.state in ("idle", "turn"):
            self._open_attempt()
        self.loop += size
        if self.stop is not None:
            assert verdict is self.stop  # once stopped, the same verdict again
        elif self.loop >= FIRES_AT:  # the checkpoint at 600 was passed by this delta
            assert (verdict.action, verdict.kind, verdict.detection.kind) == ("cut", "text_loop", "cycle")
            assert (verdict.detection.position, verdict.detection.cut, verdict.detection.start) == (FIRES_AT, 30, 0)
            assert verdict.detection.channel == "reasoning" and verdict.stop
            self.stop, self.state = verdict, "stopped"
        else:
            assert verdict.action == "allow" and not verdict.stop

    @rule(size=st.integers(1, 90))
    def feed_prose(self, size: int) -> None:
        piece = PROSE[self.prose : self.prose + size] if self.state in ("attempt", "stopped") else PROSE[:size]
        if self._refused(lambda: self.session.feed(piece, "text")):
            return
        verdict = self.session.feed(piece, "text")
        if self.state in ("idle", "turn"):
            self._open_attempt()
        self.prose += size
        assert verdict is self.stop if self.stop is not None else verdict.action == "allow"

    @rule(channel=st.sampled_from(["answer", "", None, 3]))
    def feed_bad_channel(self, channel: Any) -> None:
        if self._refused(lambda: self.session.feed("x", channel)):
            return
        with pytest.raises(ValueError):
            self.session.feed("x", channel)  # refused in every state, nothing recorded

    @rule()
    def end_attempt(self) -> None:
        if self._refused(self.session.end_attempt):
            return
        verdict = self.session.end_attempt()
        if self.state not in ("attempt", "stopped"):
            assert verdict.action == "allow" and verdict.kind is None  # nothing to end
            return
        stop = self.stop
        if self._close_attempt():
            assert (verdict.action, verdict.detection.kind, verdict.detection.cut) == ("cut", "cycle", PERIOD)
            assert verdict.detection.position == self.loop  # the final checkpoint, at the end
        elif stop is not None:
            assert verdict is stop
        else:
            assert verdict.action == "allow" and verdict.kind in (None, "replay")

    @rule()
    def end_turn(self) -> None:
        if self._refused(self.session.end_turn):
            return
        verdict = self.session.end_turn()
        if self.state in ("attempt", "stopped"):
            self._close_attempt()
        if self.state != "turn":
            assert verdict.action == "allow" and verdict.kind is None
            return
        self.state = "idle"
        empty = self.turn_reasoning > 0 and not self.turn_text  # spec §3, empty_turn_limit=1, action log
        assert (verdict.action, verdict.kind) == ("allow", "empty_turn" if empty else None)

    @rule()
    def cancel(self) -> None:
        if self._refused(self.session.cancel):
            return
        self.session.cancel("host")
        self.state = "idle"

    @rule()
    def reset(self) -> None:
        if self._refused(self.session.reset):
            return
        self.session.reset()
        self.state, self.turn, self.attempt = "idle", 0, 0

    @rule()
    def dispose(self) -> None:
        self.session.dispose()  # a reset first; harmless twice
        if self.state != "disposed":
            self.state, self.turn, self.attempt = "disposed", 0, 0

    @invariant()
    def lifecycle_matches(self) -> None:
        assert self.session.state is SessionState(self.state)
        assert (self.session.turn, self.session.attempt) == (self.turn, self.attempt)


# ----------------------------------------------------------------------- StreamGuard


class StreamMachine(RuleBasedStateMachine):
    """``StreamGuard`` (``mode="cut"``) against a model of its states, actions and outcome."""

    def __init__(self) -> None:
        super().__init__()
        self.guard = StreamGuard(_session(), {"mode": "cut", "marker": True, "language": "en"})
        self.state = "watching"
        self.loop = 0  # reasoning code points the guard saw
        self.prose = 0  # text code points the guard saw
        self.open: set[int] = set()  # keys of open tool calls
        self.closed: list[int] = []  # keys of completed tool calls, in order of start
        self.started: list[int] = []
        self.named: set[int] = set()  # calls that got a name, id or arguments (else they are no call)
        self.fired = False  # the detector called for action

    def _event(self) -> Action | None:
        """What every event returns once stopped or finished (then ignored), else ``None``."""
        if self.state == "stopped":
            return Action.STOP_BEFORE
        if self.state == "finished":
            return Action.STOP_BEFORE if self.guard.outcome.stopped else Action.CONTINUE
        return None

    @rule(size=st.integers(1, 90))
    def reasoning(self, size: int) -> None:
        fixed = self._event()
        action = self.guard.reasoning(LOOP[self.loop : self.loop + size])
        if fixed is not None:
            assert action is fixed
            return
        if self.state == "deferred" and not self.open:  # cannot happen: deferred waits for open calls
            raise AssertionError("deferred with no open call")
        self.loop += size
        if self.state == "watching" and self.loop >= FIRES_AT:  # spec §2.4 at the checkpoint 600
            self.fired = True
            if self.open:  # spec §2.6: no cut while a tool call is open; deferred
                self.state = "deferred"
                assert action is Action.CONTINUE
            else:
                self.state = "stopped"
                assert action is Action.STOP_BEFORE  # this chunk is not passed on (the guard saw it)
            return
        assert action is Action.CONTINUE

    @rule(size=st.integers(1, 90))
    def text(self, size: int) -> None:
        fixed = self._event()
        action = self.guard.text(PROSE[self.prose : self.prose + size])
        if fixed is not None:
            assert action is fixed
            return
        self.prose += size
        assert action is Action.CONTINUE

    @rule(key=st.integers(0, 3))
    def tool_args(self, key: int) -> None:
        fixed = self._event()
        action = self.guard.tool_args(key, '{"a": 1}', id=f"call_{key}", name="ls")
        if fixed is not None:
            assert action is fixed
            return
        assert action is Action.CONTINUE
        self.named.add(key)
        if key not in self.started:
            self.started.append(key)
            self.open.add(key)

    @rule(key=st.integers(0, 3))
    def tool_end(self, key: int) -> None:
        fixed = self._event()
        action = self.guard.tool_end(key)
        if fixed is not None:
            assert action is fixed
            return
        if key not in self.started:  # an end without a start is a call of its own
            self.started.append(key)
        self.open.discard(key)
        if key not in self.closed:
            self.closed.append(key)
        if self.state == "deferred" and not self.open:  # the deferred cut: after the closing chunk
            self.state = "stopped"
            assert action is Action.STOP_AFTER
        else:
            assert action is Action.CONTINUE

    @precondition(lambda self: self.state != "finished")
    @rule()
    def finish(self) -> None:
        outcome = self.guard.finish()
        assert self.guard.finish() is outcome  # idempotent
        stopped = self.state == "stopped"
        if self.state == "deferred":  # the end of the stream completes the open calls
            self.closed += sorted(self.open, key=self.started.index)
            self.open.clear()
        final = not self.fired and self.loop >= FIRES_AT  # the final checkpoint (spec §2)
        pruned = self.fired or final
        assert outcome.stopped is stopped and not outcome.should_resume  # mode "cut"
        assert [c.key for c in outcome.tool_calls] == [k for k in self.started if k in self.closed and k in self.named]
        original = LOOP[: self.loop]
        assert outcome.kept_text == PROSE[: self.prose]
        if pruned:
            removed = len(original) - PERIOD
            assert (outcome.channel, outcome.cut, outcome.removed) == ("reasoning", PERIOD, removed)
            marker = f"\n〔{removed} chars of repeated reasoning removed〕" if removed else ""
            assert outcome.kept_reasoning == original[:PERIOD] + marker
        else:
            assert outcome.cut is None and outcome.detection is None and outcome.kept_reasoning == original
        self.state = "finished"

    @invariant()
    def state_matches(self) -> None:
        assert self.guard.state is StreamState(self.state)
        assert self.guard.stopped is (
            self.state == "stopped" or (self.state == "finished" and self.guard.outcome.stopped)
        )


_FAST = settings(stateful_step_count=40, max_examples=min(settings.default.max_examples, 150), deadline=None)
TestSessionLifecycle = SessionMachine.TestCase
TestSessionLifecycle.settings = _FAST
TestStreamLifecycle = StreamMachine.TestCase
TestStreamLifecycle.settings = _FAST
