""" "The same call N times in a row": :class:`Streak`, one count shared by
:class:`loopguard.LoopBrake` (spec §5.1), the guard's ``repeat_streak`` rule (spec §5.2) and the
offline scanner's runs (:func:`loopguard.toolruns.find_runs`, spec §6).

The rule (``repeat_streak``, ``docs/rules.md``): ``repeat_call_limit`` (6) consecutive requests
with the same :func:`~loopguard.identity.action_fingerprint` (``description`` dropped) →
``cancel``; tools in ``repeat_call_exempt`` never count and clear the streak.  With
``repeat_call_needs_same_result`` (default) a changed result restarts the streak at 1, so a
poll that makes progress is never cancelled -- but not the successful receipt of a call that
changes the world repeated verbatim (the same edit inserted again: the receipt changes because
the change accumulates).  A request it cancels does not run: no other rule sees it.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator
from typing import TYPE_CHECKING

from .. import messages
from ..terminal import shown_name
from .decisions import Decision, logger, stop_action

if TYPE_CHECKING:
    from .context import Call

__all__ = ["RULE", "Streak", "runs"]

RULE = "repeat_streak"


class Streak:
    """How many times in a row the same value (a call hash) came.

    ``push(value)`` returns the count including this one: 1 for a value other than the
    last, the last count + 1 for the same value.

    Examples
    --------
    >>> streak = Streak()
    >>> [streak.push(h) for h in "aaba"]
    [1, 2, 1, 1]
    """

    __slots__ = ("last", "count")

    def __init__(self) -> None:
        self.last: Hashable | None = None
        self.count = 0

    def push(self, value: Hashable) -> int:
        """Count ``value``; the length of its run so far."""
        if value == self.last:
            self.count += 1
        else:
            self.last, self.count = value, 1
        return self.count

    def clear(self) -> None:
        """Forget the run (the next value starts at 1)."""
        self.last, self.count = None, 0


def runs(values: Iterable[Hashable]) -> Iterator[tuple[int, int]]:
    """``(start, end)`` (end exclusive) of every maximal run of equal consecutive values.

    >>> list(runs("aabccc"))
    [(0, 2), (2, 3), (3, 6)]
    """
    streak = Streak()
    end = 0
    for end, value in enumerate(values):
        before = streak.count
        if streak.push(value) == 1 and before:
            yield end - before, end
    if streak.count:
        yield end + 1 - streak.count, end + 1


def before(c: Call, exempt: bool) -> Decision | None:
    """Count the request; the ``repeat_streak`` stop when the streak reaches ``repeat_call_limit``."""
    s, cfg = c.s, c.cfg
    streak = s.streak
    if exempt:
        streak.clear()
        streak.result = None
        return None
    fp = c.fingerprint()
    if streak.push(fp) == 1:
        streak.result = None
    if streak.count < cfg.repeat_call_limit:
        return None
    lang = s.pick_lang(cfg.language, "")
    text = messages.render("repeat_streak", lang, tool=c.tool, count=streak.count)
    evidence = {"count": streak.count, "limit": cfg.repeat_call_limit, "fingerprint": fp[:12]}
    c.strike("repeat_streak")
    logger.info("repeat streak: %s requested %d times in a row (%s)", shown_name(c.tool), streak.count, fp[:12])
    return Decision(stop_action(cfg), "repeat_streak", text, RULE, c.tool, c.index, evidence)


def after(c: Call) -> None:
    """A changed result restarts the streak (see the module docstring)."""
    cfg, streak = c.cfg, c.s.streak
    if streak.last is None or not cfg.repeat_call_needs_same_result:
        return
    if (
        streak.result is not None
        and streak.result != c.digest
        and not (cfg.progress_resets_repeats and not c.failure and c.world)
    ):
        streak.count = 1
    streak.result = c.digest
