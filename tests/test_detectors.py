"""Boundary tests with hand-computed values for every detector (spec §2.1-2.5).

Each test builds a text whose numbers are known by construction, runs it through
both implementations (the ``impl`` fixture) and checks the exact detection, or
its absence one step below the threshold.
"""

from __future__ import annotations

import pytest

from helpers import detect, letters, noise_cjk, smallest_period
from loopguard import TextConfig

E_ONLY = TextConfig("fuse", enabled={"exact_tail"})
L_ONLY = TextConfig("fuse", enabled={"lowdiv_tail"})
S_ONLY = TextConfig("fuse", enabled={"lowdiv_sliding"})
C_ONLY = TextConfig("rescue", enabled={"cycle"})
P_ONLY = TextConfig("rescue", enabled={"pool"})

LOWER = "abcdefghijklmnopqrstuvwxyz"
UPPER = LOWER.upper()


# ----------------------------------------------------------------- E (§2.1)
def test_exact_tail_fires_at_repeats_minus_one_occurrences(impl: str) -> None:
    unit = noise_cjk(600, seed=1)
    # t[0:2000] = U U N200 U: the tail U occurs twice in region t[0:1400]
    text = unit + unit + noise_cjk(200, seed=2) + unit
    assert len(text) == 2000
    found = detect(text, E_ONLY, impl)
    assert found == [
        {"kind": "exact_tail", "channel": "text", "position": 2000, "start": 0, "cut": 600, "evidence": {"count": 2}}
    ]


def test_exact_tail_silent_one_occurrence_fewer(impl: str) -> None:
    unit = noise_cjk(600, seed=1)
    text = noise_cjk(600, seed=3) + unit + noise_cjk(200, seed=2) + unit
    assert detect(text, E_ONLY, impl) == []


def test_exact_tail_counts_non_overlapping_only(impl: str) -> None:
    # 2,000 x "a": the 600-char tail occurs at 0 and then at 600 (not at 1, 2, ...)
    found = detect("a" * 2000, E_ONLY, impl)
    assert found[0]["evidence"] == {"count": 2}
    assert (found[0]["start"], found[0]["cut"]) == (0, 600)


def test_exact_tail_repeats_key_and_min_chars(impl: str) -> None:
    unit = noise_cjk(600, seed=1)
    text = unit + unit + noise_cjk(200, seed=2) + unit
    assert detect(text, E_ONLY.replace(repeats=4), impl) == []  # needs 3 earlier copies
    assert detect(text, E_ONLY.replace(min_chars=2001), impl) == []  # no checkpoint >= 2001
    # one copy earlier in the region: cut keeps one copy (cut = n - window)
    found = detect(noise_cjk(600, 4) + unit + noise_cjk(200, 5) + unit, E_ONLY.replace(repeats=2), impl)
    assert [(f["start"], f["cut"], f["evidence"]["count"]) for f in found] == [(600, 1400, 1)]


# ----------------------------------------------------------------- L (§2.2)
def _lowdiv_text(unique: int, repeats: int, seed: int) -> tuple[str, str]:
    """2,000 chars over exactly ``unique`` letters with one 24-gram ``repeats`` times."""
    alphabet = (LOWER + UPPER)[:unique]
    gram = alphabet[:24]  # 24 distinct letters: no overlap with itself
    filler_len = (2000 - 24 * repeats) // (repeats + 1)
    pieces = []
    for i in range(repeats):
        pieces.append(letters(filler_len, alphabet[24:] + alphabet[:20:3], seed + i))
        pieces.append(gram)
    body = "".join(pieces)
    text = body + letters(2000 - len(body), alphabet, seed + 99)
    return text, gram


@pytest.mark.parametrize(("unique", "repeats", "fires"), [(44, 10, True), (45, 10, False), (44, 9, False)])
def test_lowdiv_tail_thresholds(impl: str, unique: int, repeats: int, fires: bool) -> None:
    text, gram = _lowdiv_text(unique, repeats, seed=unique * 100 + repeats)
    assert len(text) == 2000 and len(set(text)) == unique
    assert text.count(gram) == repeats
    grams = {text[i : i + 24] for i in range(len(text) - 23)}
    assert all(text.count(g) < repeats for g in grams if g != gram) or repeats == 10
    found = detect(text, L_ONLY, impl)
    if fires:
        assert found == [
            {
                "kind": "lowdiv_tail",
                "channel": "text",
                "position": 2000,
                "start": 0,
                "cut": 0,
                "evidence": {"unique": 44, "max_ngram": 10},
            }
        ]
    else:
        assert found == []


# ----------------------------------------------------------------- S (§2.3)
def _sliding_text(unique: int, repeats: int) -> str:
    alphabet = (LOWER + UPPER)[:unique]
    gram = alphabet[:24]
    filler = (400 - 24 * repeats) // (repeats + 1)
    seg = "".join(letters(filler, alphabet[24:] + alphabet[:24:5], 7 + i) + gram for i in range(repeats))
    seg += letters(400 - len(seg), alphabet, 11)
    assert len(seg) == 400 and len(set(seg)) == unique and seg.count(gram) == repeats
    # windows end at 400, 500, ...; [800, 1200) is exactly the low-diversity segment
    return noise_cjk(800, 1) + seg + noise_cjk(800, 2)


@pytest.mark.parametrize(("unique", "repeats", "fires"), [(29, 3, True), (30, 3, False), (29, 2, False)])
def test_lowdiv_sliding_thresholds(impl: str, unique: int, repeats: int, fires: bool) -> None:
    found = detect(_sliding_text(unique, repeats), S_ONLY, impl)
    if fires:
        assert found == [
            {
                "kind": "lowdiv_sliding",
                "channel": "text",
                "position": 2000,
                "start": 800,
                "cut": 800,
                "evidence": {"unique": 29, "max_ngram": 3, "window_start": 800},
            }
        ]
    else:
        assert found == []


def test_lowdiv_sliding_waits_for_min_chars_and_keeps_holding(impl: str) -> None:
    text = _sliding_text(29, 3)[:1200] + noise_cjk(1800, 3)
    det = detect(text, S_ONLY, impl)
    # fired window [800,1200) is reported at the first checkpoint >= min_chars, once
    assert [(d["position"], d["start"]) for d in det] == [(2000, 800)]


def test_lowdiv_sliding_final_window_at_finish(impl: str) -> None:
    # the only low-diversity stretch is the last 400 chars, which end unaligned (n = 2050)
    alphabet = LOWER[:20]
    gram = alphabet[:5] * 4 + alphabet[5:9]
    tail = gram + letters(100, alphabet, 1) + gram + letters(100, alphabet, 2) + gram
    tail += letters(400 - len(tail), alphabet, 3)
    text = noise_cjk(1650, 9) + tail
    assert len(text) == 2050 and (len(text) - 400) % 100 == 50
    found = detect(text, S_ONLY, impl)
    assert [(d["position"], d["start"], d["evidence"]["window_start"]) for d in found] == [(2050, 1650, 1650)]


# ----------------------------------------------------------------- C (§2.4)
def test_cycle_min_chars_599_vs_600(impl: str) -> None:
    unit = letters(20, LOWER, 5)
    assert smallest_period(unit) == 20
    periodic_600 = unit * 30
    hit = detect(noise_cjk(1000, 1) + periodic_600, C_ONLY, impl)
    assert hit == [
        {
            "kind": "cycle",
            "channel": "text",
            "position": 1600,
            "start": 1000,
            "cut": 1020,
            "evidence": {"period": 20, "copies": 30, "length": 600},
        }
    ]
    assert detect(noise_cjk(1001, 1) + periodic_600[1:], C_ONLY, impl) == []


def test_cycle_two_vs_three_copies(impl: str) -> None:
    unit = letters(300, LOWER, 6)
    assert smallest_period(unit) == 300
    assert detect(noise_cjk(1400, 2) + unit * 2, C_ONLY, impl) == []
    assert detect(noise_cjk(1100, 2) + unit * 3, C_ONLY, impl) == [
        {
            "kind": "cycle",
            "channel": "text",
            "position": 2000,
            "start": 1100,
            "cut": 1400,
            "evidence": {"period": 300, "copies": 3, "length": 900},
        }
    ]


@pytest.mark.parametrize(("period", "fires"), [(15, False), (16, True)])
def test_cycle_min_period(impl: str, period: int, fires: bool) -> None:
    unit = letters(period, LOWER, period)
    assert smallest_period(unit) == period
    text = noise_cjk(1040, 3) + unit * (960 // period)
    found = detect(text, C_ONLY, impl)
    if fires:
        assert found == [
            # first checkpoint with >= 600 periodic chars: n = 1800, 760 chars = 47 whole copies
            {
                "kind": "cycle",
                "channel": "text",
                "position": 1800,
                "start": 1040,
                "cut": 1056,
                "evidence": {"period": 16, "copies": 47, "length": 760},
            }
        ]
    else:
        assert found == []


@pytest.mark.parametrize(("period", "fires"), [(4000, True), (4001, False)])
def test_cycle_max_period(impl: str, period: int, fires: bool) -> None:
    unit = noise_cjk(period, seed=period)
    text = noise_cjk(13000 - 3 * period, seed=1) + unit * 3
    found = detect(text, C_ONLY, impl, channel="reasoning")
    if fires:
        assert len(text) == 13000
        assert found == [
            {
                "kind": "cycle",
                "channel": "reasoning",
                "position": 13000,
                "start": 1000,
                "cut": 5000,
                "evidence": {"period": 4000, "copies": 3, "length": 12000},
            }
        ]
    else:
        assert found == []


def test_cycle_reports_the_primitive_period(impl: str) -> None:
    half = letters(20, LOWER, 8)
    assert smallest_period(half) == 20
    found = detect(noise_cjk(1400, 4) + (half + half) * 15, C_ONLY, impl)
    assert [(f["start"], f["cut"], f["evidence"]) for f in found] == [
        (1400, 1420, {"period": 20, "copies": 30, "length": 600})
    ]


def test_cycle_below_min_period_is_not_a_cycle(impl: str) -> None:
    assert detect("-" * 3000, C_ONLY, impl) == []
    assert detect("ha " * 1000, C_ONLY, impl) == []


# ----------------------------------------------------------------- P (§2.5)
FILLERS = [f"Filler sentence number {i} talks about something else entirely today." for i in range(40)]


def _sentences(items: list[str], sep: str = " ") -> str:
    return sep.join(items) + sep


@pytest.mark.parametrize(("phrases", "fires"), [(23, True), (22, False)])
def test_pool_coverage_23_vs_22_of_30(impl: str, phrases: int, fires: bool) -> None:
    rotation = ["Now.", "Wait."] * 15
    items = FILLERS[: 30 - phrases] + rotation[:phrases]
    text = _sentences(items)
    found = detect(text, P_ONLY, impl)
    if fires:
        cut = text.index("Now.")
        assert found == [
            {
                "kind": "pool",
                "channel": "text",
                "position": len(text),
                "start": cut,
                "cut": cut,
                "evidence": {"coverage": 23 / 30, "phrases": ["Now.", "Wait."]},
            }
        ]
    else:
        assert found == []


def test_pool_needs_two_distinct_phrases(impl: str) -> None:
    assert detect(_sentences(["Wait."] * 40), P_ONLY, impl) == []
    found = detect(_sentences(["Wait.", "OK."] * 20), P_ONLY, impl)
    assert [(f["cut"], f["evidence"]["phrases"]) for f in found] == [(0, ["Wait.", "OK."])]


def test_pool_at_most_max_distinct(impl: str) -> None:
    nine = [f"Step {c}." for c in "ABCDEFGHI"]
    assert detect(_sentences(nine * 4), P_ONLY, impl) == []
    eight = nine[:8]
    assert len(detect(_sentences(eight * 4), P_ONLY, impl)) == 1


def test_pool_cut_skips_a_stale_early_phrase(impl: str) -> None:
    # retained: F F F F F P F F F F | window: 7 fillers + 23 phrases
    items = FILLERS[:5] + ["Now."] + FILLERS[5:9] + FILLERS[9:16] + (["Now.", "Wait."] * 12)[:23]
    text = _sentences(items)
    found = detect(text, P_ONLY, impl)
    window_first_phrase = text.index("Now.", text.index(FILLERS[15]))
    assert [(f["start"], f["cut"]) for f in found] == [(window_first_phrase, window_first_phrase)]


@pytest.mark.parametrize("prefix", ["- ", "* ", "+ ", "1. ", "12) ", "| ", "> ", "  - "])
def test_pool_list_table_quote_lines_not_counted(impl: str, prefix: str) -> None:
    lines = "".join(f"{prefix}{p}\n" for p in ["Now.", "Wait."] * 20)
    assert detect(lines, P_ONLY, impl) == []
    plain = "".join(f"{p}\n" for p in ["Now.", "Wait."] * 20)
    assert len(detect(plain, P_ONLY, impl)) == 1


def test_pool_period_needs_following_whitespace(impl: str) -> None:
    assert detect("Now.Wait.OK. " * 40, P_ONLY, impl) == []  # one sentence, one phrase
    found = detect("Now. Wait. OK. " * 40, P_ONLY, impl)
    # first checkpoint n = 200: 40 complete sentences; the window (the last 30) starts at
    # sentence 10 = "Wait."; every retained sentence is a phrase, so the cut is 0
    assert [(f["position"], f["cut"], f["evidence"]["phrases"]) for f in found] == [(200, 0, ["Wait.", "OK.", "Now."])]


def test_pool_cjk_full_stop_always_splits(impl: str) -> None:
    found = detect("继续。好的。" * 20, P_ONLY, impl, channel="reasoning")
    assert [(f["cut"], f["evidence"]["phrases"]) for f in found] == [(0, ["继续。", "好的。"])]


def test_pool_symbol_only_sentences_not_counted(impl: str) -> None:
    assert detect("... !!! " * 40, P_ONLY, impl) == []


def test_pool_trailing_fragment_not_counted(impl: str) -> None:
    # 29 complete sentences and a 30th without its boundary whitespace: no window yet
    text = _sentences(["Now.", "Wait."] * 14 + ["Now."]) + "Wait."
    assert detect(text, P_ONLY, impl) == []
    assert len(detect(text + " ", P_ONLY, impl)) == 1


def test_pool_long_sentences_are_never_phrases(impl: str) -> None:
    long = "This sentence is a good deal longer than forty-eight characters."
    assert len(long) > 48
    assert detect(_sentences([long, "Now."] * 20), P_ONLY, impl) == []


def test_pool_coverage_is_inclusive(impl: str) -> None:
    # pool_window=4: 3 phrases of 4 is exactly 0.75 -> holds (>=)
    cfg = P_ONLY.replace(pool_window=4, pool_min_occurrences=1, pool_max_phrase_chars=12)
    text = _sentences([FILLERS[0], "Now.", "Wait.", "Now."])
    assert [(f["cut"], f["evidence"]["coverage"]) for f in detect(text, cfg, impl)] == [(text.index("Now."), 0.75)]
    text = _sentences([FILLERS[0], FILLERS[1], "Wait.", "Now."])
    assert detect(text, cfg, impl) == []


@pytest.mark.parametrize(("number", "counted"), [("123456789", False), ("1234567890", True)])
def test_pool_numbered_list_marker_has_at_most_nine_digits(impl: str, number: str, counted: bool) -> None:
    lines = "".join(f"{number}. {p}\n" for p in ["Now.", "Wait."] * 20)
    found = detect(lines, P_ONLY, impl)
    # counted lines split into "<number>." and the phrase; the numbers are phrases too
    assert bool(found) is counted
