"""Redaction of secret-looking values (spec §6 ④, seed 002: with its counter-examples)."""

from __future__ import annotations

import pytest

from loopguard.redact import REDACTED, redact_secrets

SECRETS = [
    ("key sk-proj-AbCdEf0123456789xyzXYZ done", "key [REDACTED] done"),
    ("sk-ant-api03-abcdefghijklmnopqrstuv", REDACTED),
    ("stripe sk_live_51HabcdefghijKLMN", "stripe [REDACTED]"),
    ("gh token ghp_0123456789abcdefghijABCDEFGHIJ", "gh token [REDACTED]"),
    ("aws AKIAIOSFODNN7EXAMPLE here", "aws [REDACTED] here"),
    ("google AIzaSyA-1234567890abcdefghijklmnopqrstu", "google [REDACTED]"),
    ("slack xoxb-1234567890-abcdefghij", "slack [REDACTED]"),
    ("hf hf_abcdefghijklmnopqrstuvwxyzABCDEF", "hf [REDACTED]"),
    ("Authorization: Bearer abc.def.ghi123", "Authorization: Bearer [REDACTED]"),
    (
        "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U x",
        "jwt [REDACTED] x",
    ),
    ("password=hunter2&user=bob", "password=[REDACTED]&user=bob"),
    ('{"password": "s3cr3t pass", "user": "bob"}', '{"password": "[REDACTED]", "user": "bob"}'),
    ("TOKEN: abc123, next", "TOKEN: [REDACTED], next"),
    ("api_key='k-9'", "api_key='[REDACTED]'"),
    ("seed " + "ab" * 32 + " end", "seed [REDACTED] end"),
    # JSON held inside a string argument: the escaped quotes stay, the value goes
    ('{"command": "mysql --password=\\"hunter2\\" -e 1"}', '{"command": "mysql --password=\\"[REDACTED]\\" -e 1"}'),
    ('{\\"passwd\\": \\"x-secret-1\\"}', '{\\"passwd\\": \\"[REDACTED]\\"}'),
    ("DB_PASSWORD=supersecret123", "DB_PASSWORD=[REDACTED]"),
    ("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG", "AWS_SECRET_ACCESS_KEY=[REDACTED]"),
    ("secret_key=abc123 next", "secret_key=[REDACTED] next"),
    ("run --password hunter2 --user bob", "run --password [REDACTED] --user bob"),
    ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "Authorization: Basic [REDACTED]"),
    ("git clone https://user:pw12345@github.com/x/y", "git clone https://user:[REDACTED]@github.com/x/y"),
    # quoted as JSON (argument previews): after an escaped newline, tab, NUL or lone surrogate a
    # key is still a key ("\\nsk-..." once slipped through: the "n" looked like part of a word)
    ('{"body": "line one\\nsk-SECRET12345abcdefSECRET"}', '{"body": "line one\\n[REDACTED]"}'),
    ('"a\\tghp_0123456789abcdefghijABCDEFGHIJ"', '"a\\t[REDACTED]"'),
    ('"a\\u0000password=hunter2"', '"a\\u0000password=[REDACTED]"'),
    ('"\\ud800Bearer abc.def.ghi123"', '"\\ud800Bearer [REDACTED]"'),
    ('"\\b' + "ab" * 32 + '"', '"\\b[REDACTED]"'),
    (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
        "-----BEGIN RSA PRIVATE KEY-----[REDACTED]-----END RSA PRIVATE KEY-----",
    ),
]


@pytest.mark.parametrize(("text", "expected"), SECRETS)
def test_secrets_are_redacted(text: str, expected: str) -> None:
    assert redact_secrets(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "/home/user/projects/loopguard/src/loopguard/text.py:120",
        "C:\\Users\\bob\\AppData\\Local\\Temp\\x.log",
        "中文文本，没有任何秘密。请检查配置文件。",
        "md5 9e107d9d372bb6826bd81d3542a419d6",
        "commit 8a72ac9b379ce0c67b3cf07cc6e23a5bad27c798",
        "uuid 123e4567-e89b-12d3-a456-426614174000",
        "the task took 1234567890 ms; skip-list and sk-8 are words",
        "call 35dca543bb3b… (limit 3)",
        "the password rule says nothing here",
        "the token count is 5; tokenizer: bpe; max_tokens: 300",
        "password_reset_url: /reset",
        "https://docs.python.org/3/library/asyncio-task.html#asyncio.wait_for",
        "see https://example.com:8443/path for the --password-file option",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redact_secrets(text) == text


def test_type_error() -> None:
    with pytest.raises(TypeError):
        redact_secrets(b"bytes")  # type: ignore[arg-type]
