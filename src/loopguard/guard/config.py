"""The tool guard's configuration: :class:`ToolGuardConfig` (spec §5.2; every key, its default
and the rule it tunes are listed in the class docstring and in ``docs/rules.md``)."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal

from .. import messages, shell
from ..errors import ConfigError
from ..results import DEFAULT_VOLATILE_FIELDS

__all__ = ["DEFAULT_SHELL_TOOLS", "DEFAULT_STATE_TOOLS", "ToolGuardConfig"]

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

    loopguard's own (documented in :mod:`loopguard.guard` and ``docs/rules.md``):
    ``polling_grace`` (1; 0 = the seed's ``repeat`` rule), ``progress_resets_repeats``
    (True; False = the seed's ``repeat`` rule), ``repeat_call_needs_same_result`` (True;
    False = the seed's ``repeat_streak`` rule), ``cycle_max_period`` (5), ``cycle_notice_periods``
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
        (a ``ValueError``) at construction, naming the key, its value and
        the rule it breaks.

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
        _check_ints(self)
        _check_flags(self)
        _check_numbers(self)
        _check_sequences(self)
        _check_by_tool(self)
        _check_choices(self)

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
                raise ConfigError(str(key), value, _KNOWN, owner=_OWNER)
            name = re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()
            if name not in known:
                raise ConfigError(key, value, _KNOWN, owner=_OWNER)
            if name in values:
                raise ConfigError(key, value, f"given once (also given as {given[name]!r})", owner=_OWNER)
            values[name] = value
            given[name] = key
        try:
            return cls(**values)
        except ConfigError as exc:  # name the key as the user wrote it
            if exc.key in given and given[exc.key] != exc.key:
                raise ConfigError(given[exc.key], exc.value, exc.rule, owner=_OWNER) from None
            raise

    @classmethod
    def coerce(cls, config: ToolGuardConfig | Mapping[str, Any] | None) -> ToolGuardConfig:
        """``config`` as a :class:`ToolGuardConfig`: ``None`` → the defaults, a mapping →
        :meth:`from_mapping`, a :class:`ToolGuardConfig` as is.

        Raises
        ------
        TypeError
            for anything else.
        ConfigError
            for an invalid mapping.
        """
        if config is None:
            return cls()
        if isinstance(config, ToolGuardConfig):
            return config
        if isinstance(config, Mapping):
            return cls.from_mapping(config)
        raise TypeError(f"config must be a ToolGuardConfig, a mapping or None, not {type(config).__name__}")

    def replace(self, **changes: Any) -> ToolGuardConfig:
        """A copy with ``changes`` applied (validated like the constructor); an
        unknown key raises ``ConfigError``."""
        known = {f.name for f in fields(self)}
        for key, value in changes.items():
            if key not in known:
                raise ConfigError(key, value, _KNOWN, owner=_OWNER)
        return replace(self, **changes)

    def volatile_fields_for(self, tool: str) -> tuple[str, ...]:
        """The volatile result fields for ``tool`` (the first matching per-tool glob wins)."""
        for glob, names in self.volatile_result_fields_by_tool.items():
            if fnmatch.fnmatchcase(tool, glob):
                return tuple(names)
        return tuple(self.volatile_result_fields)


_OWNER = "ToolGuardConfig"
_KNOWN = "a known key (see ToolGuardConfig's docstring)"
#: integer keys and their (inclusive) ranges
_INTS: dict[str, tuple[int, int]] = {
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
_FLAGS = (
    "notice_only",
    "replay_detection",
    "progress_resets_repeats",
    "repeat_call_needs_same_result",
    "normalize_results",
    "mask_failure_counters",
    "ignore_boilerplate",
    "drift_confirm",
)
_MINUTES = ("stall_minutes", "stall_minutes_with_tool", "strike_window_minutes")
_SEQUENCES = (
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
)
_BY_TOOL = "a mapping of tool glob -> list of field names"


def _check(
    cfg: ToolGuardConfig, keys: Iterable[str], ok: Callable[[str, Any], bool], rule: Callable[[str], str]
) -> None:
    """Raise ``ConfigError`` for the first of ``keys`` whose value is not ``ok``."""
    for key in keys:
        value = getattr(cfg, key)
        if not ok(key, value):
            raise ConfigError(key, value, rule(key), owner=_OWNER)


def _number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float))


def _check_ints(cfg: ToolGuardConfig) -> None:
    def ok(key: str, value: Any) -> bool:
        lo, hi = _INTS[key]
        return not isinstance(value, bool) and isinstance(value, int) and lo <= value <= hi

    _check(cfg, _INTS, ok, lambda key: "an integer from {} to {}".format(*_INTS[key]))


def _check_flags(cfg: ToolGuardConfig) -> None:
    _check(cfg, _FLAGS, lambda _, value: isinstance(value, bool), lambda _: "True or False")


def _check_numbers(cfg: ToolGuardConfig) -> None:
    minutes = "a number of minutes > 0"
    _check(cfg, _MINUTES, lambda _, value: _number(value) and 0 < value <= 1e7, lambda _: minutes)
    share = "a number in (0, 1]"
    _check(cfg, ("overlap_threshold",), lambda _, value: _number(value) and 0 < value <= 1, lambda _: share)


def _check_sequences(cfg: ToolGuardConfig) -> None:
    """Store every sequence key as a tuple of non-empty strings."""
    for key in _SEQUENCES:
        value = getattr(cfg, key)
        try:
            object.__setattr__(cfg, key, _strings(value))
        except TypeError:
            raise ConfigError(key, value, "a list of non-empty strings", owner=_OWNER) from None


def _check_by_tool(cfg: ToolGuardConfig) -> None:
    """Store ``volatile_result_fields_by_tool`` as a dict of glob -> tuple of field names."""
    by_tool = cfg.volatile_result_fields_by_tool
    if not isinstance(by_tool, Mapping):
        raise ConfigError("volatile_result_fields_by_tool", by_tool, _BY_TOOL, owner=_OWNER)
    checked: dict[str, tuple[str, ...]] = {}
    for glob, names in by_tool.items():
        try:
            if not isinstance(glob, str) or not glob:
                raise TypeError
            checked[glob] = _strings(names) if names else ()
        except TypeError:
            raise ConfigError("volatile_result_fields_by_tool", by_tool, _BY_TOOL, owner=_OWNER) from None
    object.__setattr__(cfg, "volatile_result_fields_by_tool", checked)


def _check_choices(cfg: ToolGuardConfig) -> None:
    if cfg.root_search not in ("allow", "notice", "deny"):
        raise ConfigError("root_search", cfg.root_search, "'allow', 'notice' or 'deny'", owner=_OWNER)
    if cfg.unscoped_search not in ("deny", "allow"):
        raise ConfigError("unscoped_search", cfg.unscoped_search, "'deny' or 'allow'", owner=_OWNER)
    if cfg.language not in messages.LANGUAGES:
        raise ConfigError("language", cfg.language, "'auto', 'en' or 'zh'", owner=_OWNER)
    if cfg.unscoped_search == "deny" and not cfg.scope_fields:
        raise ConfigError(
            "scope_fields", cfg.scope_fields, "at least one field name while unscoped_search='deny'", owner=_OWNER
        )
    if cfg.cycle_deny_periods < cfg.cycle_notice_periods:
        raise ConfigError(
            "cycle_deny_periods",
            cfg.cycle_deny_periods,
            f">= cycle_notice_periods ({cfg.cycle_notice_periods})",
            owner=_OWNER,
        )
