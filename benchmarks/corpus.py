"""Seeded benchmark corpora (the streams of ``research/perf-baselines.md`` §1, rebuilt).

* ``english(n)`` -- pseudo-English prose: a 2,000-word vocabulary (about 300
  function words plus syllable pseudo-words) drawn with Zipf weights, proper
  nouns, numbers, ``, ; : ( ) " ' -`` and paragraph breaks; no loops.
* ``chinese(n)`` -- 3,000 CJK characters (Zipf) with ``，。！？`` and breaks.
* ``late_loop(n)`` -- ``english`` for the first 80 %, then one fresh
  300-character paragraph repeated verbatim to the end.
* ``deltas(text, seed)`` -- a chunking with delta sizes uniform over 1..8.
* ``real_stream(n)`` -- real model output, not generated: the clean records (``"looping":
  false``) of ``../shared/data/real/bench/*.jsonl`` (ZeroEval generations; field ``text``),
  files in name order and records in file order, joined by blank lines into one stream and
  cut at ``n`` code points (12.7M in all: a longer stream repeats the corpus).  The data is
  read in place, never copied into this repository: it is the ``shared`` repository checked
  out beside this one (``<parent>/shared`` next to ``<parent>/<this repo>``).
"""

from __future__ import annotations

import itertools
import json
import os
import random
from functools import lru_cache
from pathlib import Path

FUNCTION_WORDS = (
    "the of and to a in is that it for was on are as with his they at be this have from or one "
    "had by word but not what all were we when your can said there use an each which she do how "
    "their if will up other about out many then them these so some her would make like him into "
    "time has look two more write go see number no way could people my than first water been call "
    "who oil its now find long down day did get come made may part over new sound take only little "
    "work know place year live me back give most very after thing our just name good sentence man "
    "think say great where help through much before line right too mean old any same tell boy follow "
    "came want show also around form three small set put end does another well large must big even "
    "such because turn here why ask went men read need land different home us move try kind hand "
    "picture again change off play spell air away animal house point page letter mother answer found "
    "study still learn should world high every near add food between own below country plant last "
    "school father keep tree never start city earth eye light thought head under story saw left few "
    "while along might close something seem next hard open example begin life always those both paper "
    "together got group often run important until children side feet car mile night walk white sea "
    "began grow took river four carry state once book hear stop without second later miss idea enough "
    "eat face watch far really almost let above girl sometimes mountain cut young talk soon list song"
).split()
SYLLABLES = (
    "ka",
    "lo",
    "mi",
    "ten",
    "dra",
    "vel",
    "os",
    "qua",
    "rin",
    "sto",
    "ph",
    "ex",
    "zu",
    "bri",
    "an",
    "cor",
    "ly",
    "ith",
    "wen",
    "gar",
    "tus",
    "ne",
    "pol",
    "if",
)
PUNCT = (", ", "; ", ": ", " (", ") ", ' "', '" ', " '", " - ")


def _vocabulary(rng: random.Random) -> list[str]:
    words = list(FUNCTION_WORDS)
    while len(words) < 2000:
        words.append("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 4))))
    return words


def _zipf_cum_weights(size: int) -> list[float]:
    """Cumulative Zipf weights, accumulated once: ``rng.choices(xs, cum_weights=...)`` draws exactly
    what ``rng.choices(xs, weights)`` does (CPython accumulates the same floats), without the
    O(vocabulary) pass per draw (``english(10**7)`` in seconds instead of minutes)."""
    return list(itertools.accumulate(1 / (rank + 1) for rank in range(size)))


def english(n: int, seed: int = 1) -> str:
    rng = random.Random(seed)
    words = _vocabulary(rng)
    cum = _zipf_cum_weights(len(words))
    names = [w.capitalize() for w in rng.sample(words[300:], 60)]
    out: list[str] = []
    size = 0
    sentence_left = rng.randint(6, 25)
    capital = True
    while size < n:
        roll = rng.random()
        if roll < 0.04:
            word = rng.choice(names)
        elif roll < 0.07:
            word = str(rng.randint(0, 5000))
        else:
            word = rng.choices(words, cum_weights=cum)[0]
        if capital:
            word = word.capitalize()
            capital = False
        sentence_left -= 1
        if sentence_left == 0:
            sep = rng.choice((". ", ". ", "? ", "! ", ".\n\n"))
            sentence_left = rng.randint(6, 25)
            capital = True
        elif rng.random() < 0.08:
            sep = rng.choice(PUNCT)
        else:
            sep = " "
        piece = word + sep
        out.append(piece)
        size += len(piece)
    return "".join(out)[:n]


def chinese(n: int, seed: int = 2) -> str:
    rng = random.Random(seed)
    chars = [chr(0x4E00 + i * 7) for i in range(3000)]
    cum = _zipf_cum_weights(len(chars))
    out: list[str] = []
    size = 0
    while size < n:
        length = rng.randint(8, 40)
        out.extend(rng.choices(chars, cum_weights=cum, k=length))
        out.append(rng.choice("，，，。。！？"))
        if rng.random() < 0.1:
            out.append("\n\n")
        size += length + 1
    return "".join(out)[:n]


def late_loop(n: int, seed: int = 3) -> str:
    head = english(int(n * 0.8), seed)
    paragraph = english(400, seed + 100)[:300]
    body = paragraph * ((n - len(head)) // len(paragraph) + 1)
    return (head + body)[:n]


def deltas(text: str, seed: int = 4, low: int = 1, high: int = 8) -> list[str]:
    rng = random.Random(seed)
    out = []
    i = 0
    while i < len(text):
        k = rng.randint(low, high)
        out.append(text[i : i + k])
        i += k
    return out


def fixed_deltas(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


#: ``../shared/data`` beside this repository, or the folder ``LOOPGUARD_SHARED_DATA`` names
SHARED_DATA = Path(os.environ.get("LOOPGUARD_SHARED_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data")
REAL_BENCH = SHARED_DATA / "real" / "bench"
REAL_SEPARATOR = "\n\n"


class RealDataMissing(FileNotFoundError):
    """The real-text corpus is not there (``../shared/data`` is not checked out)."""


def real_missing_reason(root: Path = REAL_BENCH) -> str:
    return (
        f"the real-text corpus needs the clean records of {root}/*.jsonl: the shared data "
        f"comes from the `shared` repository checked out beside this one "
        f"(as {root.parents[2]}, next to {Path(__file__).resolve().parents[1]}), "
        f"or the folder LOOPGUARD_SHARED_DATA names"
    )


def real_available(root: Path = REAL_BENCH) -> bool:
    return any(root.glob("*.jsonl"))


@lru_cache(maxsize=2)
def real_texts(root: Path = REAL_BENCH) -> tuple[str, ...]:
    """The ``text`` of every clean record (``"looping": false``; ``true`` and ``null`` are left
    out) of ``root/*.jsonl``, files in name order, records in file order."""
    out: list[str] = []
    for path in sorted(root.glob("*.jsonl")):
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    record = json.loads(line)
                    if record["looping"] is False:
                        out.append(record["text"])
    if not out:
        raise RealDataMissing(real_missing_reason(root))
    return tuple(out)


@lru_cache(maxsize=8)
def real_stream(n: int, root: Path = REAL_BENCH) -> str:
    """``n`` code points of real model output: the clean records joined by ``REAL_SEPARATOR``
    (a blank line), the whole corpus repeated (same separator) when it is shorter than ``n``."""
    whole = REAL_SEPARATOR.join(real_texts(root))
    if len(whole) >= n:
        return whole[:n]
    copies = n // (len(whole) + len(REAL_SEPARATOR)) + 1
    return REAL_SEPARATOR.join(itertools.repeat(whole, copies))[:n]


__all__ = [
    "english",
    "chinese",
    "late_loop",
    "deltas",
    "fixed_deltas",
    "real_stream",
    "real_texts",
    "real_available",
    "RealDataMissing",
    "itertools",
]
