"""The compiled core's figures, measured in this process: one round of ``benchmarks/compare.py``.

``compare.py`` runs this script once per round under each tree (``PYTHONPATH=<tree>/src``), so
the ``loopcore`` and ``loopguard`` imported here are the tree's under test; the script itself and
the streams it reads are the same for both.  Everything uses the ``default`` profile,
``TextConfig("default").stream_params("reasoning")`` and the compiled implementation
(``loopcore.implementation("cython")``), CPU time (``time.process_time``) and the GC off while
timing.  Figures (each a list of samples; ``compare.py`` reduces them over the rounds):

* ``bulk/<stream>/<n>`` -- M code points per second of one ``feed`` of the whole stream plus
  ``finish`` on a new ``ChannelStream`` (its first ``n`` code points); the best of as many
  repetitions as fit in ``min_time`` CPU seconds (at least one);
* ``delta/ChannelStream``, ``delta/TextLoopDetector`` -- ns per 4-code-point delta over a long
  stream of healthy English (``ChannelStream.feed``, or the public ``TextLoopDetector.feed`` on
  the ``reasoning`` channel; a new stream, every delta, ``finish``), one sample per repetition;
* ``bytes/<text>`` -- ``ChannelStream.memory_bytes`` of a channel fed ``bytes_text(text)``:
  2,000 code points of healthy prose, Latin-1 (``corpus.english``), Chinese
  (``corpus.chinese``) or Latin-1 with one emoji, or nothing (``idle``) -- the README's
  per-channel figures;
* ``bytes-repeated/<text>`` -- the same after ``memory.TEXTS[text]`` (``memory.py``'s texts: one
  sentence repeated, so the cycle detector's scratch is allocated too -- the worst case);
* ``rss/<text>`` (``--rss``, a fresh process per text) -- ``memory.py``'s method: the resident
  set growth of ``--channels`` open channels, in bytes per channel.

``--feed-once FILE --size N`` feeds the first ``N`` code points of a stream once and prints
nothing: ``compare.py --instructions`` runs it under callgrind, which counts the instructions
executed inside ``ChannelStream``'s feed (deterministic, unlike times on a shared machine).

Run by hand: ``PYTHONPATH=src python benchmarks/measure.py --stream en=FILE --sizes 10000``
prints one round as JSON.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus

try:  # a tree without the compiled core or this API: a clear error from main(), not a traceback
    import loopcore  # with LOOPCORE_IMPLEMENTATION=cython (compare.py sets it): fails when not built
    import memory  # the RSS method and the 2,000-code-point texts (imports loopguard.TextConfig)
    from loopguard import TextConfig, TextLoopDetector
except ImportError as exc:
    _IMPORT_ERROR: ImportError | None = exc
else:
    _IMPORT_ERROR = None

PROFILE = "default"
CHANNEL = "reasoning"
DELTA = 4
SIZES = (10_000, 100_000, 1_000_000)
DELTA_CHARS = 1_000_000
BYTES_TEXTS = ("latin-1", "chinese", "emoji", "idle")
BYTES_CHARS = 2000


class TreeError(RuntimeError):
    """The tree under test lacks what the figures need (the compiled core, its API)."""


def channel_class() -> type:
    """The compiled ``ChannelStream``; a clear error when this tree has none."""
    if _IMPORT_ERROR is not None:
        raise TreeError(
            f"this tree's loopcore/loopguard cannot be used (a compiled core, loopcore.implementation, "
            f"TextConfig, TextLoopDetector): {_IMPORT_ERROR}"
        )
    try:
        compiled = loopcore.implementation("cython")
    except Exception as exc:  # ImportError, or an older loopcore without implementation()
        raise TreeError(f"no compiled core in {Path(loopcore.__file__).parent}: {exc}") from exc
    cls = compiled.ChannelStream
    missing = [name for name in ("feed", "finish", "memory_bytes") if not hasattr(cls, name)]
    if missing:
        raise TreeError(f"loopcore's compiled ChannelStream has no {', '.join(missing)}")
    return cls


def params() -> dict[str, Any]:
    return TextConfig(PROFILE).stream_params(CHANNEL)


def _cpu(fn: Callable[[], object]) -> float:
    """CPU seconds of ``fn()`` with the GC off."""
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        start = time.process_time()
        fn()
        return time.process_time() - start
    finally:
        if enabled:
            gc.enable()


def bulk_seconds(text: str, *, min_time: float = 0.25, max_reps: int = 200) -> list[float]:
    """CPU seconds of ``feed(text)`` + ``finish()`` on a new stream, repeated until ``min_time``
    seconds are spent (at least once, at most ``max_reps`` times)."""
    cls, kw = channel_class(), params()
    out: list[float] = []
    while not out or (sum(out) < min_time and len(out) < max_reps):
        s = cls(**kw)
        out.append(_cpu(lambda s=s: (s.feed(text), s.finish())))
    return out


def bulk_rate(text: str, **kw: Any) -> float:
    """M code points per CPU second, the best repetition of :func:`bulk_seconds`."""
    return len(text) / max(min(bulk_seconds(text, **kw)), 1e-9) / 1e6


def _stream_run(parts: list[str]) -> Callable[[], int]:
    cls, kw = channel_class(), params()

    def run() -> int:
        s = cls(**kw)
        feed = s.feed
        n = 0
        for part in parts:
            n += len(feed(part))
        return n + len(s.finish())

    return run


def _api_run(parts: list[str]) -> Callable[[], int]:
    config = TextConfig(PROFILE)
    channel_class()  # the same clear error as the stream's

    def run() -> int:
        det = TextLoopDetector(config, implementation="cython")
        feed = det.feed
        n = 0
        for part in parts:
            n += len(feed(part, CHANNEL))
        return n + len(det.finish())

    return run


def delta_ns(kind: str, parts: list[str], reps: int = 5) -> list[float]:
    """ns per delta, one sample per repetition: ``kind`` is ``ChannelStream`` or ``TextLoopDetector``."""
    make = {"ChannelStream": _stream_run, "TextLoopDetector": _api_run}[kind]
    run = make(parts)
    return [_cpu(run) / len(parts) * 1e9 for _ in range(reps)]


def bytes_text(name: str) -> str:
    """``BYTES_CHARS`` code points of healthy prose for ``bytes/<name>`` (``idle``: nothing)."""
    if name == "idle":
        return ""
    if name == "chinese":
        return corpus.chinese(BYTES_CHARS)
    en = corpus.english(BYTES_CHARS)
    if name == "emoji":  # one astral code point widens the buffers to 4 bytes per code point
        half = BYTES_CHARS // 2
        return en[:half] + "\U0001f680" + en[half : BYTES_CHARS - 1]
    assert name == "latin-1", name
    return en


def memory_bytes(text: str) -> int:
    """``memory_bytes`` of a new channel after ``feed(text)`` (nothing fed for ``""``)."""
    s = channel_class()(**params())
    if text:
        s.feed(text)
    return int(s.memory_bytes)


def rss_per_channel(name: str, channels: int) -> float:
    """``memory.py``'s figure: resident set growth per channel for ``channels`` channels fed
    ``memory.TEXTS[name]`` (call it in a fresh process: freed pages stay resident)."""
    channel_class()
    if loopcore.IMPLEMENTATION != "cython":  # memory.measure uses the live implementation
        raise TreeError(f"the live implementation is {loopcore.IMPLEMENTATION!r}, not the compiled core")
    grown, _ = memory.measure(name, channels, channel=CHANNEL)
    return grown / channels


def one_round(
    streams: dict[str, str],
    sizes: tuple[int, ...] = SIZES,
    *,
    delta_chars: int = DELTA_CHARS,
    delta_reps: int = 5,
    min_time: float = 0.25,
) -> dict[str, list[float]]:
    """Every figure but RSS once: ``streams`` maps a name (``en``, ``zh``, ``real``) to a stream at
    least ``max(sizes)`` long (shorter ones are measured at their length); the delta figures use
    the first ``delta_chars`` of ``streams["en"]``."""
    out: dict[str, list[float]] = {}
    for name, text in streams.items():
        for n in sizes:
            out[f"bulk/{name}/{n}"] = [bulk_rate(text[:n], min_time=min_time)]
    if "en" in streams:
        parts = [streams["en"][i : i + DELTA] for i in range(0, min(delta_chars, len(streams["en"])), DELTA)]
        for kind in ("ChannelStream", "TextLoopDetector"):
            out[f"delta/{kind}"] = delta_ns(kind, parts, delta_reps)
    for name in BYTES_TEXTS:
        out[f"bytes/{name}"] = [memory_bytes(bytes_text(name))]
    for name in BYTES_TEXTS[:3]:
        out[f"bytes-repeated/{name}"] = [memory_bytes(memory.TEXTS[name])]
    return out


def tree_info() -> dict[str, str]:
    return {
        "loopcore": str(Path(loopcore.__file__).resolve().parent),
        "implementation": loopcore.IMPLEMENTATION,
        "python": sys.version.split()[0],
    }


def check_tree(tree: str | None) -> None:
    """Fail when ``loopcore``/``loopguard`` were not imported from ``tree`` (a stray install)."""
    import loopguard

    if tree is None:
        return
    root = Path(tree).resolve()
    for module in (loopcore, loopguard):
        where = Path(module.__file__ or "?").resolve()
        if not where.is_relative_to(root):
            raise TreeError(f"{module.__name__} was imported from {where}, not from {root} (PYTHONPATH?)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--stream",
        action="append",
        default=[],
        metavar="NAME=FILE",
        help="a UTF-8 stream file (written by compare.py), repeatable",
    )
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)), help="comma-separated code point counts")
    ap.add_argument("--delta-chars", type=int, default=DELTA_CHARS)
    ap.add_argument("--delta-reps", type=int, default=5)
    ap.add_argument("--min-time", type=float, default=0.25)
    ap.add_argument("--rss", choices=BYTES_TEXTS, help="only the RSS figure of this text")
    ap.add_argument("--channels", type=int, default=10_000)
    ap.add_argument("--expect-tree", help="fail unless loopcore and loopguard come from this tree")
    ap.add_argument("--feed-once", type=Path, metavar="FILE", help="only feed this stream once (for callgrind)")
    ap.add_argument("--size", type=int, default=1_000_000, help="with --feed-once: code points fed")
    args = ap.parse_args(argv)
    try:
        channel_class()
        check_tree(args.expect_tree)
        if args.feed_once:
            text = args.feed_once.read_text(encoding="utf-8")[: args.size]
            stream = channel_class()(**params())
            stream.feed(text)
            stream.finish()
            return 0
        if args.rss:
            figures = {f"rss/{args.rss}": [rss_per_channel(args.rss, args.channels)]}
        else:
            streams = {}
            for spec in args.stream:
                name, _, path = spec.partition("=")
                streams[name] = Path(path).read_text(encoding="utf-8")
            sizes = tuple(int(x) for x in args.sizes.split(",") if x)
            figures = one_round(
                streams, sizes, delta_chars=args.delta_chars, delta_reps=args.delta_reps, min_time=args.min_time
            )
    except TreeError as exc:
        print(f"measure.py: {exc}", file=sys.stderr)
        return 3
    json.dump({"tree": tree_info(), "figures": figures}, sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
