"""Graded verdicts (spec §2.7, issue 14): a detection carries its strength; a ``Session`` cuts
only on strong evidence and gives a notice on weak evidence, which a later strong detection of
the same loop confirms.

N (``near_cycle``) is weak until a whole copy equals the one before it (``NEAR_WHOLE_CAP`` =
300 code points of it for longer periods) at two checkpoints in a row: copies that keep
changing -- an enumeration, a trace -- are never cut; a loop whose copies stopped changing is.
Its restart check (copies of varying length) counts only copied k-grams that occurred twice
before (two copies are not a loop).  T (``salad``) holds back on numbers.  Every value below is
computed by hand from the text built in the test.
"""

from __future__ import annotations

import random

import pytest

import loopcore
from helpers import detect
from loopcore._reference import NEAR_WHOLE_CAP, SALAD_MAX_DIGITS, near_extend, near_tolerance
from loopguard import Detection, Session, TextConfig, scan_text

IMPLS = ["python"] + (["cython"] if "cython" in loopcore.implementations() else [])


def _unit(n: int) -> str:
    """``n`` random letters and blanks (seeded): no inner repeat of 5 code points."""
    rng = random.Random(3)
    return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz     ") for _ in range(n))


def _noisy(unit: str, copies: int) -> str:
    """``copies`` copies of ``unit``, each with one code point replaced by ``#``, at a different
    place every copy (``(10 + 37 i) mod 90``)."""
    out = []
    for i in range(copies):
        at = (10 + 37 * i) % 90
        out.append(unit[:at] + "#" + unit[at + 1 :])
    return "".join(out)


def test_constants() -> None:
    assert NEAR_WHOLE_CAP == 300
    assert SALAD_MAX_DIGITS == 0.02


def test_extension_reports_the_longest_exact_piece_by_hand() -> None:
    """``run = [piece_start, longest, whole]``: a verbatim copy from 50 to 100 at lag 50 is one
    piece of 50 (whole: as long as its lag); a substitution at 70 splits it into 50..70 (20)
    and 71..100 (29: resynchronised at 71, g = 1), neither whole."""
    unit = _unit(50)
    p, tol, k = 50, near_tolerance(50, 16), 5
    run = [50, 0, False]
    assert near_extend(unit + unit, 50, 100, 50, p, tol, k, 4250, 0, run) == (100, 0)
    assert run == [50, 50, True]
    sub = unit + unit[:20] + "#" + unit[21:]
    run = [50, 0, False]
    assert near_extend(sub, 55, 100, 50, p, tol, k, 4250, 0, run) == (100, 1)
    assert run == [71, 29, False]  # pieces 50..70 (20) and 71..100 (29)


def test_detection_strength_is_validated_and_serialised() -> None:
    d = Detection("near_cycle", "text", 800, 100, 150, {"period": 50}, "weak")
    assert not d.strong and d.to_dict()["strength"] == "weak"
    assert Detection("cycle", "text", 800, 100, 150).strong
    with pytest.raises(ValueError, match="strength must be 'strong' or 'weak', not 'maybe'"):
        Detection("cycle", "text", 800, 100, 150, {}, "maybe")


def _enumeration(count: int) -> str:
    """A template whose slots bring new values every line (a search: progress)."""
    return "".join(
        f"For x = {x}, we get b = {x * x + 7 * x + 3}, which is still too small.\n" for x in range(1, count + 1)
    )


@pytest.mark.parametrize("impl", IMPLS)
def test_enumeration_is_never_strong(impl: str) -> None:
    """Each line differs from the one before in two numbers: no whole copy, so whatever N
    sees stays weak -- no cut."""
    found = detect(_enumeration(60), "default", impl, channel="reasoning")
    assert all(d.get("strength", "strong") == "weak" for d in found)


@pytest.mark.parametrize("impl", IMPLS)
def test_noisy_copies_weak_then_verbatim_copies_strong(impl: str) -> None:
    """Copies of a 100-code-point unit, each with one edit at a different place (never a whole
    copy: weak), then verbatim copies from 1,500 on.  By hand: the first verbatim copy meets
    the edit of copy 14 (at 1,478) at 1,578, where the walk resynchronises two periods back
    (lag 200) and keeps that lag until copy 14's edit again, at 1,678 (a piece of 100 < 200);
    from 1,678 at lag 100 the piece is whole at 1,778 -- seen at checkpoint 1,800 -- and
    confirmed at 2,000: N's episode is reported again, strong, at 2,000."""
    unit = _unit(100)
    noisy = _noisy(unit, 15)
    assert len(noisy) == 1500
    text = noisy + unit * 10
    found = [d for d in detect(text, "default", impl, channel="reasoning") if d["kind"] == "near_cycle"]
    assert [d.get("strength", "strong") for d in found] == ["weak", "strong"]
    assert found[0]["position"] < 1500 and found[1]["position"] == 2000
    assert found[1]["evidence"]["period"] == 100 and found[1]["evidence"]["exact"] >= 100


def test_session_notices_weak_then_cuts_on_strong() -> None:
    """A Session fed the text above in deltas of 16: a notice at the weak detection, then the cut
    at the delta that reaches checkpoint 2,000 (1,984..2,000)."""
    unit = _unit(100)
    text = _noisy(unit, 15) + unit * 10
    s = Session("strength")
    s.start_turn()
    s.start_attempt()
    first = {}
    for i in range(0, len(text), 16):
        v = s.feed(text[i : i + 16], "reasoning")
        first.setdefault(v.action, (i + 16, v))
        if v.stop:
            break
    assert "notice" in first and first["notice"][1].kind == "text_loop"
    assert first["notice"][1].detection.strength == "weak"
    assert "[loopguard]" in first["notice"][1].reason and "may be starting to repeat" in first["notice"][1].reason
    at, cut = first["cut"]
    assert at == 2000 and cut.detection.kind == "near_cycle" and cut.detection.strong
    assert first["notice"][0] < at


@pytest.mark.parametrize("impl", IMPLS)
def test_no_confirmation_at_the_end_of_the_stream(impl: str) -> None:
    """The same noisy copies, then verbatim copies that stop at 1,950 (the stream ends): the
    whole copy is seen at 1,800 (above) but the only later checkpoint is the final one (1,950,
    not a whole block) -- nothing confirms it, so N stays weak."""
    unit = _unit(100)
    text = _noisy(unit, 15) + (unit * 5)[:450]
    assert len(text) == 1950
    found = [d for d in detect(text, "default", impl, channel="reasoning") if d["kind"] == "near_cycle"]
    assert found and all(d.get("strength", "strong") == "weak" for d in found)


def _prose(n: int) -> str:
    """``n`` code points of random words (seeded): no repeat worth the name."""
    rng = random.Random(5)
    words = []
    while sum(len(w) + 1 for w in words) < n:
        words.append("".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9))))
    return " ".join(words)[:n]


@pytest.mark.parametrize("impl", IMPLS)
def test_restart_check_needs_a_third_copy(impl: str) -> None:
    """An answer restated once: 1,200 code points of distinct sentences, then the same text
    again (two copies).  The restart check counts a copied k-gram only when it occurred twice
    before, so two copies never fire it; N's periodic check needs two copies after the first
    (a window of 2p = 2,400 covered), so nothing fires.  A third copy is a loop."""
    body = _prose(1200)
    assert detect(body + body, "default", impl, channel="reasoning") == []
    found = detect(body * 3, "default", impl, channel="reasoning")
    assert found and found[0]["position"] > 2400


@pytest.mark.parametrize("impl", IMPLS)
def test_salad_holds_back_on_numbers(impl: str) -> None:
    """A LaTeX enumeration of compositions: few distinct symbols, under 25 % alphanumeric --
    but 12 % digits (>= SALAD_MAX_DIGITS): numbers carry content, not a salad.  The same shape
    with the digits replaced by symbols is one."""
    parts = ["$" + " + ".join("2" if j == i else "1" for j in range(7)) + "$, " for i in range(7)]
    text = "Writing 8 as ordered sums: " + "".join(parts) * 20
    window = text[-600:]
    assert sum(ch.isdigit() for ch in window) >= SALAD_MAX_DIGITS * 600
    config = TextConfig(enabled=["salad"])
    assert [d for d in detect(text, config, impl) if d["kind"] == "salad"] == []
    symbols = text.translate(str.maketrans("12", "*#"))
    assert [d["kind"] for d in detect(symbols, config, impl)][:1] == ["salad"]


def test_scan_lists_a_confirmed_episode_once() -> None:
    """scan_text reports the weak and the strong report of one N episode; the CLI's listing
    keeps the strong one (tests/test_cli.py checks the printed line)."""
    unit = _unit(100)
    text = _noisy(unit, 15) + unit * 10
    kinds = [(d.kind, d.strength) for d in scan_text(text, "reasoning") if d.kind == "near_cycle"]
    assert kinds == [("near_cycle", "weak"), ("near_cycle", "strong")]


def test_stream_guard_passes_a_weak_loop_through_and_reports_its_notice() -> None:
    """The noisy copies alone (weak N, never a whole copy) streamed as Chat Completions chunks:
    nothing is cut, every chunk passes, the reasoning is kept whole, and the outcome carries the
    text-loop notice."""
    from loopguard.integrations.openai import guard_stream

    text = _noisy(_unit(100), 15)
    chunks = [
        {
            "choices": [
                {"index": 0, "delta": {"content": None, "reasoning_content": text[i : i + 16]}, "finish_reason": None}
            ]
        }
        for i in range(0, len(text), 16)
    ]
    chunks.append({"choices": [{"index": 0, "delta": {"content": "Done."}, "finish_reason": "stop"}]})
    stream = guard_stream(iter(chunks))
    assert list(stream) == chunks
    outcome = stream.outcome
    assert not outcome.stopped and outcome.verdict is None
    assert outcome.kept_reasoning == text and outcome.kept_text == "Done."
    assert outcome.notice is not None and outcome.notice.action == "notice" and outcome.notice.kind == "text_loop"
    assert outcome.notice.detection.kind == "near_cycle" and outcome.notice.detection.strength == "weak"
