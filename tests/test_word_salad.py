"""T's word salad: random picks from a handful of words, no fixed period (issue 14, "misses to
close").

Both implementations give the same detections (hypothesis streams of few-word salads mixed with
the shapes that must stop the run: digits, brackets, tables, list items, code, CJK stops, any
chunking), the rule holds on inputs computed by hand, and the legitimate look-alikes (a long
boolean list, a log line repeated, code, a table, a checklist) never hold.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

import loopcore
from helpers import detect
from loopcore._reference import SALAD_PAIRS_PER_WORD, SALAD_WORD_REPEAT, SALAD_WORD_WINDOW
from loopguard import ConfigError, TextConfig
from test_parity import assert_parity_drawn

pytestmark = pytest.mark.skipif("cython" not in loopcore.implementations(), reason="the compiled core is not built")

T_ONLY = TextConfig("default", enabled=["salad"])
#: small runs, so that short hypothesis streams reach every branch of the walk
TINY_W = TextConfig("default", enabled=["salad"], check_every=7, salad_min_words=3, salad_max_words=3)

PIECES = [
    "wait",
    "no",
    "so",
    "ok",
    "I'll",
    "it",
    "a",
    "好的",
    "等等",
    "well-known",
    " ",
    "  ",
    ", ",
    ". ",
    "\n",
    "\n\n",
    "，",
    "…",
    "'",
    "-",
    "—",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    "|",
    "_",
    "=",
    "\\",
    "7",
    "x2",
    "\n- ",
    "\n* ",
    "\n> ",
    "\n  + ",
]


@st.composite
def word_streams(draw: st.DrawFn) -> str:
    return "".join(draw(st.lists(st.sampled_from(PIECES), max_size=160)))


@given(data=st.data())
def test_parity_tiny_word_salad(data: st.DataObject) -> None:
    assert_parity_drawn(data, data.draw(word_streams()), TINY_W)


@st.composite
def long_salads(draw: st.DrawFn) -> str:
    """Prose-like head, a salad of 2-10 words with one separator style, perhaps a breaker."""
    words = draw(
        st.lists(
            st.sampled_from(
                ["wait", "no", "so", "okay", "hmm", "then", "right", "yes", "maybe", "now", "I'll", "好的"]
            ),
            min_size=2,
            max_size=10,
            unique=True,
        )
    )
    sep = draw(st.sampled_from([" ", ", ", "\n", "，", ". "]))
    count = draw(st.integers(40, 400))
    seed = draw(st.integers(0, 2**16))
    rng = random.Random(seed)
    salad = sep.join(rng.choice(words) for _ in range(count))
    tail = draw(st.sampled_from(["", " [", " (x)", "\n\n- a", " 42 ", " | b |"]))
    return "The plan is simple and we follow it to the end. " + salad + tail


@given(data=st.data())
def test_parity_long_word_salads(data: st.DataObject) -> None:
    assert_parity_drawn(data, data.draw(long_salads()), T_ONLY)


# ---------------------------------------------------------------------------- by hand

PROSE = "Here is the plan for the release. "
BLOCK = "wait wait no no so so wait so no "


@pytest.mark.parametrize("impl", ["python", "cython"])
def test_a_word_salad_by_hand(impl: str) -> None:
    """34 code points of prose, then the 9 tokens of ``BLOCK`` (33 code points) over and over.

    At the checkpoint 200, t[34:200] holds 5 blocks (45 tokens) and the ``w`` of a word that may
    go on (left out): 45 < 60.  At 400, t[34:400] is 11 blocks (99 tokens) and ``wai``.  Going
    back, the run takes the salad's 3 words, then the prose's ``release``, ``the``, ``for``,
    ``plan``, ``the``, ``is`` (8 distinct) and ends at ``Here``, a 9th.  Those six occur fewer
    than 3 times: dropped, so the run starts at the first ``wait`` (34) with 99 tokens.  Its
    pairs: ww wn nn ns ss sw ws sn and, across blocks, nw: 9 >= 2 x 3.
    """
    assert (SALAD_WORD_REPEAT, SALAD_PAIRS_PER_WORD, SALAD_WORD_WINDOW) == (3, 2, 1200)
    assert len(PROSE) == 34 and len(BLOCK) == 33 and len(BLOCK.split()) == 9
    text = PROSE + BLOCK * 40
    found = detect(text, T_ONLY, impl, channel="reasoning")
    assert [(d["kind"], d["position"], d["start"], d["cut"]) for d in found] == [("salad", 400, 34, 34)]
    assert found[0]["evidence"] == {"unit": "word", "unique": 3, "tokens": 99}


@pytest.mark.parametrize("impl", ["python", "cython"])
def test_the_window_bounds_the_run(impl: str) -> None:
    """``wait no so `` 150 times (1,650 code points: 3 pairs < 2 x 3, a repeated line, not a
    salad), then ``BLOCK``s.  At 1,800 the blocks brought the pairs ww nn ss ws sn (9 >= 6).  The
    window is t[600:1800]; 600 = 54 x 11 + 6 is the ``o`` of a ``no`` whose ``n`` is before the
    window (a cut word, left out): the run starts at the next ``so``, 602.  Its tokens: that
    ``so``, 95 more lines (285), 4 blocks (36) and ``wait wait no no`` (4; ``so`` touches 1,800
    and is left out): 326."""
    text = "wait no so " * 150 + BLOCK * 10
    found = detect(text, T_ONLY, impl, channel="reasoning")
    assert [(d["position"], d["cut"]) for d in found] == [(1800, 602)]
    assert found[0]["evidence"] == {"unit": "word", "unique": 3, "tokens": 326}


@pytest.mark.parametrize("impl", ["python", "cython"])
@pytest.mark.parametrize("breaker", ["7", "(", "|", "_", "=", "\\", "x2", " "])
def test_what_stops_the_run(impl: str, breaker: str) -> None:
    """12 blocks (396 code points, 108 tokens), the breaker, a space, 3 blocks (497 in all).
    At 400 the walk starts at ``wa`` (left out), meets the breaker first and stops with no
    token; at the end 26 tokens follow it (the last one left out).  A plain space stops
    nothing: the checkpoint 400 holds with the 108 tokens from 0."""
    text = BLOCK * 12 + breaker + " " + BLOCK * 3
    found = detect(text, T_ONLY, impl, channel="reasoning")
    if breaker == " ":
        assert [(d["position"], d["cut"], d["evidence"]["tokens"]) for d in found] == [(400, 0, 108)]
    else:
        assert found == []


@pytest.mark.parametrize("impl", ["python", "cython"])
def test_an_open_bracket_holds_until_a_blank_line(impl: str) -> None:
    """Inside an open bracket the words are data (a long list literal); a blank line ends the
    paragraph and the count.  ``(`` + space + 12 blocks: never.  ``(`` + blank line + 12 blocks:
    at the end (399; the checkpoint 200 has 5 blocks and a part, < 60 tokens) the run is the 108
    tokens after the blank line, from 3 (a block ends with a space: no token touches the end)."""
    assert detect("( " + BLOCK * 12, T_ONLY, impl, channel="reasoning") == []
    found = detect("(\n\n" + BLOCK * 12, T_ONLY, impl, channel="reasoning")
    assert [(d["position"], d["cut"], d["evidence"]["tokens"]) for d in found] == [(399, 3, 108)]


@pytest.mark.parametrize("impl", ["python", "cython"])
def test_a_list_line_s_words_do_not_count(impl: str) -> None:
    """``Notes:`` / ``- okay okay`` / ``okay`` + 12 blocks (24 + 396 = 420 code points).  At 400
    the walk keeps 11 blocks and ``wait wait no`` (102 tokens) and the ``okay`` at 19, then meets
    the list line ``- okay okay`` (7-18): its two words are dropped, so ``okay`` occurs once,
    fewer than 3 times, and is trimmed: the run is the 102 tokens from 24.  (Counting the dropped
    words would keep ``okay`` and cut at 19; found by a review's parity run.)"""
    text = "Notes:\n- okay okay\nokay " + BLOCK * 12
    assert text.index("wait") == 24 and len(text) == 420
    found = detect(text, T_ONLY, impl, channel="reasoning")
    assert [(d["position"], d["cut"]) for d in found] == [(400, 24)]
    assert found[0]["evidence"] == {"unit": "word", "unique": 3, "tokens": 102}


@pytest.mark.parametrize("impl", ["python", "cython"])
@pytest.mark.parametrize("marker", ["-", "*", "+", "•", ">"])
def test_a_list_item_line_is_dropped_whichever_its_marker(impl: str, marker: str) -> None:
    """``Notes:`` / ``<marker> no`` / 12 blocks: the item line (7-11) is dropped whether the walk
    meets its newline (``-`` is a sentence mark) or its marker (a symbol).  At 400 the run is
    t[12:400]: 11 blocks (99 tokens) and ``wait wait no no so so`` (``wai`` touches 400, left
    out): 105 tokens from 12 (the text is 12 + 12 x 33 = 408 code points)."""
    text = f"Notes:\n{marker} no\n" + BLOCK * 12
    assert text.index("wait") == 12
    found = detect(text, T_ONLY, impl, channel="reasoning")
    assert [(d["position"], d["cut"], d["evidence"]["tokens"]) for d in found] == [(400, 12, 105)]


def _boolean_list() -> str:
    rng = random.Random(13)
    return PROSE + "The output is:\n[" + ", ".join(rng.choice(["True", "False"]) for _ in range(400)) + "]\n"


def _word_table() -> str:
    rng = random.Random(14)
    rows = "".join("| " + " | ".join(rng.choice(["yes", "no", "maybe"]) for _ in range(5)) + " |\n" for _ in range(80))
    return PROSE + "| a | b | c | d | e |\n|---|---|---|---|---|\n" + rows


def _log_lines() -> str:
    rng = random.Random(15)
    return PROSE + "".join(
        f"{rng.choice(['Cloning', 'Creating', 'Destroying'])} test database for alias "
        f"'{rng.choice(['default', 'other'])}'...\n"
        for _ in range(60)
    )


def _checklist() -> str:
    rng = random.Random(16)
    return PROSE + "".join(
        f"- [ ] {rng.choice(['review', 'merge', 'test'])} the {rng.choice(['code', 'docs'])}\n" for _ in range(80)
    )


def _items() -> str:
    rng = random.Random(17)
    return PROSE + "".join(f"* {rng.choice(['yes', 'no', 'maybe'])}, {rng.choice(['yes', 'no'])}\n" for _ in range(120))


def _code() -> str:
    rng = random.Random(18)
    names = ["ds", "copy", "deep", "z", "check", "dtype"]
    return PROSE + "".join(
        f"{rng.choice(names)}_{rng.choice(names)} = {rng.choice(names)}.{rng.choice(names)}()\n" for _ in range(80)
    )


def _quoted() -> str:
    rng = random.Random(19)
    return (
        PROSE
        + "status IN ("
        + ", ".join(f"'{rng.choice(['open', 'closed', 'pending'])}'" for _ in range(150))
        + ") and tags: "
        + ", ".join(f'"{rng.choice(["yes", "no"])}"' for _ in range(150))
    )


def _column() -> str:
    rng = random.Random(20)
    return PROSE + "Results:\n" + "".join(f"{rng.choice(['PASS', 'FAIL', 'SKIP'])}\n" for _ in range(300))


def _tsv() -> str:
    rng = random.Random(21)
    return (
        PROSE
        + "a\tb\n"
        + "".join(f"{rng.choice(['true', 'false'])}\t{rng.choice(['yes', 'no'])}\n" for _ in range(200))
    )


def _letters() -> str:
    """DNA bases, board cells, coin sides: one Latin letter each, symbols rather than words."""
    rng = random.Random(22)
    return (
        PROSE
        + " ".join(rng.choice("ACGT") for _ in range(400))
        + "\n"
        + "\n".join(" ".join(rng.choice("XO.") for _ in range(3)) for _ in range(90))
    )


def _star_items() -> str:
    rng = random.Random(23)
    return PROSE + "".join(
        f"{rng.choice(['*', '+', '•', '>'])} {rng.choice(['yes', 'no', 'maybe'])} {rng.choice(['yes', 'no'])}\n"
        for _ in range(150)
    )


NOT_SALADS = {
    "boolean_list": _boolean_list,
    "word_table": _word_table,
    "log_lines": _log_lines,
    "checklist": _checklist,
    "items": _items,
    "code": _code,
    "quoted": _quoted,
    "column": _column,
    "tsv": _tsv,
    "letters": _letters,
    "star_items": _star_items,
}


@pytest.mark.parametrize("impl", ["python", "cython"])
@pytest.mark.parametrize("name", sorted(NOT_SALADS))
def test_look_alikes_are_not_word_salads(impl: str, name: str) -> None:
    """Few words in no order, but data (a list literal longer than the window, quoted strings, a
    column of one value per line, a TSV), a table, list items (any marker), code, single
    letters (bases, board cells); or in one order (a log line repeated, 2 pairs per word at
    most).  Some of them
    are loops for other detectors; none is T's word salad."""
    text = NOT_SALADS[name]()
    assert len(text) > SALAD_WORD_WINDOW
    assert detect(text, T_ONLY, impl, channel="reasoning") == []


def test_word_salad_keys_are_validated() -> None:
    assert TextConfig().salad_max_words == 8 and TextConfig().salad_min_words == 60
    with pytest.raises(ConfigError, match="salad_max_words"):
        TextConfig(salad_max_words=17)
    with pytest.raises(ConfigError, match="salad_min_words"):
        TextConfig(salad_min_words=1)
    with pytest.raises(ConfigError, match="salad_min_words"):
        TextConfig(salad_min_words=301)  # cannot fit the 1,200-code-point window
    assert (
        detect(
            PROSE + BLOCK * 40,
            TextConfig("default", enabled=["salad"], salad_max_words=0),
            "cython",
            channel="reasoning",
        )
        == []
    )
