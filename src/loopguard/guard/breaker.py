"""The ``circuit_breaker`` rule (spec §5.2; ``docs/rules.md``).

``circuit_break_after`` interventions (counted once per call: a deny or notice before it, or
reminders after it) since the last call that brought new information → an intervention telling
the model to stop and report, with ``action="cancel"`` for the host (``notice`` under
``notice_only``); the count then starts again.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from .. import messages
from .decisions import Decision, Intervention, logger, stop_action

if TYPE_CHECKING:
    from .context import Call

__all__ = ["RULE", "after", "before"]

RULE = "circuit_breaker"


def _count(c: Call) -> Intervention | None:
    """Count a call with an intervention (once per call); the breaker when the count is full."""
    s, index = c.s, c.index
    if s.breaker_index == index:
        return None
    s.breaker_index = index
    s.breaker += 1
    if s.breaker < c.cfg.circuit_break_after:
        return None
    count, s.breaker = s.breaker, 0
    text = messages.render("circuit_breaker", s.lang, count=count)
    logger.info("circuit breaker: %d interventions without progress (session call %d)", count, index)
    evidence = {"interventions": count}
    return Intervention(stop_action(c.cfg), "circuit_breaker", RULE, text, call_index=index, evidence=evidence)


def before(c: Call, decision: Decision) -> Decision:
    """A deny or notice before the call counts; the breaker's text follows the decision's."""
    breaker = _count(c)
    if breaker is None:
        return decision
    reason = decision.reason + "\n" + breaker.text
    evidence = {**decision.evidence, **breaker.evidence}
    return Decision(breaker.action, "circuit_breaker", reason, RULE, c.tool, c.index, evidence)


def after(c: Call) -> None:
    """New information resets the count; otherwise a call with reminders counts."""
    if c.new:
        c.s.breaker = 0
        return
    if c.out:
        breaker = _count(c)
        if breaker is not None:
            c.out.append(replace(breaker, tool=c.tool))
