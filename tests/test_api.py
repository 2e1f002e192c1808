"""Public text API: config validation, bad input, masking, watch, implementation selection."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import tracemalloc

import pytest
from hypothesis import given
from hypothesis import strategies as st

import loopcore
import loopguard
from helpers import detect, hold_feeds, letters, noise_cjk
from loopguard import ConfigError, Detection, TextConfig, TextLoopDetector, scan_text

LOOP = "The cache key is stale, so I flush it and check the value again. "  # 65 chars


# --------------------------------------------------------------- config
@pytest.mark.parametrize(
    ("overrides", "key"),
    [
        ({"window": 0}, "window"),
        ({"check_every": -1}, "check_every"),
        ({"repeats": 1}, "repeats"),
        ({"ngram": 2.5}, "ngram"),
        ({"min_chars": True}, "min_chars"),
        ({"pool_min_coverage": 1.5}, "pool_min_coverage"),
        ({"pool_min_coverage": 0}, "pool_min_coverage"),
        ({"watch": "answer"}, "watch"),
        ({"enabled": ["E", "X"]}, "enabled"),
        ({"enabled": "E"}, "enabled"),
        ({"skip_code_blocks": "yes"}, "skip_code_blocks"),
        ({"cycle_min_period": 50, "cycle_max_period": 20}, "cycle_max_period"),
        ({"pool_min_distinct": 5, "pool_max_distinct": 4}, "pool_max_distinct"),
        ({"windoww": 600}, "windoww"),
    ],
)
def test_config_error_names_key_value_and_rule(overrides: dict, key: str) -> None:
    with pytest.raises(ConfigError) as info:
        TextConfig(**overrides)
    err = info.value
    assert isinstance(err, ValueError)
    assert err.key == key
    assert err.value == overrides[key]
    assert f"{key}=" in str(err) and "must be" in str(err)


def test_unknown_profile() -> None:
    with pytest.raises(ConfigError, match="profile='turbo'"):
        TextConfig("turbo")


def test_profiles_enable_the_seed_sets() -> None:
    assert TextConfig("fuse").enabled == {"exact_tail", "lowdiv_tail", "lowdiv_sliding"}
    assert TextConfig("rescue").enabled == {"cycle", "pool"}
    assert TextConfig().enabled == {"cycle", "pool", "near_cycle", "salad"}  # docs/detection.md: why not E, L, S
    assert TextConfig(enabled=["cycle", "pool"]).enabled == {"cycle", "pool"}
    # the spec's single letters are not names: the error says which name one means
    with pytest.raises(ConfigError, match="'N' is the spec's letter for 'near_cycle': use the name"):
        TextConfig(enabled=["cycle", "N"])
    assert TextConfig("fuse").window == 600 and TextConfig("rescue").cycle_scan_chars == 12000


def test_config_is_immutable_and_replace_validates() -> None:
    cfg = TextConfig("rescue")
    with pytest.raises(AttributeError):
        cfg.window = 5  # type: ignore[misc]
    assert cfg.replace(pool_window=10).pool_window == 10
    assert cfg.replace(pool_window=10).enabled == cfg.enabled
    with pytest.raises(ConfigError):
        cfg.replace(pool_window=0)
    assert TextConfig.from_mapping({"profile": "fuse", "window": 300}) == TextConfig("fuse", window=300)


# ----------------------------------------------------------- bad input
@pytest.mark.parametrize("bad", [b"bytes", 42, None, ["a"]])
def test_non_str_delta_is_a_type_error_and_consumes_nothing(impl: str, bad: object) -> None:
    det = TextLoopDetector(implementation=impl)
    det.feed("abc")
    with pytest.raises(TypeError, match=type(bad).__name__):
        det.feed(bad)  # type: ignore[arg-type]
    assert det.length("text") == 3


def test_unknown_channel(impl: str) -> None:
    with pytest.raises(ValueError, match="channel"):
        TextLoopDetector(implementation=impl).feed("x", "answer")


def test_lone_surrogates_nul_and_empty_deltas(impl: str) -> None:
    unit = "\ud800x\x00y\udfff" + letters(25, "abcdefgh", 1)
    text = noise_cjk(500, 1) + unit * 40
    det = TextLoopDetector("rescue", implementation=impl)
    found = []
    for i in range(0, len(text), 7):
        found += det.feed("")
        found += det.feed(text[i : i + 7])
    found += det.finish()
    assert [(d.kind, d.start, d.cut, d.evidence["period"]) for d in found] == [("cycle", 500, 530, 30)]


@pytest.mark.slow
@pytest.mark.skipif("cython" not in loopcore.implementations(), reason="the compiled core is not built")
def test_ten_megabyte_delta() -> None:
    # the compiled core only: the reference is quadratic by design
    text = noise_cjk(9_999_000, 2) + LOOP * 16
    det = TextLoopDetector("default", implementation="cython")
    got = det.feed(text, "reasoning") + det.finish()
    assert det.length("reasoning") == len(text) == 9_999_000 + 65 * 16
    cycle = [d for d in got if d.kind == "cycle"]
    assert [(d.start, d.cut, d.evidence["period"]) for d in cycle] == [(9_999_000, 9_999_065, 65)]
    # the same text in small deltas gives the same detections
    det2 = TextLoopDetector("default", implementation="cython")
    tail = text[-20_000:]
    det2.feed(text[:-20_000], "reasoning")
    got2 = [d for i in range(0, len(tail), 9) for d in det2.feed(tail[i : i + 9], "reasoning")] + det2.finish()
    assert [d.to_dict() for d in got2] == [d.to_dict() for d in got]


def test_finish_twice_and_feed_after_finish(impl: str) -> None:
    det = TextLoopDetector(implementation=impl)
    det.feed("hello")
    assert det.finish() == []
    with pytest.raises(RuntimeError):
        det.finish()
    with pytest.raises(RuntimeError):
        det.feed("more")


# ------------------------------------------------------ masking, watch
def test_fenced_code_masked_on_text_not_reasoning(impl: str) -> None:
    code = "```python\n" + "print('hello, world')  # same line\n" * 60 + "```\n"
    text = "Here is the script:\n\n" + code + "It prints a greeting many times.\n"
    assert detect(text, "rescue", impl, channel="text") == []
    on_reasoning = detect(text, "rescue", impl, channel="reasoning")
    assert [d["kind"] for d in on_reasoning] == ["cycle"]


def test_positions_map_back_through_the_mask(impl: str) -> None:
    code = "~~~~\n" + "x = compute(y)\n" * 50 + "```\n~~~~\n"  # ``` inside a ~~~~ fence
    prefix = "Intro line.\n" + code
    text = prefix + noise_cjk(300, 5) + LOOP * 12
    found = detect(text, "rescue", impl, channel="text")
    cycle = [d for d in found if d["kind"] == "cycle"]
    assert len(cycle) == 1
    start, cut = cycle[0]["start"], cycle[0]["cut"]
    assert (start, cut - start) == (len(prefix) + 300, 65)
    assert text[start:cut] == LOOP
    assert cycle[0]["position"] <= len(text)


def test_unclosed_fence_hides_the_rest(impl: str) -> None:
    text = "Answer:\n```\n" + LOOP * 30
    assert detect(text, "rescue", impl, channel="text") == []
    assert detect(text, TextConfig("rescue", skip_code_blocks=False), impl, channel="text") != []


def test_two_backticks_are_not_a_fence(impl: str) -> None:
    text = "``\n" + LOOP * 12
    found = detect(text, "rescue", impl, channel="text")
    assert [(d["kind"], d["start"]) for d in found] == [("cycle", 3)]


@pytest.mark.parametrize(("watch", "expect"), [("both", 2), ("reasoning", 1), ("text", 1)])
def test_watch(impl: str, watch: str, expect: int) -> None:
    det = TextLoopDetector(TextConfig("rescue", watch=watch), implementation=impl)
    found = det.feed(LOOP * 12, "reasoning") + det.feed(LOOP * 12, "text") + det.finish()
    assert len(found) == expect
    if watch != "both":
        assert {d.channel for d in found} == {watch}


def test_channels_are_independent(impl: str) -> None:
    det = TextLoopDetector("rescue", implementation=impl)
    for _ in range(12):
        det.feed(LOOP[:30], "reasoning")
        det.feed(LOOP[30:], "text")
    assert det.finish() == []
    assert det.length("reasoning") == 360 and det.length("text") == 420


def test_one_detection_per_episode_and_action(impl: str) -> None:
    det = TextLoopDetector("fuse", implementation=impl)
    det.feed(noise_cjk(2000, 1) + LOOP * 80, "text")
    det.finish()
    assert det.hits("text")["exact_tail"] > 5
    assert [d.kind for d in det.detections].count("exact_tail") == 1
    assert det.action_required("text")
    calm = TextLoopDetector("fuse", implementation=impl)
    calm.feed(noise_cjk(3000, 2))
    assert not calm.action_required()


def test_detection_to_dict_is_json_ready() -> None:
    d = Detection("pool", "text", 200, 0, 0, {"coverage": 0.8, "phrases": ("Now.", "OK.")})
    assert d.to_dict() == {
        "kind": "pool",
        "channel": "text",
        "position": 200,
        "start": 0,
        "cut": 0,
        "evidence": {"coverage": 0.8, "phrases": ["Now.", "OK."]},
        "strength": "strong",
    }


# ------------------------------------------------------ implementation
def test_compiled_core_is_live_by_default() -> None:
    if os.environ.get("LOOPCORE_IMPLEMENTATION") == "python":
        pytest.skip("this run forces the reference")
    assert loopcore.IMPLEMENTATION == "cython"
    assert TextLoopDetector().implementation == "cython"


@pytest.mark.parametrize(("value", "expect"), [("python", "python"), ("cython", "cython"), ("auto", "cython")])
def test_environment_selects_the_implementation(value: str, expect: str) -> None:
    env = dict(os.environ, LOOPCORE_IMPLEMENTATION=value)
    out = subprocess.run(
        [sys.executable, "-W", "error", "-c", "import loopcore; print(loopcore.IMPLEMENTATION)"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == expect


def test_bad_environment_value_is_an_error() -> None:
    env = dict(os.environ, LOOPCORE_IMPLEMENTATION="rust")
    out = subprocess.run([sys.executable, "-c", "import loopcore"], env=env, capture_output=True, text=True)
    assert out.returncode != 0 and "LOOPCORE_IMPLEMENTATION='rust'" in out.stderr


def test_both_implementations_share_the_api() -> None:
    impls = loopcore.implementations()
    names = {"feed", "finish", "length", "masked_length", "hits", "fuse_checkpoints", "finished", "memory_bytes"}
    for module in impls.values():
        assert names <= set(dir(module.ChannelStream))
        assert module.KINDS == ("exact_tail", "lowdiv_tail", "lowdiv_sliding", "cycle", "pool", "near_cycle", "salad")


def test_public_names() -> None:
    for name in ("TextConfig", "TextLoopDetector", "Detection", "scan_text", "ConfigError"):
        assert name in loopguard.__all__ and hasattr(loopguard, name)


# --------------------------------------------------------------- memory
def test_memory_is_bounded_per_channel() -> None:
    if "cython" not in loopcore.implementations():
        pytest.skip("the compiled core is not built")
    stream = loopcore.implementation("cython").ChannelStream(**TextConfig().stream_params("reasoning"))
    text = noise_cjk(50_000, 3) + LOOP * 800
    stream.feed(text)  # low diversity and a cycle: the lazily allocated scratch now exists
    after_first = stream.memory_bytes
    tracemalloc.start()
    for _ in range(19):
        stream.feed(text)
    current, _peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert stream.memory_bytes == after_first  # bounded: nothing grows with the stream
    assert current < 16 * 1024  # nothing kept per character on the Python heap
    assert stream.length == 20 * len(text)


def test_memory_per_channel_at_defaults_within_140_kib() -> None:
    """The budget: C and P as before (64 KiB at the seeds' numbers, plus 7.6 KiB for the default
    profile's 64-code-point phrases), plus N's tables, computed by hand at the defaults
    (near_max_period 4000, tolerance 4000 // 16 = 250, so lim = 4250; window up to 2 x lim):

    * slot chains: pow2(4516) = 8192 x 2 bytes; hash heads: 8192 / 8 x 4 bytes;
    * distances per position over that window + lim + 265 + check_every: pow2(13217) = 16384 x 2
      bytes;
    * the block's lag table (the one counting table: an 8-byte key, a 4-byte count and a 4-byte
      filled-slot index per slot): pow2(2 x 200 + 2) = 512 x 16 bytes;
    * the buffer keeps 13216 code points (a window of 2 x lim that may end a block of 200 before
      the checkpoint, lim plus its tolerance 265, and 1) instead of C's 12001, plus a quarter as
      slack: 16520 - 15001 bytes more at Latin-1;
    * T's distinct-count table: pow2(2 x 32 + 2) = 128 x 16 bytes.
    """
    if "cython" not in loopcore.implementations():
        pytest.skip("the compiled core is not built")
    core = loopcore.implementation("cython")
    seed = core.ChannelStream(
        **TextConfig("default", enabled=["cycle", "pool"], pool_max_phrase_chars=48).stream_params("text")
    )
    rescue = core.ChannelStream(**TextConfig("default", enabled=["cycle", "pool"]).stream_params("text"))
    stream = core.ChannelStream(**TextConfig().stream_params("text"))
    for opened in (seed, rescue, stream):
        opened.feed(" ")  # the buffers are allocated with the first code point
    assert seed.memory_bytes <= 64 * 1024  # Latin-1 text, before any scratch is needed
    # 16 more code points for each of the 4 x 30 records (1 byte each at Latin-1, like the buffer)
    # and for the open sentence's saved text (4 bytes each)
    assert rescue.memory_bytes - seed.memory_bytes == 4 * 30 * 16 * 1 + 16 * 4
    n_tables = 8192 * 2 + 1024 * 4 + 16384 * 2 + 512 * 16
    assert stream.memory_bytes - rescue.memory_bytes == n_tables + (16520 - 15001) + 128 * 16
    prose = letters(20_000, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZäöüéèàçñ .,;:!?", 9)
    stream.feed(prose)  # Latin-1 prose: no cycle candidate, N and T need no scratch
    assert stream.memory_bytes <= 140 * 1024


def test_an_idle_channel_costs_only_its_object() -> None:
    if "cython" not in loopcore.implementations():
        pytest.skip("the compiled core is not built")
    core = loopcore.implementation("cython")
    stream = core.ChannelStream(**TextConfig().stream_params("text"))
    idle = type(stream).__basicsize__
    assert stream.memory_bytes == idle and idle < 9 * 1024  # fixed arrays of the object: 8.3 KiB
    assert stream.feed("") == [] and stream.feed_tokens([]) == [] and stream.memory_bytes == idle
    stream.feed("a")
    assert stream.memory_bytes > 100 * 1024  # the default profile's buffers, once text arrives
    assert core.ChannelStream(**TextConfig().stream_params("text")).finish() == []  # never fed: fine


def test_concurrent_feeding_of_one_stream_is_refused_not_a_crash() -> None:
    import threading
    import time

    if "cython" not in loopcore.implementations():
        pytest.skip("the compiled core is not built")
    det = TextLoopDetector("default", implementation="cython")
    big = noise_cjk(10_000, 4) * 2_000  # 20M chars, a cycle: ~0.5 s of GIL-free work
    errors: list[BaseException] = []
    calling = threading.Event()

    def worker() -> None:
        try:
            calling.set()
            det.feed(big, "reasoning")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    thread = threading.Thread(target=worker)
    thread.start()
    assert calling.wait(10)
    time.sleep(0.1)  # the worker is inside the GIL-free loop by now (20M chars take ~0.5 s)
    with pytest.raises(RuntimeError, match="another thread"):
        det.feed("x", "reasoning")
    thread.join()
    assert errors == []
    assert det.length("reasoning") == 20_000_000


@pytest.mark.parametrize(
    ("change", "error"),
    [
        ({"check_every": 2**70}, ValueError),
        ({"check_every": 1.5}, TypeError),
        ({"exact_tail": 1}, TypeError),
        ({"e_on": True}, TypeError),  # an old name is unknown
        ({"pool_window": 0}, ValueError),
        ({"pool_window": 1001}, ValueError),
        ({"pool_min_coverage": "0.5"}, TypeError),
        ({"unknown": 1}, TypeError),
    ],
)
def test_core_parameters_are_validated_alike(change: dict, error: type) -> None:
    params = TextConfig().stream_params("text")
    params.update(change)
    messages = set()
    for module in loopcore.implementations().values():
        with pytest.raises(error) as info:
            module.ChannelStream(**params)
        messages.add(str(info.value))
    assert len(messages) == 1  # the same message from both implementations


def test_config_rejects_non_string_profile_and_kinds() -> None:
    with pytest.raises(ConfigError, match="profile"):
        TextConfig(["fuse"])  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="enabled"):
        TextConfig(enabled=[["exact_tail"]])


def test_detections_are_hashable_and_equal_by_value() -> None:
    a = Detection("cycle", "text", 600, 0, 31, {"period": 31})
    b = Detection("cycle", "text", 600, 0, 31, {"period": 31})
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1


def test_reference_also_refuses_a_second_feeder() -> None:
    import threading

    stream = loopcore.implementation("python").ChannelStream(**TextConfig().stream_params("text"))
    started, release = hold_feeds(stream)
    worker = threading.Thread(target=stream.feed, args=("ab",))
    worker.start()
    assert started.wait(5)
    with pytest.raises(RuntimeError, match="another thread"):
        stream.feed("x")
    with pytest.raises(RuntimeError, match="another thread"):
        stream.finish()
    release.set()
    worker.join()
    assert stream.length == 2


def test_the_default_profile_tunes_ngram_and_the_seed_profiles_do_not() -> None:
    """spec §2.7: only ``default`` is tuned (config.PROFILE_OVERRIDES); the seed profiles keep the spec numbers."""
    from loopguard.config import PROFILE_OVERRIDES

    tuning = {
        "ngram": 40,
        "pool_skip_key_value": True,
        "pool_min_occurrences": 2,
        "pool_max_distinct": 16,
        "pool_max_phrase_chars": 64,
        "lowdiv_max_data_share": 0.8,
        "cycle_min_period": 2,
        "fence_repeat_lines": 8,
    }
    # "tokens" is default's tuning counted in tokens (token ids; test_tokens.py)
    assert PROFILE_OVERRIDES == {"default": tuning, "tokens": tuning}
    assert [TextConfig(p).lowdiv_art_max_alnum for p in ("default", "fuse", "rescue")] == [0.0, 0.0, 0.0]
    assert [TextConfig(p).cycle_min_period for p in ("default", "fuse", "rescue")] == [2, 16, 16]
    assert [TextConfig(p).lowdiv_max_data_share for p in ("default", "fuse", "rescue")] == [0.8, 1.0, 1.0]
    tuned = TextConfig("default")
    assert (tuned.pool_min_occurrences, tuned.pool_max_distinct, tuned.pool_max_phrase_chars) == (2, 16, 64)
    assert (TextConfig("rescue").pool_min_occurrences, TextConfig("rescue").pool_max_distinct) == (3, 8)
    assert (TextConfig("default").ngram, TextConfig("fuse").ngram, TextConfig("rescue").ngram) == (40, 24, 24)
    assert [TextConfig(p).pool_skip_key_value for p in ("default", "fuse", "rescue")] == [True, False, False]
    assert TextConfig("default", ngram=24).ngram == 24  # an explicit key wins
    assert TextConfig("default").replace(profile="fuse").ngram == 24  # the old profile's tuning does not travel
    assert TextConfig("default", window=700).replace(profile="fuse").window == 700  # a key set by hand does
    assert TextConfig("fuse").replace(profile="default").ngram == 40
    assert repr(TextConfig("default")) == "TextConfig('default')"


def test_ngram_40_spares_json_lines_that_ngram_24_flags() -> None:
    """The reason for the tuning (for L and S added to ``default``), on a hand-made JSON Lines text:
    120 records with the same keys and different values; the key boilerplate repeats 24-grams
    (L fires), not 40-grams."""
    import json as _json

    events, users = ("view", "click", "purchase"), ("there", "when", "near", "ex", "lymi", "both", "kaz")
    rows = "".join(
        _json.dumps(
            {
                "id": 159092 + i * 3,
                "event": events[i * 7 % 3],
                "user": users[i * 5 % 7],
                "ok": True,
                "ms": (i * 389) % 1100,
            }
        )
        + "\n"
        for i in range(60)
    )
    low = ["lowdiv_tail", "lowdiv_sliding"]
    assert [d.kind for d in scan_text(rows, channel="reasoning", config=TextConfig("default", enabled=low, ngram=24))]
    assert scan_text(rows, channel="reasoning", config=TextConfig("default", enabled=low)) == []
    assert scan_text(rows, channel="reasoning", config=TextConfig("default")) == []  # N: records


def test_the_compiled_feed_path_and_the_python_one_agree() -> None:
    """TextLoopDetector.feed is the core's compiled FeedBase.feed when it is built; the Python
    twin (_FeedPath, used without the core) gives the same detections and the same errors."""
    from loopguard.text import _FeedPath

    class PythonPath(_FeedPath, TextLoopDetector):
        pass

    if "cython" in loopcore.implementations():
        assert TextLoopDetector.feed is not _FeedPath.feed
    text = noise_cjk(300, 2) + LOOP * 30
    runs = []
    for cls in (TextLoopDetector, PythonPath):
        det = cls()
        found = [d for i in range(0, len(text), 7) for d in det.feed(text[i : i + 7], "reasoning")]
        runs.append(found + det.finish())
        for bad, error in (
            ((5, "text"), TypeError),
            (("x", "answer"), ValueError),
            (("x", ["a"]), ValueError),
            (("x", "text"), RuntimeError),
        ):
            with pytest.raises(error):
                det.feed(*bad)
    assert runs[0] == runs[1] and [d.kind for d in runs[0]][:1] == ["cycle"]


def test_str_subclasses_are_text(impl: str) -> None:
    """numpy.str_ (text out of pandas or numpy) and other str subclasses feed like str."""
    import numpy as np

    class Text(str):
        pass

    text = noise_cjk(300, 4) + LOOP * 30
    plain = TextLoopDetector(implementation=impl)
    expected = plain.feed(text, "reasoning") + plain.finish()
    for wrap in (Text, np.str_):
        det = TextLoopDetector(implementation=impl)
        assert det.feed(wrap(text), "reasoning") + det.finish() == expected
    assert scan_text(np.str_(text), "reasoning") == scan_text(text, "reasoning") != []


@given(
    st.lists(
        st.sampled_from(["Wait.", "Let me check.", "Hmm, no.", "OK so.", "好的。", "再看看。", "🤔 hmm.", "Right."]),
        min_size=20,
        max_size=120,
    ),
    st.sampled_from(["", "中", "😀", "é"]),
    st.integers(0, 119),
    st.integers(1, 50),
)
def test_pool_records_survive_widening(phrases: list[str], wide: str, at: int, chunk: int) -> None:
    """The pool keeps its records 1, 2 or 4 bytes per code point, like the buffer; a wider code
    point arriving mid-pool re-stores them: the detections and their phrases are the reference's."""
    words = phrases[:at] + ([wide] if wide else []) + phrases[at:]
    text = " ".join(words)
    runs = []
    for name in sorted(loopcore.implementations()):
        stream = loopcore.implementation(name).ChannelStream(**TextConfig().stream_params("reasoning"))
        found = [d for i in range(0, len(text), chunk) for d in stream.feed(text[i : i + chunk])]
        runs.append(found + stream.finish())
    assert all(run == runs[0] for run in runs)


def test_tool_guard_clock_is_public_and_read_only() -> None:
    ticks = iter([5.0, 6.0, 7.0])
    clock = lambda: next(ticks)  # noqa: E731
    guard = loopguard.ToolGuard(clock=clock)
    assert guard.clock is clock
    with pytest.raises(AttributeError):
        guard.clock = time.monotonic  # type: ignore[misc]


def test_parse_args_is_public() -> None:
    from loopguard import identity

    assert identity.parse_args('{"b": 1, "a": [2]}') == {"b": 1, "a": [2]}
    assert identity.parse_args("not json") == "not json"
    assert identity.parse_args(b'{"x": 1}') == {"x": 1}
    with pytest.raises(ValueError, match="not UTF-8"):
        identity.parse_args(b"\xff")
