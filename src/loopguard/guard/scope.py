"""The ``unscoped_search`` rule (spec §5.2; ``docs/rules.md``).

A tool in ``search_tools`` without any non-empty ``scope_fields`` → deny
(``unscoped_search="deny"``) or allow.  A shell-style call (a ``shell_tools`` tool, a ``command``
field, or a string whose first word is the tool) is read through its parsed command: a
recursive search (``grep -r``, ``rg``, ``ag``, ``ack``, ``git grep``) of ``/`` or ``~`` per
``unscoped_search``, of the working directory (``.``, no path) per ``root_search``
(``"allow"``; ``"notice"`` or ``"deny"``); other commands are not searches.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import messages
from .decisions import Decision, deny
from .words import has_scope, matches

if TYPE_CHECKING:
    from .context import Call

__all__ = ["RULE", "before"]

RULE = "unscoped_search"


def _action(c: Call) -> str | None:
    """What to do with the request: ``"deny"`` / ``"notice"`` when it is an unscoped search, else ``None``."""
    cfg, facts = c.cfg, c.facts
    if facts is not None and facts.scope in ("root", "machine"):
        action = cfg.unscoped_search if facts.scope == "machine" else cfg.root_search
        return None if action == "allow" else action
    # a shell-style call that is not a recursive search reads what it names
    unscoped = (
        facts is None
        and cfg.unscoped_search == "deny"
        and matches(c.tool, cfg.search_tools)
        and not has_scope(c.args, cfg.scope_fields)
    )
    return cfg.unscoped_search if unscoped else None


def before(c: Call) -> Decision | None:
    """Deny (or notice) an unscoped search before it runs."""
    action = _action(c)
    if action is None:
        return None
    cfg = c.cfg
    preview = messages.arguments_preview(c.args, cfg.arguments_preview_chars)
    lang = c.s.pick_lang(cfg.language, preview)
    text = messages.render(
        "unscoped_deny",
        lang,
        tool=c.tool,
        fields=" / ".join(f"`{f}`" for f in cfg.scope_fields),
        field=cfg.scope_fields[0],
        args=messages.render("args_preview", lang, preview=preview) if preview else "",
    )
    evidence: dict[str, Any] = {"scope_fields": list(cfg.scope_fields)}
    if c.facts is not None and c.facts.scope is not None:
        evidence["scope"] = c.facts.scope
    if action == "notice":
        return Decision("notice", "unscoped_search", text, RULE, c.tool, c.index, evidence)
    return deny(cfg, "unscoped_search", RULE, text, c.tool, c.index, evidence)
