"""Tool-call identity (spec §4): the shared JavaScript vectors, errors, parsing rules."""

from __future__ import annotations

import hashlib

import pytest

from conftest import shared_data, shared_json
from loopguard.identity import (
    MAX_DEPTH,
    action_fingerprint,
    call_hash,
    canonical_json,
    hash_prefix,
    session_key,
)

VECTORS = shared_json("call-hash-vectors.json", [])


@shared_data
def test_there_are_24_vectors() -> None:
    assert len(VECTORS) == 24


@shared_data
@pytest.mark.parametrize("vector", VECTORS, ids=[f"{i:02d}-{v['tool']}" for i, v in enumerate(VECTORS)])
def test_js_vectors(vector: dict) -> None:
    assert canonical_json(vector["args"]) == vector["canonical"]
    assert call_hash(vector["tool"], vector["args"]) == vector["sha256"]
    assert hash_prefix(vector["tool"], vector["args"]) == vector["hash_prefix"]
    assert hash_prefix(vector["sha256"]) == vector["hash_prefix"]


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.0, "1"),
        (-0.0, "0"),
        (1e21, "1e+21"),
        (1e20, "100000000000000000000"),
        (1e-7, "1e-7"),
        (1.5e-6, "0.0000015"),
        (123e-20, "1.23e-18"),
        (2**53 + 1, "9007199254740992"),
        (0.1, "0.1"),
        (-1234.5678, "-1234.5678"),
        (5e-324, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (True, "true"),
        (None, "null"),
        ("\u2028", '"\u2028"'),
        ("\x7f", '"\x7f"'),
        ("\x00", '"\\u0000"'),
        ("\ud83d\ude00", '"\U0001f600"'),
        ((1, [2]), "[1,[2]]"),
    ],
)
def test_ecmascript_formatting(value: object, text: str) -> None:
    assert canonical_json(value) == text


@pytest.mark.parametrize(
    ("args", "error", "path"),
    [
        ({"opts": [1, 2, float("nan")]}, ValueError, 'args["opts"][2]'),
        ({"x": float("inf")}, ValueError, 'args["x"]'),
        ({"b": b"bytes"}, TypeError, 'args["b"]'),
        ({"s": {1, 2}}, TypeError, 'args["s"]'),
        ([object()], TypeError, "args[0]"),
        ({1: "int key"}, TypeError, "args"),
        ({"n": 10**400}, ValueError, 'args["n"]'),
    ],
)
def test_bad_values_name_their_path_not_their_content(args: object, error: type, path: str) -> None:
    with pytest.raises(error) as info:
        call_hash("tool", args)
    assert str(info.value).startswith(path + ":")
    assert "bytes'" not in str(info.value) and "int key" not in str(info.value)


def test_pathological_nesting_is_a_clear_error() -> None:
    deep: list = []
    node = deep
    for _ in range(100_000):
        node.append([])
        node = node[0]
    with pytest.raises(ValueError, match=f"nested deeper than {MAX_DEPTH}"):
        canonical_json(deep)
    with pytest.raises(ValueError, match="nested deeper"):
        call_hash("t", "[" * 100_000 + "]" * 100_000)


def test_json_strings_are_parsed_first_and_other_strings_hashed_as_strings() -> None:
    assert call_hash("search", '{"b": 2, "a": 1}') == call_hash("search", {"a": 1, "b": 2})
    assert call_hash("search", b'{"q":"weather"}') == call_hash("search", {"q": "weather"})
    plain = "plain string args"
    assert call_hash("str", plain) == hashlib.sha256(b'str\n"plain string args"').hexdigest()
    assert call_hash("search", {"q": "weather"}) != call_hash("search", {"q": "weather "})


def test_lone_surrogates_hash_like_javascript() -> None:
    # canonical text escapes them; a lone surrogate in the tool name is U+FFFD in UTF-8, as in Node
    assert canonical_json("a\ud800b") == '"a\\ud800b"'
    assert call_hash("t\ud800", {}) == hashlib.sha256("t\ufffd\n{}".encode()).hexdigest()


def test_action_fingerprint_drops_volatile_top_level_keys() -> None:
    a = action_fingerprint("shell", {"command": "ls", "description": "look around"})
    b = action_fingerprint("shell", '{"description": "check again", "command": "ls"}')
    assert a == b == call_hash("shell", {"command": "ls"})
    nested = {"command": "ls", "opts": {"description": "kept"}}
    assert action_fingerprint("shell", nested) == call_hash("shell", nested)
    assert action_fingerprint("shell", {"command": "ls", "why": "x"}, volatile_keys=("why",)) == a


def test_hash_prefix_rejects_a_non_digest() -> None:
    with pytest.raises(ValueError):
        hash_prefix("search")
    assert hash_prefix("search", None) == call_hash("search", None)[:12]


def test_session_key() -> None:
    assert session_key(None) == session_key("") == "default"
    assert session_key("s1") == "s1" and session_key(7) == "7"


def test_whole_floats_beyond_2_53_format_like_javascript() -> None:
    # node: JSON.stringify(2**60) === "1152921504606847000"
    assert canonical_json(2.0**60) == canonical_json(2**60) == "1152921504606847000"
    assert canonical_json(1e18) == "1000000000000000000"
    assert canonical_json(float(2**53)) == "9007199254740992"
    assert call_hash("t", {"n": 2.0**60}) == call_hash("t", {"n": 2**60})


@pytest.mark.parametrize("key", ["sk-CANARY123", "api_key", "ghp_abcdef", "token", "x" * 40, "a b", "id_1234567"])
def test_secret_looking_key_names_are_not_shown_in_errors(key: str) -> None:
    with pytest.raises(ValueError) as info:
        call_hash("t", {"outer": {key: [1, float("nan")]}})
    assert str(info.value).startswith('args["outer"][<key>][1]:')
    assert key not in str(info.value)
