"""Labelled regression cases for the shapes issue 14 names, legitimate and looping, replayed
through a ``Session`` as a host would (one attempt, 16-code-point deltas, default profile).

Legitimate shapes (traces, enumerations, templated sentences with new numbers, an answer written
twice, checklists, shared-prefix and templated lists, a base64 payload with a zero region, a table
of few cell values, code made of a few identifiers, a list of 200 random booleans) are never cut.  Loops (a phrase rotation, a shrinking unit, a blank run after
a finished answer, a digit runaway, a salad of a few words) are cut, at the offset computed by hand in each test: one
copy of the loop is kept.
"""

from __future__ import annotations

import base64
import json
import random

import pytest

from loopguard import Session


def replay(text: str, channel: str = "reasoning") -> tuple[str, int | None, object]:
    """``(action, at, verdict)``: the first stop (``cut``/``cancel``) or else the first notice,
    ``at`` = the end of the delta that returned it; ``("allow", None, None)`` when neither."""
    s = Session("shapes")
    s.start_turn()
    s.start_attempt()
    notice = None
    for i in range(0, len(text), 16):
        v = s.feed(text[i : i + 16], channel)
        if v.stop:
            return v.action, i + 16, v
        if v.action == "notice" and notice is None:
            notice = (v.action, i + 16, v)
    end = s.end_attempt()
    if end.stop:
        return end.action, len(text), end
    return notice or ("allow", None, None)


def _prose(n: int, seed: int) -> str:
    rng = random.Random(seed)
    words = (
        "the value we need is given by a short argument so that each step follows from the "
        "previous one and nothing else is assumed here about which case comes first"
    ).split()
    out = " ".join(rng.choice(words) for _ in range(n // 4))
    return (out[: n - 2] + ". ").capitalize()


# ------------------------------------------------------------------ legitimate


def _trace() -> str:
    s = "[hello ]+ hello, world!!_ hi"
    lines = ["Step-by-step removal:\n"]
    for ch in s[:-1]:
        s = s[1:]
        lines.append(f"- After processing '{ch}', `tmp` becomes '{s}'.\n")
    return _prose(300, 1) + "".join(lines) + "So the result is 'i'.\n"


def _case_enumeration() -> str:
    cases = "".join(
        f"If $p = {p}$, then $p^2 + 2 = {p * p + 2}$, which is {'prime' if p % 3 else 'divisible by 3'}.\n"
        for p in (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47)
    )
    return _prose(300, 2) + cases + "Hence only $p = 3$ works.\n"


def _search() -> str:
    rows = "".join(f"For $x={x}$, we get $b={x * x - 3 * x + 1}$, which is still too small.\n" for x in range(2, 30))
    return _prose(200, 3) + rows + "For $x=30$ we get $b=811$, which works.\n"


def _answer_twice() -> str:
    reasoning = _prose(900, 4)
    return (
        '```json\n{\n    "reasoning": "'
        + reasoning
        + '",\n    "answer": "7"\n}\n```\n\n'
        + reasoning
        + " So the answer is 7."
    )


def _checklist() -> str:
    return "Before merging, each reviewer ticks:\n" + "- [ ] I ran the full test suite locally\n" * 12 + "Thanks!\n"


def _shared_prefix() -> str:
    names = ["parse", "render", "load", "save", "merge", "split", "flush", "index", "scan", "open", "close", "seek"]
    return _prose(200, 5) + "".join(
        f"- The helper in utils/io.py that we call before every {n} step returns None\n" for n in names
    )


def _numbered_template() -> str:
    return _prose(200, 6) + "".join(
        f"{i}. Open data/part_{i:02d}.csv, check that its header has 7 columns and "
        f"note its row count ({1000 + 37 * i}).\n"
        for i in range(1, 21)
    )


def _base64_payload() -> str:
    rng = random.Random(7)
    blob = bytes(rng.randrange(256) for _ in range(300)) + bytes(330) + bytes(rng.randrange(256) for _ in range(300))
    b64 = base64.b64encode(blob).decode()
    lines = "\n".join(b64[i : i + 76] for i in range(0, len(b64), 76))
    return "The attachment, base64:\n" + lines + "\nThat is the whole file.\n"


def _few_value_table() -> str:
    rng = random.Random(8)
    rows = "".join("| " + " | ".join(rng.choice("01") for _ in range(6)) + " |\n" for _ in range(60))
    return "Truth table:\n| a | b | c | d | e | f |\n|---|---|---|---|---|---|\n" + rows


def _boolean_list() -> str:
    """A program's output: a JSON list of 200 random booleans (one copy of nothing)."""
    rng = random.Random(7)
    return _prose(300, 7) + "The output is " + json.dumps([rng.choice([True, False]) for _ in range(200)]) + ".\n"


def _code_identifiers() -> str:
    """Unfenced code made of a handful of identifiers (``ds``, ``copy``, ``deep``, ``z``...)."""
    body = "".join(
        f'print("\\n{e}:")\n{v} = {e}\ncheck_dtype({v}, "{e}")\n'
        for e, v in [
            ("ds.copy()", "ds_copy"),
            ("ds.copy(deep=True)", "ds_deep_copy"),
            ("ds.z", "ds_z"),
            ("ds.z.copy()", "ds_z_copy"),
            ("ds.z.copy(deep=True)", "ds_z_deep_copy"),
            ("copy.copy(ds)", "ds_copy2"),
            ("copy.deepcopy(ds)", "ds_deepcopy"),
            ("copy.copy(ds.z)", "ds_z_copy2"),
            ("copy.deepcopy(ds.z)", "ds_z_deepcopy"),
        ]
    )
    return _prose(200, 16) + "Run this:\n" + body


LEGITIMATE = {
    "boolean_list": _boolean_list,
    "code_identifiers": _code_identifiers,
    "trace": _trace,
    "case_enumeration": _case_enumeration,
    "templated_search": _search,
    "answer_written_twice": _answer_twice,
    "checklist": _checklist,
    "shared_prefix_list": _shared_prefix,
    "numbered_template_list": _numbered_template,
    "base64_zero_region": _base64_payload,
    "few_value_table": _few_value_table,
}


@pytest.mark.parametrize("name", sorted(LEGITIMATE))
@pytest.mark.parametrize("channel", ["reasoning", "text"])
def test_legitimate_shapes_are_never_cut(name: str, channel: str) -> None:
    action, at, verdict = replay(LEGITIMATE[name](), channel)
    assert action in ("allow", "notice"), (name, at, verdict)


def test_the_base64_zero_region_is_a_long_run_of_one_character() -> None:
    """The payload really has the shape: 330 zero bytes are a run of 440 ``A`` (minus the line
    breaks every 76)."""
    text = _base64_payload()
    assert "A" * 70 in text and text.count("A") >= 440


# ------------------------------------------------------------------ loops


def test_phrase_rotation_is_cut_at_its_first_phrase() -> None:
    """``Now. OK. Wait. Hmm. So.`` picked at random (no period): P cuts where the pooled phrases
    begin, right after the prose (300 code points)."""
    rng = random.Random(9)
    prose = _prose(300, 9)
    text = prose + " ".join(rng.choice(["Now.", "OK.", "Wait.", "Hmm.", "So."]) for _ in range(400))
    action, at, verdict = replay(text)
    assert action == "cut" and verdict.detection.kind == "pool"
    assert verdict.detection.cut == len(prose)


def test_a_shrinking_unit_is_cut() -> None:
    """A unit that mutates and shrinks: ``abc`` x 60, ``abcde`` x 60, ``ab`` x 100, then ``a``
    until the end.  It is cut, and nothing before the loop (the prose) is removed."""
    prose = _prose(300, 10)
    text = prose + "abc" * 60 + "abcde" * 60 + "ab" * 100 + "a" * 2000
    action, at, verdict = replay(text)
    assert action == "cut" and verdict.detection.cut >= len(prose)


@pytest.mark.parametrize("sep", [" ", ", ", "\n", "，"])
@pytest.mark.parametrize("words", [2, 5, 8])
def test_a_word_salad_is_cut_at_its_first_word(sep: str, words: int) -> None:
    """2, 5 or 8 words picked at random (no period), after 300 code points of prose: T's word
    salad cuts where the salad begins, right after the prose.  One word per line makes each
    word a phrase: P (the phrase pool) sees the rotation first and cuts at the same place."""
    rng = random.Random(17 + words)
    vocab = ["wait", "okay", "hmm", "right", "maybe", "yes", "then", "no"][:words]
    prose = _prose(300, 17)
    assert not set(vocab) & set(prose.lower().replace(".", " ").split())
    text = prose + sep.join(rng.choice(vocab) for _ in range(500))
    action, at, verdict = replay(text)
    assert action == "cut" and verdict.detection.cut == len(prose), (action, verdict)
    if sep == "\n":
        assert verdict.detection.kind == "pool"
    else:
        assert verdict.detection.kind == "salad"
        assert verdict.detection.evidence["unit"] == "word" and verdict.detection.evidence["unique"] == words
    assert at <= len(prose) + 800  # 60 words, then the next checkpoint


@pytest.mark.parametrize("blank", ["\n", " "])
def test_a_blank_run_after_a_finished_answer_is_cut_after_one_blank(blank: str) -> None:
    """The answer ends at ``A`` (after its full stop); blanks follow to the token limit.  Period 1:
    N's cut walks back while the code point before it equals the one before that, to ``A + 1``
    (one blank kept)."""
    answer = _prose(400, 11) + "The final answer is 42."
    text = answer + blank * 3000
    action, at, verdict = replay(text, "text")
    assert action == "cut" and verdict.detection.kind == "near_cycle"
    assert verdict.detection.cut == len(answer) + 1
    assert at <= len(answer) + 1200  # a window of 600 blanks covered, then one checkpoint to confirm


@pytest.mark.parametrize("digit", ["0", "3"])
def test_a_digit_runaway_is_cut_after_its_first_digit(digit: str) -> None:
    """``12.5`` then one digit to the token limit: cut at the run's start + 1."""
    head = _prose(400, 12) + "The value is 12.5"
    text = head + digit * 3000
    action, at, verdict = replay(text)
    assert action == "cut"
    assert verdict.detection.cut == len(head) + 1 - (head.endswith(digit))


# ------------------------------------------------------------------ loops inside code fences

_FENCE_PRE = "Here is the code you asked for, with the printing loop unrolled as requested:\n"
_FENCE_LINE = '    std::cout << "value: " << x << std::endl;\n'


@pytest.mark.parametrize("impl", ["python", "cython"])
def test_a_loop_inside_a_code_fence_is_seen_after_eight_copies(impl: str) -> None:
    """One code line emitted 200 times in a ``cpp`` fence on the text channel.  Fenced code is
    masked, but (``default``) a line repeated ``fence_repeat_lines`` (8) times in a row is shown to the detectors
    from its 8th copy on.  By hand: the prose is t[0:78] (its newline at 77), the fence opener
    78..84, copy j (1-based) of the 46-code-point line starts at 85 + 46 (j - 1), so the
    detectors see copy 8 (407) on right after the prose.  C's periodic suffix reaches back to
    the prose's newline (t 77, the same code point as the line's own newline); it is 723 >= 600
    long at the checkpoint t = 800, which is copy 16 (407 + 15 * 46 = 1097) + 32 = 1129; cut =
    t 77 + 46 = 123, the last code point of copy 8: 407 + 45 = 452."""
    from helpers import detect
    from loopguard import TextConfig

    assert TextConfig().fence_repeat_lines == 8 and TextConfig("rescue").fence_repeat_lines == 0
    assert len(_FENCE_PRE) == 78 and len(_FENCE_LINE) == 46
    text = _FENCE_PRE + "```cpp\n" + _FENCE_LINE * 200 + "```\n"
    found = detect(text, "default", impl, channel="text")
    assert [(d["kind"], d["position"], d["start"], d["cut"]) for d in found][:1] == [("cycle", 1129, 77, 452)]


@pytest.mark.parametrize("impl", ["python", "cython"])
def test_seven_copies_data_rows_and_varied_code_stay_masked(impl: str) -> None:
    """Seven identical code lines in a row (under the 8), rows of a zero table (no letters) and
    ordinary code: nothing reaches the detectors, nothing fires."""
    from helpers import detect

    seven = "```cpp\n" + (_FENCE_LINE * 7 + "    x += 1;\n") * 40 + "```\n"
    zeros = "```c\nint table[] = {\n" + "    0, 0, 0, 0, 0, 0, 0, 0,\n" * 200 + "};\n```\n"
    varied = (
        "```python\n"
        + "".join(f"    total_{i} = compute_value({i}, scale=factor_{i % 7})\n" for i in range(200))
        + "```\n"
    )
    for body in (seven, zeros, varied):
        assert detect(_FENCE_PRE + body + "That is all.\n", "default", impl, channel="text") == []


def test_a_session_cuts_a_fenced_loop_on_the_text_channel() -> None:
    text = _FENCE_PRE + "```cpp\n" + _FENCE_LINE * 200 + "```\n"
    action, at, verdict = replay(text, "text")
    assert action == "cut" and verdict.detection.kind == "cycle" and verdict.detection.cut == 452
    # a code line reaches the detectors at its newline: copy 16's is at 1097 + 45 = 1142, in the
    # delta 1136..1152
    assert at == 1152
