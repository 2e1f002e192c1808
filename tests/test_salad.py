"""T (``salad``): random picks from a few symbols -- emoji, kaomoji -- with no words.

Both implementations give the same detections (hypothesis streams of symbol salads, prose and
banners, any chunking; every shared case), and the rule holds on hand-computed inputs.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

import loopcore
from conftest import CASES, load_index, shared_data
from helpers import detect, random_cuts
from loopcore._reference import SALAD_GATE, SALAD_WORD
from loopguard import TextConfig
from test_parity import assert_parity_drawn

pytestmark = pytest.mark.skipif("cython" not in loopcore.implementations(), reason="the compiled core is not built")

T_ONLY = TextConfig("default", enabled=["salad"])
TINY_T = TextConfig("default", enabled=["salad"], check_every=7, salad_window=30, salad_max_unique=9)

TOKENS = ["🎉", "🎊", "✨", "🥳", "💯", "ヽ(＾▽＾)ノ", "(ﾉ◕ヮ◕)ﾉ*:･ﾟ✧", "\\(^o^)/", " ", "\n", "!!", "==="]
WORDS = ["the ", "cache ", "keeps ", "a ", "copy ", "数据", "缓存 ", "ok. ", "42 "]


@st.composite
def salad_streams(draw: st.DrawFn) -> str:
    pieces = draw(st.lists(st.sampled_from(TOKENS + WORDS), max_size=80))
    return "".join(pieces)


@given(data=st.data())
def test_parity_tiny_salad(data: st.DataObject) -> None:
    assert_parity_drawn(data, data.draw(salad_streams()), TINY_T)


@shared_data
@pytest.mark.parametrize("case", [c for c in load_index() if c["kind"] == "text"], ids=lambda c: c["file"][:3])
def test_parity_salad_on_the_cases(case: dict) -> None:
    text = (CASES / case["file"]).read_text(encoding="utf-8")
    channel = "reasoning" if case["channel"] == "reasoning" else "text"
    reference = detect(text, T_ONLY, "python", channel=channel)
    assert detect(text, T_ONLY, "cython", channel=channel, cuts=random_cuts(len(text), seed=len(text))) == reference


@pytest.mark.parametrize("impl", ["python", "cython"])
def test_a_salad_by_hand(impl: str) -> None:
    """39 code points of prose, then 761 of emoji (5 kinds), blanks and newlines, no letter.

    At the checkpoint 600 the last 50 code points are salad (no alphanumeric); the window t[0:600]
    holds the prose's 30 letters (< 0.25 x 600 = 150), 15 distinct characters of prose plus the
    salad's 6 new ones (21 < 32) and well under 50 % whitespace, so T fires at 600.  The cut is
    the end of the last run of SALAD_WORD letters: "done" ends at 39.
    """
    assert SALAD_WORD == 3 and SALAD_GATE == 50
    prose = "We shipped it all, and tests pass: done"
    assert len(prose) == 39 and len(set(prose)) == 15
    rng = random.Random(3)
    salad = "".join(rng.choice("🎉🎊✨🥳💯 \n") for _ in range(761))
    text = prose + salad
    assert sum(ch.isalnum() for ch in text[:600]) == 30 and len(set(text[:600])) == 21
    assert sum(ch.isspace() for ch in text[:600]) < 300
    found = detect(text, T_ONLY, impl, channel="reasoning")
    assert [(d["kind"], d["position"], d["start"], d["cut"]) for d in found] == [("salad", 600, 39, 39)]
    assert found[0]["evidence"] == {"unit": "symbol", "unique": 21, "alnum": 30 / 600}


@pytest.mark.parametrize("impl", ["python", "cython"])
def test_words_and_padding_are_not_salad(impl: str) -> None:
    """An emoji status report (words on every line: 60 % alphanumeric) and blank padding after
    an emoji (whitespace >= 50 %)."""
    report = "".join(f"✅ check {i} passed\n" for i in range(60))
    padding = "🎉" + " " * 800
    for text in (report, padding):
        assert detect(text, T_ONLY, impl, channel="reasoning") == []
