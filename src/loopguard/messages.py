"""Intervention texts the model reads: reminders, denials, anchors, breakers (the guard's rules: ``docs/rules.md``).

Every text starts with the source tag ``[loopguard]`` (seed 001: synthetic
messages are always labelled with their source), exists in English and
Chinese, and is passed through :func:`loopguard.redact.redact_secrets`
before it leaves this module.  Arguments appear only as a preview capped at
``arguments_preview_chars`` (spec §5.2), results only as a capped summary.

``language="auto"`` picks Chinese when the sample text (the tool result or
the arguments preview) holds more Han characters than Latin letters and than
kana and hangul (Japanese and Korean text get English).
"""

from __future__ import annotations

import re
from typing import Any

from . import identity
from .redact import redact_head, redact_secrets, redact_value
from .results import stable_text
from .terminal import shown_name

__all__ = [
    "SOURCE",
    "LANGUAGES",
    "pick_language",
    "render",
    "arguments_preview",
    "TEMPLATES",
    "prune_marker",
    "prune_text",
]

#: The tag every intervention carries (``Intervention.source``) and starts with.
SOURCE = "loopguard"
#: How every text starts.
SOURCE_TAG = "[loopguard]"
LANGUAGES = ("auto", "en", "zh")
_TOOL_CHARS = 100  # tool names longer than this are cut in texts

# kind -> language -> template (str.format fields)
TEMPLATES: dict[str, dict[str, str]] = {
    "repeat_notice": {
        "en": (
            "[loopguard] `{tool}` with identical arguments has now returned byte-identical results "
            "{count} times (hash {digest}). Running it again cannot bring new information; the next "
            "identical call will be blocked. Use the result you already have and take a different step."
        ),
        "zh": (
            "[loopguard] `{tool}` 以相同参数已连续 {count} 次返回逐字节相同的结果（哈希 {digest}）。"
            "再执行一次不会带来任何新信息，下一次相同调用将被拦截。请直接使用已有结果，换一个动作推进。"
        ),
    },
    "repeat_deny": {
        "en": (
            "[loopguard] Duplicate tool call blocked: `{tool}` with identical arguments has already "
            "executed {count} times and returned byte-identical results (hash {digest}). No new "
            "information can come from running it again.{args}\n"
            "Previous result (preserved in the conversation above): {summary}\n"
            "Do NOT call `{tool}` with these arguments again. Take ONE different action that moves the "
            "task forward: {alternative}\n"
            "{escape}"
        ),
        "zh": (
            "[loopguard] 重复的工具调用已被拦截：`{tool}` 以相同参数已执行 {count} 次，结果逐字节相同"
            "（哈希 {digest}），再执行一次不会带来任何新信息。{args}\n"
            "上一次的结果（已保留在上文对话中）：{summary}\n"
            "不要再用这些参数调用 `{tool}`。请做一个能推进任务的不同动作：{alternative}\n"
            "{escape}"
        ),
    },
    "result_not_kept": {
        "en": "(not repeated here)",
        "zh": "（此处不再重复）",
    },
    "escape": {
        "en": (
            "If you have concrete evidence that the world changed since the last run, repeat the exact "
            "call one more time and it will be executed exactly once."
        ),
        "zh": "如果你有确凿证据表明上次执行之后情况已经改变，请原样再发一次该调用，它将被执行且仅执行一次。",
    },
    "no_escape": {
        "en": "The escape run has been used and returned the same result: this call stays blocked in this session.",
        "zh": "逃生额度已用完且结果仍然相同：本会话中该调用将一直被拦截。",
    },
    "locked_notice": {
        "en": (
            "[loopguard] The repeated `{tool}` call returned the same result again (hash {digest}). "
            "It is now blocked for the rest of this session. Use the result above."
        ),
        "zh": "[loopguard] 重复的 `{tool}` 调用再次返回相同结果（哈希 {digest}），本会话内该调用已被锁定。请使用上文的结果。",
    },
    "replay": {
        "en": " Your last two steps were replayed verbatim (reasoning, text and calls), so the limit is 1.",
        "zh": " 你最近两步的思考、回复和调用被逐字重放，因此门槛已降为 1。",
    },
    "drift_notice": {
        "en": (
            "[loopguard] `{tool}` returned the same lines as an earlier `{other}` call "
            "({overlap:.0%} line overlap, {lines} lines): rewording the call does not bring new "
            "information. Work with the result you already have, or change what you ask for."
        ),
        "zh": (
            "[loopguard] `{tool}` 返回的内容与之前的 `{other}` 调用几乎相同（行重叠 {overlap:.0%}，共 {lines} 行）："
            "换个说法调用不会带来新信息。请使用已有结果，或改变你要查的内容。"
        ),
    },
    "reworded_notice": {
        "en": (
            "[loopguard] `{tool}` has been called {count} times in a row with reworded arguments and has "
            "returned the same result each time: rewording the call does not bring new information. "
            "Use the result you have, or change what you ask for."
        ),
        "zh": (
            "[loopguard] `{tool}` 已连续 {count} 次以换了说法的参数调用，每次都返回相同结果："
            "换个说法调用不会带来新信息。请使用已有结果，或改变你要查的内容。"
        ),
    },
    "no_effect_notice": {
        "en": (
            "[loopguard] `{tool}` has returned the same result {count} times in a row (hash {digest}), "
            "although the calls in between changed things: those changes do not change its outcome. "
            "Step back and look for the cause elsewhere before you change and re-run it again."
        ),
        "zh": (
            "[loopguard] `{tool}` 已连续 {count} 次返回相同结果（哈希 {digest}），尽管其间的调用做了修改："
            "这些修改没有改变它的结果。请先退一步到别处寻找原因，再继续修改和重跑。"
        ),
    },
    "error_notice": {
        "en": (
            "[loopguard] `{tool}` failed {steps} calls ago and nothing since has addressed the error "
            "(no `{remedial}` and no call on the same path). Deal with the error first: read the file "
            "or output it names, fix the cause, then retry."
        ),
        "zh": (
            "[loopguard] `{tool}` 在 {steps} 次调用之前失败了，之后没有任何针对该错误的动作"
            "（没有 `{remedial}`，也没有作用于同一路径的调用）。请先处理这个错误：读取它提到的文件或输出，修正原因后再重试。"
        ),
    },
    "anchor": {
        "en": (
            "[loopguard] The last {window} tool calls brought no new information. Stop and write a "
            "short progress anchor before the next call:\n"
            "- Goal: what the user asked for\n"
            "- Done: what you have established so far\n"
            "- Next: ONE concrete action that is different from the calls above"
        ),
        "zh": (
            "[loopguard] 最近 {window} 次工具调用没有带来任何新信息。在下一次调用之前，先写一个简短的进度锚点：\n"
            "- 目标：用户要求的是什么\n"
            "- 已完成：目前已经确认了什么\n"
            "- 下一步：一个与上面的调用都不同的具体动作"
        ),
    },
    "circuit_breaker": {
        "en": (
            "[loopguard] Circuit breaker: {count} interventions in a row without any progress. Stop "
            "calling tools now. Tell the user what you were trying to do, what you found, and where "
            "you are stuck, and ask how to proceed."
        ),
        "zh": (
            "[loopguard] 熔断：连续 {count} 次干预都没有带来任何进展。现在停止调用工具，"
            "向用户说明你在做什么、已经发现了什么、卡在哪里，并询问如何继续。"
        ),
    },
    "unscoped_deny": {
        "en": (
            "[loopguard] Unscoped search blocked: `{tool}` without {fields} would search everything "
            "(dependencies and build output included) and flood the context.{args} Repeat the search "
            "with a `{field}` that names the directory or files you mean."
        ),
        "zh": (
            "[loopguard] 无边界搜索已被拦截：不带 {fields} 的 `{tool}` 会搜索所有内容（包括依赖和构建产物）并撑爆上下文。{args}"
            "请带上指明目录或文件的 `{field}` 再搜索。"
        ),
    },
    "cycle_notice": {
        "en": (
            "[loopguard] The same {period} calls ({tools}) have now repeated {periods} times in a row "
            "with identical results. This cycle brings no new information; break it with a "
            "different action."
        ),
        "zh": (
            "[loopguard] 同一组 {period} 个调用（{tools}）已经连续重复 {periods} 轮，结果完全相同。"
            "这个循环不会带来新信息，请用一个不同的动作打破它。"
        ),
    },
    "cycle_deny": {
        "en": (
            "[loopguard] Call blocked: it continues a cycle of {period} calls ({tools}) that has "
            "already repeated {periods} times with identical results. Take a different action."
        ),
        "zh": "[loopguard] 调用已被拦截：它延续了一个已经以相同结果重复 {periods} 轮的 {period} 步循环（{tools}）。请换一个动作。",
    },
    "repeat_streak": {
        "en": (
            "[loopguard] `{tool}` was requested {count} times in a row with the same action and no "
            "change in its result. The turn should be cancelled; report to the user instead of retrying."
        ),
        "zh": "[loopguard] `{tool}` 已以相同动作连续请求 {count} 次且结果没有变化。应取消本轮，改为向用户汇报，不要再重试。",
    },
    "stalled": {
        "en": "[loopguard] No progress for {minutes:g} minutes{pending}. The turn looks stalled.",
        "zh": "[loopguard] 已经 {minutes:g} 分钟没有任何进展{pending}，本轮看起来已经停滞。",
    },
    "stalled_pending": {"en": " while a tool call is pending", "zh": "（有工具调用尚未返回）"},
    "strikes": {
        "en": ("[loopguard] {count} strong loop signals ({kinds}) within {minutes:g} minutes: the turn is cancelled."),
        "zh": "[loopguard] {minutes:g} 分钟内出现 {count} 次强循环信号（{kinds}）：本轮已取消。",
    },
    "text_loop": {
        "en": "[loopguard] The {channel} started repeating itself ({kind} at {position}); it was cut at {cut}.",
        "zh": "[loopguard] {channel_zh}开始重复自身（{kind}，位置 {position}），已在 {cut} 处截断。",
    },
    "text_loop_notice": {
        "en": (
            "[loopguard] The {channel} may be starting to repeat itself ({kind} at {position}, "
            "from {cut}). If you are going in circles, stop and take a different approach."
        ),
        "zh": "[loopguard] {channel_zh}可能开始重复自身（{kind}，位置 {position}，自 {cut} 起）。如果在原地打转，请停下来换一种做法。",
    },
    "loop_hint": {
        "en": (
            "[loopguard] Your {channel} is repeating itself. Stop repeating: do not restate what you already "
            "wrote; give your conclusion now, or take a different approach."
        ),
        "zh": "[loopguard] 你的{channel_zh}在原地重复。停止重复：不要再复述已经写过的内容，现在给出结论，或换一种做法。",
    },
    "empty_turn": {
        "en": (
            "[loopguard] Your last {count} turn(s) ended with reasoning but no answer text. Write the "
            "answer for the user now."
        ),
        "zh": "[loopguard] 你最近 {count} 个回合只有思考、没有输出正文。现在请把给用户的回答写出来。",
    },
    "stall_nudge": {
        "en": (
            "[loopguard] Your last {count} responses were long reasoning with no answer and no tool call. "
            "Stop deliberating: give the answer now, or take one concrete action."
        ),
        "zh": "[loopguard] 你最近 {count} 次回复都只有很长的思考，没有正文也没有工具调用。停止反复斟酌：现在给出回答，或执行一个具体动作。",
    },
    "marker_reasoning": {
        "en": "〔{count} chars of repeated reasoning removed〕",
        "zh": "〔已删除 {count} 字符的重复推理〕",
    },
    "marker_text": {"en": "〔{count} chars of repeated text removed〕", "zh": "〔已删除 {count} 字符的重复正文〕"},
    "resume": {
        "en": (
            "[loopguard] Your previous {channel} started repeating itself and was stopped; the "
            "{count} repeated characters were removed. Do not repeat what you already wrote. Continue "
            "from where the useful part ended and give the final answer."
        ),
        "zh": "[loopguard] 你上一次的{channel_zh}开始重复自身，已被中止，{count} 个重复字符已删除。不要重复已经写过的内容，从有效部分结束处继续，并给出最终回答。",
    },
    "alt_read": {
        "en": "call `read` on {path} (offset {line}) instead of searching again.",
        "zh": "改为对 {path} 调用 `read`（offset {line}），不要再搜索。",
    },
    "alt_error": {
        "en": "read the file or output the error names and fix its cause before running this again.",
        "zh": "先读取错误信息中提到的文件或输出，修正原因后再运行。",
    },
    "alt_default": {
        "en": "read or edit a file, run a different command, use another tool, or ask the user.",
        "zh": "读取或编辑文件、运行另一条命令、使用其他工具，或询问用户。",
    },
    "args_preview": {"en": " Arguments: {preview}", "zh": " 参数：{preview}"},
}


_HAN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f]")
_KANA_HANGUL = re.compile("[\u3040-\u30ff\u1100-\u11ff\uac00-\ud7af]")
_NOT_LETTER = bytes(c for c in range(128) if not chr(c).isalpha())


def pick_language(language: str, sample: str = "") -> str:
    """``"en"`` or ``"zh"``: ``language`` itself unless it is ``"auto"``; then
    ``"zh"`` when the first 2000 characters of ``sample`` hold more Han
    characters than ASCII letters and than kana and hangul together.

    >>> pick_language("auto", "找到 3 处匹配"), pick_language("auto", "3 matches"), pick_language("zh")
    ('zh', 'en', 'zh')
    """
    if language != "auto":
        return language
    sample = sample[:2000]
    han = len(_HAN.findall(sample))
    if not han:
        return "en"
    latin = len(sample.encode("ascii", "ignore").translate(None, _NOT_LETTER))
    other = len(_KANA_HANGUL.findall(sample))  # Japanese or Korean text: English serves better than Chinese
    return "zh" if han > latin and han > other else "en"


def render(template: str, language: str, **fields: Any) -> str:
    """The template named ``template`` in ``language`` (``"en"``/``"zh"``) with
    ``fields`` filled in, each field redacted on its own (numbers kept as they are).
    Raises ``KeyError`` for an unknown template."""
    table = TEMPLATES[template]
    if "tool" in fields:  # a tool name is not a payload: redacted before its cut, one line
        fields["tool"] = shown_name(fields["tool"], _TOOL_CHARS)
    # each field redacted on its own (the templates hold no secrets): a preview cut inside a
    # quoted value then cannot make the redactor take the template's text after it for the value
    safe = {k: v if isinstance(v, (int, float)) else redact_secrets(str(v)) for k, v in fields.items()}
    return table.get(language, table["en"]).format(**safe)


def arguments_preview(args: Any, limit: int) -> str:
    """At most ``limit`` characters of the arguments as compact canonical JSON,
    secret-named keys hiding whatever they hold (:func:`loopguard.redact.redact_value`),
    redacted before the cut (``…`` marks a cut and is not counted); ``""``
    when ``limit`` is 0.

    >>> arguments_preview({"q": "x" * 10, "token": "abc"}, 20)
    '{"q":"xxxxxxxxxx","t…'
    """
    if limit <= 0:
        return ""
    try:
        value = redact_value(identity.parse_args(args))  # a secret-named key hides whatever it holds
    except (ValueError, RecursionError):  # bytes that are not UTF-8, JSON nested too deep to parse
        value = redact_value(args)
    try:
        text = identity.canonical_json(value, name="args")
    except (TypeError, ValueError, RecursionError):  # NaN, sets, objects, cycles, very deep values
        text = stable_text(value)
    # redacted before the cut (a cut secret would no longer look like one), over the part that can
    # reach the preview plus SECRET_MARGIN: a secret starting in the preview is read whole
    shown, cut = redact_head(text, limit)
    return shown + ("…" if cut else "")


def prune_marker(kept: str, original: str, channel: str, removed: int, language: str = "auto") -> str:
    """The marker line a prune appends: the ``marker_reasoning`` (``channel == "reasoning"``) or
    ``marker_text`` template with ``removed`` (code points), in ``language`` (``"auto"``: told from
    ``kept``, else ``original``), on its own line (a newline first when ``kept`` does not end with
    one); ``""`` when nothing was removed.  SPEC §5 (the marker after a cut)."""
    if not removed:
        return ""
    lang = pick_language(language, kept or original)
    marker = render("marker_reasoning" if channel == "reasoning" else "marker_text", lang, count=removed)
    if kept and not kept.endswith("\n"):
        marker = "\n" + marker
    return marker


def prune_text(
    original: str, cut: int, channel: str, language: str = "auto", *, marker: bool = True
) -> tuple[int, int, str, str]:
    """``(cut, removed, marker, kept)`` of pruning ``original`` at ``cut``: ``cut`` clamped to
    ``[0, len(original)]``, ``removed = len(original) - cut`` code points, the marker line of
    :func:`prune_marker` (``""`` when ``marker`` is false or nothing was removed), and
    ``kept = original[:cut] + marker``.  The one prune of the live guard
    (:class:`loopguard.StreamGuard`) and of ``loopguard clean``."""
    cut = max(0, min(cut, len(original)))
    removed = len(original) - cut
    head = original[:cut]
    line = prune_marker(head, original, channel, removed, language) if marker else ""
    return cut, removed, line, head + line
