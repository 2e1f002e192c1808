"""The intervention ladder: the rules, in order, over one :class:`~loopguard.guard.context.Call`.

Before a call (:func:`before`): every request is a progress event and counts in the
``repeat_streak`` (a ``cancel`` there stops the request: no other rule sees it); an untracked
tool (``include`` / ``exclude``) goes no further; a tracked one meets ``unscoped_search``, then
``repeat``, then ``cycle`` -- the first that decides wins, a ``repeat_streak`` notice
(``notice_only``) only when they all allow -- and a deny or notice counts towards the
``circuit_breaker``.

After a call (:func:`after`): the result is read once (normalised text, hash, failure, state
change), the ``repeat_streak`` learns it; for a tracked tool the content lines are found and
:data:`AFTER` runs: ``repeat``, ``drift`` (near-copies, then rewording), new information
(``progress``), ``error_avoidance``, ``cycle``, ``no_progress``, ``circuit_breaker``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import breaker, cycles, drift, errors, frame, progress, repeat, scope, streak, timers
from .context import Call, Tools
from .decisions import Decision, Intervention

__all__ = ["AFTER", "BEFORE", "after", "before"]

#: The rules that may decide about a tracked request, in order (the first decision wins).
BEFORE: tuple[Callable[[Call], Decision | None], ...] = (scope.before, repeat.before, cycles.before)
#: The rules that read a tracked call's result, in order (each may append interventions).
AFTER: tuple[Callable[[Call], None], ...] = (
    repeat.after,
    drift.after,
    drift.reworded,
    progress.learn,
    errors.after,
    cycles.after,
    progress.anchor,
    breaker.after,
)


def before(c: Call, tools: Tools) -> Decision:
    """The decision about a request (see the module docstring)."""
    c.index = timers.request(c.s, c.clock())
    stop = streak.before(c, tools.exempt(c.tool))
    if stop is not None and stop.action == "cancel":
        return stop  # the call does not run: no other rule sees it
    if not tools.tracked(c.tool):
        decision = stop or Decision("allow", tool=c.tool, call_index=c.index)
    else:
        decision = _tracked(c, stop)
    if decision.allowed:
        c.s.pending += 1
    return decision


def _tracked(c: Call, stop: Decision | None) -> Decision:
    decision: Decision | None = None
    for rule in BEFORE:
        decision = rule(c)
        if decision is not None:
            break
    if decision is None:
        decision = Decision("allow", tool=c.tool, call_index=c.index)
    if decision.action == "allow" and stop is not None:
        decision = stop
    if decision.action in ("notice", "deny"):
        decision = breaker.before(c, decision)
    return decision


def after(c: Call, tools: Tools, result: Any, error: bool) -> list[Intervention]:
    """The interventions after a result (see the module docstring)."""
    timers.result(c.s, c.clock())
    c.observe(tools, result, error)
    streak.after(c)
    if not tools.tracked(c.tool):
        return []
    c.lang = c.s.pick_lang(c.cfg.language, c.text[:2000])
    c.lines = frame.content_lines(c)
    for rule in AFTER:
        rule(c)
    return c.out
