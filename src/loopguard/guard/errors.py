"""The ``error_avoidance`` rule: a failure walked around (spec §5.2; ``docs/rules.md``).

After a failed call (the error flag) whose result says something (an empty failure -- grep's
"no match" -- has no message to avoid), ``error_watch_steps`` calls without a remedial action
→ a reminder.  Remedial: a tool in ``remedial_tools``, or a call sharing a path-like argument
value (a path, file name or URL) with the failed call, or a call of the failed tool (the tool
works; the failure was about its input: batch work over items of which some fail is not
avoidance), or an alternative of it (a tool whose name starts with the failed tool's words but
the last: ``find_user_id_by_``), or a call whose argument words include a word of the failure
message.  A later failure starts a new watch.

The watch holds the hashes of the failed call's path-like values (never the values: they are
arguments, of any length), the hashes of the failure message's words (of its first 2,000 characters) and counts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import messages
from .decisions import notice
from .words import arg_words, family, matches, path_values, tool_words, words

if TYPE_CHECKING:
    from .context import Call

__all__ = ["RULE", "after"]

RULE = "error_avoidance"

# (tool, family, hashes of the paths, hashes of the failure words, steps)
Watch = tuple[str, str, frozenset[int], frozenset[int], int]


def _remedies(c: Call, watch: Watch) -> bool:
    w_tool, w_family, w_paths, w_words, _ = watch
    return bool(
        c.tool == w_tool
        or matches(c.tool, c.cfg.remedial_tools)
        or not w_paths.isdisjoint(map(c.s.h, path_values(c.args)))
        or (w_family and tool_words(c.tool).startswith(w_family))
        or (w_words and not w_words.isdisjoint(map(c.s.h, arg_words(c.args))))
    )


def after(c: Call) -> None:
    """Start a watch on a failure; count the steps that do not remedy it; remind at the limit."""
    cfg, s = c.cfg, c.s
    if c.error:
        if c.lines or not cfg.ignore_boilerplate:
            failure_words = frozenset(map(s.h, words(c.text[:2000]))) if cfg.ignore_boilerplate else frozenset()
            s.watch = (c.tool, family(c.tool), frozenset(map(s.h, path_values(c.args))), failure_words, 0)
        else:
            s.watch = None
        return
    watch = s.watch
    if watch is None:
        return
    if _remedies(c, watch):
        s.watch = None
        return
    steps = watch[4] + 1
    if steps < cfg.error_watch_steps:
        s.watch = (*watch[:4], steps)
        return
    s.watch = None
    remedial = "`, `".join(cfg.remedial_tools)
    text = messages.render("error_notice", c.lang, tool=watch[0], steps=steps, remedial=remedial)
    c.out.append(notice(c.tool, c.index, "error_avoidance", RULE, text, {"steps": steps}))
