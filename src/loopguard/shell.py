"""Shell commands of tool calls, parsed with :mod:`shlex` (issue 15; spec §5.2 D5).

Many agents run one generic tool (``bash``, ``shell``, ``run_command``) whose
argument is a command line, and some logs name the tool after the command's
first word with the whole command as a string argument (SWE-agent's ``.traj``
actions: tool ``grep``, arguments ``'grep -r "X" src'``).  The tool guard reads
such a call through its parsed command:

* :func:`command_of` finds the command line of a call (``None``: not shell-style);
* :func:`parse` splits it into simple commands (``&&``, ``||``, ``;``, ``|``,
  ``&``, newlines) with their words and output redirections, after environment
  assignments and wrappers (``sudo``, ``env``, ``time``, ``nohup``, ``timeout N``);
* :func:`changes_state` says whether it writes to the world (a file write or
  redirection, an in-place edit, a copy or move, a checkout, an install, a change
  of directory);
* :func:`search_scope` says whether a recursive content search (``grep -r``,
  ``rg``, ``ag``, ``ack``, ``git grep``) names a scope narrower than the whole
  tree (``/``, ``~``, ``.``, no path at all).

Nothing here raises on bad input: a command ``shlex`` cannot split (an unclosed
quote) is split on whitespace instead.  Command texts never leave this module
except as the guard's hashed call identity.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "COMMAND_FIELDS",
    "DEFAULT_STATE_COMMANDS",
    "SimpleCommand",
    "changes_state",
    "command_of",
    "parse",
    "search_scope",
]

#: Argument fields that hold a command line, for a tool whose arguments are a mapping.
COMMAND_FIELDS: tuple[str, ...] = ("command", "cmd", "script", "commands")

#: Commands that change the world whatever their operands (their first word).
DEFAULT_STATE_COMMANDS: tuple[str, ...] = (
    "cp",
    "mv",
    "rm",
    "rmdir",
    "mkdir",
    "touch",
    "ln",
    "chmod",
    "chown",
    "tee",
    "patch",
    "truncate",
    "dd",
    "install",
    "unzip",
    "cd",
    "pushd",
    "popd",
    "create",
    "edit",
    "apply_patch",
    "str_replace_editor",
    "insert",
    "open",
)
#: Subcommands that change the world, per command (``git checkout``, ``pip install``).
_SUBCOMMANDS: dict[str, frozenset[str]] = {
    "git": frozenset(
        {
            "checkout",
            "switch",
            "restore",
            "reset",
            "apply",
            "am",
            "commit",
            "merge",
            "rebase",
            "cherry-pick",
            "stash",
            "pull",
            "clone",
            "init",
            "add",
            "rm",
            "mv",
            "revert",
            "clean",
        }
    ),
    **{
        tool: frozenset({"install", "uninstall", "add", "remove", "update", "upgrade", "sync", "develop"})
        for tool in (
            "pip",
            "pip3",
            "uv",
            "poetry",
            "conda",
            "mamba",
            "npm",
            "yarn",
            "pnpm",
            "apt",
            "apt-get",
            "brew",
            "gem",
            "cargo",
            "go",
            "dnf",
            "yum",
            "apk",
        )
    },
}
#: Flags that make a command edit files in place.
_IN_PLACE = {"sed": ("-i", "--in-place"), "perl": ("-i", "-pi"), "ruby": ("-i",)}
#: Words that run the rest of the simple command (``sudo cp a b`` is ``cp a b``).
_WRAPPERS = frozenset({"sudo", "env", "time", "nohup", "nice", "command", "exec", "builtin", "stdbuf", "xargs"})
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_OPERATORS = frozenset({"&&", "||", ";", "|", "&", ";;", "|&", "(", ")"})
_NULL_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "&1", "&2", "1", "2"})
#: Recursive content searches: the command, and the flags that make it recursive (empty: always).
_SEARCHES: dict[str, tuple[str, ...]] = {
    "grep": ("-r", "-R", "--recursive", "--dereference-recursive"),
    "egrep": ("-r", "-R", "--recursive"),
    "fgrep": ("-r", "-R", "--recursive"),
    "rg": (),
    "ag": (),
    "ack": (),
}
#: Paths that scope nothing: the working directory (``"root"``), the whole machine or home (``"machine"``).
_ROOT_PATHS = frozenset({"", ".", "*", "./*", ".*"})
_MACHINE_PATHS = frozenset({"/", "", "/*", "~", "~/", "$HOME", "${HOME}", "~/*"})
#: Options of the searches that take a value (the value is not a path or pattern).
_VALUED = frozenset(
    {
        "-e",
        "-f",
        "-m",
        "-A",
        "-B",
        "-C",
        "-d",
        "-D",
        "--include",
        "--exclude",
        "--exclude-dir",
        "-g",
        "--glob",
        "-t",
        "--type",
        "-T",
        "--type-not",
        "--max-count",
        "--context",
        "--after-context",
        "--before-context",
        "--regexp",
        "--file",
        "-M",
        "-j",
        "--threads",
    }
)


@dataclass(frozen=True)
class SimpleCommand:
    """One simple command of a command line: its words (wrappers and assignments
    dropped) and the targets of its output redirections (``>``, ``>>``, ``&>``)."""

    words: tuple[str, ...]
    writes: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """The command's first word without a leading path (``/usr/bin/grep`` → ``grep``)."""
        return self.words[0].rsplit("/", 1)[-1] if self.words else ""


def command_of(tool: str, args: Any) -> str | None:
    """The command line of a shell-style call, or ``None``.

    Shell-style: ``args`` is a string whose first word is ``tool`` (the tool named
    after the command, as SWE-agent logs are read), or a mapping with a string in
    one of :data:`COMMAND_FIELDS`, or a string argument of a tool listed in
    ``shell_tools`` by the caller (see :class:`loopguard.ToolGuardConfig`)."""
    if isinstance(args, str):
        head = args.lstrip().split(None, 1)
        if head and head[0] == tool:  # SWE-agent's multi-line actions carry a body: the first line
            return args.lstrip().split("\n", 1)[0]
        return None
    if isinstance(args, Mapping):
        for name in COMMAND_FIELDS:
            value = args.get(name)
            if isinstance(value, str) and value.strip():
                return value
            if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
                return " ".join(shlex.quote(v) for v in value)
    return None


_HEREDOC = re.compile(r"<<-?\s*['\"]?([A-Za-z_][A-Za-z0-9_]*)['\"]?")


def _lines(command: str) -> str:
    """The command's lines joined with ``;`` (a newline ends a command), here-document
    bodies (``<<EOF`` ... ``EOF``) and line continuations removed."""
    out: list[str] = []
    until: str | None = None
    for line in command.replace("\\\n", " ").split("\n"):
        if until is not None:
            if line.strip() == until:
                until = None
            continue
        out.append(line)
        match = _HEREDOC.search(line)
        if match is not None:
            until = match.group(1)
    return " ;\n".join(out)


def _tokens(command: str) -> list[str]:
    lexer = shlex.shlex(_lines(command), posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError:  # an unclosed quote: the words as they stand
        return _lines(command).replace(";", " ; ").split()


def parse(command: str, *, limit: int = 4096) -> list[SimpleCommand]:
    """The simple commands of ``command`` (its first ``limit`` code points), in order.

    >>> [c.words for c in parse('cd src && sudo grep -r "a b" . | head -5')]
    [('cd', 'src'), ('grep', '-r', 'a b', '.'), ('head', '-5')]
    >>> parse("echo hi >> log.txt 2>/dev/null")[0].writes
    ('log.txt',)
    """
    out: list[SimpleCommand] = []
    words: list[str] = []
    writes: list[str] = []
    pending: str | None = None  # a redirection operator waiting for its target
    heredoc = False
    for token in _tokens(command[:limit]):
        if not token:
            continue
        if pending is not None:
            if pending in (">", ">>", "&>", ">|") and token not in _NULL_TARGETS:
                writes.append(token)
            pending = None
            continue
        if token in (">", ">>", "&>", ">|", "<", "<<", "<<<", ">&", "<&"):
            heredoc = heredoc or token == "<<"
            pending = token
            if words and words[-1].isdigit() and token in (">", ">>", ">&"):  # 2> file: the descriptor
                words.pop()
            continue
        if token in _OPERATORS or set(token) <= set(";&|()"):
            if words or writes:
                out.append(_simple(words, writes))
            words, writes = [], []
            continue
        words.append(token)
    if words or writes:
        out.append(_simple(words, writes))
    return out


def _simple(words: list[str], writes: list[str]) -> SimpleCommand:
    i = 0
    while i < len(words) and (_ASSIGNMENT.match(words[i]) or words[i] in _WRAPPERS or words[i] == "timeout"):
        wrapper = words[i]
        i += 1
        while i < len(words) and (
            words[i].startswith("-")
            or (wrapper == "env" and _ASSIGNMENT.match(words[i]))
            or (wrapper == "timeout" and words[i][:1].isdigit())
        ):
            i += 1
    return SimpleCommand(tuple(words[i:]), tuple(writes))


def changes_state(commands: Iterable[SimpleCommand], state_commands: Iterable[str] = DEFAULT_STATE_COMMANDS) -> bool:
    """Whether any simple command changes the world: an output redirection to a
    file, a command in ``state_commands``, a state-changing subcommand (``git
    checkout``, ``pip install``, ``python -m pip install``), an in-place edit
    (``sed -i``, ``perl -i``).

    >>> changes_state(parse("cat a.py | grep x"))
    False
    >>> changes_state(parse("git checkout a.py && python t.py"))
    True
    """
    names = frozenset(state_commands)
    for cmd in commands:
        if cmd.writes:
            return True
        if not cmd.words:
            continue
        name = cmd.name
        if name in names:
            return True
        rest = cmd.words[1:]
        if name.startswith("python") and len(rest) >= 3 and rest[0] == "-m" and rest[1] in _SUBCOMMANDS:
            name, rest = rest[1], rest[2:]
        subs = _SUBCOMMANDS.get(name)
        if subs is not None:
            sub = next((w for w in rest if not w.startswith("-")), "")
            if sub in subs:
                return True
        flags = _IN_PLACE.get(name)
        if flags is not None and any(w.startswith(f) for w in rest for f in flags):
            return True
    return False


def search_scope(commands: Iterable[SimpleCommand]) -> str | None:
    """``None`` when no simple command is a recursive content search; else the
    widest scope among them: ``"machine"`` (``/``, ``~``, ``$HOME``), ``"root"``
    (the working directory: ``.``, ``*``, or no path at all) or ``"scoped"`` (a
    narrower path).  A search that is not recursive (``grep x a.py``, ``cat f |
    grep x``) reads what it names or its input, and is not a search of the tree.

    >>> search_scope(parse('grep -rn "def f" src/'))
    'scoped'
    >>> search_scope(parse('grep -r "def f" .')), search_scope(parse("rg -l TODO /"))
    ('root', 'machine')
    >>> search_scope(parse('grep "def f" a.py')) is None
    True
    """
    widest: str | None = None
    rank = {"scoped": 0, "root": 1, "machine": 2}
    for cmd in commands:
        name = cmd.name
        words = list(cmd.words)
        if name == "git" and len(words) > 1 and words[1] == "grep":
            name, words = "git grep", words[1:]
        elif name in _SEARCHES:
            flags = _SEARCHES[name]
            if flags and not any(
                w in flags
                or (w.startswith("-") and not w.startswith("--") and any(f[1] in w[1:] for f in flags if len(f) == 2))
                for w in words[1:]
            ):
                continue  # not recursive: it reads the files it names (or its input)
        else:
            continue
        operands: list[str] = []
        pattern_given = False
        skip = False
        for w in words[1:]:
            if skip:
                skip = False
                continue
            if w == "--":
                continue
            if w.startswith("-"):
                if w in ("-e", "--regexp", "-f", "--file"):
                    pattern_given = True
                if w in _VALUED:
                    skip = True
                continue
            operands.append(w)
        paths = operands if pattern_given else operands[1:]
        if name == "git grep":
            paths = [p for p in paths if p != "HEAD"]
        scope = "scoped"
        if not paths or all(p.rstrip("/") in _ROOT_PATHS for p in paths):
            scope = "root"
        if any(p in _MACHINE_PATHS or p.rstrip("/") in _MACHINE_PATHS for p in paths):
            scope = "machine"
        if widest is None or rank[scope] > rank[widest]:
            widest = scope
    return widest
