"""What the guard says: :class:`Decision` (before a call), :class:`Intervention` (after it or
for the session), the rule names (:data:`GUARD_RULES`) and kinds (:data:`GUARD_KINDS`).

Rules are named by what they do; ``docs/rules.md`` maps each name to its seed code and to
its section of the behaviour contract (``docs/spec.md`` §5.2).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from .. import messages
from ..terminal import shown_name

if TYPE_CHECKING:
    from .config import ToolGuardConfig

__all__ = ["DECISION_ACTIONS", "GUARD_KINDS", "GUARD_RULES", "Decision", "Intervention"]

logger = logging.getLogger("loopguard.guard")

DECISION_ACTIONS = ("allow", "notice", "deny", "cancel")

#: The guard's rules, in the order the ladder runs them (``docs/rules.md``): the value of
#: every ``Decision.rule`` and ``Intervention.rule`` the guard produces (``""`` for a plain allow).
GUARD_RULES: tuple[str, ...] = (
    "unscoped_search",
    "repeat",
    "drift",
    "error_avoidance",
    "cycle",
    "no_progress",
    "circuit_breaker",
    "repeat_streak",
    "stall",
    "strikes",
)

#: Kinds of decisions and interventions, with the rule (:data:`GUARD_RULES`) each comes from.
GUARD_KINDS: dict[str, str] = {
    "repeat": "repeat",
    "locked": "repeat",
    "no_effect": "repeat",
    "drift": "drift",
    "error_avoidance": "error_avoidance",
    "no_progress": "no_progress",
    "unscoped_search": "unscoped_search",
    "circuit_breaker": "circuit_breaker",
    "cycle": "cycle",
    "repeat_streak": "repeat_streak",
    "stalled": "stall",
    "strikes": "strikes",
}


@dataclass(frozen=True)
class Decision:
    """What :meth:`ToolGuard.before_call` decides about a call request.

    Attributes
    ----------
    action : str
        ``"allow"`` (run it), ``"notice"`` (run it; show ``reason`` to the
        model), ``"deny"`` (do not run it; return ``reason`` as the tool
        result), ``"cancel"`` (do not run it; cancel the turn).
    kind : str | None
        Which rule decided (see :data:`GUARD_KINDS`); ``None`` for a plain allow.
    reason : str
        The text for the model (``""`` for a plain allow).
    rule : str
        The rule that decided, one of :data:`GUARD_RULES` (``"repeat"``,
        ``"unscoped_search"``, ``"repeat_streak"``, …); ``""`` for a plain allow.
    tool : str
        The tool name.
    call_index : int
        0-based index of this request in the session.
    evidence : dict
        Numbers and hash prefixes (never arguments or results).
    """

    action: Literal["allow", "notice", "deny", "cancel"]
    kind: str | None = None
    reason: str = ""
    rule: str = ""
    tool: str = ""
    call_index: int = 0
    evidence: Mapping[str, Any] = field(default_factory=dict)

    @property
    def allowed(self) -> bool:
        """True when the tool should run (``allow`` or ``notice``)."""
        return self.action in ("allow", "notice")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: ``action``, ``kind``, ``rule``, ``tool``, ``call_index``, ``reason``, ``evidence``."""
        return _as_dict(self, "reason", self.reason)


@dataclass(frozen=True)
class Intervention:
    """A message for the model after a call (a reminder, the progress anchor, the circuit
    breaker) or about the session (``stall``, ``strikes``).

    Attributes
    ----------
    action : str
        ``"notice"`` (add ``text`` to the conversation) or ``"cancel"`` (add
        it and cancel the turn: ``circuit_breaker``, ``repeat_streak``, ``strikes``).
    kind : str
        See :data:`GUARD_KINDS`.
    rule : str
        The rule, one of :data:`GUARD_RULES`.
    text : str
        The message, starting with ``[loopguard]``.
    tool : str
        The tool of the call that triggered it (``""`` for session signals).
    call_index : int
        0-based index of the call in the session (-1 for session signals).
    evidence : dict
        Numbers and hash prefixes (never arguments or results).
    source : str
        Always ``"loopguard"``.
    """

    action: Literal["notice", "cancel"]
    kind: str
    rule: str
    text: str
    tool: str = ""
    call_index: int = -1
    evidence: Mapping[str, Any] = field(default_factory=dict)
    source: str = messages.SOURCE

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: ``action``, ``kind``, ``rule``, ``tool``, ``call_index``, ``text``,
        ``evidence``, ``source``."""
        return {**_as_dict(self, "text", self.text), "source": self.source}


def _as_dict(said: Decision | Intervention, name: str, text: str) -> dict[str, Any]:
    return {
        "action": said.action,
        "kind": said.kind,
        "rule": said.rule,
        "tool": said.tool,
        "call_index": said.call_index,
        name: text,
        "evidence": dict(said.evidence),
    }


def deny(
    cfg: ToolGuardConfig, kind: str, rule: str, text: str, tool: str, index: int, evidence: dict[str, Any]
) -> Decision:
    """A ``deny`` decision (a ``notice`` under ``notice_only``), logged at INFO."""
    action: Literal["notice", "deny"] = "notice" if cfg.notice_only else "deny"
    logger.info("%s %s: %s (call %d)", action, kind, shown_name(tool), index)
    return Decision(action, kind, text, rule, tool, index, evidence)


def stop_action(cfg: ToolGuardConfig) -> Literal["notice", "cancel"]:
    """``cancel``, or ``notice`` under ``notice_only`` (which never stops anything)."""
    return "notice" if cfg.notice_only else "cancel"


def notice(tool: str, index: int, kind: str, rule: str, text: str, evidence: dict[str, Any]) -> Intervention:
    """A ``notice`` intervention about the call ``index`` of ``tool``."""
    return Intervention("notice", kind, rule, text, tool, index, evidence)
