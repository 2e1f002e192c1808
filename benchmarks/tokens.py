"""Token-id mode on real generations: loopguard's ``tokens`` profile against vLLM's
``repetition_detection`` rule, both over the same token streams.

Run: ``python benchmarks/tokens.py [--tokenizer bpe|coarse|fine]`` (from the project root,
beside ``../shared``).  No tokenizer of a real model is needed (none is available offline):
each record's text is split into pieces by a pre-tokenizer regex and each distinct piece
gets an id -- ``bpe`` (GPT-2-like pieces, about 3 characters each), ``coarse`` (whitespace
words, about 5) or ``fine`` (at most 3 letters or one digit, about 1.5, like CJK or
digit-by-digit tokenizers).  A run that the rule would stop on a clean record is a false
stop; on a loop record, latency is in tokens after the loop's first token.

vLLM's rule (``vllm/v1/core/sched/utils.py`` ``check_sequence_repetition``, ported): after
each token, for each pattern size p in [min, max], stop when the last p tokens repeat
``min_count`` times in a row.  Settings: (1, 64, 3) and the ThinkingLoopBreaker proposal's
(4, 128, 4).
"""

from __future__ import annotations

import argparse
import array
import json
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from loopguard import TextConfig, TextLoopDetector

BENCH = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "real" / "bench"
PIECES = {
    "bpe": r" ?[A-Za-z]+| ?\d{1,3}| ?[^\sA-Za-z\d]+|\s+",
    "coarse": r"\S+\s*|\s+",
    "fine": r"[A-Za-z]{1,3}|\d|[^\sA-Za-z\d]|\s+",
}


def vllm_hits(ids: list[int], min_p: int, max_p: int, min_count: int) -> Iterator[int]:
    """The token counts at which vLLM's rule fires, checked after every token as its scheduler does."""
    for n in range(1, len(ids) + 1):
        for p in range(min_p, max_p + 1):
            if p * min_count > n:
                break
            tail = ids[n - p : n]
            if all(ids[n - p * (k + 1) : n - p * k] == tail for k in range(1, min_count)):
                yield n
                break


def vllm_stop(ids: list[int], min_p: int, max_p: int, min_count: int) -> int | None:
    """The token count at which vLLM's rule stops the sequence (``None``: never)."""
    return next(vllm_hits(ids, min_p, max_p, min_count), None)


def vllm_fires(ids: list[int], min_p: int, max_p: int, min_count: int) -> list[int]:
    """Every token count at which vLLM's rule would stop (its per-token work over a whole stream)."""
    return list(vllm_hits(ids, min_p, max_p, min_count))


def loopguard_stop(ids: array.array, config: TextConfig, chunk: int = 16) -> int | None:
    """The token count at which a stream guard would act (a strong detection), ``None``: never."""
    det = TextLoopDetector(config)
    for i in range(0, len(ids), chunk):
        det.feed_tokens(ids[i : i + chunk])
        if det.action_required():
            return min(i + chunk, len(ids))
    det.finish()
    return len(ids) if det.action_required() else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokenizer", choices=sorted(PIECES), default="bpe")
    ap.add_argument("--no-vllm", action="store_true", help="skip vLLM's rule (pure Python, ~2 minutes)")
    args = ap.parse_args()
    piece = re.compile(PIECES[args.tokenizer])
    vocab: dict[str, int] = {}

    def tokens(text: str) -> array.array:
        return array.array("i", [vocab.setdefault(p, len(vocab)) for p in piece.findall(text)])

    recs = [json.loads(line) for f in sorted(BENCH.glob("*.jsonl")) for line in f.open(encoding="utf-8")]
    recs = [r for r in recs if r["looping"] is not None]
    streams = [(r, tokens(r["text"]), len(tokens(r["text"][: r["loop_start"]])) if r["looping"] else 0) for r in recs]
    clean = sum(1 for r in recs if not r["looping"])
    loops = len(recs) - clean
    chars = sum(len(r["text"]) for r in recs) / sum(len(ids) for _, ids, _ in streams)
    print(f"{len(recs)} records ({clean} clean, {loops} loop), tokenizer {args.tokenizer}: {chars:.2f} chars/token")
    rules = [("loopguard tokens", lambda ids: loopguard_stop(ids, TextConfig("tokens")))]
    if not args.no_vllm:
        for cfg in ((1, 64, 3), (4, 128, 4)):
            rules.append((f"vLLM {cfg}", lambda ids, cfg=cfg: vllm_stop(list(ids), *cfg)))
    for name, rule in rules:
        t0 = time.process_time()
        false_stops, caught, late = 0, 0, []
        for r, ids, start in streams:
            stop = rule(ids)
            if stop is None:
                continue
            if not r["looping"]:
                false_stops += 1
            else:
                caught += 1
                late.append(stop - start)
        late.sort()
        p50 = late[len(late) // 2] if late else None
        p90 = late[int(len(late) * 0.9)] if late else None
        print(
            f"  {name:22s} clean stopped {false_stops}/{clean}  loops {caught}/{loops}  "
            f"latency p50 {p50} p90 {p90} tokens  ({time.process_time() - t0:.1f} s CPU)"
        )


if __name__ == "__main__":
    sys.exit(main())
