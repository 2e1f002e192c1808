"""The ``repeat`` rule: a zero-information repeat (spec §5.2; ``docs/rules.md``).

Per (session, call key) the guard keeps the last result hash and how many executions in a
row returned it.  The execution that makes the count reach the limit yields a reminder
(kind ``repeat``); the next request of that key is denied before it runs, the reason carrying
hash evidence, a summary of the previous result, one concrete alternative action and the
escape hatch.  The next request of a denied key runs (an escape run); when it returns the same
result the key is denied again, and after ``escape_runs`` such runs it is locked for the
session (kind ``locked``); a different result resets the chain.  A result that changes
(polling) never triggers.  The limit is ``repeat_limit`` (1 in replay mode), plus
``polling_grace`` for a key whose result has changed before in this session, plus
``success_grace`` for a key whose last result was not a failure.

With ``progress_resets_repeats`` (default) a new action between two executions -- a call never
made before whose result is new information, or a call that changes the world -- breaks the
chain and unlocks the key (``progress``).  *No effect* (kind ``no_effect``): an observation (not
a change, or a failed one, or one whose result shows 3+ lines) returning the same result for
the 3rd time in a row, each within ``cycle_max_period`` calls of the last, with only repeated
changes in between, gets a notice; again every ``repeat_limit + 1``.

*Replay mode* (:meth:`loopguard.ToolGuard.observe_attempt`): two adjacent model attempts with the
same stream signature (reasoning + text + tool calls, at least ``min_replay_chars``) set the limit
to 1 until an attempt differs.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .. import identity, messages
from ..redact import whole_words_head
from ..results import stable_text, summarize_result, summary_text
from ..terminal import shown_name
from .context import call_key, parse_args
from .decisions import Decision, deny, logger, notice
from .state import HEAD_NOT_KEPT, KeyState

if TYPE_CHECKING:
    from .config import ToolGuardConfig
    from .context import Call
    from .state import SessionState

__all__ = ["RULE", "after", "attempt_signature", "before"]

RULE = "repeat"
_MATCH_LINE = re.compile(r"(?m)^\s*([^\s:]+\.[A-Za-z0-9]{1,8}):(\d+)[:\s]")


def limit(cfg: ToolGuardConfig, s: SessionState, k: KeyState) -> int:
    """Identical results in a row after which the key's next request is denied."""
    if s.replay:
        return 1
    return cfg.repeat_limit + (cfg.polling_grace if k.changed else 0) + (0 if k.error else cfg.success_grace)


def broken_chain(cfg: ToolGuardConfig, s: SessionState, k: KeyState) -> bool:
    """New information came since the key last ran (``progress_resets_repeats``)."""
    return cfg.progress_resets_repeats and k.epoch != s.epoch


def alternative(text: str, error: bool, lang: str) -> str:
    """One concrete other action: read the file a result points at, else a generic step."""
    match = _MATCH_LINE.search(text[:4000])
    if match is not None:
        line = max(1, int(match.group(2)) - 20) if len(match.group(2)) < 10 else 1
        return messages.render("alt_read", lang, path=match.group(1), line=line)
    if error:
        return messages.render("alt_error", lang)
    return messages.render("alt_default", lang)


def before(c: Call) -> Decision | None:
    """Deny a locked key, or a key whose result repeated ``limit`` times; let an escape run through."""
    cfg, s = c.cfg, c.s
    k = s.keys.get(c.key)
    if k is None:
        return None
    if broken_chain(cfg, s, k):
        k.same, k.locked, k.denied, k.escapes, k.escaping = 0, False, False, 0, False
        k.epoch = s.epoch
        k.moved = True
    s.keys.move_to_end(c.key)
    digest = (k.last or "")[:16]
    if k.locked:
        text = _deny_text(c, k, digest, messages.render("no_escape", k.lang), "")
        return deny(cfg, "locked", RULE, text, c.tool, c.index, {"count": k.same, "hash": digest, "locked": True})
    most = limit(cfg, s, k)
    if k.last is None or k.same < most:
        return None
    if k.denied and k.escapes < cfg.escape_runs:
        k.escapes += 1
        k.escaping = True
        k.denied = False
        logger.info("escape run: %s (call %d)", shown_name(c.tool), c.index)
        escape_run = {"escape_run": True, "count": k.same, "hash": digest}
        return Decision("allow", "repeat", "", RULE, c.tool, c.index, escape_run)
    k.denied = True
    preview = messages.arguments_preview(c.args, cfg.arguments_preview_chars)
    escape = messages.render("escape" if k.escapes < cfg.escape_runs else "no_escape", k.lang)
    args = messages.render("args_preview", k.lang, preview=preview) if preview else ""
    text = _deny_text(c, k, digest, escape, args)
    if s.replay:
        text = text.replace("\n", messages.render("replay", k.lang) + "\n", 1)
    evidence: dict[str, Any] = {"count": k.same, "limit": most, "hash": digest, "replay": s.replay}
    return deny(cfg, "repeat", RULE, text, c.tool, c.index, evidence)


def _deny_text(c: Call, k: KeyState, digest: str, escape: str, args: str) -> str:
    kept = k.head != HEAD_NOT_KEPT  # a shared store keeps no result text
    return messages.render(
        "repeat_deny",
        k.lang,
        tool=c.tool,
        count=k.same,
        digest=digest,
        summary=summarize_result(k.head, max_chars=c.cfg.result_summary_chars)
        if kept
        else messages.render("result_not_kept", k.lang),
        alternative=alternative(k.head if kept else "", k.error, k.lang),
        escape=escape,
        args=args,
    )


def after(c: Call) -> None:
    """Count the result in the key's chain; the ``repeat``, ``locked`` and ``no_effect`` notices."""
    cfg, s = c.cfg, c.s
    c.fresh = c.key not in s.keys  # a call never made in this session (or long evicted)
    k = c.k = s.keys.use(c.key, lambda: KeyState(c.tool, s.epoch))
    c.moved = k.moved or k.epoch != s.epoch  # the world changed since this key last ran
    k.moved = False
    c.previous = k.last
    if broken_chain(cfg, s, k):
        k.same, k.locked, k.denied, k.escapes = 0, False, False, 0
    k.lang = c.lang
    _chain(c, k)
    k.denied = False
    _no_effect(c, k)
    # no partial secret at the cut; a structured result naming a secret: through redact_value
    k.head = whole_words_head(summary_text(c.value, c.text), cfg.result_summary_chars * 2 + 256)
    k.error = c.failure or c.error


def _chain(c: Call, k: KeyState) -> None:
    digest, lang = c.digest, c.lang
    evidence = {"count": 0, "hash": digest[:16]}
    if k.escaping:
        k.escaping = False
        if digest != k.last:
            k.last, k.same, k.escapes, k.changed = digest, 1, 0, True
            return
        k.same += 1
        if k.escapes >= c.cfg.escape_runs:
            k.locked = True
            text = messages.render("locked_notice", lang, tool=c.tool, digest=digest[:16])
            c.out.append(notice(c.tool, c.index, "locked", RULE, text, {**evidence, "count": k.same}))
    elif digest == k.last:
        k.same += 1
        if k.same == max(2, limit(c.cfg, c.s, k)):
            text = messages.render("repeat_notice", lang, tool=c.tool, count=k.same, digest=digest[:16])
            c.out.append(notice(c.tool, c.index, "repeat", RULE, text, {**evidence, "count": k.same}))
    else:
        if k.last is not None:
            k.changed = True
        k.last, k.same, k.escapes, k.denied = digest, 1, 0, False


def _no_effect(c: Call, k: KeyState) -> None:
    """The same result again, a few calls after the last one, although the world changed in
    between (an edit, then the same test output): the changes have no effect on it -- a
    notice every ``repeat_limit + 1`` such results (``repeat`` counts within one state)."""
    cfg, s, digest = c.cfg, c.s, c.digest
    close = s.executions - k.ran_at <= cfg.cycle_max_period  # (an A-B loop: edit, test, edit, test)
    k.across = k.across + 1 if digest == c.previous and close else 1
    k.ran_at = s.executions
    # a call since its last execution changed the world, and every such change repeated an
    # earlier one (the same edit again: a loop; a new edit is the agent trying something new)
    changed = s.changes != k.changes and s.new_changes == k.new_changes
    if k.across == 1:
        k.effect_at = cfg.repeat_limit + 1
    # a read or a test -- or a change that failed (it changed nothing) or that shows the state it
    # left (3+ lines of content, not an acknowledgment): its result is an observation
    probe = c.failure or len(c.lines) >= 3 or not c.world
    if not (probe and changed and digest == c.previous and k.same < k.across and k.across >= k.effect_at):
        return
    if not cfg.progress_resets_repeats:
        return
    k.effect_at = k.across + cfg.repeat_limit + 1  # the next notice of this streak
    text = messages.render("no_effect_notice", c.lang, tool=c.tool, count=k.across, digest=digest[:16])
    c.out.append(notice(c.tool, c.index, "no_effect", RULE, text, {"count": k.across, "hash": digest[:16]}))


def _arguments_size(args: Any, cap: int) -> int:
    """The length of the arguments' canonical text, at most ``cap + 1`` (a preview's length):
    measured, never redacted -- nothing here is shown."""
    try:
        text = identity.canonical_json(args, name="args")
    except (TypeError, ValueError, RecursionError):  # NaN, sets, objects, cycles, very deep values
        text = stable_text(args)
    return min(len(text), cap + 1)


def attempt_signature(reasoning: str, text: str, tool_calls: Sequence[tuple[str, Any]]) -> tuple[str, int]:
    """Replay mode: an attempt's stream signature (reasoning + text + tool calls) and its size in
    code points (the arguments by the length of their canonical text, capped at 10,001).  Two adjacent attempts with the same signature
    of at least ``min_replay_chars`` put the session in replay mode: the ``repeat`` limit is 1."""
    parts = [reasoning, "\x00", text]
    size = len(reasoning) + len(text)
    for tool, args in tool_calls:
        parsed = parse_args(args)
        parts.append(f"\x00{tool}\x01{call_key(str(tool), parsed)}")
        size += len(str(tool)) + _arguments_size(parsed, 10_000)
    return hashlib.sha256("".join(parts).encode("utf-8", "surrogatepass")).hexdigest(), size
