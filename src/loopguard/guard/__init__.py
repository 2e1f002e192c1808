"""ToolGuard: outcome-aware tool-loop detection and the intervention ladder (spec §5.2; seeds 001, 002).

The guard sits on a host's tool pipeline: :meth:`ToolGuard.before_call` runs
before a tool executes and may deny it; :meth:`ToolGuard.after_call` sees the
result and returns interventions (texts for the model, or a cancel signal).
Everything is keyed by ``session_id`` and survives new user messages (seed
001); :meth:`ToolGuard.reset` / :meth:`ToolGuard.dispose` forget it.

The rules, each in its own module (``docs/rules.md`` maps every name to its seed code and
to ``docs/spec.md``; the texts are in :mod:`loopguard.messages`), run in order by
:mod:`~loopguard.guard.ladder`:

* ``unscoped_search`` (:mod:`~loopguard.guard.scope`): a search without a scope is denied
  before it runs.
* ``repeat`` (:mod:`~loopguard.guard.repeat`): the same call returning the same result
  ``repeat_limit`` times → a reminder, then the next identical request is denied (one escape
  run, then locked); *no effect* reminders; replay mode.
* ``drift`` (:mod:`~loopguard.guard.drift`): a result that is a near-copy of another call's, or
  the same short answer to a reworded call.
* new information and ``no_progress`` (:mod:`~loopguard.guard.progress`): what counts as new
  information and as a change of the world (``docs/tools.md``); ``anchor_window`` calls without
  new information → the progress anchor.
* ``error_avoidance`` (:mod:`~loopguard.guard.errors`): a failure followed by steps that do not
  remedy it.
* ``cycle`` (:mod:`~loopguard.guard.cycles`): A-B-A-B patterns with identical results →
  notice, then deny.
* ``circuit_breaker`` (:mod:`~loopguard.guard.breaker`): too many interventions without new
  information → stop and report (``cancel``).
* ``repeat_streak`` (:mod:`~loopguard.guard.streak`): the same action fingerprint requested
  ``repeat_call_limit`` times in a row → ``cancel``.
* ``stall`` (:mod:`~loopguard.guard.timers`) and ``strikes`` (:mod:`~loopguard.guard.strikes`)
  on an injectable clock.

The other modules: :mod:`~loopguard.guard.config` (:class:`ToolGuardConfig`),
:mod:`~loopguard.guard.decisions` (:class:`Decision`, :class:`Intervention`, :data:`GUARD_RULES`),
:mod:`~loopguard.guard.state` (per-session state, :class:`~loopguard.guard.state.BoundedTable`),
:mod:`~loopguard.guard.context` (one call as the rules see it), :mod:`~loopguard.guard.frame`
(which result lines carry content), :mod:`~loopguard.guard.core` (:class:`ToolGuard`),
:mod:`~loopguard.guard.wrap` (:func:`wrap_tool`).

``notice_only=True`` is the safe trial mode (seed 001 ``noticeOnly``): every
deny *and* every cancel (``circuit_breaker``, ``repeat_streak``, ``strikes``, ``stall``)
becomes a notice; nothing is stopped.  ``include`` / ``exclude`` are ``fnmatch`` globs on the
tool name (case-sensitive: ``todo_write`` does not exclude ``TodoWrite``); excluded tools pass
through every rule untouched but ``repeat_streak``, which still counts them unless they are in
``repeat_call_exempt`` (seed 002 has its own exemption list).  A request stopped by
``repeat_streak`` does not run, so no other rule sees it (an escape run is not used up by it).

Arguments never appear in errors, logs or evidence; intervention texts carry
at most ``arguments_preview_chars`` of them, redacted.

>>> GUARD_KINDS["locked"], GUARD_RULES[:3]
('repeat', ('unscoped_search', 'repeat', 'drift'))
"""

from __future__ import annotations

from .config import DEFAULT_SHELL_TOOLS, DEFAULT_STATE_TOOLS, ToolGuardConfig
from .core import ToolGuard
from .decisions import DECISION_ACTIONS, GUARD_KINDS, GUARD_RULES, Decision, Intervention
from .wrap import ToolCallDenied, ToolLoopCancelled, wrap_tool

__all__ = [
    "DEFAULT_SHELL_TOOLS",
    "DEFAULT_STATE_TOOLS",
    "ToolGuardConfig",
    "ToolGuard",
    "Decision",
    "Intervention",
    "DECISION_ACTIONS",
    "GUARD_KINDS",
    "GUARD_RULES",
    "ToolCallDenied",
    "ToolLoopCancelled",
    "wrap_tool",
]
