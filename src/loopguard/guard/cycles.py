"""The ``cycle`` rule: A-B-A-B loops (spec §5.2; ``docs/rules.md``).

A pattern of 2–``cycle_max_period`` calls of at least two keys whose executions repeat with
identical results: ``cycle_notice_periods`` full periods → a notice (once per cycle), after
``cycle_deny_periods`` full periods the next call continuing it is denied.  Never while any
result changes (the results are part of the pattern).  Only the primitive period counts: a
multiple of a shorter cycle is that cycle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import messages
from ..terminal import shown_name
from .decisions import Decision, deny, notice

if TYPE_CHECKING:
    from .config import ToolGuardConfig
    from .context import Call
    from .state import SessionState

__all__ = ["RULE", "after", "before", "find"]

RULE = "cycle"
_NOTICED_MAX = 64  # cycles a session remembers having noticed


def find(cfg: ToolGuardConfig, s: SessionState, key: str | None = None) -> tuple[int, int, int] | None:
    """(period, full periods, run length) of the longest cyclic tail of executions, or
    ``None``; with ``key`` only a cycle whose next call is ``key``."""
    hist = s.history
    n = len(hist)
    best: tuple[int, int, int] | None = None
    for p in range(2, cfg.cycle_max_period + 1):
        if n < 2 * p:
            break
        run = p
        i = n - 1
        while i - p >= 0 and hist[i][:2] == hist[i - p][:2]:
            run += 1
            i -= 1
        periods = run // p
        if periods < 2 or len({hist[j][0] for j in range(n - p, n)}) < 2:
            continue
        # the primitive period only: a multiple of a shorter cycle is that cycle
        if any(p % q == 0 and all(hist[j][:2] == hist[j - q][:2] for j in range(n - p, n)) for q in range(2, p)):
            continue
        if key is not None and hist[n - p][0] != key:
            continue
        if best is None or periods > best[1]:
            best = (p, periods, run)
    return best


def tools_of(s: SessionState, period: int) -> str:
    """The tools of the cycle's last period, as ```a` → `b```."""
    tools = [s.history[j][2] for j in range(len(s.history) - period, len(s.history))]
    return " → ".join(f"`{shown_name(t)}`" for t in tools)


def before(c: Call) -> Decision | None:
    """Deny the call that continues a cycle of ``cycle_deny_periods`` periods."""
    cycle = find(c.cfg, c.s, c.key)
    if cycle is None or cycle[1] < c.cfg.cycle_deny_periods:
        return None
    period, periods, _ = cycle
    text = messages.render("cycle_deny", c.s.lang, period=period, periods=periods, tools=tools_of(c.s, period))
    return deny(c.cfg, "cycle", RULE, text, c.tool, c.index, {"period": period, "periods": periods})


def after(c: Call) -> None:
    """Record the execution; a notice when a cycle reaches ``cycle_notice_periods`` periods."""
    cfg, s = c.cfg, c.s
    s.history.append((c.key, c.digest, c.tool))
    s.executions += 1
    while len(s.history) > cfg.cycle_max_period * (cfg.cycle_deny_periods + 1):
        s.history.popleft()
    cycle = find(cfg, s)
    if cycle is None or cycle[1] < cfg.cycle_notice_periods:
        return
    period, periods, run = cycle
    mark = (period, s.executions - run)
    if mark in s.cycle_noticed:
        return
    s.cycle_noticed.add(mark)
    if len(s.cycle_noticed) > _NOTICED_MAX:
        s.cycle_noticed.clear()
        s.cycle_noticed.add(mark)
    text = messages.render("cycle_notice", c.lang, period=period, periods=periods, tools=tools_of(s, period))
    c.out.append(notice(c.tool, c.index, "cycle", RULE, text, {"period": period, "periods": periods}))
