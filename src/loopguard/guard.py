"""ToolGuard: outcome-aware tool-loop detection and the intervention ladder (spec §5.2; seeds 001, 002).

The guard sits on a host's tool pipeline: :meth:`ToolGuard.before_call` runs
before a tool executes and may deny it; :meth:`ToolGuard.after_call` sees the
result and returns interventions (texts for the model, or a cancel signal).
Everything is keyed by ``session_id`` and survives new user messages (seed
001); :meth:`ToolGuard.reset` / :meth:`ToolGuard.dispose` forget it.

Rules (seed names; the texts are in :mod:`loopguard.messages`):

* **D1 zero-information repeat.**  Per (session, call key) the guard keeps
  the last result hash and how many executions in a row returned it.  The
  execution that makes the count reach the limit yields an I1 reminder; the
  next request of that key is denied before it runs (I3), the reason
  carrying hash evidence, a summary of the previous result (I2), one
  concrete alternative action and the escape hatch.  The next request of a
  denied key runs (an escape run); when it returns the same result the key
  is denied again, and after ``escape_runs`` such runs it is locked for the
  session; a different result resets the chain.  A result that
  changes (polling) never triggers.  The limit is ``repeat_limit`` (1 in
  replay mode, D1'), plus ``polling_grace`` for a key whose result has
  changed before in this session (a poll that made progress gets one more
  identical result before it is denied: the rollout that stays at "2 of 6"
  for one poll is not stuck).
  *Beyond the seed:* with ``progress_resets_repeats`` (default), a *new
  action* between two executions -- a call never made before in the
  session whose result is new information -- breaks the chain and unlocks
  the key: after an edit, re-running the same test is not zero-information
  (the world changed).  A repeated call whose result changed (a clock, an
  uptime, a poll) is not a new action, so a failing call alternated with
  such a probe is still caught.
  *What counts as information* (issue 15; ``docs/tools.md``): a call that
  changes the world -- its name, first or last word in ``state_tools`` (``edit``,
  ``update_order``, ``memory_save``, SWE-agent's ``open``), or a shell command
  that writes, edits in place, copies, checks out, installs or changes
  directory (:mod:`loopguard.shell`, ``state_commands``) -- starts a new epoch
  when it is new, something changed since it last ran, or its result changed
  (the same change again with nothing in between is a repeat).  A failure (the
  error flag, or a failure word near its start or end) is hashed with its
  counters masked (``mask_failure_counters``: line numbers, addresses, ids), so
  ``line 318: x: command not found`` and ``line 319: …`` are one failure.
  *No effect*: an observation (not a change, or a failed one, or one whose
  result shows 3+ lines) returning the same result for the 3rd time in a row,
  each within ``cycle_max_period`` calls of the last, with only repeated
  changes in between, gets a notice (``no_effect``; again every
  ``repeat_limit + 1``).  ``success_grace`` (0) adds to the limit of a key
  whose last result was not a failure.
* A result the host reports for a request that was denied or cancelled
  (seed 001 routes denials through the result pipeline) is ignored.
* **D1' replay.**  :meth:`ToolGuard.observe_attempt` compares the stream
  signature of adjacent attempts (reasoning + text + tool calls, at least
  ``min_replay_chars``); identical → replay mode (limit 1) until an attempt
  differs.
* **D2 drift.**  A result of a key whose non-empty line set has Jaccard
  ``>= overlap_threshold`` with one of the last ``overlap_window`` results
  of *other* keys (both with at least 3 lines) → I1.  *Beyond the seed:*
  only when the result adds no line absent from those recent results, so
  an edit whose confirmation echoes the file with the changed lines is not
  drift.  With ``ignore_boilerplate`` the line sets hold only content lines:
  not markup around a number (an exit-code wrapper), not "no output" lines,
  not the session's frame (lines at the edges of 3 in 4 of its last 16
  distinct results: a prompt, the working directory); a short result that
  states it printed nothing has no content and is compared with nothing.
  With ``drift_confirm`` the first near-copy is only "no new information";
  a notice comes when another follows within 3 calls.  *Rewording*: a call
  of the same tool (not a shell command; not a change unless it failed)
  sharing half of its argument words with the previous one (Jaccard) and
  getting the identical answer of fewer than 3 content lines is no new
  information, and a D2 notice from the second in a row.
* **D3 error avoidance.**  After a failed call, ``error_watch_steps`` calls
  without a remedial action → I1.  Remedial: a tool in ``remedial_tools``,
  or a call sharing a path-like argument value (a path, file name or URL)
  with the failed call, or a successful call of the failed tool (the tool
  works; the failure was about its input: batch work over items of which
  some fail is not avoidance), or an alternative of it (a tool whose name
  starts with the failed tool's words but the last: ``find_user_id_by_``),
  or a call whose argument words include a word of the failure message.  A
  later failure starts a new watch; a failure without content (grep's empty
  "no match") starts none.
* **D4 no progress.**  ``anchor_window`` consecutive calls without new
  information → I4 progress anchor.  *New information* = a (call key,
  result hash) pair never seen in the session that is not a D2 near-copy.
* **D5 unscoped search.**  A tool in ``search_tools`` without any non-empty
  ``scope_fields`` → deny (``unscoped_search="deny"``) or allow.  A
  shell-style call (a ``shell_tools`` tool, a ``command`` field, or a string
  whose first word is the tool) is read through its parsed command: a
  recursive search (``grep -r``, ``rg``, ``ag``, ``ack``, ``git grep``) of
  ``/`` or ``~`` per ``unscoped_search``, of the working directory (``.``,
  no path) per ``root_search`` (``"allow"``); other commands are not
  searches.  The identity of a one-line shell call whose arguments are just
  the command is its parsed command (quoting and spacing aside).
* **I5 circuit breaker.**  ``circuit_break_after`` interventions (counted
  once per call: a deny or notice before it, or reminders after it) since
  the last call that brought new information → an intervention telling the
  model to stop and report, with ``action="cancel"`` for the host; the
  count then starts again.
* **Cycles** (beyond the seeds).  A pattern of 2–``cycle_max_period`` calls
  of at least two keys whose executions repeat with identical results:
  ``cycle_notice_periods`` full periods → notice, after
  ``cycle_deny_periods`` full periods the next call continuing it is denied.
  Never while any result changes (the results are part of the pattern).
* **②b repeat streak** (seed 002).  ``repeat_call_limit`` consecutive
  requests with the same :func:`~loopguard.identity.action_fingerprint`
  (``description`` dropped) → ``cancel``; tools in ``repeat_call_exempt``
  never count.  With ``repeat_call_needs_same_result`` (default; loopguard's
  outcome-aware reading) a changed result restarts the streak, so a poll
  that makes progress is never cancelled -- but not the successful receipt
  of a call that changes the world repeated verbatim (the same edit inserted
  again: the file grows, the receipt changes); ``False`` is the seed's
  arguments-only rule.
* **② stall / ③ strikes** (seed 002) on an injectable ``clock`` (seconds):
  :meth:`ToolGuard.check_stall` reports ``stalled`` after ``stall_minutes``
  without a progress event (``stall_minutes_with_tool`` while a tool call is
  pending); :meth:`ToolGuard.strike` counts strong signals (text loop,
  stalled, repeat streak) and returns a cancel intervention when
  ``strikes_before_cancel`` fall within ``strike_window_minutes``.

``notice_only=True`` is the safe trial mode (seed 001 ``noticeOnly``): every
deny *and* every cancel (I5, ②b, ③, ②) becomes a notice; nothing is
stopped.  ``include`` / ``exclude`` are ``fnmatch`` globs on the tool name
(case-sensitive: ``todo_write`` does not exclude ``TodoWrite``); excluded
tools pass through D1–D5, cycles and I5 untouched, but the ②b repeat
streak still counts them unless they are in ``repeat_call_exempt`` (seed
002 has its own exemption list).  A request stopped by ②b does not run, so
no other rule sees it (an escape run is not used up by it).

Arguments never appear in errors, logs or evidence; intervention texts carry
at most ``arguments_preview_chars`` of them, redacted.
"""

from __future__ import annotations

import fnmatch
import functools
import hashlib
import logging
import posixpath
import re
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal

from . import identity, messages, shell
from .errors import ConfigError
from .identity import session_key
from .results import (
    DEFAULT_VOLATILE_FIELDS,
    content_line,
    is_failure,
    mask_counters,
    normalized,
    result_lines,
    says_nothing,
    stable_text,
    summarize_result,
    text_digest,
)

__all__ = [
    "DEFAULT_SHELL_TOOLS",
    "DEFAULT_STATE_TOOLS",
    "ToolGuardConfig",
    "ToolGuard",
    "Decision",
    "Intervention",
    "DECISION_ACTIONS",
    "GUARD_KINDS",
    "ToolCallDenied",
    "ToolLoopCancelled",
    "wrap_tool",
]

logger = logging.getLogger("loopguard.guard")

DECISION_ACTIONS = ("allow", "notice", "deny", "cancel")

#: Kinds of decisions and interventions, with the seed rule each comes from.
GUARD_KINDS: dict[str, str] = {
    "repeat": "D1",
    "locked": "D1",
    "no_effect": "D1",
    "drift": "D2",
    "error_avoidance": "D3",
    "no_progress": "D4",
    "unscoped_search": "D5",
    "circuit_breaker": "I5",
    "cycle": "cycle",
    "repeat_streak": "②b",
    "stalled": "②",
    "strikes": "③",
}

_EXCLUDE = ("job_output", "job_kill", "job_list", "ask_user_question", "schedule_*", "todo_write")
#: Tools whose string argument (or ``command`` field) is a shell command line.
DEFAULT_SHELL_TOOLS: tuple[str, ...] = (
    "bash",
    "sh",
    "zsh",
    "shell",
    "terminal",
    "run_shell_command",
    "run_command",
    "execute_command",
    "execute_bash",
    "exec",
    "run_terminal_cmd",
    "Bash",
    "local_shell",
    "container.exec",
)
#: Tools that change the world, matched (case-insensitively, as globs) against the tool's
#: name and its first and last words (``update_reservation`` → ``update``; ``memory_save`` →
#: ``save``; ``TodoWrite`` → ``write``).
DEFAULT_STATE_TOOLS: tuple[str, ...] = (
    "write*",
    "edit*",
    "multiedit",
    "notebookedit",
    "create*",
    "update*",
    "set",
    "add",
    "delete*",
    "remove*",
    "insert*",
    "modify*",
    "change*",
    "book*",
    "cancel*",
    "move*",
    "rename*",
    "copy*",
    "install*",
    "toggle*",
    "enable*",
    "disable*",
    "reset*",
    "apply*",
    "send*",
    "transfer*",
    "exchange*",
    "return*",
    "save*",
    "upload*",
    "patch*",
    "str_replace*",
    "open",
    "cd",
    "checkout*",
    "commit*",
    "push*",
    "merge*",
    "deploy*",
    "restart*",
    "start*",
    "stop*",
    "kill*",
    "grant*",
    "revoke*",
    "assign*",
    "refund*",
)
_WORD_SPLIT = re.compile(r"[_\-\s.:/]+|(?<=[a-z0-9])(?=[A-Z])")
_BIG = 1_000_000


def _strings(value: Any) -> tuple[str, ...]:
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise TypeError
    items = tuple(value)
    if not all(isinstance(v, str) and v for v in items):
        raise TypeError
    return items


@dataclass(frozen=True)
class ToolGuardConfig:
    """Every key of seed 001's config table and the 002 keys of spec §5.2, validated.

    Seed 001: ``repeat_limit`` (2), ``escape_runs`` (1), ``notice_only``
    (False), ``include`` (() = all tools), ``exclude`` (``job_output``,
    ``job_kill``, ``job_list``, ``ask_user_question``, ``schedule_*``,
    ``todo_write``), ``search_tools`` (``grep``, ``search``,
    ``search_file_content``), ``scope_fields`` (``path``, ``include``),
    ``unscoped_search`` (``"deny"`` | ``"allow"``), ``arguments_preview_chars``
    (300), ``overlap_threshold`` (0.9), ``overlap_window`` (10),
    ``error_watch_steps`` (3), ``remedial_tools`` (``read``), ``anchor_window``
    (5), ``replay_detection`` (True), ``min_replay_chars`` (100),
    ``circuit_break_after`` (6).

    Seed 002: ``repeat_call_limit`` (6), ``repeat_call_exempt``
    (``job_output``, ``job_list``), ``stall_minutes`` (10),
    ``stall_minutes_with_tool`` (45), ``strikes_before_cancel`` (2),
    ``strike_window_minutes`` (120).

    loopguard's own (documented in :mod:`loopguard.guard`):
    ``polling_grace`` (1; 0 = seed-exact D1), ``progress_resets_repeats``
    (True; False = seed-exact D1), ``repeat_call_needs_same_result`` (True;
    False = seed-exact ②b), ``cycle_max_period`` (5), ``cycle_notice_periods``
    (3), ``cycle_deny_periods`` (5), ``volatile_result_fields``
    (:data:`loopguard.results.DEFAULT_VOLATILE_FIELDS`),
    ``volatile_result_fields_by_tool`` ({glob: fields} replacing the default
    for matching tools), ``normalize_results`` (True),
    ``result_summary_chars`` (240), ``language`` (``"auto"`` | ``"en"`` |
    ``"zh"``), ``max_sessions`` (10_000, LRU), ``max_keys_per_session``
    (1024, LRU).

    Issue 15 (``docs/tools.md``): ``shell_tools`` (:data:`DEFAULT_SHELL_TOOLS`),
    ``state_tools`` (:data:`DEFAULT_STATE_TOOLS`), ``state_commands``
    (:data:`loopguard.shell.DEFAULT_STATE_COMMANDS`), ``root_search``
    (``"allow"`` | ``"notice"`` | ``"deny"``), ``mask_failure_counters``
    (True), ``ignore_boilerplate`` (True), ``drift_confirm`` (True),
    ``success_grace`` (0); ``False`` / ``0`` are the seed's readings.

    Sequences accept any iterable of non-empty strings and are stored as
    tuples.  Minutes may be fractional.

    Raises
    ------
    ConfigError
        (a ``ValueError``) naming the key, the value and the rule, at
        construction.

    Examples
    --------
    >>> ToolGuardConfig().repeat_limit, ToolGuardConfig(notice_only=True).notice_only
    (2, True)
    >>> ToolGuardConfig(repeat_limit=0)
    Traceback (most recent call last):
    ...
    loopguard.errors.ConfigError: ToolGuardConfig: repeat_limit=0 is invalid: must be an integer from 1 to 1000000
    """

    repeat_limit: int = 2
    escape_runs: int = 1
    notice_only: bool = False
    include: Sequence[str] = ()
    exclude: Sequence[str] = _EXCLUDE
    search_tools: Sequence[str] = ("grep", "search", "search_file_content")
    scope_fields: Sequence[str] = ("path", "include")
    unscoped_search: Literal["deny", "allow"] = "deny"
    arguments_preview_chars: int = 300
    overlap_threshold: float = 0.9
    overlap_window: int = 10
    error_watch_steps: int = 3
    remedial_tools: Sequence[str] = ("read",)
    anchor_window: int = 5
    replay_detection: bool = True
    min_replay_chars: int = 100
    circuit_break_after: int = 6
    # seed 002
    repeat_call_limit: int = 6
    repeat_call_exempt: Sequence[str] = ("job_output", "job_list")
    stall_minutes: float = 10
    stall_minutes_with_tool: float = 45
    strikes_before_cancel: int = 2
    strike_window_minutes: float = 120
    # loopguard
    polling_grace: int = 1
    success_grace: int = 0
    progress_resets_repeats: bool = True
    repeat_call_needs_same_result: bool = True
    cycle_max_period: int = 5
    cycle_notice_periods: int = 3
    cycle_deny_periods: int = 5
    volatile_result_fields: Sequence[str] = DEFAULT_VOLATILE_FIELDS
    volatile_result_fields_by_tool: Mapping[str, Sequence[str]] = field(default_factory=dict)
    normalize_results: bool = True
    result_summary_chars: int = 240
    language: Literal["auto", "en", "zh"] = "auto"
    max_sessions: int = 10_000
    max_keys_per_session: int = 1024
    # issue 15: what counts as information, state changes, shell-aware scope
    shell_tools: Sequence[str] = DEFAULT_SHELL_TOOLS
    state_tools: Sequence[str] = DEFAULT_STATE_TOOLS
    state_commands: Sequence[str] = shell.DEFAULT_STATE_COMMANDS
    root_search: Literal["allow", "notice", "deny"] = "allow"
    mask_failure_counters: bool = True
    ignore_boilerplate: bool = True
    drift_confirm: bool = True

    def __post_init__(self) -> None:
        ints = {
            "repeat_limit": (1, _BIG),
            "escape_runs": (0, _BIG),
            "arguments_preview_chars": (0, _BIG),
            "overlap_window": (1, 10_000),
            "error_watch_steps": (1, _BIG),
            "anchor_window": (1, _BIG),
            "min_replay_chars": (0, _BIG),
            "circuit_break_after": (1, _BIG),
            "repeat_call_limit": (1, _BIG),
            "strikes_before_cancel": (1, _BIG),
            "polling_grace": (0, _BIG),
            "success_grace": (0, _BIG),
            "cycle_max_period": (2, 64),
            "cycle_notice_periods": (2, _BIG),
            "cycle_deny_periods": (2, _BIG),
            "result_summary_chars": (16, _BIG),
            "max_sessions": (1, 100_000_000),
            "max_keys_per_session": (1, 100_000_000),
        }
        set_ = object.__setattr__
        for key, (lo, hi) in ints.items():
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
                raise ConfigError(key, value, f"an integer from {lo} to {hi}", owner="ToolGuardConfig")
        for key in (
            "notice_only",
            "replay_detection",
            "progress_resets_repeats",
            "repeat_call_needs_same_result",
            "normalize_results",
            "mask_failure_counters",
            "ignore_boilerplate",
            "drift_confirm",
        ):
            value = getattr(self, key)
            if not isinstance(value, bool):
                raise ConfigError(key, value, "True or False", owner="ToolGuardConfig")
        for key in ("stall_minutes", "stall_minutes_with_tool", "strike_window_minutes"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1e7:
                raise ConfigError(key, value, "a number of minutes > 0", owner="ToolGuardConfig")
        value = self.overlap_threshold
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
            raise ConfigError("overlap_threshold", value, "a number in (0, 1]", owner="ToolGuardConfig")
        for key in (
            "include",
            "exclude",
            "search_tools",
            "scope_fields",
            "remedial_tools",
            "repeat_call_exempt",
            "volatile_result_fields",
            "shell_tools",
            "state_tools",
            "state_commands",
        ):
            value = getattr(self, key)
            try:
                set_(self, key, _strings(value))
            except TypeError:
                raise ConfigError(key, value, "a list of non-empty strings", owner="ToolGuardConfig") from None
        by_tool = self.volatile_result_fields_by_tool
        if not isinstance(by_tool, Mapping):
            raise ConfigError(
                "volatile_result_fields_by_tool",
                by_tool,
                "a mapping of tool glob -> list of field names",
                owner="ToolGuardConfig",
            )
        checked: dict[str, tuple[str, ...]] = {}
        for glob, names in by_tool.items():
            try:
                if not isinstance(glob, str) or not glob:
                    raise TypeError
                checked[glob] = _strings(names) if names else ()
            except TypeError:
                raise ConfigError(
                    "volatile_result_fields_by_tool",
                    by_tool,
                    "a mapping of tool glob -> list of field names",
                    owner="ToolGuardConfig",
                ) from None
        set_(self, "volatile_result_fields_by_tool", checked)
        if self.root_search not in ("allow", "notice", "deny"):
            raise ConfigError("root_search", self.root_search, "'allow', 'notice' or 'deny'", owner="ToolGuardConfig")
        if self.unscoped_search not in ("deny", "allow"):
            raise ConfigError("unscoped_search", self.unscoped_search, "'deny' or 'allow'", owner="ToolGuardConfig")
        if self.language not in messages.LANGUAGES:
            raise ConfigError("language", self.language, "'auto', 'en' or 'zh'", owner="ToolGuardConfig")
        if self.unscoped_search == "deny" and not self.scope_fields:
            raise ConfigError(
                "scope_fields",
                self.scope_fields,
                "at least one field name while unscoped_search='deny'",
                owner="ToolGuardConfig",
            )
        if self.cycle_deny_periods < self.cycle_notice_periods:
            raise ConfigError(
                "cycle_deny_periods",
                self.cycle_deny_periods,
                f">= cycle_notice_periods ({self.cycle_notice_periods})",
                owner="ToolGuardConfig",
            )

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> ToolGuardConfig:
        """Build from a mapping (a parsed config file); unknown keys → ``ConfigError``.
        camelCase keys of the seed's table (``repeatLimit``) are accepted too."""
        if not isinstance(data, Mapping):
            raise TypeError(f"ToolGuardConfig.from_mapping needs a mapping, not {type(data).__name__}")
        known = {f.name for f in fields(cls)}
        values: dict[str, Any] = {}
        given: dict[str, str] = {}  # snake_case name -> the key as written
        for key, value in data.items():
            if not isinstance(key, str):
                raise ConfigError(
                    str(key), value, "a known key (see ToolGuardConfig's docstring)", owner="ToolGuardConfig"
                )
            name = re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()
            if name not in known:
                raise ConfigError(key, value, "a known key (see ToolGuardConfig's docstring)", owner="ToolGuardConfig")
            if name in values:
                raise ConfigError(key, value, f"given once (also given as {given[name]!r})", owner="ToolGuardConfig")
            values[name] = value
            given[name] = key
        try:
            return cls(**values)
        except ConfigError as exc:  # name the key as the user wrote it
            if exc.key in given and given[exc.key] != exc.key:
                raise ConfigError(given[exc.key], exc.value, exc.rule, owner="ToolGuardConfig") from None
            raise

    def replace(self, **changes: Any) -> ToolGuardConfig:
        """A copy with ``changes`` applied (validated like the constructor); an
        unknown key raises ``ConfigError``."""
        known = {f.name for f in fields(self)}
        for key, value in changes.items():
            if key not in known:
                raise ConfigError(key, value, "a known key (see ToolGuardConfig's docstring)", owner="ToolGuardConfig")
        return replace(self, **changes)

    def volatile_fields_for(self, tool: str) -> tuple[str, ...]:
        """The volatile result fields for ``tool`` (the first matching per-tool glob wins)."""
        for glob, names in self.volatile_result_fields_by_tool.items():
            if fnmatch.fnmatchcase(tool, glob):
                return tuple(names)
        return tuple(self.volatile_result_fields)


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
        The seed rule (``"D1"``, ``"D5"``, ``"②b"``, …), ``""`` for a plain allow.
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
        """A JSON-ready dict."""
        return {
            "action": self.action,
            "kind": self.kind,
            "rule": self.rule,
            "tool": self.tool,
            "call_index": self.call_index,
            "reason": self.reason,
            "evidence": dict(self.evidence),
        }


@dataclass(frozen=True)
class Intervention:
    """A message for the model after a call (seed 001 I1/I4/I5; seed 002 signals).

    Attributes
    ----------
    action : str
        ``"notice"`` (add ``text`` to the conversation) or ``"cancel"`` (add
        it and cancel the turn: I5, ②b, ③).
    kind : str
        See :data:`GUARD_KINDS`.
    rule : str
        The seed rule.
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
        """A JSON-ready dict."""
        return {
            "action": self.action,
            "kind": self.kind,
            "rule": self.rule,
            "tool": self.tool,
            "call_index": self.call_index,
            "text": self.text,
            "evidence": dict(self.evidence),
            "source": self.source,
        }


class _Key:
    """D1 state of one call key."""

    __slots__ = (
        "tool",
        "last",
        "same",
        "epoch",
        "denied",
        "escapes",
        "escaping",
        "locked",
        "changed",
        "head",
        "error",
        "lang",
        "moved",
        "across",
        "ran_at",
        "changes",
        "new_changes",
        "effect_at",
    )

    def __init__(self, tool: str) -> None:
        self.tool = tool
        self.last: str | None = None  # last result hash
        self.same = 0  # executions in a row that returned it
        self.epoch = 0  # session progress epoch after its last execution
        self.denied = False  # the last request was denied
        self.escapes = 0  # escape runs used in this chain
        self.escaping = False  # the current execution is an escape run
        self.locked = False
        self.changed = False  # the key's result has changed before
        self.head = ""  # the start of the last result (for I2 summaries, rendered only when denying)
        self.error = False
        self.lang = "en"
        self.moved = False  # the world changed since its last execution (seen by before_call)
        self.across = 0  # close executions in a row with the same result, changes in between or not
        self.ran_at = -_BIG  # the session's execution count at its last execution
        self.changes = 0  # the session's count of state changes at its last execution
        self.new_changes = 0  # ... and of those made by calls never made before
        self.effect_at = 0  # the ``across`` count at which the next no-effect notice may come


class _Session:
    __slots__ = (
        "keys",
        "seen",
        "recent",
        "epoch",
        "history",
        "cycle_noticed",
        "watch",
        "no_new",
        "streak",
        "streak_index",
        "calls",
        "replay",
        "signature",
        "streak_fp",
        "streak_count",
        "streak_result",
        "strikes",
        "executions",
        "last_call",
        "blocked",
        "last_progress",
        "pending",
        "stalled",
        "call_ids",
        "lang",
        "frame",
        "frame_hist",
        "frame_digests",
        "drift_at",
        "changes",
        "new_changes",
        "reworded",
    )

    def __init__(self, now: float) -> None:
        self.keys: OrderedDict[str, _Key] = OrderedDict()
        self.seen: OrderedDict[int, None] = OrderedDict()  # hashes of (call key, result hash)
        self.recent: deque[tuple[str, str, frozenset[str]]] = deque()
        self.epoch = 0
        self.history: deque[tuple[str, str, str]] = deque()  # (key, result hash, tool) of executions
        self.cycle_noticed: set[tuple[int, int]] = set()
        # D3: (tool, its name family, paths, the failure's words, calls since)
        self.watch: tuple[str, str, frozenset[str], frozenset[str], int] | None = None
        self.no_new = 0  # D4
        self.streak = 0  # I5: calls with interventions since new information
        self.streak_index = -1  # last call index counted in ``streak``
        self.calls = 0
        self.executions = 0
        self.last_call: tuple[str, Any, Any, str, _Shell | None] | None = None
        self.blocked: set[str] = set()  # keys whose last request was denied or cancelled
        self.replay = False
        self.signature: str | None = None
        self.streak_fp: str | None = None  # ②b
        self.streak_count = 0
        self.streak_result: str | None = None
        self.strikes: deque[tuple[float, str]] = deque()
        self.last_progress = now
        self.pending = 0
        self.stalled = False
        self.call_ids: OrderedDict[Hashable, tuple[str, int, Decision | None]] = OrderedDict()
        self.lang = "en"
        self.drift_at = -_BIG  # execution index of the last D2 near-copy
        # per tool: (hashes of its last call's argument words, its call key, result hash, reworded calls in a row)
        self.reworded: OrderedDict[str, tuple[frozenset[int], str, str, int]] = OrderedDict()
        self.changes = 0  # calls that changed the world (state changes) so far
        self.new_changes = 0  # ... made by calls never made before in the session
        self.frame_digests: set[str] = set()  # the result hashes in frame_hist
        self.frame: dict[int, int] = {}  # hash of an edge line -> how many of the recent results hold it
        self.frame_hist: deque[tuple[str, frozenset[int]]] = deque()  # (result hash, edge lines) of distinct results


_SEEN_MAX = 4096
_REWORD_SHARE = 0.5  # a reworded call shares at least half of its argument words (Jaccard) with the last one
_REWORD_TOOLS = 64  # tools whose last call the session remembers (as hashes) for rewording
_DRIFT_RECUR = 3  # a D2 near-copy is a notice when another came at most this many executions before
_FRAME_RESULTS = 16  # results the session's frame (lines every result carries) is learned from
_FRAME_EDGE = 8  # lines at each end of a result that may be frame
_FRAME_MIN = 3  # a frame line is in at least this many of them, and in 3 of 4 of them
_SHELL_CACHE_MAX = 4096


class _Shell:
    """What the guard reads from a shell-style call (never the command itself)."""

    __slots__ = ("changes", "scope", "identity")

    def __init__(self, changes: bool, scope: str | None, identity: str | None) -> None:
        self.changes, self.scope, self.identity = changes, scope, identity


_CALL_IDS_MAX = 256
_PATH_KEY = re.compile(r"(?i)(path|file|dir|folder|url|uri|cwd|target)")
_PATH_TOKEN = re.compile(
    r"""(?:[A-Za-z][A-Za-z0-9+.-]*://[^\s'"`]+|[^\s'"`=:,;()<>|&]*[/\\][^\s'"`,;()<>|&]*|[^\s'"`=:,;()<>|&/\\]+\.[A-Za-z0-9]{1,8})"""
)
_MATCH_LINE = re.compile(r"(?m)^\s*([^\s:]+\.[A-Za-z0-9]{1,8}):(\d+)[:\s]")


def _path_values(args: Any) -> frozenset[str]:
    """Path-like values of a call's arguments: values of keys named like paths,
    files, dirs or URLs, and path/URL/file-name tokens inside any string."""
    out: set[str] = set()

    def walk(value: Any, key: str, depth: int) -> None:
        if depth > 20 or len(out) > 256:
            return
        if isinstance(value, str):
            if _PATH_KEY.search(key) and value.strip():
                out.add(_norm_path(value.strip()))
            for token in _PATH_TOKEN.findall(value[:4096]):
                token = token.rstrip(".")
                if len(token) > 2:
                    out.add(_norm_path(token))
        elif isinstance(value, Mapping):
            for k, v in value.items():
                walk(v, str(k), depth + 1)
        elif isinstance(value, (list, tuple)):
            for v in value:
                walk(v, key, depth + 1)

    walk(args, "", 0)
    return frozenset(out)


_WORD = re.compile(r"[^\W_]{3,}")


def _words(text: str) -> frozenset[str]:
    """The words (3+ letters or digits, lower-cased) of a failure message."""
    return frozenset(w.lower() for w in _WORD.findall(text))


def _arg_words(args: Any) -> frozenset[str]:
    """The words of a call's argument values (read, never stored: D3 compares them with the
    failure message's words)."""
    if isinstance(args, Mapping) and all(isinstance(v, str) for v in args.values()):  # the common shape
        return frozenset(w.lower() for w in _WORD.findall(" ".join(v[:2048] for v in args.values()))) - _COMMON_WORDS
    out: set[str] = set()
    stack: list[tuple[Any, int]] = [(args, 0)]
    while stack and len(out) < 256:
        value, depth = stack.pop()
        if isinstance(value, str):
            out.update(w.lower() for w in _WORD.findall(value[:2048]))
        elif isinstance(value, float) or (
            isinstance(value, int) and not isinstance(value, bool) and value.bit_length() <= 256
        ):  # (no 4,300-digit text)
            out.update(_WORD.findall(repr(value)))
        elif depth < 20 and isinstance(value, Mapping):
            stack.extend((v, depth + 1) for v in value.values())
        elif depth < 20 and isinstance(value, (list, tuple)):
            stack.extend((v, depth + 1) for v in value)
    return frozenset(out - _COMMON_WORDS)


#: Words too common in failure messages to tie a call to one.
_COMMON_WORDS = frozenset(
    {
        "error",
        "the",
        "and",
        "not",
        "found",
        "failed",
        "for",
        "with",
        "true",
        "false",
        "none",
        "null",
        "file",
        "line",
        "name",
        "value",
        "type",
        "must",
        "cannot",
        "invalid",
    }
)


def _name_words(tool: str) -> list[str]:
    """A tool's name as lower-case words (``_``, ``-``, ``.``, spaces and camelCase split)."""
    return [w.lower() for w in _WORD_SPLIT.split(tool) if w]


def _tool_words(tool: str) -> str:
    """A tool's name as lower-case words joined by ``_``, ending with ``_``."""
    return "".join(w + "_" for w in _name_words(tool))


def _family(tool: str) -> str:
    """A tool's name family: its words but the last (``_tool_words`` form), when at least two
    remain (``find_user_id_by_email`` → ``find_user_id_by_``: ``find_user_id_by_name_zip``,
    whose words start so, is another way to the same thing); ``""`` otherwise."""
    words = _name_words(tool)
    return "".join(w + "_" for w in words[:-1]) if len(words) >= 3 else ""


def _norm_path(value: str) -> str:
    """``./a.py`` → ``a.py``, ``src//x/`` → ``src/x``; URLs as they are."""
    if "://" in value:
        return value.rstrip("/")
    return posixpath.normpath(value.replace("\\", "/"))


def _matches(tool: str, globs: Sequence[str]) -> bool:
    return any(fnmatch.fnmatchcase(tool, g) for g in globs)


def _has_scope(args: Any, scope_fields: Sequence[str]) -> bool:
    if not isinstance(args, Mapping):
        return False
    for name in scope_fields:
        value = args.get(name)
        if value is None or value == "" or value == [] or value == {}:
            continue
        return True
    return False


def _check_tool(tool: Any) -> str:
    if not isinstance(tool, str):
        raise TypeError(f"tool must be a non-empty str, not {type(tool).__name__}")
    if not tool:
        raise TypeError("tool must be a non-empty str, got ''")
    return tool


def _check_call_id(call_id: Any) -> None:
    if call_id is not None:
        try:
            hash(call_id)
        except TypeError:
            raise TypeError(f"call_id must be hashable (a str or int), not {type(call_id).__name__}") from None


class ToolGuard:
    """Outcome-aware tool-loop guard for many sessions (spec §5.2; seeds 001, 002).

    Parameters
    ----------
    config : ToolGuardConfig | Mapping | None
        The configuration (``None`` = defaults; a mapping goes through
        :meth:`ToolGuardConfig.from_mapping`).
    clock : callable returning seconds, optional
        Time source for ② stall and ③ strikes (default ``time.monotonic``);
        inject a fake clock in tests.

    Thread-safe: one lock guards all sessions.  Memory: at most
    ``max_sessions`` sessions (least recently used evicted), each with at
    most ``max_keys_per_session`` call keys, 8192 seen (key, result) pairs,
    ``overlap_window`` line sets and a few dozen history entries.

    Raises
    ------
    ConfigError
        for an invalid configuration.

    Examples
    --------
    >>> guard = ToolGuard()
    >>> for _ in range(2):
    ...     guard.before_call("s1", "grep", {"pattern": "x", "path": "src"}).action
    ...     [i.kind for i in guard.after_call("s1", "grep", {"pattern": "x", "path": "src"}, "a.py:3: x")]
    'allow'
    []
    'allow'
    ['repeat']
    >>> guard.before_call("s1", "grep", {"pattern": "x", "path": "src"}).action
    'deny'
    """

    def __init__(
        self, config: ToolGuardConfig | Mapping[str, Any] | None = None, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if config is None:
            config = ToolGuardConfig()
        elif isinstance(config, Mapping):
            config = ToolGuardConfig.from_mapping(config)
        elif not isinstance(config, ToolGuardConfig):
            raise TypeError(f"config must be a ToolGuardConfig, a mapping or None, not {type(config).__name__}")
        if not callable(clock):
            raise TypeError("clock must be a callable returning seconds")
        now = clock()
        if isinstance(now, bool) or not isinstance(now, (int, float)):
            raise TypeError(f"clock must return seconds as an int or float, not {type(now).__name__}")
        self.config: ToolGuardConfig = config
        self._clock = clock
        self._sessions: OrderedDict[str, _Session] = OrderedDict()
        self._lock = threading.RLock()
        self._tracked_cache: dict[str, bool] = {}
        self._exempt_cache: dict[str, bool] = {}
        self._state_cache: dict[str, bool] = {}
        self._shell_cache: dict[tuple[str, int, bool], _Shell] = {}  # (tool, hash of the command, all args) -> facts

    def __repr__(self) -> str:
        return f"ToolGuard(sessions={len(self._sessions)})"

    def __len__(self) -> int:
        """The number of sessions with state."""
        return len(self._sessions)

    # ------------------------------------------------------------------ state

    def _session(self, session_id: Any) -> _Session:
        sid = session_key(session_id)
        state = self._sessions.get(sid)
        if state is None:
            state = self._sessions[sid] = _Session(self._clock())
            while len(self._sessions) > self.config.max_sessions:
                self._sessions.popitem(last=False)
        else:
            self._sessions.move_to_end(sid)
        return state

    def _key(self, s: _Session, key: str, tool: str) -> _Key:
        state = s.keys.get(key)
        if state is None:
            state = s.keys[key] = _Key(tool)
            state.epoch = s.epoch
            while len(s.keys) > self.config.max_keys_per_session:
                s.keys.popitem(last=False)
        else:
            s.keys.move_to_end(key)
        return state

    def _tracked(self, tool: str) -> bool:
        known = self._tracked_cache.get(tool)
        if known is None:
            cfg = self.config
            known = (not cfg.include or _matches(tool, cfg.include)) and not _matches(tool, cfg.exclude)
            if len(self._tracked_cache) < 4096:
                self._tracked_cache[tool] = known
        return known

    def _state_tool(self, tool: str) -> bool:
        """Whether ``tool`` changes the world by its name (``state_tools`` globs, matched
        without case against the name, its first word and its last word: ``update_order``,
        ``memory_save``, ``TodoWrite``)."""
        known = self._state_cache.get(tool)
        if known is None:
            words = _name_words(tool) or [tool.lower()]
            names = {tool.lower(), words[0], words[-1]}
            known = any(fnmatch.fnmatchcase(name, g.lower()) for name in names for g in self.config.state_tools)
            if len(self._state_cache) < 4096:
                self._state_cache[tool] = known
        return known

    def _shell(self, tool: str, args: Any) -> _Shell | None:
        """The parsed command of a shell-style call (:mod:`loopguard.shell`), or ``None``.
        Cached by a hash of the command: the cache holds facts, never the command."""
        if isinstance(args, str) and _matches(tool, self.config.shell_tools):
            text: str | None = args
        else:
            text = shell.command_of(tool, args)
        if text is None:
            return None
        # the parsed command is the identity only when it is all of the arguments, on one line
        # (a here-document's body or an edit's text is not in the parse)
        whole = (text is args or (isinstance(args, Mapping) and len(args) == 1)) and "\n" not in text.strip()
        ckey = (tool, hash(text), whole)
        facts = self._shell_cache.get(ckey)
        if facts is None:
            commands = shell.parse(text)
            identity_ = None
            if whole and commands:
                canon = "\x1e".join(
                    "\x1f".join(c.words) + ("\x1d" + "\x1f".join(c.writes) if c.writes else "") for c in commands
                )
                identity_ = hashlib.sha256(f"{tool}\nshell\n{canon}".encode("utf-8", "surrogatepass")).hexdigest()
            facts = _Shell(
                shell.changes_state(commands, self.config.state_commands), shell.search_scope(commands), identity_
            )
            if len(self._shell_cache) >= _SHELL_CACHE_MAX:
                self._shell_cache.clear()
            self._shell_cache[ckey] = facts
        return facts

    def _identity(self, tool: str, args: Any) -> tuple[str, _Shell | None]:
        """The call key (spec §4's call hash; for a shell-style call whose arguments are
        just the command, the hash of its parsed command: quoting and spacing aside,
        the same command is the same call) and the shell facts."""
        facts = self._shell(tool, args)
        if facts is not None and facts.identity is not None:
            return facts.identity, facts
        return _call_key(tool, args), facts

    def reset(self, session_id: Any = None) -> None:
        """Forget one session's state (``session_id`` given) or every session's."""
        with self._lock:
            if session_id is None:
                self._sessions.clear()
            else:
                self._sessions.pop(session_key(session_id), None)

    def dispose(self) -> None:
        """Forget all state; the guard stays usable."""
        self.reset()

    # -------------------------------------------------------------- helpers

    def _count_intervention(self, s: _Session, index: int) -> Intervention | None:
        """I5: count a call with an intervention; the breaker when the streak is full."""
        if s.streak_index == index:
            return None
        s.streak_index = index
        s.streak += 1
        if s.streak < self.config.circuit_break_after:
            return None
        count, s.streak = s.streak, 0
        text = messages.render("circuit_breaker", s.lang, count=count)
        logger.warning("circuit breaker: %d interventions without progress (session call %d)", count, index)
        return Intervention(
            self._stop_action(), "circuit_breaker", "I5", text, call_index=index, evidence={"interventions": count}
        )

    def _lang(self, s: _Session, sample: str) -> str:
        lang = messages.pick_language(self.config.language, sample)
        if self.config.language == "auto" and not sample.strip():
            lang = s.lang
        s.lang = lang
        return lang

    def _limit(self, s: _Session, k: _Key) -> int:
        if s.replay:
            return 1
        return (
            self.config.repeat_limit
            + (self.config.polling_grace if k.changed else 0)
            + (0 if k.error else self.config.success_grace)
        )

    def _broken_chain(self, s: _Session, k: _Key) -> bool:
        return self.config.progress_resets_repeats and k.epoch != s.epoch

    def _cycle(self, s: _Session, key: str | None = None) -> tuple[int, int, int] | None:
        """(period, full periods, run length) of the longest cyclic tail of
        executions, or ``None``; with ``key`` only a cycle whose next call is ``key``."""
        hist = s.history
        n = len(hist)
        best: tuple[int, int, int] | None = None
        for p in range(2, self.config.cycle_max_period + 1):
            if n < 2 * p:
                break
            run = p
            i = n - 1
            while i - p >= 0 and hist[i][:2] == hist[i - p][:2]:
                run += 1
                i -= 1
            periods = run // p
            if periods < 2:
                continue
            unit = [hist[j][0] for j in range(n - p, n)]
            if len(set(unit)) < 2:
                continue
            # the primitive period only: a multiple of a shorter cycle is that cycle
            if any(p % q == 0 and all(hist[j][:2] == hist[j - q][:2] for j in range(n - p, n)) for q in range(2, p)):
                continue
            if key is not None and hist[n - p][0] != key:
                continue
            if best is None or periods > best[1]:
                best = (p, periods, run)
        return best

    def _tools_of_cycle(self, s: _Session, period: int) -> str:
        tools = [s.history[j][2] for j in range(len(s.history) - period, len(s.history))]
        return " → ".join(f"`{t}`" for t in tools)

    # ---------------------------------------------------------- before_call

    def before_call(self, session_id: Any, tool: str, args: Any, *, call_id: Hashable | None = None) -> Decision:
        """Decide about a tool call before it runs (the ``tools/pre-execute`` seam of seed 001).

        Parameters
        ----------
        session_id : Any
            The session (``None`` → ``"default"``; see :func:`loopguard.session_key`).
        tool : str
            The tool name (non-empty).
        args : Any
            The arguments: a JSON-like value or a JSON string (parsed first).
        call_id : hashable, optional
            The host's call id: a request seen twice with the same id (two
            wrappers) is decided once; the second sight returns the first
            decision.

        Returns
        -------
        Decision
            ``allow`` | ``notice`` | ``deny`` | ``cancel`` with kind, reason, evidence.

        Raises
        ------
        TypeError
            when ``tool`` is not a non-empty ``str`` (nothing is recorded).
        """
        tool = _check_tool(tool)
        _check_call_id(call_id)
        parsed = _parse(args)
        key, facts = self._identity(tool, parsed)
        with self._lock:
            s = self._session(session_id)
            if call_id is not None:
                seen = s.call_ids.get(call_id)
                if seen is not None and seen[0] == key and seen[2] is not None:
                    return seen[2]
            s.last_call = (tool, args, parsed, key, facts)
            decision = self._before(s, tool, parsed, key, facts)
            if decision.allowed:
                s.blocked.discard(key)
            else:
                if len(s.blocked) >= self.config.max_keys_per_session:
                    s.blocked.clear()
                s.blocked.add(key)
            if call_id is not None:
                s.call_ids[call_id] = (key, decision.call_index, decision)
                while len(s.call_ids) > _CALL_IDS_MAX:
                    s.call_ids.popitem(last=False)
            return decision

    def _before(self, s: _Session, tool: str, args: Any, key: str, facts: _Shell | None) -> Decision:
        cfg = self.config
        index = s.calls
        s.calls += 1
        s.last_progress = self._clock()
        s.stalled = False
        # ②b repeat streak on the action fingerprint (seed 002)
        streak_decision: Decision | None = None
        exempt = self._exempt_cache.get(tool)
        if exempt is None:
            exempt = _matches(tool, cfg.repeat_call_exempt)
            if len(self._exempt_cache) < 4096:
                self._exempt_cache[tool] = exempt
        if not exempt:
            fp = key if not (isinstance(args, Mapping) and "description" in args) else _fingerprint(tool, args)
            if fp == s.streak_fp:
                s.streak_count += 1
            else:
                s.streak_fp, s.streak_count, s.streak_result = fp, 1, None
            if s.streak_count >= cfg.repeat_call_limit:
                lang = self._lang(s, "")
                text = messages.render("repeat_streak", lang, tool=tool, count=s.streak_count)
                evidence = {"count": s.streak_count, "limit": cfg.repeat_call_limit, "fingerprint": fp[:12]}
                self._strike(s, "repeat_streak")
                logger.warning("repeat streak: %s requested %d times in a row (%s)", tool, s.streak_count, fp[:12])
                streak_decision = Decision(self._stop_action(), "repeat_streak", text, "②b", tool, index, evidence)
                if streak_decision.action == "cancel":
                    return streak_decision  # the call does not run: no other rule sees it
        else:
            s.streak_fp, s.streak_count, s.streak_result = None, 0, None
        if not self._tracked(tool):
            decision = streak_decision or Decision("allow", tool=tool, call_index=index)
        else:
            decision = self._before_tracked(s, tool, args, key, index, facts)
            if decision.action == "allow" and streak_decision is not None:
                decision = streak_decision
            if decision.action in ("notice", "deny"):
                breaker = self._count_intervention(s, index)
                if breaker is not None:
                    decision = Decision(
                        breaker.action,
                        "circuit_breaker",
                        decision.reason + "\n" + breaker.text,
                        "I5",
                        tool,
                        index,
                        {**decision.evidence, **breaker.evidence},
                    )
        if decision.allowed:
            s.pending += 1
        return decision

    def _stop_action(self) -> Literal["notice", "cancel"]:
        """``cancel``, or ``notice`` under ``notice_only`` (which never stops anything)."""
        return "notice" if self.config.notice_only else "cancel"

    def _deny(self, kind: str, rule: str, text: str, tool: str, index: int, evidence: dict[str, Any]) -> Decision:
        action: Literal["notice", "deny"] = "notice" if self.config.notice_only else "deny"
        logger.info("%s %s: %s (call %d)", action, kind, tool, index)
        return Decision(action, kind, text, rule, tool, index, evidence)

    def _before_tracked(
        self, s: _Session, tool: str, args: Any, key: str, index: int, facts: _Shell | None
    ) -> Decision:
        cfg = self.config
        # D5 unscoped search: a shell-style call by its parsed command (a recursive search of
        # the machine per unscoped_search, of the working directory per root_search), other
        # search tools by their scope fields
        if facts is not None and facts.scope in ("root", "machine"):
            action = cfg.unscoped_search if facts.scope == "machine" else cfg.root_search
            unscoped = action != "allow"
        else:
            action = cfg.unscoped_search
            # a shell-style call that is not a recursive search reads what it names
            unscoped = (
                facts is None
                and cfg.unscoped_search == "deny"
                and _matches(tool, cfg.search_tools)
                and not _has_scope(args, cfg.scope_fields)
            )
        if unscoped:
            preview = messages.arguments_preview(args, cfg.arguments_preview_chars)
            lang = self._lang(s, preview)
            text = messages.render(
                "unscoped_deny",
                lang,
                tool=tool,
                fields=" / ".join(f"`{f}`" for f in cfg.scope_fields),
                field=cfg.scope_fields[0],
                args=messages.render("args_preview", lang, preview=preview) if preview else "",
            )
            evidence: dict[str, Any] = {"scope_fields": list(cfg.scope_fields)}
            if facts is not None and facts.scope is not None:
                evidence["scope"] = facts.scope
            if action == "notice":
                return Decision("notice", "unscoped_search", text, "D5", tool, index, evidence)
            return self._deny("unscoped_search", "D5", text, tool, index, evidence)
        k = s.keys.get(key)
        if k is not None:
            if self._broken_chain(s, k):
                k.same, k.locked, k.denied, k.escapes, k.escaping = 0, False, False, 0, False
                k.epoch = s.epoch
                k.moved = True
            s.keys.move_to_end(key)
            digest = (k.last or "")[:16]
            if k.locked:
                text = messages.render(
                    "repeat_deny",
                    k.lang,
                    tool=tool,
                    count=k.same,
                    digest=digest,
                    summary=summarize_result(k.head, max_chars=cfg.result_summary_chars),
                    alternative=_alternative(k.head, k.error, k.lang),
                    args="",
                    escape=messages.render("no_escape", k.lang),
                )
                return self._deny("locked", "D1", text, tool, index, {"count": k.same, "hash": digest, "locked": True})
            limit = self._limit(s, k)
            if k.last is not None and k.same >= limit:
                if k.denied and k.escapes < cfg.escape_runs:
                    k.escapes += 1
                    k.escaping = True
                    k.denied = False
                    logger.info("escape run: %s (call %d)", tool, index)
                    return Decision(
                        "allow", "repeat", "", "D1", tool, index, {"escape_run": True, "count": k.same, "hash": digest}
                    )
                k.denied = True
                preview = messages.arguments_preview(args, cfg.arguments_preview_chars)
                escape = messages.render("escape" if k.escapes < cfg.escape_runs else "no_escape", k.lang)
                text = messages.render(
                    "repeat_deny",
                    k.lang,
                    tool=tool,
                    count=k.same,
                    digest=digest,
                    summary=summarize_result(k.head, max_chars=cfg.result_summary_chars),
                    alternative=_alternative(k.head, k.error, k.lang),
                    escape=escape,
                    args=messages.render("args_preview", k.lang, preview=preview) if preview else "",
                )
                if s.replay:
                    text = text.replace("\n", messages.render("replay", k.lang) + "\n", 1)
                return self._deny(
                    "repeat",
                    "D1",
                    text,
                    tool,
                    index,
                    {"count": k.same, "limit": limit, "hash": digest, "replay": s.replay},
                )
        # cycles: deny the call that continues a long cycle
        cycle = self._cycle(s, key)
        if cycle is not None and cycle[1] >= cfg.cycle_deny_periods:
            period, periods, _ = cycle
            text = messages.render(
                "cycle_deny", s.lang, period=period, periods=periods, tools=self._tools_of_cycle(s, period)
            )
            return self._deny("cycle", "cycle", text, tool, index, {"period": period, "periods": periods})
        return Decision("allow", tool=tool, call_index=index)

    # ----------------------------------------------------------- after_call

    def after_call(
        self,
        session_id: Any,
        tool: str,
        args: Any,
        result: Any,
        *,
        error: bool = False,
        call_id: Hashable | None = None,
    ) -> list[Intervention]:
        """Observe a tool result (the ``tools/post-execute`` seam of seed 001).

        Parameters
        ----------
        session_id, tool, args, call_id
            As for :meth:`before_call` (a ``call_id`` whose result was
            already observed is ignored: ``[]``).
        result : str | bytes | JSON-like
            The tool's result; hashed canonically after normalisation
            (:mod:`loopguard.results`).
        error : bool
            The tool failed (part of the result hash; starts a D3 watch).

        Returns
        -------
        list[Intervention]
            Reminders (I1: D1, D2, D3, cycle), the progress anchor (I4), and
            the circuit breaker (I5, ``action="cancel"``), in that order.

        Raises
        ------
        TypeError
            when ``tool`` is not a non-empty ``str`` or ``error`` is not a bool.
        """
        tool = _check_tool(tool)
        _check_call_id(call_id)
        if not isinstance(error, bool):
            raise TypeError(f"error must be a bool, not {type(error).__name__}")
        with self._lock:
            s = self._session(session_id)
            last = s.last_call
            if last is not None and last[1] is args and last[0] == tool:
                parsed, key, facts = last[2], last[3], last[4]  # the object before_call just hashed
            else:
                parsed = _parse(args)
                key, facts = self._identity(tool, parsed)
            s.last_call = None
            if key in s.blocked:
                # the host reports the result of a request that was denied or cancelled (the seed
                # routes denials through the result pipeline): the tool did not run, nothing to learn
                logger.debug("after_call of a denied %s request ignored", tool)
                return []
            index = s.calls - 1
            if call_id is not None:
                seen = s.call_ids.get(call_id)
                if seen is not None and seen[0] == key and seen[2] is None:
                    return []
                if seen is not None and seen[0] == key:
                    index = seen[1]
                s.call_ids[call_id] = (key, index, None)
                while len(s.call_ids) > _CALL_IDS_MAX:
                    s.call_ids.popitem(last=False)
            return self._after(s, tool, parsed, key, result, error, max(index, 0), facts)

    def _after(
        self,
        s: _Session,
        tool: str,
        args: Any,
        key: str,
        result: Any,
        error: bool,
        index: int,
        facts: _Shell | None = None,
    ) -> list[Intervention]:
        cfg = self.config
        s.last_progress = self._clock()
        s.stalled = False
        s.pending = max(0, s.pending - 1)
        fields_ = cfg.volatile_fields_for(tool) if cfg.normalize_results else None
        text, value = normalized(result, fields_)
        # a failure that differs only in a counter, a line number or an id is the same failure
        failure = cfg.mask_failure_counters and is_failure(text, error)
        digest = text_digest(mask_counters(text) if failure else text, error=error)
        # the call changes the world: by its tool's name, or by its shell command
        world = self._state_tool(tool) or (facts is not None and facts.changes)
        if s.streak_fp is not None and cfg.repeat_call_needs_same_result:
            # a changed result restarts the streak (a poll that makes progress) -- but not for a
            # change repeated verbatim, whose receipt changes because the change accumulates (the
            # same edit inserted again and again: the file grows)
            if (
                s.streak_result is not None
                and s.streak_result != digest
                and not (cfg.progress_resets_repeats and not failure and world)
            ):
                s.streak_count = 1
            s.streak_result = digest
        if not self._tracked(tool):
            return []
        lang = self._lang(s, text[:2000])
        out: list[Intervention] = []
        # the result's lines that carry content (D2 compares them; an empty failure starts no D3 watch)
        lines = result_lines(text if isinstance(value, (str, bytes, bytearray, memoryview)) else value)
        if cfg.ignore_boilerplate:
            lines = self._content(s, text, lines, digest)
        # D1 chain
        fresh = key not in s.keys  # a call never made in this session (or long evicted)
        k = self._key(s, key, tool)
        moved = k.moved or k.epoch != s.epoch  # the world changed since this key last ran
        k.moved = False
        previous = k.last
        if self._broken_chain(s, k):
            k.same, k.locked, k.denied, k.escapes = 0, False, False, 0
        k.lang = lang
        if k.escaping:
            k.escaping = False
            if digest == k.last:
                k.same += 1
                if k.escapes >= cfg.escape_runs:
                    k.locked = True
                    out.append(
                        Intervention(
                            "notice",
                            "locked",
                            "D1",
                            messages.render("locked_notice", lang, tool=tool, digest=digest[:16]),
                            tool,
                            index,
                            {"count": k.same, "hash": digest[:16]},
                        )
                    )
            else:
                k.last, k.same, k.escapes, k.changed = digest, 1, 0, True
        elif digest == k.last:
            k.same += 1
            if k.same == max(2, self._limit(s, k)):
                out.append(
                    Intervention(
                        "notice",
                        "repeat",
                        "D1",
                        messages.render("repeat_notice", lang, tool=tool, count=k.same, digest=digest[:16]),
                        tool,
                        index,
                        {"count": k.same, "hash": digest[:16]},
                    )
                )
        else:
            if k.last is not None:
                k.changed = True
            k.last, k.same, k.escapes, k.denied = digest, 1, 0, False
        k.denied = False
        # the same result again, a few calls after the last one, although the world changed in
        # between (an edit, then the same test output): the changes have no effect on it -- a
        # notice every repeat_limit + 1 such results (D1 counts the repeats within one state)
        close = s.executions - k.ran_at <= cfg.cycle_max_period  # (an A-B loop: edit, test, edit, test)
        k.across = k.across + 1 if digest == previous and close else 1
        k.ran_at = s.executions
        # a call since its last execution changed the world, and every such change repeated an
        # earlier one (the same edit again: a loop; a new edit is the agent trying something new)
        changed = s.changes != k.changes and s.new_changes == k.new_changes
        if k.across == 1:
            k.effect_at = cfg.repeat_limit + 1
        # a read or a test -- or a change that failed (it changed nothing) or that shows the state it
        # left (3+ lines of content, not an acknowledgment): its result is an observation
        probe = failure or len(lines) >= 3 or not world
        if (
            probe
            and changed
            and digest == previous
            and k.same < k.across
            and k.across >= k.effect_at
            and cfg.progress_resets_repeats
        ):
            k.effect_at = k.across + cfg.repeat_limit + 1  # the next notice of this streak
            out.append(
                Intervention(
                    "notice",
                    "no_effect",
                    "D1",
                    messages.render("no_effect_notice", lang, tool=tool, count=k.across, digest=digest[:16]),
                    tool,
                    index,
                    {"count": k.across, "hash": digest[:16]},
                )
            )
        k.head = text[: cfg.result_summary_chars * 2 + 256]
        k.error = failure or error
        # D2 drift against other keys' recent results, on the lines that carry content
        drift = False
        if len(lines) >= 3:
            for other_key, other_tool, other_lines in reversed(s.recent):
                if other_key == key or len(other_lines) < 3:
                    continue
                small, large = sorted((len(lines), len(other_lines)))
                if small < cfg.overlap_threshold * large:  # Jaccard <= small/large: cannot reach it
                    continue
                shared = len(lines & other_lines)
                overlap = shared / (len(lines) + len(other_lines) - shared)
                if overlap >= cfg.overlap_threshold:
                    # ... and no line absent from every recent result of other keys (the same test
                    # for every candidate: decided once, by differences that shrink at each step)
                    rest = lines - other_lines
                    for kk, _, o in s.recent:
                        if not rest:
                            break
                        if kk != key:
                            rest = rest - o
                    if rest:
                        break  # the result adds a line: not a near-copy of any of them
                    drift = True
                    recurs = s.executions - s.drift_at <= _DRIFT_RECUR
                    s.drift_at = s.executions
                    if not recurs and cfg.drift_confirm:
                        break  # one near-copy is no new information; a second one soon after is a notice
                    out.append(
                        Intervention(
                            "notice",
                            "drift",
                            "D2",
                            messages.render(
                                "drift_notice", lang, tool=tool, other=other_tool, overlap=overlap, lines=len(lines)
                            ),
                            tool,
                            index,
                            {"overlap": round(overlap, 4), "lines": len(lines)},
                        )
                    )
                    break
        s.recent.append((key, tool, lines))
        while len(s.recent) > cfg.overlap_window:
            s.recent.popleft()
        # a reworded call (same tool, most argument words shared, other key) with the identical short
        # answer (fewer than 3 lines: D2 compares the longer ones): rewording does not bring new
        # information -- no new information from the first, a notice from the second on
        # (a question, or a change that failed: a change's receipt says nothing about whether two
        # changes were the same -- a to-do list updated again is progress; not a shell command:
        # other commands are other actions, whatever words they share)
        if cfg.drift_confirm and 0 < len(lines) < 3 and not drift and facts is None and (failure or not world):
            words = frozenset(hash(w) for w in _arg_words(args))
            last = s.reworded.get(tool)
            count = 0
            if last is not None and last[1] != key and last[2] == digest and words and last[0]:
                shared = len(words & last[0])
                if shared >= _REWORD_SHARE * (len(words) + len(last[0]) - shared):
                    count = last[3] + 1
            s.reworded[tool] = (words, key, digest, count)
            s.reworded.move_to_end(tool)
            while len(s.reworded) > _REWORD_TOOLS:
                s.reworded.popitem(last=False)
            if count:
                drift = True
                if count >= 2:
                    out.append(
                        Intervention(
                            "notice",
                            "drift",
                            "D2",
                            messages.render("reworded_notice", lang, tool=tool, count=count + 1),
                            tool,
                            index,
                            {"calls": count + 1, "reworded": True},
                        )
                    )
        # new information?
        pair = hash((key, digest))
        new = pair not in s.seen and not drift
        s.seen[pair] = None
        s.seen.move_to_end(pair)
        while len(s.seen) > _SEEN_MAX:
            s.seen.popitem(last=False)
        # a call that changes the world (a write, an edit, a checkout, an install, a change of
        # directory): the next identical read or test is a new action -- unless it repeats
        # itself with nothing changed in between (the same edit, the same result)
        state = world and (fresh or moved or digest != previous)
        if (new and fresh) or state:  # a new action brought new information: the world may have changed
            s.epoch += 1
        if state:
            s.changes += 1
            s.new_changes += fresh
        k.changes, k.new_changes = s.changes, s.new_changes
        k.epoch = s.epoch
        # D3 error avoidance: a failure that says something (an empty failure -- grep's "no
        # match" -- has no message to avoid), then steps that do not remedy it
        if error and (lines or not cfg.ignore_boilerplate):
            s.watch = (
                tool,
                _family(tool),
                _path_values(args),
                _words(text[:2000]) if cfg.ignore_boilerplate else frozenset(),
                0,
            )
        elif error:
            s.watch = None
        elif s.watch is not None:
            w_tool, w_family, w_paths, w_words, steps = s.watch
            if (
                tool == w_tool
                or _matches(tool, cfg.remedial_tools)
                or (_path_values(args) & w_paths)
                or (w_family and _tool_words(tool).startswith(w_family))
                or (w_words and _arg_words(args) & w_words)
            ):
                s.watch = None
            else:
                steps += 1
                if steps >= cfg.error_watch_steps:
                    s.watch = None
                    out.append(
                        Intervention(
                            "notice",
                            "error_avoidance",
                            "D3",
                            messages.render(
                                "error_notice", lang, tool=w_tool, steps=steps, remedial="`, `".join(cfg.remedial_tools)
                            ),
                            tool,
                            index,
                            {"steps": steps},
                        )
                    )
                else:
                    s.watch = (w_tool, w_family, w_paths, w_words, steps)
        # cycles
        s.history.append((key, digest, tool))
        s.executions += 1
        while len(s.history) > cfg.cycle_max_period * (cfg.cycle_deny_periods + 1):
            s.history.popleft()
        cycle = self._cycle(s)
        if cycle is not None and cycle[1] >= cfg.cycle_notice_periods:
            period, periods, run = cycle
            mark = (period, s.executions - run)
            if mark not in s.cycle_noticed:
                s.cycle_noticed.add(mark)
                if len(s.cycle_noticed) > 64:
                    s.cycle_noticed.clear()
                    s.cycle_noticed.add(mark)
                out.append(
                    Intervention(
                        "notice",
                        "cycle",
                        "cycle",
                        messages.render(
                            "cycle_notice", lang, period=period, periods=periods, tools=self._tools_of_cycle(s, period)
                        ),
                        tool,
                        index,
                        {"period": period, "periods": periods},
                    )
                )
        # D4 no progress
        if new:
            s.no_new = 0
            s.streak = 0
        else:
            s.no_new += 1
            if s.no_new >= cfg.anchor_window:
                s.no_new = 0
                out.append(
                    Intervention(
                        "notice",
                        "no_progress",
                        "D4",
                        messages.render("anchor", lang, window=cfg.anchor_window),
                        tool,
                        index,
                        {"window": cfg.anchor_window},
                    )
                )
        # I5 circuit breaker
        if out and not new:
            breaker = self._count_intervention(s, index)
            if breaker is not None:
                out.append(replace(breaker, tool=tool))
        return out

    def _content(self, s: _Session, text: str, lines: frozenset[str], digest: str) -> frozenset[str]:
        """The lines of a result that carry content: not markup or "no output" lines
        (:func:`loopguard.results.content_line`), not the session's frame -- lines at the
        edges of at least 3 in 4 (and at least 3) of its last 16 *distinct* results (a
        prompt, the working directory, an exit-code wrapper: what every result carries
        around different content; one result returned again and again is not a frame).
        Learns the frame from this result's edge lines afterwards."""
        frame, hist = s.frame, s.frame_hist
        need = max(_FRAME_MIN, (3 * len(hist) + 3) // 4)
        if len(lines) <= 8:
            out = frozenset(line for line in lines if content_line(line))
        elif "<" not in "".join(lines):  # a long result without markup: every line says something
            out = lines
        else:  # a long result: only tagged lines can be markup (and no line says "nothing")
            out = lines.difference([line for line in lines if "<" in line and not content_line(line, False)])
        if frame:
            if len(out) <= 32:  # a few lines: look each up
                out = frozenset(line for line in out if frame.get(hash(line), 0) < need)
            else:  # many lines (whose hashes the set already holds): look the frame's lines up
                framed = [h for h, n in frame.items() if n >= need]
                if framed:
                    by_hash = dict(zip(map(hash, out), out))
                    if len(by_hash) == len(out):
                        out = out.difference([by_hash[h] for h in framed if h in by_hash])
                    else:  # two lines share a hash: line by line
                        drop = frozenset(framed)
                        out = frozenset(line for line in out if hash(line) not in drop)
        if out and len(lines) <= 8 and says_nothing(lines):
            out = frozenset()  # "no output", framed by a prompt: nothing
        if digest in s.frame_digests:
            return out
        if len(text) > 4000:  # the edges only (a frame line is short)
            rows = text[:2000].splitlines()[:_FRAME_EDGE] + text[-2000:].splitlines()[-_FRAME_EDGE:]
        else:
            rows = text.splitlines()
            if len(rows) > 2 * _FRAME_EDGE:
                rows = rows[:_FRAME_EDGE] + rows[-_FRAME_EDGE:]
        edge = frozenset(map(hash, map(str.strip, rows)))
        hist.append((digest, edge))
        s.frame_digests.add(digest)
        for h in edge:
            frame[h] = frame.get(h, 0) + 1
        if len(hist) > _FRAME_RESULTS:
            gone, old_edge = hist.popleft()
            s.frame_digests.discard(gone)
            for h in old_edge:
                left = frame[h] - 1
                if left:
                    frame[h] = left
                else:
                    del frame[h]
        return out

    # ------------------------------------------------------- D1' replay

    def observe_attempt(
        self, session_id: Any, *, reasoning: str = "", text: str = "", tool_calls: Sequence[tuple[str, Any]] = ()
    ) -> bool:
        """Record one model attempt's stream signature (D1', seed 001 ``agent/assistant-stream``).

        Parameters
        ----------
        reasoning, text : str
            The attempt's reasoning and answer text.
        tool_calls : sequence of (tool, args)
            The calls the attempt made.

        Returns
        -------
        bool
            True when replay mode is on: this attempt's signature (at least
            ``min_replay_chars`` code points) equals the previous attempt's.
            Replay mode lowers the D1 limit to 1 until an attempt differs.
        """
        if not isinstance(reasoning, str) or not isinstance(text, str):
            raise TypeError("reasoning and text must be str")
        parts = [reasoning, "\x00", text]
        size = len(reasoning) + len(text)
        for tool, args in tool_calls:
            call = f"\x00{tool}\x01{_call_key(str(tool), _parse(args))}"
            parts.append(call)
            size += len(str(tool)) + len(messages.arguments_preview(args, 10_000))
        signature = hashlib.sha256("".join(parts).encode("utf-8", "surrogatepass")).hexdigest()
        with self._lock:
            s = self._session(session_id)
            if not self.config.replay_detection:
                s.replay = False
                return False
            long_enough = size >= self.config.min_replay_chars
            s.replay = long_enough and signature == s.signature
            s.signature = signature if long_enough else None
            if s.replay:
                logger.info("replay mode: two identical attempts in a row")
            return s.replay

    def replay_mode(self, session_id: Any = None) -> bool:
        """Whether the session is in D1' replay mode."""
        with self._lock:
            s = self._sessions.get(session_key(session_id))
            return bool(s and s.replay)

    # ------------------------------------------------------ ② stall, ③ strikes

    def note_progress(self, session_id: Any = None) -> None:
        """A progress event (step start/end, model output, a tool call or result: seed 002 ②)."""
        with self._lock:
            s = self._session(session_id)
            s.last_progress = self._clock()
            s.stalled = False

    def note_change(self, session_id: Any = None) -> None:
        """The world changed where the guard cannot see it (the user acted, a file changed
        outside the tools, another agent wrote): every call's D1 chain starts again, as
        after a call that changes the world (``docs/tools.md``, State changes).  Tool state
        is kept (unlike :meth:`reset`)."""
        with self._lock:
            s = self._session(session_id)
            s.epoch += 1
            s.changes += 1
            s.new_changes += 1

    def check_stall(self, session_id: Any = None) -> Intervention | None:
        """② stall: an intervention (``kind="stalled"``) when no progress event came
        for ``stall_minutes`` (``stall_minutes_with_tool`` while a tool call is
        pending), once per stall; it is recorded as a ③ strike and has
        ``action="cancel"`` when the strikes reach ``strikes_before_cancel``.
        ``None`` otherwise."""
        with self._lock:
            s = self._session(session_id)
            if s.stalled:
                return None
            cfg = self.config
            minutes = cfg.stall_minutes_with_tool if s.pending > 0 else cfg.stall_minutes
            idle = self._clock() - s.last_progress
            if idle < minutes * 60:
                return None
            s.stalled = True
            lang = s.lang
            text = messages.render(
                "stalled", lang, minutes=minutes, pending=messages.render("stalled_pending", lang) if s.pending else ""
            )
            strikes = self._strike(s, "stalled")
            count = len(s.strikes) if strikes is None else int(strikes.evidence["strikes"])
            evidence = {"idle_seconds": round(idle, 3), "pending_tools": s.pending, "strikes": count}
            logger.warning("stalled: no progress for %.1f minutes", idle / 60)
            if strikes is not None:
                return Intervention(strikes.action, "stalled", "②", text + "\n" + strikes.text, evidence=evidence)
            return Intervention("notice", "stalled", "②", text, evidence=evidence)

    def strike(self, session_id: Any, kind: str) -> Intervention | None:
        """③ strikes: record a strong signal (``"text_loop"``, ``"stalled"``,
        ``"repeat_streak"``); returns a cancel intervention when
        ``strikes_before_cancel`` strikes fall within ``strike_window_minutes``
        (the strikes are then cleared), else ``None``."""
        if not isinstance(kind, str) or not kind:
            raise TypeError("kind must be a non-empty str")
        with self._lock:
            return self._strike(self._session(session_id), kind)

    def strikes(self, session_id: Any = None) -> int:
        """Strikes currently inside the window."""
        with self._lock:
            s = self._sessions.get(session_key(session_id))
            if s is None:
                return 0
            self._expire(s)
            return len(s.strikes)

    def _expire(self, s: _Session) -> None:
        horizon = self._clock() - self.config.strike_window_minutes * 60
        while s.strikes and s.strikes[0][0] < horizon:
            s.strikes.popleft()

    def _strike(self, s: _Session, kind: str) -> Intervention | None:
        self._expire(s)
        s.strikes.append((self._clock(), kind))
        cfg = self.config
        if len(s.strikes) < cfg.strikes_before_cancel:
            return None
        kinds = ", ".join(k for _, k in s.strikes)
        count = len(s.strikes)
        s.strikes.clear()
        text = messages.render("strikes", s.lang, count=count, kinds=kinds, minutes=cfg.strike_window_minutes)
        logger.warning("strikes: %d strong signals -> cancel", count)
        return Intervention(
            self._stop_action(), "strikes", "③", text, evidence={"strikes": count, "kinds": kinds.split(", ")}
        )

    def cancel_pending(self, session_id: Any = None) -> None:
        """The host cancelled the turn: calls still pending will never report a
        result, so ② stall goes back to ``stall_minutes``."""
        with self._lock:
            s = self._sessions.get(session_key(session_id))
            if s is not None:
                s.pending = 0
                s.last_call = None

    @property
    def clock(self) -> Callable[[], float]:
        """The clock this guard reads (seconds, monotonic by default; the ``clock=`` argument).

        Read-only: a :class:`~loopguard.Session` reads it so its own timers agree with the guard's.
        """
        return self._clock

    def pending_tools(self, session_id: Any = None) -> int:
        """Tool calls allowed by :meth:`before_call` whose result has not been seen."""
        with self._lock:
            s = self._sessions.get(session_key(session_id))
            return s.pending if s else 0


def _parse(args: Any) -> Any:
    """Arguments as :func:`loopguard.call_hash` reads them; bytes that are not
    UTF-8 and JSON too deep to parse stay as given (hashed by their stable text)."""
    try:
        return identity.parse_args(args)
    except (ValueError, RecursionError):
        return args


def _call_key(tool: str, args: Any) -> str:
    """The call hash of spec §4; for arguments canonical JSON refuses (NaN, sets,
    objects, cycles, more than 500 levels) the hash of their stable text instead."""
    try:
        return identity.call_hash(tool, args)
    except (TypeError, ValueError, RecursionError):
        text = "stable:" + stable_text(args)
        return hashlib.sha256(f"{tool}\n{text}".encode("utf-8", "surrogatepass")).hexdigest()


def _fingerprint(tool: str, args: Any) -> str:
    try:
        return identity.action_fingerprint(tool, args)
    except (TypeError, ValueError):
        return _call_key(tool, args)


def _alternative(text: str, error: bool, lang: str) -> str:
    match = _MATCH_LINE.search(text[:4000])
    if match is not None:
        line = max(1, int(match.group(2)) - 20) if len(match.group(2)) < 10 else 1
        return messages.render("alt_read", lang, path=match.group(1), line=line)
    if error:
        return messages.render("alt_error", lang)
    return messages.render("alt_default", lang)


class ToolLoopCancelled(RuntimeError):
    """The guard says the turn must stop (I5 circuit breaker, ②b repeat streak, ③ strikes).

    Raised by :func:`wrap_tool` wrappers.  The message is the text meant for
    the model (redacted; arguments capped at ``arguments_preview_chars``).

    Attributes
    ----------
    kind : str
        ``circuit_breaker``, ``repeat_streak``, ``strikes``, …
    rule : str
        The seed rule.
    tool : str
        The tool name.
    result : Any
        The tool's result when the tool had already run (the breaker fired
        after it), else ``None``.
    """

    def __init__(self, kind: str, rule: str, text: str, tool: str, result: Any = None) -> None:
        super().__init__(text)
        self.kind, self.rule, self.tool, self.result = kind, rule, tool, result


class ToolCallDenied(RuntimeError):
    """A call denied before it ran (``on_deny="raise"`` in :func:`wrap_tool`).

    Attributes
    ----------
    decision : Decision
        The guard's decision; ``str(error)`` is its reason.
    """

    def __init__(self, decision: Decision) -> None:
        super().__init__(decision.reason)
        self.decision = decision


def wrap_tool(
    fn: Callable[..., Any],
    guard: ToolGuard,
    *,
    tool: str,
    session_id: Any = None,
    on_deny: Literal["return", "raise"] = "return",
    on_intervention: Callable[[list[Intervention]], None] | None = None,
) -> Callable[..., Any]:
    """Put a tool body behind a :class:`ToolGuard` (sync or ``async def``; spec §5.2, seed 001 seams).

    Before the body: :meth:`ToolGuard.before_call`.  A denied call does not
    run: the wrapper returns ``decision.reason`` as the tool's result (the
    seed's ``tools/pre-execute`` deny: the reason is what the model reads),
    or raises :class:`ToolCallDenied` with ``on_deny="raise"``.  A cancel
    raises :class:`ToolLoopCancelled`.

    After the body: :meth:`ToolGuard.after_call` with the result (a body that
    raises is recorded as ``error=True`` with ``"ExceptionType: message"`` as
    its result, and the exception propagates unchanged).  Interventions go to
    ``on_intervention(list)`` when given; otherwise, for a ``str`` result,
    their texts are appended to it (one blank line before each), and for
    other results they are only logged.  A ``cancel`` intervention raises
    :class:`ToolLoopCancelled` carrying the result.

    Arguments are taken as in :func:`loopguard.wrap_execute`: the first
    positional argument, else the keyword arguments; ``session_id=`` and
    ``call_id=`` keywords of a call are the guard's (passed on only if the
    body accepts them).

    Examples
    --------
    >>> guard = ToolGuard()
    >>> def grep(args):
    ...     return "a.py:3: needle"
    >>> grep = wrap_tool(grep, guard, tool="grep")
    >>> grep({"pattern": "needle", "path": "."})
    'a.py:3: needle'
    >>> print(grep({"pattern": "needle", "path": "."}).splitlines()[2][:60])
    [loopguard] `grep` with identical arguments has now returned
    >>> grep({"pattern": "needle", "path": "."}).startswith("[loopguard] Duplicate tool call blocked")
    True
    """
    from .brake import _accepts_keyword, _is_async

    tool = _check_tool(tool)
    if on_deny not in ("return", "raise"):
        raise ValueError(f"on_deny must be 'return' or 'raise', not {on_deny!r}")
    pass_session = _accepts_keyword(fn, "session_id")
    pass_call_id = _accepts_keyword(fn, "call_id")

    def _before(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any, Any, Decision]:
        has_sid, has_cid = "session_id" in kwargs, "call_id" in kwargs
        given_sid = kwargs.pop("session_id", None)
        cid = kwargs.pop("call_id", None)
        sid = session_id if given_sid is None else given_sid
        payload: Any = args[0] if args else dict(kwargs)
        decision = guard.before_call(sid, tool, payload, call_id=cid)
        if has_sid and pass_session:
            kwargs["session_id"] = given_sid
        if has_cid and pass_call_id:
            kwargs["call_id"] = cid
        if decision.action == "cancel":
            raise ToolLoopCancelled(str(decision.kind), decision.rule, decision.reason, tool)
        return sid, cid, payload, decision

    def _denied(decision: Decision) -> Any:
        if on_deny == "raise":
            raise ToolCallDenied(decision)
        return decision.reason

    def _after(sid: Any, cid: Any, payload: Any, decision: Decision, result: Any, error: bool) -> Any:
        notes = guard.after_call(sid, tool, payload, result, error=error, call_id=cid)
        if decision.action == "notice" and decision.reason:
            notes = [
                Intervention(
                    "notice",
                    str(decision.kind),
                    decision.rule,
                    decision.reason,
                    tool,
                    decision.call_index,
                    decision.evidence,
                ),
                *notes,
            ]
        if notes:
            if on_intervention is not None:
                on_intervention(notes)
            elif isinstance(result, str) and not error:
                result = result + "".join("\n\n" + n.text for n in notes)
            else:
                logger.info("%d intervention(s) for %s not delivered (result is not a str)", len(notes), tool)
        stop = next((n for n in notes if n.action == "cancel"), None)
        if stop is not None:
            raise ToolLoopCancelled(stop.kind, stop.rule, stop.text, tool, result)
        return result

    def _failed(sid: Any, cid: Any, payload: Any, decision: Decision, exc: BaseException) -> None:
        """Record a failed body; the host's exception always wins over anything the guard says."""
        try:
            _after(sid, cid, payload, decision, f"{type(exc).__name__}: {exc}", True)
        except Exception:
            logger.info("guard signal after a failed %s call dropped: the tool's exception propagates", tool)

    if _is_async(fn):

        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            sid, cid, payload, decision = _before(args, kwargs)
            if not decision.allowed:
                return _denied(decision)
            try:
                result = await fn(*args, **kwargs)
            except Exception as exc:
                _failed(sid, cid, payload, decision, exc)
                raise
            return _after(sid, cid, payload, decision, result, False)

        return functools.wraps(fn)(async_wrapper)

    def sync_wrapper(*args: Any, **kwargs: Any) -> Any:
        sid, cid, payload, decision = _before(args, kwargs)
        if not decision.allowed:
            return _denied(decision)
        try:
            result = fn(*args, **kwargs)
        except Exception as exc:
            _failed(sid, cid, payload, decision, exc)
            raise
        return _after(sid, cid, payload, decision, result, False)

    return functools.wraps(fn)(sync_wrapper)
