"""N (``near_cycle``): a near-verbatim cycle -- copies of a period with small edits.

Both implementations give the same detections (hand cases, the shared cases, hypothesis
streams with noisy loops and record lines, any chunking), and the reference's rules hold on
hand-computed inputs: the packed k-gram and its key, the anchors (winnowing), the extension
across edits, the period and cut of a loop, the lag tolerance for insertions, the coverage
threshold, and the record-line hold-back.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import loopcore
from conftest import CASES, load_index, shared_data
from helpers import detect, random_cuts
from loopcore._reference import (
    NEAR_GAP,
    NEAR_MULTIPLES,
    NEAR_SEED_COST,
    NEAR_WINNOW,
    is_record_line,
    near_anchors,
    near_extend,
    near_key,
    near_multiple,
    near_packed,
    near_tolerance,
    record_chars,
)
from loopguard import TextConfig
from test_parity import ALPHABETS, assert_parity_drawn

pytestmark = pytest.mark.skipif("cython" not in loopcore.implementations(), reason="the compiled core is not built")

N_ONLY = TextConfig("default", enabled=["near_cycle"])

# every ring, window and buffer boundary of N is crossed by short texts
TINY_N = TextConfig(
    "default",
    enabled=["near_cycle", "cycle"],
    check_every=5,
    near_ngram=3,
    near_min_period=1,
    near_max_period=40,
    near_min_window=24,
    near_tolerance=8,
    near_min_lag_share=0.3,
    near_min_coverage=0.7,
    near_recurrence_window=30,
    near_min_recurrence=0.8,
    cycle_max_period=40,
    cycle_scan_chars=200,
)

RECORDS = [
    '{"a": 1}\n',
    "- key: v\n",
    "@@ -1 +1 @@\n",
    "+x = 1\n",
    "-  y\n",
    "src/a.py:3: E1\n",
    "t::x PASSED\n",
    "| a | b |\n",
    "- item\n",
    "Wait: no\n",
    "00000010: 0000 ffff\n",
    "12:30:05 INFO ok\n",
    "1853. A year\n",
    "2024-06-11T03:58:41.260Z INFO ok\n",
    "123Z x\n",
]


def _noisy(unit: str, copies: int, rate: float, rng: random.Random, alphabet: str) -> str:
    out = []
    for ch in unit * copies:
        r = rng.random()
        if r < rate / 3:
            out.append(rng.choice(alphabet))  # substitution
        elif r < 2 * rate / 3:
            out.append(rng.choice(alphabet) + ch)  # insertion
        elif r < rate:
            continue  # deletion
        else:
            out.append(ch)
    return "".join(out)


@st.composite
def noisy_streams(draw: st.DrawFn) -> str:
    kinds = draw(st.lists(st.sampled_from(sorted(ALPHABETS)), min_size=1, max_size=2, unique=True))
    pieces = st.one_of(*(ALPHABETS[k] for k in kinds), st.sampled_from(RECORDS))
    text = "".join(draw(st.lists(pieces, max_size=60)))
    if draw(st.booleans()):
        unit = "".join(draw(st.lists(pieces, min_size=1, max_size=12)))[:50] or "ab"
        rng = random.Random(draw(st.integers(0, 2**16)))
        loop = _noisy(unit, draw(st.integers(2, 14)), draw(st.sampled_from([0.0, 0.02, 0.05, 0.15])), rng, "xyz 。")
        at = draw(st.integers(0, len(text)))
        text = text[:at] + loop + text[at:]
    if draw(st.booleans()):  # restarts: one line re-emitted cut at different lengths
        line = "".join(draw(st.lists(pieces, min_size=1, max_size=6)))[:40] or "abc def"
        cuts = draw(st.lists(st.integers(1, len(line)), min_size=2, max_size=12))
        at = draw(st.integers(0, len(text)))
        text = text[:at] + "".join(line[:c] + "\n" for c in cuts) + text[at:]
    return text


@pytest.mark.slow
@given(data=st.data())
def test_parity_tiny_near_cycle(data: st.DataObject) -> None:
    assert_parity_drawn(data, data.draw(noisy_streams()), TINY_N)


@shared_data
@pytest.mark.parametrize("case", [c for c in load_index() if c["kind"] == "text"], ids=lambda c: c["file"][:3])
def test_parity_near_cycle_on_the_cases(case: dict) -> None:
    text = (CASES / case["file"]).read_text(encoding="utf-8")
    channel = "reasoning" if case["channel"] == "reasoning" else "text"
    config = TextConfig("default", enabled=["cycle", "pool", "near_cycle"])
    reference = detect(text, config, "python", channel=channel)
    assert detect(text, config, "cython", channel=channel, cuts=random_cuts(len(text), seed=len(text))) == reference


@settings(max_examples=6, deadline=None)
@given(period=st.integers(50, 1500), seed=st.integers(0, 1000), rate=st.sampled_from([0.0, 0.01, 0.03]))
def test_parity_near_cycle_long_periods(period: int, seed: int, rate: float) -> None:
    rng = random.Random(seed)
    words = "the cache keeps a copy of every page we read so the next request is served from memory".split()
    prose = " ".join(rng.choice(words) for _ in range(2000))
    unit = prose[:period]
    text = prose[period : period + 700] + _noisy(unit, 4, rate, rng, "qjx ") + prose[-500:]
    reference = detect(text, N_ONLY, "python", channel="reasoning")
    assert detect(text, N_ONLY, "cython", channel="reasoning", cuts=random_cuts(len(text), seed=seed)) == reference


def _unit(period: int) -> str:
    rng = random.Random(period)
    letters = "abcdefghijklmnopqrstuvwxyz"
    return "".join(rng.choice(letters) for _ in range(period))  # 26 letters: no 5-gram repeats inside


@pytest.mark.parametrize("impl", ["python", "cython"])
def test_a_verbatim_cycle_by_hand(impl: str) -> None:
    """Period 250 from offset 0 (random letters: no 5-gram repeats inside a copy).

    Every anchor of the last 200 positions ends a 5-gram last seen 250 earlier (share 1.0 >=
    0.35; their mean lag 250), so p = 250, tolerance 250 // 16 = 15 and the window is
    max(2 * 250, 600) = 600.  Position x matches its copy at lag 250 exactly when x >= 250, so
    the extension from the first matching anchor covers t[250:n] of the window (left down to
    250, where t[249] has no copy before it; right to the end): one segment, which costs
    NEAR_SEED_COST = 2.  At n = 600 the window t[0:600] is covered from 250 on: 350 - 2 <
    0.82 * 600.  At n = 800 the window t[200:800]: 550 - 2 = 548 >= 492, and N fires: cut = 250
    (copy 2: one copy kept), start = 250 - 250 = 0.  Its exact piece is that segment, 550 code
    points, at least min(250, NEAR_WHOLE_CAP): a whole copy -- but N did not hold at 600, so it is
    weak.  At n = 1,000 the window t[400:1000] is one exact piece of 600 again, and N held at 800
    with a whole copy: strong, reported again; its cut, first 400, walks back while the code point
    before it equals the one 250 before that, to 250 (start 0): where the weak one cut.
    """
    text = _unit(250) * 4
    found = [d for d in detect(text, N_ONLY, impl, channel="reasoning")]
    assert [(d["kind"], d["position"], d["start"], d["cut"], d.get("strength", "strong")) for d in found] == [
        ("near_cycle", 800, 0, 250, "weak"),
        ("near_cycle", 1000, 0, 250, "strong"),
    ]
    assert NEAR_SEED_COST == 2
    assert found[0]["evidence"] == {"period": 250, "coverage": 548 / 600, "exact": 550}


@pytest.mark.parametrize("impl", ["python", "cython"])
def test_an_insertion_shifts_the_lag_within_the_tolerance(impl: str) -> None:
    """One inserted character in each copy after the first: lags 250 and 251, tolerance 250 // 16 = 15."""
    unit = _unit(250)
    text = unit + "".join(unit[:100] + "Z" + unit[100:] for _ in range(3))
    found = detect(text, N_ONLY, impl, channel="reasoning")
    # weak at 800 (N did not hold before); copies 2-4 are identical, so the window t[400:1000]
    # is one exact piece of 600 at lag 251 at 1,000: confirmed, strong
    assert [(d["kind"], d["position"], d.get("strength", "strong")) for d in found] == [
        ("near_cycle", 800, "weak"),
        ("near_cycle", 1000, "strong"),
    ]
    assert found[0]["evidence"]["period"] in (250, 251)
    assert found[0]["cut"] == 250  # copy 2 starts at 250: one copy is kept
    assert found[1]["evidence"]["exact"] == 600


@pytest.mark.parametrize("impl", ["python", "cython"])
def test_below_the_coverage_nothing_fires(impl: str) -> None:
    """Every 4th character replaced in each copy: no 5-gram survives, coverage 0."""
    unit = _unit(250)
    copies = [unit] + ["".join("#" if (i + c) % 4 == 0 else ch for i, ch in enumerate(unit)) for c in range(3)]
    assert detect("".join(copies), N_ONLY, impl, channel="reasoning") == []


@pytest.mark.parametrize("impl", ["python", "cython"])
def test_record_lines_hold_back(impl: str) -> None:
    """The same block repeated as key: value lines does not fire; as prose lines it does."""
    rng = random.Random(5)
    letters = "abcdefghijklmnopqrstuvwxyz"
    lines = [
        (
            "".join(rng.choice(letters) for _ in range(5)),
            "".join(rng.choice(letters) for _ in range(rng.randint(20, 40))),
        )
        for _ in range(16)
    ]

    def block(prefix: str) -> str:  # no 5-gram repeats inside a block but the prefix
        return "".join(f"{prefix}{key}: {value}\n" for key, value in lines)

    records = block("") * 4  # lower-case keys: record lines (the same block four times)
    prose = block("Then ") * 4  # "Then alpha0: ..." is prose
    assert detect(records, N_ONLY, impl, channel="reasoning") == []
    assert [d["kind"] for d in detect(prose, N_ONLY, impl, channel="reasoning")][:1] == ["near_cycle"]


def test_record_lines_by_hand() -> None:
    records = [
        '{"id": 1}',
        "  [1, 2]",
        '"x",',
        "| a |",
        "key: v",
        "- job_name: x",
        "  x.y-z_:",
        "@@ -1,2 +1,2 @@",
        "+++ b/x.py",
        "--- a/x.py",
        "diff --git a/x b/x",
        "index 1a..2b 100644",
        "+x = 1",
        "-        y",
        "+",
        "tests/t.py::test_a PASSED",
        "/home/ci/x.py:41: Warning",
        "C:\\dir\\f.txt ok",
        "a::b",
        "00000010: 0000 0000  ....",
        "0x7ffe1200: 48 65",
        "12:30:05 INFO ok",
        "2024-01-02 x",
        "05:00 UTC: a",
        "1.2.3 notes",
        "1,000 rows",
        "2024-06-11T03:58:41.260Z INFO  [worker-5] ok",
        "2024-06-11T03:58:41Z x",
        '  "key": 1',
        '"a","b",3',
        '"say \\"hi\\"",',
        '"x" ]',
        '"k"\t: {',
        '"a", "b"',
        '"a",EU,3',
        '"a", 3',
        "2024-05-01T12:00:00+00:00 INFO ok",
        "12:00+0530 x",
        "09:15+05 y",
        "2024-03-01,US,gadget,9,9.99",
    ]
    prose = [
        "- item one",
        "Wait: no",
        "Key: v",
        "9a: v",
        "k : v",
        "plain words here",
        " + y",
        "x" * 201,
        "see a/b later",
        "",
        "   ",
        "1853. A year",
        "2211 help",
        "12: x",
        "1. step",
        "decade of",
        "0x1f: a",
        "3.: x",
        "12-: y",
        "2024-06-11Tx",
        "123Z x",
        "T12:30 x",
        '"when is it," she said',
        '"I am done."',
        '"unclosed, and on',
        '"say \\"hi\\" now" x',
        '"x"',
        '"No, I told you", she said',
        '"a", true',
        '"a",   ',
        "12+34 = 46",
        "100+2000 x",
        "1.2+05 x",
        "12:30+05:3 z",
        "2024,EU rows",
    ]
    assert [is_record_line(line) for line in records] == [True] * len(records)
    assert [is_record_line(line) for line in prose] == [False] * len(prose)


def test_record_chars_counts_whole_lines_inside_the_window() -> None:
    t = 'prose line\nkey: v\nmore prose\n{"a": 1}'
    # lines: "prose line\n" [0, 11), "key: v\n" [11, 18), "more prose\n" [18, 29), '{"a": 1}' [29, 37)
    assert record_chars(t, 0, len(t)) == 7 + 8
    assert record_chars(t, 14, len(t)) == 4 + 8  # from inside the key line: 14..17
    assert record_chars(t, 14, 33) == 4 + 4  # the last line as seen in t[:33]: '{"a"' is still a record


def test_packed_kgram_and_key_by_hand() -> None:
    """The packed k-gram is the last k code points, 8 bits apart, modulo 2**min(8k, 64)."""
    assert near_packed("xab", 2, 2) == ord("b") + (ord("a") << 8) == 24930
    assert near_packed("一丁", 1, 2) == (0x4E01 + (0x4E00 << 8)) % 2**16  # wide code points overlap
    # k >= 8: only the last 8 code points stay in 64 bits
    assert near_packed("zabcdefghi", 9, 9) == near_packed("yabcdefghi", 9, 9) == near_packed("abcdefghi", 8, 8)
    hb = 0x9E3779B97F4A7C15
    assert near_key("xab", 2, 2) == (24930 * hb % 2**64) >> 48


def test_anchors_are_the_trailing_minimum_keys() -> None:
    """An anchor's key is at most the keys of the NEAR_WINNOW - 1 positions before it."""
    flood = "a" * 40
    assert near_anchors(flood, 5, 0, 40) == list(range(4, 40))  # equal keys tie: every position
    unit = "abcdefg"  # period 7 > NEAR_WINNOW - 1: the same anchors in every copy after the first
    text = unit * 12
    anchors = near_anchors(text, 5, 0, len(text))
    later = [i for i in anchors if i >= 4 + NEAR_WINNOW + len(unit)]
    assert later and all(i - len(unit) in anchors for i in later)
    rng = random.Random(1)
    prose = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz     ") for _ in range(12_000))
    share = len(near_anchors(prose, 5, 0, len(prose))) / len(prose)
    assert 1 / (NEAR_WINNOW + 2) < share < 1 / (NEAR_WINNOW - 2)  # about one position in NEAR_WINNOW
    keys = [near_key(prose, i, 5) for i in range(4, 200)]
    by_hand = [
        i + 4 for i in range(len(keys)) if all(keys[i] <= keys[j] for j in range(max(0, i - NEAR_WINNOW + 1), i))
    ]
    assert near_anchors(prose, 5, 0, 200) == by_hand


def test_extension_across_edits_by_hand() -> None:
    """From offset 50 of copy 2 (lag 50): a substitution is skipped (1 gap), an insertion too and
    the lag becomes 51, a deletion moves the lag to 49 with no gap, two insertions to 52 (q + 2);
    a changed number (a digit
    against a digit) or more than NEAR_GAP edited code points stop it, a digit replaced by a
    letter does not, nor does a digit inside a loop of digits; an edit in the copy one period
    back is bridged by the copy two periods back, at ``q + p`` (+-2) when the copy one back is
    shorter than p."""
    unit = _unit(50)
    p, tol, k = 50, near_tolerance(50, 16), 5
    assert tol == 4 and NEAR_GAP == 8  # max(NEAR_MIN_TOL 2, min(NEAR_SHORT_TOL 4, 50 // 4), 50 // 16)
    assert near_extend(unit + unit, 50, 100, 50, p, tol, k, 4250) == (100, 0)  # verbatim: to the end
    sub = unit + unit[:20] + "#" + unit[21:]
    assert near_extend(sub, 50, 100, 50, p, tol, k, 4250) == (100, 1)
    ins = unit + unit[:20] + "#" + unit[20:]
    assert near_extend(ins, 50, 101, 50, p, tol, k, 4250) == (101, 1)  # "#" skipped, then lag 51
    dele = unit + unit[:20] + unit[21:]
    assert near_extend(dele, 50, 99, 50, p, tol, k, 4250) == (99, 0)
    # two insertions together: only lag 52 = q + 2 matches 5 code points again, 2 skipped
    two = unit + unit[:20] + "##" + unit[20:]
    assert near_extend(two, 50, 102, 50, p, tol, k, 4250) == (102, 2)
    digit = unit[:20] + "1" + unit[21:]
    assert near_extend(digit + unit[:20] + "2" + unit[21:], 50, 100, 50, p, tol, k, 4250) == (70, 0)
    assert near_extend(digit + unit[:20] + "x" + unit[21:], 50, 100, 50, p, tol, k, 4250) == (100, 1)  # noise
    wide = unit + unit[:20] + "#" * (NEAR_GAP + 1) + unit[29:]
    assert near_extend(wide, 50, 100, 50, p, tol, k, 4250) == (70, 0)
    # copy 2 edited at 20, copy 3 intact: from copy 3 (offset 100) the mismatch at 120 is the
    # copy one period back's edit; two periods back (lag 100) matches, so nothing is lost
    three = unit + unit[:20] + "#" + unit[21:] + unit
    assert near_extend(three, 100, 150, 50, p, tol, k, 4250) == (150, 0)
    assert near_extend(three, 100, 150, 50, p, tol, k, 99) == (150, 1)  # lag 100 beyond the link
    # copy 2 lost two code points (at 5, 6) and is edited over more than NEAR_GAP at 30-38: from
    # copy 3 (at 98; offset 10 is 108) its lag one period back is q = 50, two periods back
    # 98 = q + (p - 2), which 2q, 2q ± 1 miss (the copy two back is q plus copy 2's own lag, 48)
    drifted = unit + unit[:5] + unit[7:30] + "#" * NEAR_GAP + "#" + unit[39:] + unit
    assert len(drifted) == 148
    assert near_extend(drifted, 108, 148, 50, p, tol, k, 4250) == (148, 0)
    assert near_extend(drifted, 108, 148, 50, p, tol, k, 97) == (128, 0)  # lag 98 beyond the link
    # a loop of digits ("197", p = 3, tol 2): the 9 at 37 became 5 -- a digit against a digit,
    # but the copy back (34-36, "197") is all digits, so it is noise: skipped (1 gap), then
    # two periods back (lag 6 = q + p) matches 5 code points from 38; from 43 lag 3 again
    digits = "197" * 12 + "157" + "197" * 3
    assert near_extend(digits, 30, 48, 3, 3, 2, k, 4250) == (48, 1)
    assert near_extend("a197" * 9 + "a157" + "a197", 30, 44, 4, 4, 2, k, 4250) == (38, 0)  # "a": a field


def test_lag_multiples_by_hand() -> None:
    """The lag share counts a nearest lag within the tolerance of 1-4 periods (p = 9, tol 2)."""
    assert NEAR_MULTIPLES == 4
    assert [d for d in range(1, 50) if near_multiple(d, 9, 2)] == [
        7,
        8,
        9,
        10,
        11,
        16,
        17,
        18,
        19,
        20,
        25,
        26,
        27,
        28,
        29,
        34,
        35,
        36,
        37,
        38,
    ]


@pytest.mark.parametrize("impl", ["python", "cython"])
def test_offset_timestamps_and_date_first_csv_are_records(impl: str) -> None:
    """A heartbeat log stamped by ``isoformat()`` (``+00:00``) and a CSV whose rows start with a
    date: near-verbatim lines, held back as records on both channels (both fired N before)."""
    rng = random.Random(11)
    log = "".join(f"2024-05-01T12:{i // 60:02d}:{i % 60:02d}+00:00 INFO heartbeat ok\n" for i in range(300))
    csv = "date,region,product,units,unit_price\n" + "".join(
        f"2024-03-{1 + i // 10:02d},{rng.choice(['US', 'EU'])},{rng.choice(['gadget', 'widget'])},"
        f"{rng.randint(1, 9)},{rng.choice(['9.99', '19.99'])}\n"
        for i in range(300)
    )
    for text in (log, csv):
        for channel in ("reasoning", "text"):
            assert detect(text, N_ONLY, impl, channel=channel) == []
    # the same heartbeat lines without their timestamps are a loop
    assert [
        (d["kind"], d.get("strength", "strong"))
        for d in detect("INFO heartbeat ok, all good here\n" * 40, N_ONLY, impl, channel="reasoning")
    ] == [("near_cycle", "weak"), ("near_cycle", "strong")]  # verbatim: confirmed a checkpoint later


@pytest.mark.parametrize("impl", ["python", "cython"])
def test_a_loop_of_quoted_lines_is_not_records(impl: str) -> None:
    """Lines that open with a quote are records only as JSON strings or quoted CSV fields (the
    closing quote followed by ``: , ] }``): a paragraph of dialogue looped with 4 % noise fires
    (the probe loop that N held back as records before, at 0.95 coverage); the same block as
    ``"key": "value",`` lines holds back."""
    from test_quality_probe import quality

    sample = quality.make_loop("loop_ascii", 1010839, 3, period=170, noise=0.0422)
    assert sample.text[sample.loop_start] == '"' and sample.loop_end is None
    found = detect(sample.text, N_ONLY, impl, channel="reasoning")
    assert [d["kind"] for d in found][:1] == ["near_cycle"] and found[0]["strength"] == "weak"
    assert sample.first_repeat <= found[0]["position"] and sample.loop_start <= found[0]["cut"]
    assert abs(found[0]["evidence"]["period"] - 170) <= near_tolerance(170, 16)
    rng = random.Random(7)
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 9))) for _ in range(64)]
    block = "".join(f'"{words[2 * i]}": "{words[2 * i + 1]} {i}",\n' for i in range(32))
    assert detect(block * 4, N_ONLY, impl, channel="reasoning") == []
    assert [d["kind"] for d in detect(block.replace('": "', ' said "') * 4, N_ONLY, impl, channel="reasoning")][:1] == [
        "near_cycle"
    ]
    # dialogue with the comma after the closing quote, 12 copies with 3 % of code points replaced
    line = '"No, I already told you, the train leaves at nine", she said, and turned away.\n'
    copies = []
    for _ in range(12):
        chars = list(line)
        for _ in range(len(line) * 3 // 100):
            chars[rng.randrange(len(line) - 1)] = rng.choice("abcdefghij ")
        copies.append("".join(chars))
    found = detect("Some preface text here.\n" + "".join(copies), N_ONLY, impl, channel="reasoning")
    assert [d["kind"] for d in found] == ["near_cycle"] and found[0]["evidence"]["period"] == len(line)


@pytest.mark.parametrize(
    ("family", "index", "seed", "period", "noise"),
    [
        ("loop_ascii", 9545, 3, 203, 0.041015625),  # its copies stop 83 before a checkpoint
        ("loop_ascii", 20262, 3, 112, 0.046489419721010054),  # hypothesis: 0.77 at 3,600 before q ± 2
        ("loop_cjk", 1001123, 2, 103, 0.04925366193166064),  # pending kept: block under the share
        ("loop_ascii", 1002718, 1, 14, 0.042092880547653644),  # " 2116; it 2was": pending kept
        ("loop_cjk", 1002939, 2, 79, 0.04998),  # 0.80 with 2q, 2q ± 1 two back; q + p: 0.86
        ("loop_ascii", 1010641, 1, 16, 0.0496),  # lag share 0.19-0.29 at one period, 0.35-0.43 at m p
        ("loop_cjk", 100000000, 3, 9, 0.0385453180680243),  # hypothesis: share 0.20 at p, 0.43 at m p
        ("loop_ascii", 1011992, 2, 3, 0.0495),  # "197197197": digit against digit stopped it (0.77)
    ],
    ids=[
        "ends-between-checkpoints",
        "pending-kept",
        "pending-kept-cjk",
        "digit-heavy",
        "two-back-q-plus-p",
        "share-of-multiples",
        "share-of-multiples-cjk",
        "a-loop-of-digits",
    ],
)
def test_short_noisy_loops_hypothesis_and_the_probe_missed(
    family: str, index: int, seed: int, period: int, noise: float
) -> None:
    """Loops of about four copies at 4-5 % noise that N missed before q ± 2, the window that
    ends with the copies and the kept pending period (the 3rd and 4th miss with
    NEAR_PENDING_KEEP out of reach), two periods back at q + p, the lag share of multiples and
    the digit rule's exception for loops of digits: caught (after the first
    copy, before the loop's end + one checkpoint) at a period within tolerance, and the
    reference and the core agree."""
    from test_quality_probe import quality

    sample = quality.make_loop(family, index, seed, period=period, noise=noise)
    assert sample.loop_end is not None  # each recovers: the window must fit in a short loop
    reference = detect(sample.text, N_ONLY, "python", channel="reasoning")
    assert detect(sample.text, N_ONLY, "cython", channel="reasoning") == reference
    first = reference[0]
    assert sample.first_repeat <= first["position"] <= sample.loop_end + 200
    assert sample.loop_start <= first["cut"] < sample.loop_end
    assert abs(first["evidence"]["period"] - period) <= near_tolerance(period, 16)


@pytest.mark.parametrize("impl", ["python", "cython"])
def test_a_unit_with_an_inner_repeat_is_found_by_its_votes(impl: str) -> None:
    """The probe's loop "be the the the in as" (period 20, 1.6 % noise; hypothesis found it):
    most anchors' nearest lag is the inner 4 (" the "), whose window fails; each anchor's vote
    for its first four earlier occurrences makes 20 the next candidate (tolerance 4), and its
    window of 600 at 1,800 is covered by two segments: [1200, 1208) at lag 16 (" the " four
    times back; 8 code points, too short to place the cut) and [1208, 1799) at lag 20 across 8
    skipped code points (the segment's own start is 1207): 6 + 581 = 587 after the seed
    costs (the loop starts at 1,118; its second copy at 1,138).  The cut walks back from 1207
    while the copy before it is exact (:func:`near_walk_back`)."""
    from test_quality_probe import quality

    sample = quality.make_loop("loop_ascii", 1, 2, period=20, noise=0.015625)
    assert (sample.loop_start, sample.first_repeat) == (1118, 1138)
    found = detect(sample.text, N_ONLY, impl, channel="reasoning")
    # the cut walks back while t[c - 1] == t[c - 21]: from 1207 to 1186 (t[1185] != t[1165]: an edit)
    assert [(d["kind"], d["position"], d["cut"]) for d in found][:1] == [("near_cycle", 1800, 1186)]
    assert found[0]["evidence"] == {"period": 20, "coverage": 587 / 600, "exact": 130}
    assert found[0]["strength"] == "weak"  # N did not hold at 1,600


@pytest.mark.parametrize("check_every", [1, 5, 10, 200])
def test_one_report_per_loop_at_any_checkpoint_spacing(check_every: int) -> None:
    """A loop N holds on is one episode: at the next checkpoint its window at the same period
    comes first, so blocks with few anchors (check_every 1: one position) do not break it.  It
    is reported twice: weak at its first checkpoint, strong (confirmed) at the next one."""
    text = "Let me check the config again. " * 300
    config = TextConfig("default", enabled=["near_cycle"], check_every=check_every)
    found = detect(text, config, "cython", channel="reasoning")
    assert [(d["kind"], d["evidence"]["period"], d.get("strength", "strong")) for d in found] == [
        ("near_cycle", 31, "weak"),
        ("near_cycle", 31, "strong"),
    ]
    assert found[1]["position"] - found[0]["position"] == check_every


def test_one_report_per_loop_both_implementations() -> None:
    text = "A short preface about nothing in particular. " + "Let me check the config again. " * 60
    config = TextConfig("default", enabled=["near_cycle"], check_every=10)
    reference = detect(text, config, "python", channel="reasoning")
    assert [(d["kind"], d.get("strength", "strong")) for d in reference] == [
        ("near_cycle", "weak"),
        ("near_cycle", "strong"),
    ]
    assert detect(text, config, "cython", channel="reasoning", cuts=random_cuts(len(text), seed=2)) == reference


def test_n_needs_its_smallest_window_for_restarts_too() -> None:
    """The reference returns nothing before ``near_min_window`` code points, the recurrence
    check included, even when ``near_recurrence_window`` is smaller (a fresh-user review found
    the core firing at 210 here)."""
    config = TextConfig("default", enabled=["near_cycle"], near_recurrence_window=100)
    text = "the quick brown fox jumps over it. " * 6  # 210 < near_min_window 600
    assert detect(text, config, "python", channel="reasoning") == []
    assert detect(text, config, "cython", channel="reasoning") == []


_WORDS = (
    "the a of to and in is it that for was on are with as be this have from or one had by but not "
    "what all were when we there can an your which their said if do will each about how up out them"
).split()


@pytest.mark.parametrize("end", [2790, 2797, 2804])
def test_the_window_that_ends_a_block_early_reads_its_first_line_whole(end: int) -> None:
    """A window that ends where the copies stopped starts up to a block before the checkpoint's
    window; its first line is read back to its start (up to RECORD_MAX_LINE) for the record
    check, so the core keeps that much more text.  Here: prose, a 190-code-point record line
    ("{" ...), record lines of period 20 until ``end``, prose; the window ending with the copies
    is more than half record lines, so the reference holds back.  A fresh-user review found the
    core reading past what it kept and firing at 3,000 with period 20."""
    rng = random.Random(0)

    def prose(n: int) -> str:
        return " ".join(rng.choice(_WORDS) for _ in range(n))[:n]

    config = TextConfig(
        "default", enabled=["near_cycle"], check_every=300, near_max_period=20, near_recurrence_window=600
    )
    text = prose(2046) + "\n"
    text += "{" + "".join(rng.choice("abcdefghijklmnopqrstuvwxyz ") for _ in range(end - 560 - 2049)) + "\n"
    text += ("{abcdefgh\nqrstuvwxy\n" * 100)[: end - len(text)]
    text += prose(3000 - len(text))
    reference = detect(text, config, "python", channel="reasoning")
    assert reference == []
    assert detect(text, config, "cython", channel="reasoning") == reference
    assert detect(text, config, "cython", channel="reasoning", cuts=random_cuts(len(text), seed=1)) == reference
