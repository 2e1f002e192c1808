"""loopcore's text scans (TokenFinder, word_lines): compiled and reference give the same results,
and both give the values computed by hand / by the str methods they stand for."""

from __future__ import annotations

import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

import loopcore
from loopcore import _scan_reference

SCANS = {"python": _scan_reference}
if "cython" in loopcore.implementations():
    from loopcore import _scan

    SCANS["cython"] = _scan

#: text pieces around token and line boundaries: case, digits, "_", "-", non-ASCII letters that
#: lower to ASCII (Kelvin sign), every line break str.splitlines knows, Unicode spaces
PIECES = [
    "in",
    "IN",
    "In5s",
    "took",
    "tooK",
    "too\u212a",
    "\u212a",
    "request_id",
    "Request_Id",
    "requestid",
    "_",
    "-",
    "5",
    "42",
    " ",
    "\t",
    "\n",
    "\r",
    "\r\n",
    "\v",
    "\f",
    "\x1c",
    "\x85",
    "\u2028",
    "\u2029",
    "\u00a0",
    "\u3000",
    "é",
    "ß",
    "中文",
    "😀",
    ":",
    "=",
    "}",
    "---",
    "x.request",
    "\udcff",
]
WORDS = ["in", "took", "request_id", "requestid", "x", "a1", "_z"]

text_st = st.lists(st.sampled_from(PIECES) | st.text(max_size=4), max_size=40).map("".join)


@pytest.fixture(params=sorted(SCANS))
def scan(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    return SCANS[request.param]


def test_the_live_scans_follow_the_live_core() -> None:
    if os.environ.get("LOOPCORE_IMPLEMENTATION") == "python" or loopcore.IMPLEMENTATION == "python":
        assert loopcore.TokenFinder is _scan_reference.TokenFinder
    else:
        assert loopcore.TokenFinder is SCANS["cython"].TokenFinder
        assert loopcore.word_lines is SCANS["cython"].word_lines


def test_tokens_by_hand(scan) -> None:  # type: ignore[no-untyped-def]
    finder = scan.TokenFinder(["in", "took", "request_id"])
    text = "Took 5s in5s within request_id: x REQUEST_ID-in"
    assert finder.find(text) == [(0, 4), (20, 30), (34, 44), (45, 47)]
    assert finder.find(text, True) == [(0, 4), (8, 10), (45, 47)]
    assert finder.find("") == [] and finder.find("intake took_ms") == []
    assert finder.find("took_ms", True) == [(0, 4)]  # the leading letters of the token


def test_words_that_cannot_be_tokens_are_dropped(scan) -> None:  # type: ignore[no-untyped-def]
    finder = scan.TokenFinder(["x.request", "Upper", "", "时间", "ok", 7])
    assert finder.words == frozenset({"ok"})
    assert finder.find("x.request ok Upper 时间") == [(10, 12)]
    assert scan.TokenFinder([]).find("anything at all") == []


def test_word_lines_by_hand(scan) -> None:  # type: ignore[no-untyped-def]
    assert scan.word_lines("a\r\n\n  b  \n}\n---\na\u2028 c \u3000", 512) == frozenset({"a", "b", "c"})
    assert scan.word_lines("x\ny\nz", 2) == frozenset({"x", "y"})
    assert scan.word_lines("", 5) == frozenset() and scan.word_lines("x", 0) == frozenset()
    assert scan.word_lines("_ _\n--\n é \n٣", 10) == frozenset({"é", "٣"})  # "_" is not a letter or digit


@given(text_st, st.lists(st.sampled_from(WORDS), max_size=5), st.booleans())
def test_token_finders_agree(text: str, words: list[str], prefix: bool) -> None:
    expected = _scan_reference.TokenFinder(words).find(text, prefix)
    for module in SCANS.values():
        assert module.TokenFinder(words).find(text, prefix) == expected


@given(text_st, st.integers(min_value=0, max_value=12))
def test_word_lines_is_the_str_methods(text: str, max_lines: int) -> None:
    expected = frozenset(
        line for line in map(str.strip, text.splitlines()[:max_lines]) if any(c.isalnum() for c in line)
    )
    for module in SCANS.values():
        assert module.word_lines(text, max_lines) == expected


def test_odd_arguments(scan) -> None:  # type: ignore[no-untyped-def]
    class Text(str):
        pass

    finder = scan.TokenFinder(["x"])
    for bad in (None, b"x", 5):
        with pytest.raises(TypeError, match="text must be str"):
            finder.find(bad)
        with pytest.raises(TypeError, match="text must be str"):
            scan.word_lines(bad, 3)
    with pytest.raises(TypeError, match="max_lines must be an int"):
        scan.word_lines("a", 1.5)
    assert finder.find(Text("a x b")) == [(2, 3)] and scan.word_lines(Text("a\nb"), 5) == frozenset({"a", "b"})
    assert scan.word_lines("a\nb", 2**70) == frozenset({"a", "b"}) and scan.word_lines("a", -(2**70)) == frozenset()
