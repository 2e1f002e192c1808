"""Result normalisation (spec §5.2): the fast text path equals the plain reference, and hand-checked values."""

from __future__ import annotations

import hashlib
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from loopguard.results import (
    DEFAULT_VOLATILE_FIELDS,
    _key_forms,
    _normalize_text,
    _normalize_text_reference,
    normalize_result,
    result_digest,
    result_lines,
    result_text,
    summarize_result,
)

FORMS = _key_forms(DEFAULT_VOLATILE_FIELDS)

# pieces that trigger (or nearly trigger) every rule, glued by hypothesis in any order
PIECES = [
    '"request_id": "req_1"',
    "request_id=abc",
    "X-Request-Id: 7f3a",
    "requestId: 9",
    "foo_request_id: 3",
    '"ts": 17',
    "ts=1",
    "its: 2",
    "'timestamp': '2025'",
    "time=12:00",
    "date: today",
    "update: 1",
    "2025-06-03T14:12:05Z",
    "2025-06-03 14:12",
    "12025-06-03T14:12",
    "1999-12-31T23:59:59.123+01:00",
    "in 21s",
    "took 35 ms",
    "after 10001 milliseconds",
    "elapsed: 3.5s",
    "duration=2min",
    "within 5s",
    "1.25s",
    "v1.5s",
    "0.53 seconds",
    "2 of 6 ready",
    "read 3× this session",
    "called 2 times in this turn",
    "10 x this conversation",
    "İstanbul",
    "ΣΑΣ",
    "é2025-01-01T00:00",
    "\t",
    "\n",
    " ",
    ", ",
    "; ",
    "}",
    "]",
    "-",
    "_",
    ".",
    ":",
    "=",
    '"',
    "'",
    "\\",
    "in",
    "took",
    "this",
    "s",
    "ms",
    "7",
    "42",
    "too\u212a 3s",
    "\u212atook 3s",
    "Took 4s",
    "IN 9 ms",
    "in5s",
    "x.request: 4",
    "\u017f",
]


@given(st.lists(st.sampled_from(PIECES) | st.text(max_size=6), max_size=30).map("".join))
def test_fast_text_normalisation_equals_the_reference(text: str) -> None:
    assert _normalize_text(text, FORMS) == _normalize_text_reference(text, FORMS)


@given(
    st.text(max_size=200),
    st.lists(st.sampled_from(["id", "Trace-Id", "x", "when_ms", "x.request", "时间"]), max_size=3),
)
def test_fast_equals_reference_for_other_field_lists(text: str, fields: list[str]) -> None:
    forms = _key_forms(tuple(fields))
    assert _normalize_text(text, forms) == _normalize_text_reference(text, forms)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"request_id": "req_1", "code": 7}', '{"request_id": <volatile>, "code": 7}'),
        ("X-Request-Id: 7f3a\nstatus: 500", "X-Request-Id: <volatile>\nstatus: 500"),
        ("requestId=abc;ok", "requestId=<volatile>;ok"),
        ("foo_request_id: 3", "foo_request_id: 3"),  # another key that merely ends like one
        ("at 2025-06-03T14:12:05Z done", "at <datetime> done"),
        ("12025-06-03T14:12 x", "12025-06-03T14:12 x"),  # 5 digits: not a date
        ("added 812 packages in 21s", "added 812 packages in <duration>"),
        ("Operation timed out after 10001 milliseconds", "Operation timed out after <duration>"),
        ("137 passed in 12.18s", "137 passed in <duration>"),
        ("(0.53 seconds)", "(<duration>)"),
        ("within 5s", "within 5s"),  # \b: "in" inside a word is not the keyword
        ("2 of 6 updated replicas are available", "2 of 6 updated replicas are available"),
        ("file read 3× this session", "file read <n>× this session"),
        ("İstanbul request_id=1", "İstanbul request_id=1"),  # lower() changes the length: keys kept
    ],
)
def test_text_rules_by_hand(text: str, expected: str) -> None:
    assert _normalize_text(text, FORMS) == expected
    assert _normalize_text_reference(text, FORMS) == expected


def test_json_like_results_drop_volatile_members_at_every_level() -> None:
    value = {"data": [{"id": 1, "updatedAt": "x", "ts": 2}], "Request-ID": "r", "elapsed_ms": 5}
    assert normalize_result(value) == {"data": [{"id": 1}]}
    # the hash of a dict is over its compact sorted-key JSON, error flag first
    expected = hashlib.sha256(b'0\n{"data":[{"id":1}]}').hexdigest()
    assert result_digest(value) == expected
    assert result_digest({"data": [{"ts": 9, "id": 1}]}) == expected


def test_bytes_results() -> None:
    assert result_digest(b"ok in 3s") == result_digest("ok in 4s")
    blob = b"\xff\xfe\x00binary"
    digest = hashlib.sha256(blob).digest()
    import base64

    assert result_text(blob) == f"<binary result: {len(blob)} bytes, sha256 {base64.b64encode(digest).decode()}>"
    assert summarize_result(blob).startswith("<binary result: 9 bytes")  # never "[REDACTED]"


def test_line_sets_ignore_brackets_and_blank_lines() -> None:
    assert result_lines("a\n\n  b  \n}\n---\na") == frozenset({"a", "b"})
    assert result_lines({"k": [1, 2], "a": "x"}) == frozenset({'{"a": "x",', '"k": [1,', "2]}"})


def test_summary_is_capped_and_redacted() -> None:
    text = "line one\nAuthorization: Bearer abcdefghijklmnop\n" + "x" * 500
    summary = summarize_result(text, max_chars=60)
    assert summary.startswith("line one | Authorization: Bearer [REDACTED] | xxx")
    assert summary.endswith("…") and len(summary) == 60
    assert summarize_result("") == "(empty result)"
    assert summarize_result(json.dumps({"a": 1})) == '{"a": 1}'


def test_text_rules_also_apply_inside_json_like_values() -> None:
    assert result_digest({"msg": "done in 21s", "at": "2025-06-03T14:12:05Z"}) == result_digest(
        {"msg": "done in 3s", "at": "2026-01-01T00:00:00Z"}
    )
    assert result_digest({"ready": "2 of 6"}) != result_digest({"ready": "3 of 6"})
    # not normalised at all when asked
    assert result_digest({"request_id": "a"}, volatile_fields=None) != result_digest(
        {"request_id": "b"}, volatile_fields=None
    )


def test_unusual_results_get_a_stable_text() -> None:
    class Odd:
        def __repr__(self) -> str:
            raise RuntimeError("no repr")

    mixed = {1: "a", "b": 2}  # keys of mixed types cannot be sorted by json
    assert result_digest(mixed) == result_digest({1: "a", "b": 2})
    loop: list[object] = []
    loop.append(loop)
    assert result_text(loop) == "stable:[<cycle>]"
    assert result_text(Odd()) == "stable:<unprintable Odd: RuntimeError>"  # default=repr raises -> fallback
    deep: object = "x"
    for _ in range(5000):
        deep = [deep]
    assert result_text(deep) == "stable:" + "[" * 5000 + '"x"' + "]" * 5000  # no recursion limit
