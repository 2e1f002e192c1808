"""A fuzz target for the redactor (issue 21): :func:`loopguard.redact.redact_secrets`,
:func:`~loopguard.redact.redact_value` (through the guard's arguments preview) and
:func:`~loopguard.redact.redact_excerpt`.

With ``atheris`` installed it runs under libFuzzer (``python benchmarks/fuzz_redact.py
--seconds 120 [libFuzzer flags]``); without it (or with ``--no-atheris``), hypothesis generates
the inputs; either way for ``--seconds`` (default 60)::

    python benchmarks/fuzz_redact.py --seconds 120

Each input is a random text with a canary secret planted in one of the shapes the redactor
knows (a flag, an env assignment, a header, URL credentials, JSON, a PEM key, a structured value
under a secret-named key), set apart from the random text by blanks (an input whose random
part holds the canary, or a piece of it, is skipped: it is not a secret there).  Checks:

* nothing raises;
* the canary is in no output (``redact_secrets`` of the text, the arguments preview of the
  structured value, an excerpt around the canary);
* a second pass changes nothing (``[REDACTED]`` is never taken for anything else);
* time per input stays under 2 s per MB + 250 ms (a ReDoS costs seconds for a few KB).

``tests/test_redact.py::test_fuzz_redact_runs_clean`` (marker ``slow``) runs it for 30 s.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from loopguard.messages import arguments_preview
from loopguard.redact import redact_excerpt, redact_secrets

CANARY = "CnyFz9Q7"
#: Shapes of a planted secret ({} is the canary); each is a whole "word group" on its own.
TEXT_SHAPES = [
    "--password {}",
    "--password={}",
    '--password "{}"',
    '--password "a\\"{}"',
    "--api-key '{}'",
    "-p{}",
    "DB_PASSWORD={}",
    "AWS_SECRET_ACCESS_KEY={}",
    "Authorization: Bearer {}",
    "Authorization: Basic {}",
    "Authorization: {}",
    "https://user:{}@example.com/x",
    '{{"password": "{}"}}',
    '{{"token": ["{}"]}}',
    '{{"secret": {{"v": "{}"}}}}',
    '{{\\"passwd\\": \\"{}\\"}}',
    "-----BEGIN PRIVATE KEY-----\nMII{}\n-----END PRIVATE KEY-----",
    "-----BEGIN RSA PRIVATE KEY-----\nMII{}",
    "sk-proj-{}abcdefghijkl",
    "ghp_{}abcdefghijklmnopq",
]
SECRET_KEYS = ["password", "DB_PASSWORD", "apiKey", "client_secret", "Authorization", "token", "privateKey"]


class Failure(AssertionError):
    pass


def _timed(fn: Any, *args: Any) -> Any:
    """Call ``fn(*args)``; fail when it takes super-linear CPU time.

    Measured with ``time.thread_time`` (this thread's CPU, not a background thread's), and
    a slow call is retried twice: a ReDoS or quadratic walk is slow every time, while a
    garbage-collection pause or a busy CI machine is not, so only the fastest try counts.
    """
    best, out, size = float("inf"), None, 0
    for _ in range(3):
        started = time.thread_time()
        out = fn(*args)
        best = min(best, time.thread_time() - started)
        size = sum(len(a) for a in (*args, out) if isinstance(a, str))
        limit = 0.25 + 2 * size / 1e6  # generous: a ReDoS costs seconds for a few KB
        if best <= limit:
            return out
    raise Failure(f"{best:.3f} s for {size} code points (fastest of 3 tries)")


def _holds_canary(*parts: Any) -> bool:
    """A random part holds the canary, or a piece of it the checks look for: not a secret there
    (both engines learn constants from the code: hypothesis from its source, libFuzzer from the
    comparisons), so such an input proves nothing and is skipped."""
    shown = repr(parts)
    return any(CANARY[i : i + 4] in shown for i in range(len(CANARY) - 3))


def check_text(prefix: str, shape: int, suffix: str) -> None:
    """Plant the canary in ``TEXT_SHAPES[shape]`` between two random texts."""
    if _holds_canary(prefix, suffix):
        return
    planted = TEXT_SHAPES[shape % len(TEXT_SHAPES)].format(CANARY)
    text = f"{prefix}\n {planted} \n{suffix}"
    out = _timed(redact_secrets, text)
    if CANARY in out:
        raise Failure(f"canary shown: {text!r} -> {out!r}")
    again = _timed(redact_secrets, out)
    if again != out:
        raise Failure(f"not stable: {out!r} -> {again!r}")
    at = text.index(CANARY)
    for start in (at - 3, at + 2, at - 40):  # excerpts that start before, inside and well before it
        excerpt = redact_excerpt(text, max(0, start), max(0, start) + 30)
        if any(CANARY[i : i + 4] in excerpt for i in range(len(CANARY) - 3)):
            raise Failure(f"excerpt shows part of the canary: {text!r} [{start}:+30] -> {excerpt!r}")


def check_value(junk: Any, key: int, depth: int) -> None:
    """Plant the canary under a secret-named key, ``depth`` levels inside random junk."""
    if _holds_canary(junk):
        return
    value: Any = {SECRET_KEYS[key % len(SECRET_KEYS)]: [CANARY, {"x": CANARY}]}
    for level in range(depth):
        value = [junk, (value,)] if level % 2 else {"k": junk, "v": value}
    out = _timed(arguments_preview, value, 1_000_000)
    if CANARY in out:
        raise Failure(f"canary shown in the preview: {out!r}")


def _hypothesis(seconds: float) -> int:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=300) | st.text(
        st.sampled_from(list("=:\"'\\-_ @/[]{}()\nabcAKIsk0$`")), max_size=300
    )
    junk = st.recursive(
        st.none() | st.integers() | st.text(max_size=20), lambda c: st.lists(c, max_size=3), max_leaves=8
    )
    options = settings(max_examples=300, deadline=None, database=None, suppress_health_check=list(HealthCheck))

    @options
    @given(text, st.integers(0, 10**6), text)
    def texts(prefix: str, shape: int, suffix: str) -> None:
        check_text(prefix, shape, suffix)

    @options
    @given(junk, st.integers(0, 100), st.integers(0, 30))
    def values(value: Any, key: int, depth: int) -> None:
        check_value(value, key, depth)

    deadline, rounds = time.monotonic() + seconds, 0
    while time.monotonic() < deadline:
        texts()
        values()
        rounds += 1
    print(f"fuzz_redact: {rounds * 600} inputs in {seconds:.0f} s (hypothesis), no failure")
    return 0


def _atheris(argv: list[str]) -> int:
    import atheris  # type: ignore[import-not-found]

    def one(data: bytes) -> None:
        fdp = atheris.FuzzedDataProvider(data)
        check_text(
            fdp.ConsumeUnicodeNoSurrogates(200), fdp.ConsumeIntInRange(0, 1000), fdp.ConsumeUnicodeNoSurrogates(200)
        )
        check_value(fdp.ConsumeUnicodeNoSurrogates(20), fdp.ConsumeIntInRange(0, 100), fdp.ConsumeIntInRange(0, 30))

    atheris.instrument_all()  # coverage feedback from every loaded Python function (the redactor's too)
    atheris.Setup(argv, one)
    atheris.Fuzz()
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv if argv is None else argv
    parser = argparse.ArgumentParser(description="fuzz the redactor")
    parser.add_argument("--seconds", type=float, default=60.0, help="hypothesis fallback: how long to run")
    parser.add_argument("--no-atheris", action="store_true", help="use hypothesis even when atheris is installed")
    known, rest = parser.parse_known_args(argv[1:])
    try:
        if known.no_atheris:
            raise ImportError
        import atheris  # type: ignore[import-not-found]  # noqa: F401
    except ImportError:
        return _hypothesis(known.seconds)
    if not any(flag.startswith(("-max_total_time", "-runs")) for flag in rest):
        rest.append(f"-max_total_time={int(known.seconds)}")
    return _atheris([argv[0], *rest])


if __name__ == "__main__":
    raise SystemExit(main())
