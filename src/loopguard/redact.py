"""Redaction of secret-looking values in text loopguard writes out (spec §6 ④, §5.2; seed 002).

Intervention texts, sample dumps and log lines may quote a tool call or a
model's output; before they do, :func:`redact_secrets` replaces what looks
like a credential with ``[REDACTED]``:

* API keys with a known prefix (``sk-…``, ``sk_live_…``, ``pk_…``, ``rk_…``,
  ``ghp_…``/``gho_…``/``ghs_…``/``ghu_…``/``ghr_…``, ``github_pat_…``,
  ``glpat-…``, ``xoxb-…``/``xoxp-…``/…, ``AKIA…``/``ASIA…``, ``AIza…``,
  ``hf_…``);
* ``Bearer <token>`` (the token; the word ``Bearer`` stays);
* JSON Web Tokens (three base64url segments, the first starting ``eyJ``);
* the values of ``password=`` / ``passwd=`` / ``pwd=`` / ``passphrase=`` /
  ``token=`` / ``secret=`` / ``api_key=`` / ``access_token=`` /
  ``client_secret=`` / ``secret_key=`` / ``secret_access_key=`` /
  ``private_key=`` (also with a prefix such as ``DB_PASSWORD=`` or
  ``AWS_SECRET_ACCESS_KEY=``, with ``:``, in JSON ``"password": "…"``, and in
  JSON held inside a string, ``\"password\": \"…\"``), and of
  ``--password VALUE``-style flags;
* ``Basic``/``Token`` credentials like ``Bearer`` ones, the password of
  ``scheme://user:password@host`` URLs, and PEM private-key bodies;
* 64-hex-digit strings (secrets and private keys; SHA-256 call hashes are
  never printed in full by loopguard, only their 12-hex prefix).

Never redacted (the seed's counter-examples): ordinary paths, CJK text,
32-hex digests (MD5 sums, UUIDs without dashes), 40-hex git commits, numbers.
"""

from __future__ import annotations

import re

__all__ = ["REDACTED", "redact_secrets"]

REDACTED = "[REDACTED]"


def _start(before: str) -> str:
    """A value starts here: not after a character of the class ``before`` -- or right after a
    JSON escape (``\\n``, ``\\t``, ``\\u0000``...), since previews quote arguments as JSON: a key
    after an escaped newline is still a key."""
    return rf"(?:(?<!{before})|(?<=\\[nrtbf])|(?<=\\u[0-9a-fA-F]{{4}}))"


_PREFIXED_KEY = re.compile(
    _start("[A-Za-z0-9_-]") + r"(?:"
    r"sk-(?:proj-|ant-)?[A-Za-z0-9_-]{16,}"
    r"|(?:sk|pk|rk)_(?:live|test)_[A-Za-z0-9]{10,}"
    r"|gh[pousr]_[A-Za-z0-9]{20,}"
    r"|github_pat_[A-Za-z0-9_]{20,}"
    r"|glpat-[A-Za-z0-9_-]{20,}"
    r"|xox[abprs]-[A-Za-z0-9-]{10,}"
    r"|(?:AKIA|ASIA)[A-Z0-9]{16}"
    r"|AIza[A-Za-z0-9_-]{35}"
    r"|hf_[A-Za-z0-9]{30,}"
    r")"
)
_BEARER = re.compile(r"(?i)" + _start("[A-Za-z0-9_]") + r"(bearer|basic|token)(\s+)[A-Za-z0-9._~+/=-]{8,}")
_JWT = re.compile(_start("[A-Za-z0-9_]") + r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")
_SECRET_NAME = (
    r"(?:password|passwd|pwd|passphrase|token|secret|api[_-]?key|access[_-]?token|auth[_-]?token"
    r"|client[_-]?secret|secret[_-]?(?:access[_-]?)?key|private[_-]?key)"
)
_ASSIGNMENT = re.compile(
    rf"""(?ix)
    (\\?["']?{_start("[A-Za-z0-9]")}[A-Za-z0-9_]*?{_SECRET_NAME}\\?["']?\s*[=:]\s*)   # key, = or :, also DB_PASSWORD, \"pwd\"
    (?:\\"(?:[^"\\\n]|\\[^"\n])*\\"        # a value in escaped quotes (JSON inside a string)
      |"[^"\n]*"|'[^'\n]*'               # quoted
      |[^\s"',;&}}]+)                    # or up to a separator
    """
)
_FLAG = re.compile(rf"(?i)(--?{_SECRET_NAME}[ \t]+)(?!-)[^\s\"']+")  # --password hunter2 (= forms: _ASSIGNMENT)
_URL_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^/\s:@]+:)[^/\s@]+(@)")
_PEM = re.compile(r"(-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----)[\s\S]*?(-----END [A-Z0-9 ]*PRIVATE KEY-----)")
_HEX64 = re.compile(_start("[0-9A-Fa-f]") + r"[0-9A-Fa-f]{64}(?![0-9A-Fa-f])")


def _assignment(match: re.Match[str]) -> str:
    value = match.group(0)[len(match.group(1)) :]
    quote = '\\"' if value.startswith('\\"') else value[0] if value[:1] in "\"'" else ""
    return f"{match.group(1)}{quote}{REDACTED}{quote}"


def redact_secrets(text: str) -> str:
    """``text`` with secret-looking values replaced by ``[REDACTED]``.

    Parameters
    ----------
    text : str
        Any text (a tool-argument preview, a model output excerpt, a log line).

    Returns
    -------
    str
        The text, redacted; unchanged when nothing looks secret.

    Raises
    ------
    TypeError
        when ``text`` is not a ``str``.

    Examples
    --------
    >>> redact_secrets("curl -H 'Authorization: Bearer abc.def.ghi123' https://api.example.com")
    "curl -H 'Authorization: Bearer [REDACTED]' https://api.example.com"
    >>> redact_secrets("login password=hunter2 user=bob")
    'login password=[REDACTED] user=bob'
    >>> redact_secrets("md5 9e107d9d372bb6826bd81d3542a419d6 in /srv/数据/file.txt")
    'md5 9e107d9d372bb6826bd81d3542a419d6 in /srv/数据/file.txt'
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be str, not {type(text).__name__}")
    text = _PEM.sub(lambda m: f"{m.group(1)}{REDACTED}{m.group(2)}", text)
    text = _JWT.sub(REDACTED, text)
    text = _BEARER.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)
    text = _PREFIXED_KEY.sub(REDACTED, text)
    text = _URL_CREDENTIALS.sub(lambda m: f"{m.group(1)}{REDACTED}{m.group(2)}", text)
    text = _ASSIGNMENT.sub(_assignment, text)
    text = _FLAG.sub(lambda m: f"{m.group(1)}{REDACTED}", text)
    return _HEX64.sub(REDACTED, text)


def one_line(text: str) -> str:
    r"""``text`` as one safe line for a terminal: a newline as ``⏎``, other C0 controls as their
    Control Pictures (U+2400 + code), DEL as ``␡``, C1 controls and lone surrogates as U+FFFD.

    >>> one_line("a\nb\tc\x7f")
    'a⏎b␉c␡'
    """
    out = []
    for ch in text:
        code = ord(ch)
        if ch == "\n":
            out.append("\u23ce")
        elif code < 0x20:
            out.append(chr(0x2400 + code))
        elif code == 0x7F:
            out.append("\u2421")
        elif 0x80 <= code < 0xA0 or 0xD800 <= code < 0xE000:
            out.append("\ufffd")
        else:
            out.append(ch)
    return "".join(out)
