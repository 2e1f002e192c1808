"""The compiled core gives exactly the reference's detections (spec §1).

On every text case of ``../shared/data/cases`` for the seed profiles and
``default``, whole and chunked; and on hypothesis-generated streams (ASCII, CJK,
astral, mixtures, with injected verbatim loops and phrase pools) under any two
chunkings.
"""

from __future__ import annotations

import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

import loopcore
from conftest import CASES, load_index, shared_data
from helpers import TINY, detect, random_cuts
from loopguard import TextConfig, TextLoopDetector

pytestmark = pytest.mark.skipif("cython" not in loopcore.implementations(), reason="the compiled core is not built")

TEXT_CASES = [c for c in load_index() if c["kind"] == "text"]


def _channel(case: dict) -> str:
    return "reasoning" if case["channel"] == "reasoning" else "text"


@shared_data
@pytest.mark.parametrize("profile", ["fuse", "rescue", "default"])
@pytest.mark.parametrize("case", TEXT_CASES, ids=lambda c: c["file"][:3])
def test_case_parity(case: dict, profile: str) -> None:
    text = (CASES / case["file"]).read_text(encoding="utf-8")
    channel = _channel(case)
    reference = detect(text, profile, "python", channel=channel)
    compiled = detect(text, profile, "cython", channel=channel)
    assert compiled == reference
    chunked = detect(text, profile, "cython", channel=channel, cuts=random_cuts(len(text), seed=len(text)))
    assert chunked == reference


ALPHABETS = {
    "ascii": st.sampled_from(
        list("abcde fghij.!?,\n:")
        + ["```", "~~~", "- ", "1. ", "| ", "> ", " " * 97, "\t" * 200]
        + ["key: ", "a_b.c-d:", "\nx1: ", "_k:\n", "9a: ", "k :"]  # key: value data lines (P, default)
        + ["0000 ", "00a0: ", "ff7e ", "9", "3 "]  # hex-dump data runs (L/S, default)
        + ["####", "==", "#  #", "██", "+-"]  # art runs (L/S, default)
    ),
    "cjk": st.sampled_from(list("的一是不了人我在有他这。！？，\n") + ["```\n"]),
    "astral": st.sampled_from(["😀", "🎉", "𝔘", "𠀋", " ", ". ", "\n", "\ud800", "\x00"]),
}


@st.composite
def streams(draw: st.DrawFn, max_period: int = 300) -> str:
    """Random text with optional injected verbatim loops and phrase pools."""
    kinds = draw(st.lists(st.sampled_from(sorted(ALPHABETS)), min_size=1, max_size=3, unique=True))
    pieces = st.one_of(*(ALPHABETS[k] for k in kinds))
    parts = draw(st.lists(pieces, max_size=120))
    text = "".join(parts)
    if draw(st.booleans()):
        unit = "".join(draw(st.lists(pieces, min_size=1, max_size=max(1, max_period // 2))))[:max_period]
        copies = draw(st.integers(2, 12))
        at = draw(st.integers(0, len(text)))
        text = text[:at] + unit * copies + text[at:]
    if draw(st.booleans()):
        pool = draw(
            st.lists(
                st.sampled_from(["Now.", "OK.", "Wait.", "继续。", "好的。", "Hmm?", "Emit!"]),
                min_size=1,
                max_size=4,
                unique=True,
            )
        )
        rotation = draw(st.lists(st.sampled_from(pool), min_size=5, max_size=60))
        sep = draw(st.sampled_from([" ", "\n", "", "  "]))
        at = draw(st.integers(0, len(text)))
        text = text[:at] + sep.join(rotation) + " " + text[at:]
    return text


@st.composite
def chunkings(draw: st.DrawFn, text: str) -> list[int]:
    if not text:
        return []
    return sorted(draw(st.sets(st.integers(1, max(1, len(text) - 1)), max_size=40)))


def assert_parity_drawn(data: st.DataObject, text: str, config: TextConfig) -> None:
    """Both implementations give the same detections on ``text`` (a drawn channel, each under its
    own drawn chunking)."""
    channel = data.draw(st.sampled_from(["text", "reasoning"]))
    note(f"len={len(text)}")
    reference = detect(text, config, "python", channel=channel, cuts=data.draw(chunkings(text)))
    assert detect(text, config, "cython", channel=channel, cuts=data.draw(chunkings(text))) == reference


@given(data=st.data())
def test_parity_tiny_config(data: st.DataObject) -> None:
    text = data.draw(streams(max_period=80))
    channel = data.draw(st.sampled_from(["text", "reasoning"]))
    cuts_a = data.draw(chunkings(text))
    cuts_b = data.draw(chunkings(text))
    note(f"len={len(text)}")
    reference = detect(text, TINY, "python", channel=channel, cuts=cuts_a)
    assert detect(text, TINY, "cython", channel=channel, cuts=cuts_b) == reference
    assert detect(text, TINY, "cython", channel=channel) == reference


@given(data=st.data())
@settings(max_examples=25)
def test_parity_default_profiles(data: st.DataObject) -> None:
    text = data.draw(streams(max_period=600))
    text = text * data.draw(st.integers(1, 6))  # long enough for the 2,000-character gates
    profile = data.draw(st.sampled_from(["fuse", "rescue", "default"]))
    channel = data.draw(st.sampled_from(["text", "reasoning"]))
    reference = detect(text, profile, "python", channel=channel)
    assert detect(text, profile, "cython", channel=channel, cuts=data.draw(chunkings(text))) == reference


@pytest.mark.slow
@given(
    period=st.integers(1, 5000),
    seed=st.integers(0, 2**16),
    alphabet=st.sampled_from(["ascii", "cjk", "astral"]),
    noise=st.integers(0, 3000),
)
@settings(max_examples=8)
def test_parity_long_periods(period: int, seed: int, alphabet: str, noise: int) -> None:
    import random

    rng = random.Random(seed)
    pool = {"ascii": "abcdefghij klmnop.,", "cjk": "的一是不了人我在有他这。", "astral": "😀🎉𝔘𠀋 ."}[alphabet]
    unit = "".join(rng.choice(pool) for _ in range(period))
    prefix = "".join(rng.choice(pool) for _ in range(noise))
    copies = max(2, min(4, 16000 // period))
    copies = max(copies, 1000 // len(unit) + 1)  # long enough for C to hold over several checkpoints
    text = prefix + unit * copies
    reference = detect(text, "default", "python", channel="reasoning")
    cuts = random_cuts(len(text), seed, mean=50)
    assert detect(text, "default", "cython", channel="reasoning", cuts=cuts) == reference


# Inputs that once broke parity or memory safety, kept as regressions.
def _thue_morse(n: int) -> str:
    return "".join("ab"[bin(i).count("1") % 2] for i in range(n))


REGRESSIONS = {
    # a short open sentence followed by whitespace longer than the buffer's slack
    "blank-run-pool": (
        TextConfig("rescue", enabled=["pool"], pool_window=2, pool_min_occurrences=2, pool_min_distinct=1),
        "a" + " " * 1087 + "\na\n",
    ),
    "blank-run-default": (
        TextConfig(),
        "Wait.\nHmm.\n" * 11 + "Okay" + " " * 15876 + "\nOkay\nOkay\n" + "".join(f"Other {i}.\n" for i in range(6)),
    ),
    "blank-run-long": (TextConfig(), "Okay" + " " * 20_000 + "\nOkay.\n" * 40),
    # counts above 65,535 in one window
    "wide-window-counts": (
        TextConfig(
            "fuse",
            enabled=["lowdiv_tail"],
            lowdiv_window=70000,
            min_chars=0,
            check_every=70000,
            lowdiv_max_unique=2,
            ngram=1,
        ),
        "a" * 70000,
    ),
    # Thue-Morse blocks collide under polynomial hashing mod 2^64
    "thue-morse-ngram": (
        TextConfig(
            "fuse",
            enabled=["lowdiv_tail"],
            ngram=512,
            lowdiv_window=1024,
            min_chars=0,
            check_every=1024,
            lowdiv_min_repeat=2,
        ),
        _thue_morse(512) + _thue_morse(512).translate(str.maketrans("ab", "ba")),
    ),
}


# Runs of code points appended in one piece (the compiled core's block path): sentences
# ended by ASCII punctuation and CJK stops inside a run, fences and inline code around runs.
RUNS = {
    "pool-ascii-punctuation": "".join(
        f"Let $x^{i % 3} + y = {i % 2}$. Then (a, b) = {{c}}! Check: x_1 <= y? Yes. Wait... " for i in range(60)
    ),
    "pool-cjk": "好的。继续。我们再算一遍：一二三四五。" * 60 + "结束了。" * 10,
    "fences-around-runs": (
        "Intro text with `inline` code and ~tildes~ here. " * 30
        + "\n```python\n"
        + "print('loop forever and ever')\n" * 30
        + "```\n"
        + "After the fence, the same sentence again. " * 80
    ),
    "controls-and-blanks": ("alpha\x0bbeta\x1cgamma\tdelta \x00 epsilon. " * 120),
}


@pytest.mark.parametrize("channel", ["text", "reasoning"])
@pytest.mark.parametrize("name", sorted(RUNS))
def test_parity_runs(name: str, channel: str) -> None:
    text = RUNS[name]
    for config in (TextConfig(), TextConfig("rescue"), TextConfig("fuse")):
        reference = detect(text, config, "python", channel=channel)
        assert detect(text, config, "cython", channel=channel) == reference
        assert detect(text, config, "cython", channel=channel, cuts=random_cuts(len(text), 5, mean=37)) == reference


def test_the_fast_paths_take_cjk_ideographs_as_letters_not_digits() -> None:
    # the compiled kernels (sentences, is_alnum, the word salad) take U+4E00..U+9FEF as letters
    # and not digits without asking Python
    assert all(chr(c).isalnum() and not chr(c).isspace() and not chr(c).isdigit() for c in range(0x4E00, 0x9FF0))


@pytest.mark.parametrize("name", sorted(REGRESSIONS))
def test_parity_regressions(name: str) -> None:
    config, text = REGRESSIONS[name]
    reference = detect(text, config, "python", channel="reasoning")
    assert detect(text, config, "cython", channel="reasoning") == reference
    assert detect(text, config, "cython", channel="reasoning", cuts=random_cuts(len(text), 3, mean=400)) == reference


def test_blank_run_of_a_million_is_safe() -> None:
    # read out of bounds (and crashed) before the open sentence's text was saved on compaction
    text = "Now" + " " * 1_000_000 + "\n" + "Now\nWait.\n" * 20
    found = detect(text, TextConfig("rescue", enabled=["pool"]), "cython", channel="reasoning")
    # checkpoint 1,000,200 sees 40 sentences ("Now", then 39 of the rotation); the window
    # (the last 30) starts at sentence 10 = "Wait."; the very first "Now" is a phrase too, so
    # the cut is 0
    assert [(d["position"], d["cut"], d["evidence"]["phrases"]) for d in found] == [(1_000_200, 0, ["Wait.", "Now"])]


@pytest.mark.parametrize("skip", [False, True])
@pytest.mark.parametrize(
    "text",
    [
        "job: a\n  action: keep\n  regex: (.*)\nTarget is up.\n" * 40,  # YAML: data lines
        "Note: check it. Note: check it.\n" * 60,  # a capitalised label: prose, not a data line
        "key:\nvalue. key:value. 9x: no. x.y-z_: yes\n" * 50,  # colon at the end, no blank, digits first
        "- item: one.\n| a: b |\n> q: r\nplain: text\n" * 50,  # other line classes win
    ],
    ids=["yaml", "label", "edges", "classes"],
)
def test_parity_pool_skip_key_value(text: str, skip: bool) -> None:
    """The ``key: value`` line class of P (``pool_skip_key_value``, on in ``default``) in both implementations."""
    config = TextConfig("rescue", enabled=["pool"], pool_skip_key_value=skip, pool_min_distinct=1)
    reference = detect(text, config, "python", channel="reasoning")
    assert detect(text, config, "cython", channel="reasoning", cuts=random_cuts(len(text), seed=7)) == reference
    assert detect(text, config, "cython", channel="reasoning") == reference


def test_pool_skip_key_value_by_hand() -> None:
    """Which lines are data lines, checked on the reference's line rule (spec §2.5 + default profile)."""
    from loopcore._reference import _line_is_excluded

    data = ["job: a", "  action: keep", "x.y-z_: v", "key:", "relabel_Configs: x", "\t_k: 1"]
    prose = ["9a: v", "key:value", "k : v", "ok。 key: v", "e.g. this", "参数: 值", "Note: check it", "Wait: no"]
    assert [_line_is_excluded(line, True) for line in data] == [True] * len(data)
    assert [_line_is_excluded(line, True) for line in prose] == [False] * len(prose)
    assert [_line_is_excluded(line, False) for line in data] == [False] * len(data)


DUMP = "".join(f"{i * 16:08x}: " + "0000 " * 8 + " ................\n" for i in range(200))


@pytest.mark.parametrize("share", [1.0, 0.8, 0.5])
@pytest.mark.parametrize(
    "text",
    [DUMP, "e" * 3000, "3 " * 1500, DUMP[:1500] + "Let me check the sum again. " * 80, "dead beef " * 300],
    ids=["dump", "flood-e", "flood-3", "dump-then-loop", "hex-words"],
)
def test_parity_lowdiv_max_data_share(text: str, share: float) -> None:
    """L and S hold back on data runs (``lowdiv_max_data_share``, 0.8 in ``default``), in both implementations."""
    config = TextConfig("fuse", enabled=["lowdiv_tail", "lowdiv_sliding"], lowdiv_max_data_share=share)
    reference = detect(text, config, "python", channel="reasoning")
    assert detect(text, config, "cython", channel="reasoning", cuts=random_cuts(len(text), seed=3)) == reference
    assert detect(text, config, "cython", channel="reasoning") == reference


def test_data_runs_by_hand() -> None:
    from loopcore._reference import data_share_exceeds

    dump = "".join(
        f"{0x400 + 16 * i:08x}: 0000 0000 0000 0000 0000 0000 0000 0000  ................\n" for i in range(30)
    )
    assert data_share_exceeds(dump, 0.8)  # 100 % dump characters; the offsets make 13 different ones
    assert not data_share_exceeds(dump, 1.0)  # off
    same = "00000010: 0000 0000 0000 0000 0000 0000 0000 0000  ................\n" * 30
    assert not data_share_exceeds(same, 0.8)  # one line again and again: 6 different, a loop
    assert not data_share_exceeds("e" * 500, 0.8)  # one symbol: a flood, not data
    assert not data_share_exceeds("dead beef " * 50, 0.8)  # 6 different: a flood of words
    assert not data_share_exceeds("Let me check the sum again. " * 20, 0.8)  # prose is ~40 %


BANNER = "".join(
    ("=" * 40 + "\n" if r % 6 == 0 else "")
    + "|  "
    + "".join(("####" if (r * 7 + c) % 3 else "#  #") + "  " for c in range(6))
    + " |\n"
    for r in range(60)
)


@pytest.mark.parametrize("art", [0.0, 0.3, 1.0])
@pytest.mark.parametrize(
    "text",
    [BANNER, "!" * 3000, "=#|" * 1000, BANNER[:900] + "Let me check the sum again. " * 80, "😀🎉✨ " * 600],
    ids=["banner", "flood-1", "flood-3", "banner-then-loop", "emoji"],
)
def test_parity_lowdiv_art_max_alnum(text: str, art: float) -> None:
    """L and S hold back on art runs (``lowdiv_art_max_alnum``, 0.3 in ``default``), in both implementations."""
    config = TextConfig("fuse", enabled=["lowdiv_tail", "lowdiv_sliding"], lowdiv_art_max_alnum=art, min_chars=800)
    reference = detect(text, config, "python", channel="reasoning")
    assert detect(text, config, "cython", channel="reasoning", cuts=random_cuts(len(text), seed=5)) == reference
    assert detect(text, config, "cython", channel="reasoning") == reference


def test_art_runs_by_hand() -> None:
    from loopcore._reference import art_run

    assert art_run(BANNER, 0.3)  # no letters, 3 different symbols: # | =
    assert not art_run(BANNER, 0.0)  # off
    assert not art_run("!" * 500, 0.3)  # one symbol: a flood, not art
    assert not art_run("Let me check the sum again. " * 20, 0.3)  # prose is ~80 % alphanumeric


@pytest.mark.slow
@given(
    st.text(alphabet="abcxyz .,\n中😀", min_size=2, max_size=60),
    st.integers(5, 90),
    st.lists(st.tuples(st.integers(0, 5000), st.text(alphabet="qwe .\n", min_size=1, max_size=30)), max_size=3),
    st.text(alphabet="mnop rs\n", max_size=300),
    st.sampled_from(["rescue", "default", "fuse"]),
    st.integers(1, 400),
)
@settings(max_examples=300, deadline=None)  # each example streams 1,000-6,000 code points through the reference
def test_held_cycles_parity(
    unit: str, copies: int, breaks: list[tuple[int, str]], prefix: str, profile: str, chunk: int
) -> None:
    """C verifies a held cycle with one comparison per block instead of recomputing it: the
    detections and the checkpoints each detector held are the reference's, through loops that
    continue, break, resume and change period."""
    copies = max(copies, 1000 // len(unit) + 1)  # long enough for C to hold over several checkpoints
    text = prefix + unit * copies
    for at, piece in sorted(breaks, reverse=True):
        at = min(at, len(text))
        text = text[:at] + piece + text[at:] + unit[::-1] * (copies // 2)
    note(repr(text[:200]))
    runs = []
    for impl in ("python", "cython"):
        det = TextLoopDetector(profile, implementation=impl)
        found = [d for i in range(0, len(text), chunk) for d in det.feed(text[i : i + chunk], "reasoning")]
        found += det.finish()
        runs.append((found, det.hits("reasoning")))
    assert runs[0] == runs[1]


def test_a_held_cycle_through_a_change_of_period() -> None:
    """A loop of one unit, then of another (C holds on the first, loses it, holds on the second):
    the held checkpoints are verified by one comparison each, with the reference's counts."""
    first, second = "The key is stale, flush it. ", "Check again: is the key stale? "
    text = "An opening paragraph about caches. " * 3 + first * 120 + second * 120
    hits, found = [], []
    for impl in ("python", "cython"):
        det = TextLoopDetector("rescue", implementation=impl)
        found.append(
            [
                (d.kind, d.start, d.cut, d.evidence.get("period"))
                for i in range(0, len(text), 64)
                for d in det.feed(text[i : i + 64], "reasoning")
            ]
            + [(d.kind, d.start) for d in det.finish()]
        )
        hits.append(det.hits("reasoning")["cycle"])
    assert found[0] == found[1] and hits[0] == hits[1]
    # the first loop starts at 105, its period reaching 2 code points back into the prefix (". "),
    # the second at 105 + 120 x 28 = 3465, reaching 1 back (" "); cuts one period later
    assert [f for f in found[1] if f[0] == "cycle"] == [("cycle", 103, 131, 28), ("cycle", 3464, 3495, 31)]
    # held at the checkpoints 800..3400 (14), lost at 3600..4000 while the window holds both,
    # held again at 4200..7000 (15) and at the final one (7185)
    assert hits[1] == 14 + 15 + 1
