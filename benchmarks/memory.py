"""Resident memory of many open channels (what a gateway holding thousands of streams pays).

Run: ``python benchmarks/memory.py [--channels 10000]``.  Opens N compiled channels at the
``default`` profile and reports the process's resident set growth (``/proc/self/statm``)
per channel: idle (opened, nothing fed), after 2,000 code points of Latin-1 prose, of
Chinese, and of text with an emoji -- next to ``ChannelStream.memory_bytes`` (what is
allocated; the resident set counts the pages touched so far: the text buffer fills as the
stream grows).
"""

from __future__ import annotations

import argparse
import gc
import os
import subprocess
import sys

import loopcore
from loopguard import TextConfig

PAGE = os.sysconf("SC_PAGE_SIZE")
TEXTS = {
    "idle": "",
    "latin-1": ("The quick brown fox jumps over the lazy dog, then checks the results again. " * 30)[:2000],
    "chinese": ("我们先检查缓存的键是否过期，然后刷新它并再次确认数值。" * 80)[:2000],
    "emoji": ("A checkmark ✅ then a rocket 🚀 launches again. " * 50)[:2000],
}


def rss() -> int:
    with open("/proc/self/statm", encoding="ascii") as fh:
        return int(fh.read().split()[1]) * PAGE


def measure(name: str, n: int, channel: str = "text") -> tuple[int, int]:
    """(RSS growth in bytes, ``memory_bytes`` of one channel) for ``n`` channels fed ``name``."""
    params = TextConfig().stream_params(channel)
    gc.collect()
    before = rss()
    streams = [loopcore.ChannelStream(**params) for _ in range(n)]
    for s in streams:
        s.feed(TEXTS[name])
    return rss() - before, streams[0].memory_bytes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--channels", type=int, default=10_000)
    ap.add_argument("--one", choices=sorted(TEXTS), help=argparse.SUPPRESS)  # a fresh process per row
    args = ap.parse_args()
    if args.one:
        print(*measure(args.one, args.channels))
        return
    print(f"{args.channels} channels, default profile, compiled core ({loopcore.IMPLEMENTATION}), a fresh process each")
    print("| text | RSS growth | per channel | memory_bytes |")
    print("|---|---:|---:|---:|")
    for name in TEXTS:
        out = subprocess.run(
            [sys.executable, __file__, "--channels", str(args.channels), "--one", name],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        grown, size = int(out[0]), int(out[1])
        print(f"| {name} | {grown / 2**20:.0f} MiB | {grown / args.channels / 1024:.1f} KiB | {size / 1024:.1f} KiB |")


if __name__ == "__main__":
    main()
