"""Token ids as symbols (issue 16 §5): feed_tokens / scan_tokens, both implementations alike,
any buffer shape and chunking, positions in tokens, clear errors with nothing consumed."""

from __future__ import annotations

import array

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import loopcore
from loopcore._tokens import TOKEN_SHIFT, token_symbols
from loopguard import TextConfig, TextLoopDetector, scan_tokens

PARAMS = TextConfig("tokens").stream_params("text")
PREFIX = list(range(1000, 1050))  # 50 distinct tokens
LOOP = PREFIX + [1, 2, 3, 4] * 200  # then a period-4 loop of 800 tokens


def raw(impl: str, ids: object, chunks: int = 1) -> list:
    stream = loopcore.implementation(impl).ChannelStream(**PARAMS)
    seq = list(ids) if not isinstance(ids, list) else ids
    size = max(1, len(seq) // chunks)
    out = []
    for i in range(0, len(seq), size):
        out += stream.feed_tokens(array.array("q", seq[i : i + size]))
    return out + stream.finish()


# --------------------------------------------------------------- values by hand
def test_a_period_4_loop_is_cut_after_its_first_copy_in_tokens() -> None:
    found = [(d.kind, d.start, d.cut, d.position, d.strength) for d in scan_tokens(LOOP)]
    # N sees the near-copies at the checkpoint at token 600 (a notice); C the verbatim cycle at 800
    # (C needs 600 tokens of copies: 150 of the 187 whole ones), and N turns strong there
    assert found == [
        ("near_cycle", 50, 54, 600, "weak"),
        ("cycle", 50, 54, 800, "strong"),
        ("near_cycle", 50, 54, 800, "strong"),
    ]
    cycle = next(d for d in scan_tokens(LOOP) if d.kind == "cycle")
    assert cycle.evidence == {"period": 4, "copies": 187, "length": 750}


def test_ids_are_symbols_whatever_their_value() -> None:
    # the same loop over other ids (including 0, the text-looking 10 = "\n" and 32 = " ", and the
    # largest ids) gives the same detections: ids carry no character class
    for ids in ([0, 10, 32, 46], [851_967, 851_968, 1_114_111, 7]):
        mapped = PREFIX + ids * 200
        assert [(d.kind, d.start, d.cut, d.position) for d in scan_tokens(mapped)] == [
            (d.kind, d.start, d.cut, d.position) for d in scan_tokens(LOOP)
        ]


def test_distinct_tokens_are_never_a_loop() -> None:
    assert scan_tokens(list(range(5000))) == []


def test_symbols_map_into_the_planes_without_character_classes() -> None:
    text = token_symbols(memoryview(array.array("i", [0, 10, 32, 851_967])))
    assert [ord(c) for c in text] == [TOKEN_SHIFT, TOKEN_SHIFT + 10, TOKEN_SHIFT + 32, 0x10FFFF]
    assert not any(c.isalnum() or c.isspace() for c in text)


# --------------------------------------------------------------- implementations agree
@given(
    st.lists(st.integers(0, 12), min_size=0, max_size=40),
    st.integers(1, 60),
    st.integers(1, 7),
    st.integers(0, 1_114_111),
)
def test_both_implementations_give_the_same_detections_for_any_chunking(
    unit: list[int], repeats: int, chunks: int, offset: int
) -> None:
    ids = [offset] + [(x * 7919 + offset) % 1_114_112 for x in unit] * repeats
    expected = raw("python", ids)
    for impl in loopcore.implementations():
        assert raw(impl, ids, chunks) == expected


def test_feed_tokens_equals_feeding_the_symbols() -> None:
    for impl in loopcore.implementations():
        stream = loopcore.implementation(impl).ChannelStream(**PARAMS)
        text = loopcore.implementation(impl).ChannelStream(**PARAMS)
        ids = array.array("i", LOOP)
        assert stream.feed_tokens(ids) + stream.finish() == text.feed(token_symbols(memoryview(ids))) + text.finish()


# --------------------------------------------------------------- buffers
@pytest.mark.parametrize("code", list("bBhHiIlLqQ"))
def test_every_native_integer_buffer_is_read_alike(code: str) -> None:
    small = [x % 100 for x in LOOP] if code in "bB" else LOOP
    expected = scan_tokens(small)
    assert scan_tokens(array.array(code, small)) == expected
    assert len(expected) == 3


def test_numpy_arrays_and_views_are_read_in_place() -> None:
    ids = np.array(LOOP, dtype=np.int64)
    expected = scan_tokens(LOOP)
    assert scan_tokens(ids) == expected
    assert scan_tokens(ids.astype(np.int32)) == expected
    assert scan_tokens(ids.astype(np.uint32)) == expected
    doubled = np.repeat(ids, 2)[::2]  # a strided (non-contiguous) view
    assert not doubled.flags["C_CONTIGUOUS"] and scan_tokens(doubled) == expected


def test_a_2d_array_is_a_batch_of_rows() -> None:
    batch = np.array([LOOP, list(range(2000, 2850))], dtype=np.int32)
    rows = scan_tokens(batch)
    assert rows == [scan_tokens(LOOP), []]
    assert scan_tokens([LOOP, list(range(10))]) == rows[:1] + [[]]
    flat = array.array("i", LOOP * 2)
    assert scan_tokens(memoryview(flat).cast("B").cast("i", (2, len(LOOP)))) == [rows[0], rows[0]]


def test_detector_feed_tokens_in_pieces_equals_one_scan() -> None:
    det = TextLoopDetector("tokens")
    found = []
    for i in range(0, len(LOOP), 7):
        found += det.feed_tokens(np.array(LOOP[i : i + 7], dtype=np.int32), "reasoning")
    found += det.finish()
    assert [(d.kind, d.start, d.cut, d.position) for d in found] == [
        (d.kind, d.start, d.cut, d.position) for d in scan_tokens(LOOP, channel="reasoning")
    ]
    assert det.length("reasoning") == len(LOOP) and det.action_required("reasoning")


# --------------------------------------------------------------- errors: clear, nothing consumed
@pytest.mark.parametrize(
    ("ids", "error", "words"),
    [
        ("1 2 3", TypeError, "not str"),
        (array.array("d", [1.0]), TypeError, "native integers, not buffer format 'd'"),
        ([1, "2"], TypeError, "integers from 0 to 1114111"),
        (object(), TypeError, "not object"),
        (np.zeros((2, 2, 2), dtype=np.int32), ValueError, "one-dimensional"),
        (np.array([1, 2], dtype=">i4"), TypeError, "native integers"),
        ([5, -1, 3], ValueError, "token id -1 at index 1 is out of range"),
        (array.array("Q", [2**64 - 1]), ValueError, f"token id {2**64 - 1} at index 0"),
        ([1_114_112], ValueError, "token id 1114112 at index 0"),
    ],
)
def test_bad_ids_are_refused_alike_and_nothing_is_consumed(ids: object, error: type, words: str) -> None:
    for impl in loopcore.implementations():
        stream = loopcore.implementation(impl).ChannelStream(**PARAMS)
        stream.feed_tokens([1, 2, 3])
        with pytest.raises(error, match=words.replace("(", r"\(")):
            stream.feed_tokens(ids)
        assert stream.length == 3


def test_a_channel_holds_text_or_tokens() -> None:
    for impl in loopcore.implementations():
        stream = loopcore.implementation(impl).ChannelStream(**PARAMS)
        stream.feed_tokens([])  # nothing fed: still either
        stream.feed("abc")
        with pytest.raises(RuntimeError, match="holds text"):
            stream.feed_tokens([1])
        other = loopcore.implementation(impl).ChannelStream(**PARAMS)
        other.feed_tokens([1])
        with pytest.raises(RuntimeError, match="holds token ids"):
            other.feed("x")
        other.finish()
        with pytest.raises(RuntimeError, match="finished"):
            other.feed_tokens([1])
        assert stream.length == 3 and other.length == 1


def test_text_shaped_detectors_are_refused_for_tokens() -> None:
    with pytest.raises(ValueError, match="enables pool, salad.*TextConfig\\('tokens'\\)"):
        TextLoopDetector().feed_tokens([1, 2, 3])
    with pytest.raises(ValueError, match="pool"):
        scan_tokens(LOOP, "rescue")
    fused = scan_tokens(PREFIX + [1, 2, 3, 4] * 600, TextConfig("fuse"))  # E, L, S count symbols: allowed
    # E: the tail [1400, 2000) first recurs at 52 (the loop's phase), counted again at 652 (the cut);
    # S: the first 400-window without the prefix starts at 100; L: the 2000-window at 2200 starts at 200
    assert [(d.kind, d.position, d.start, d.cut) for d in fused] == [
        ("exact_tail", 2000, 52, 652),
        ("lowdiv_sliding", 2000, 100, 100),
        ("lowdiv_tail", 2200, 200, 200),
    ]


def test_a_bad_row_is_named() -> None:
    with pytest.raises(ValueError, match="row 1: token id -5 at index 2"):
        scan_tokens([[1, 2, 3], [1, 2, -5]])


def test_the_tokens_profile_is_defaults_numbers_over_the_symbol_detectors() -> None:
    tokens, default = TextConfig("tokens"), TextConfig()
    assert tokens.enabled == {"cycle", "near_cycle"}
    assert tokens.to_dict() | {"profile": "", "enabled": []} == default.to_dict() | {"profile": "", "enabled": []}


# --------------------------------------------------------------- found by a fresh user
@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64])
def test_negative_ids_of_every_signed_width_are_refused(dtype: type) -> None:
    for impl in loopcore.implementations():
        det = TextLoopDetector("tokens", implementation=impl)
        with pytest.raises(ValueError, match="token id -1 at index 2 is out of range"):
            det.feed_tokens(np.array([1, 2, -1], dtype=dtype))
        assert det.length() == 0
    with pytest.raises(ValueError, match="row 0: token id -1 at index 2"):
        scan_tokens(np.array([[1, 2, -1]], dtype=np.int16))


def test_ids_that_wrap_onto_ordinary_code_points_cannot_open_fenced_code() -> None:
    wrap = 0x110000 - TOKEN_SHIFT  # the first id mapped below plane 4: onto U+0000
    fence = [wrap + 96] * 3 + [wrap + 10]  # "```\n" if ids were text
    plain = [500] * 3 + [501]  # the same shape of symbols, nowhere near a character class
    assert scan_tokens(fence + LOOP) == scan_tokens(plain + LOOP)
    assert [(d.kind, d.start, d.cut) for d in scan_tokens(fence + LOOP)][:2] == [
        ("near_cycle", 54, 58),
        ("cycle", 54, 58),
    ]


def test_a_list_of_numpy_scalars_is_one_sequence_and_empty_batches_are_empty() -> None:
    assert scan_tokens(list(np.array(LOOP, dtype=np.int64))) == scan_tokens(LOOP)
    assert scan_tokens(np.zeros((2, 0), dtype=np.int32)) == [[], []]
    assert scan_tokens(np.zeros((0, 5), dtype=np.int32)) == []
    with pytest.raises(TypeError, match="integers from 0 to 1114111"):
        scan_tokens([1.5, 2.0])


def test_out_of_range_ids_are_refused_everywhere() -> None:
    unwatched = TextLoopDetector(TextConfig("tokens", watch="reasoning"))
    with pytest.raises(ValueError, match="token id -5 at index 0"):
        unwatched.feed_tokens([-5, 2**40])
    with pytest.raises(ValueError, match=f"token id {2**63} at index 1"):
        scan_tokens([1, 2**63])


def test_scan_tokens_config_none_is_the_tokens_profile() -> None:
    assert scan_tokens(LOOP, config=None) == scan_tokens(LOOP)
    with pytest.raises(TypeError, match="config must be a TextConfig"):
        scan_tokens(LOOP, config=5)  # type: ignore[arg-type]
