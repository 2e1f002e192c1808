"""New information, and the ``no_progress`` rule (spec §5.2; ``docs/rules.md``).

*New information* = a (call key, result hash) pair never seen in the session (the last 4096
pairs are remembered) that is not a ``drift`` near-copy.  A call never made before that brings
new information, or a call that changes the world (a write, an edit, a checkout, an install, a
change of directory: ``state_tools``, ``state_commands``) when it is new, something changed since
it last ran, or its result changed, starts a new *epoch*: every key's ``repeat`` chain starts
again (``progress_resets_repeats``).

``no_progress``: ``anchor_window`` consecutive calls without new information → the progress
anchor (goal / done / next).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import messages
from .decisions import notice

if TYPE_CHECKING:
    from .context import Call

__all__ = ["RULE", "anchor", "learn"]

RULE = "no_progress"


def learn(c: Call) -> None:
    """Whether the result is new information; a new epoch after a new action or a state change."""
    s, k = c.s, c.k
    assert k is not None  # (set by the repeat rule)
    pair = hash((c.key, c.digest)) if s.h is hash else s.h(c.key + c.digest)
    c.new = pair not in s.seen and not c.drift
    s.seen.remember(pair, None)
    # a call that changes the world: the next identical read or test is a new action -- unless
    # it repeats itself with nothing changed in between (the same edit, the same result)
    state = c.world and (c.fresh or c.moved or c.digest != c.previous)
    if (c.new and c.fresh) or state:  # a new action brought new information: the world may have changed
        s.epoch += 1
    if state:
        s.changes += 1
        s.new_changes += c.fresh
    k.changes, k.new_changes = s.changes, s.new_changes
    k.epoch = s.epoch


def anchor(c: Call) -> None:
    """Count a call without new information; the anchor every ``anchor_window`` of them."""
    s, window = c.s, c.cfg.anchor_window
    if c.new:
        s.no_new = 0
        return
    s.no_new += 1
    if s.no_new >= window:
        s.no_new = 0
        text = messages.render("anchor", c.lang, window=window)
        c.out.append(notice(c.tool, c.index, "no_progress", RULE, text, {"window": window}))
