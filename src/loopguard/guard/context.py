"""One call as the rules see it (:class:`Call`), how a call is identified (its key: the call
hash of spec §4, or the parsed command of a one-line shell call) and what its tool is
(:class:`Tools`: tracked, exempt from ``repeat_streak``, changes the world, a shell)."""

from __future__ import annotations

import fnmatch
import hashlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from .. import identity, shell
from ..results import is_failure, mask_counters, normalized, result_lines, stable_text, text_digest
from .words import matches, name_words

if TYPE_CHECKING:
    from .config import ToolGuardConfig
    from .decisions import Intervention
    from .state import KeyState, SessionState

__all__ = ["Call", "ShellFacts", "Tools", "call_key", "parse_args"]

_CACHE_MAX = 4096  # tools (and shell commands) whose classification is cached


class ShellFacts:
    """What the guard reads from a shell-style call (never the command itself)."""

    __slots__ = ("changes", "scope", "identity")

    def __init__(self, changes: bool, scope: str | None, identity: str | None) -> None:
        self.changes, self.scope, self.identity = changes, scope, identity


def parse_args(args: Any) -> Any:
    """Arguments as :func:`loopguard.call_hash` reads them; bytes that are not
    UTF-8 and JSON too deep to parse stay as given (hashed by their stable text)."""
    try:
        return identity.parse_args(args)
    except (ValueError, RecursionError):
        return args


def call_key(tool: str, args: Any) -> str:
    """The call hash of spec §4; for arguments canonical JSON refuses (NaN, sets,
    objects, cycles, more than 500 levels) the hash of their stable text instead."""
    try:
        return identity.call_hash(tool, args)
    except (TypeError, ValueError, RecursionError):
        text = "stable:" + stable_text(args)
        return hashlib.sha256(f"{tool}\n{text}".encode("utf-8", "surrogatepass")).hexdigest()


def fingerprint(tool: str, args: Any) -> str:
    """The action fingerprint of spec §4 (``description`` dropped), or the call key."""
    try:
        return identity.action_fingerprint(tool, args)
    except (TypeError, ValueError):
        return call_key(tool, args)


class Tools:
    """What the configuration says of a tool name and of a shell command, cached (the caches
    hold names and facts, never a command or arguments)."""

    def __init__(self, config: ToolGuardConfig) -> None:
        self.config = config
        self._tracked: dict[str, bool] = {}
        self._exempt: dict[str, bool] = {}
        self._state: dict[str, bool] = {}
        self._shell: dict[tuple[str, int, bool], ShellFacts] = {}  # (tool, hash of the command, all args)

    def tracked(self, tool: str) -> bool:
        """``include`` (empty: every tool) and not ``exclude``."""
        known = self._tracked.get(tool)
        if known is None:
            cfg = self.config
            known = (not cfg.include or matches(tool, cfg.include)) and not matches(tool, cfg.exclude)
            if len(self._tracked) < _CACHE_MAX:
                self._tracked[tool] = known
        return known

    def exempt(self, tool: str) -> bool:
        """In ``repeat_call_exempt``: never counted by ``repeat_streak``."""
        known = self._exempt.get(tool)
        if known is None:
            known = matches(tool, self.config.repeat_call_exempt)
            if len(self._exempt) < _CACHE_MAX:
                self._exempt[tool] = known
        return known

    def changes_world(self, tool: str) -> bool:
        """Whether ``tool`` changes the world by its name (``state_tools`` globs, matched
        without case against the name, its first word and its last word: ``update_order``,
        ``memory_save``, ``TodoWrite``)."""
        known = self._state.get(tool)
        if known is None:
            words = name_words(tool) or [tool.lower()]
            names = {tool.lower(), words[0], words[-1]}
            known = any(fnmatch.fnmatchcase(name, g.lower()) for name in names for g in self.config.state_tools)
            if len(self._state) < _CACHE_MAX:
                self._state[tool] = known
        return known

    def shell(self, tool: str, args: Any) -> ShellFacts | None:
        """The parsed command of a shell-style call (:mod:`loopguard.shell`), or ``None``.
        Cached by a hash of the command: the cache holds facts, never the command."""
        if isinstance(args, str) and matches(tool, self.config.shell_tools):
            text: str | None = args
        else:
            text = shell.command_of(tool, args)
        if text is None:
            return None
        # the parsed command is the identity only when it is all of the arguments, on one line
        # (a here-document's body or an edit's text is not in the parse)
        whole = (text is args or (isinstance(args, Mapping) and len(args) == 1)) and "\n" not in text.strip()
        ckey = (tool, hash(text), whole)
        facts = self._shell.get(ckey)
        if facts is None:
            facts = self._parse_shell(tool, text, whole)
            if len(self._shell) >= _CACHE_MAX:
                self._shell.clear()
            self._shell[ckey] = facts
        return facts

    def _parse_shell(self, tool: str, text: str, whole: bool) -> ShellFacts:
        commands = shell.parse(text)
        identity_ = None
        if whole and commands:
            canon = "\x1e".join(
                "\x1f".join(c.words) + ("\x1d" + "\x1f".join(c.writes) if c.writes else "") for c in commands
            )
            identity_ = hashlib.sha256(f"{tool}\nshell\n{canon}".encode("utf-8", "surrogatepass")).hexdigest()
        return ShellFacts(
            shell.changes_state(commands, self.config.state_commands), shell.search_scope(commands), identity_
        )

    def identity(self, tool: str, args: Any) -> tuple[str, ShellFacts | None]:
        """The call key (spec §4's call hash; for a shell-style call whose arguments are
        just the command, the hash of its parsed command: quoting and spacing aside,
        the same command is the same call) and the shell facts."""
        facts = self.shell(tool, args)
        if facts is not None and facts.identity is not None:
            return facts.identity, facts
        return call_key(tool, args), facts


class Call:
    """One request (and, after it ran, its result) on its way through the rules.

    Set when the request comes: the configuration, the session, the tool, the parsed
    arguments, the key, the shell facts, the call index, the clock and the strike hook.
    Set when its result comes (:meth:`observe`): the normalised text, the result hash, whether
    it failed and whether the call changes the world; then, by the rules in ladder order,
    the language, the content lines, the key's state, and whether it brought new information.
    ``out`` collects the interventions.
    """

    __slots__ = (
        "cfg",
        "s",
        "tool",
        "args",
        "key",
        "facts",
        "index",
        "clock",
        "strike",
        "error",
        "text",
        "value",
        "digest",
        "failure",
        "world",
        "lang",
        "lines",
        "k",
        "fresh",
        "moved",
        "previous",
        "drift",
        "new",
        "out",
    )

    def __init__(
        self,
        cfg: ToolGuardConfig,
        s: SessionState,
        tool: str,
        args: Any,
        key: str,
        facts: ShellFacts | None,
        clock: Callable[[], float],
        strike: Callable[[str], Intervention | None],
        index: int = 0,
    ) -> None:
        self.cfg, self.s, self.tool, self.args, self.key, self.facts = cfg, s, tool, args, key, facts
        self.clock, self.strike, self.index = clock, strike, index
        self.error = self.failure = self.world = self.fresh = self.moved = self.drift = self.new = False
        self.text = self.digest = self.lang = ""
        self.value: Any = None
        self.lines: frozenset[str] = frozenset()
        self.k: KeyState | None = None
        self.previous: str | None = None
        self.out: list[Intervention] = []

    def fingerprint(self) -> str:
        """The key, or the action fingerprint when the arguments carry a ``description``."""
        if isinstance(self.args, Mapping) and "description" in self.args:
            return fingerprint(self.tool, self.args)
        return self.key

    def observe(self, tools: Tools, result: Any, error: bool) -> None:
        """Read the result: its normalised text, its hash (a failure's counters masked), and
        whether the call changes the world (its tool's name, or its shell command)."""
        cfg = self.cfg
        fields_ = cfg.volatile_fields_for(self.tool) if cfg.normalize_results else None
        self.text, self.value = normalized(result, fields_)
        self.error = error
        # a failure that differs only in a counter, a line number or an id is the same failure
        self.failure = cfg.mask_failure_counters and is_failure(self.text, error)
        self.digest = text_digest(mask_counters(self.text) if self.failure else self.text, error=error)
        self.world = tools.changes_world(self.tool) or (self.facts is not None and self.facts.changes)

    def result_lines(self) -> frozenset[str]:
        """The result's non-empty lines (of its text, or of its JSON value)."""
        value = self.value
        return result_lines(self.text if isinstance(value, (str, bytes, bytearray, memoryview)) else value)
