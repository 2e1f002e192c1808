"""Redaction of secret-looking values in text loopguard writes out (spec §6 ④, §5.2; seed 002;
issue 21).

Intervention texts, sample dumps and log lines may quote a tool call or a
model's output; before they do, :func:`redact_secrets` replaces what looks
like a credential with ``[REDACTED]``:

* API keys with a known prefix (``sk-…``, ``sk_live_…``, ``pk_…``, ``rk_…``,
  ``ghp_…``/``gho_…``/``ghs_…``/``ghu_…``/``ghr_…``, ``github_pat_…``,
  ``glpat-…``, ``xoxb-…``/``xoxp-…``/…, ``AKIA…``/``ASIA…``, ``AIza…``,
  ``hf_…``);
* ``Bearer <token>`` (the token; the word ``Bearer`` stays), ``Basic``/``Token``
  credentials alike, and the value of any ``Authorization:`` header (any scheme;
  the scheme word stays);
* JSON Web Tokens (three base64url segments, the first starting ``eyJ``);
* the values of ``password`` / ``passwd`` / ``pwd`` / ``passphrase`` /
  ``token`` / ``secret`` / ``api_key`` / ``access_token`` / ``auth_token`` /
  ``client_secret`` / ``secret_key`` / ``secret_access_key`` /
  ``private_key`` assignments with ``=`` or ``:`` (also with a prefix such as
  ``DB_PASSWORD=`` or ``AWS_SECRET_ACCESS_KEY=``, in JSON ``"password": "…"``,
  in JSON held inside a string, ``\\"password\\": \\"…\\"``, and whatever a JSON
  key holds: ``"password": ["x"]`` or ``{…}`` to its closing bracket);
* shell forms: ``--password VALUE``, ``--password=VALUE``, ``--db-token 'VALUE'``,
  mysql's ``-pVALUE``, ``KEY=VALUE`` environment assignments; a quoted value is
  redacted whole, escapes included (``"Hunt\\"er2"``: no tail is left);
* more shell and config forms: ``curl -u user:VALUE`` / ``--user``, cookie values (``Cookie:``,
  the first pair of ``Set-Cookie:``, ``curl -b 'sid=VALUE'``), ``-p VALUE`` after ``docker login``,
  ``podman login``, ``sshpass``, ``mysql``/``mariadb``, ``.netrc`` ``password VALUE``,
  ``<password>VALUE</password>``, SQL ``IDENTIFIED BY 'VALUE'``, PHP/Perl ``'password' => VALUE``,
  ``:=``, YAML block scalars (``password: |`` and the lines indented under it), also the names
  ``pass``/``auth`` (whole words: ``--pass``, ``DB_PASS``, ``_auth``), ``credentials``, ``cookie``,
  ``pass_word``, ``api key``, and keys written with ``\\u00XX`` escapes (``\\u0070assword``);
* the password of ``scheme://user:password@host`` URLs;
* PEM private keys: everything after the ``-----BEGIN … PRIVATE KEY-----`` marker up to
  the ``-----END …-----`` marker; when there is none (a key cut short), the whole body to the
  first character a key body cannot hold (the end of the text for a key alone);
* 64-hex-digit strings (secrets and private keys; SHA-256 call hashes are
  never printed in full by loopguard, only their 12-hex prefix).

Never redacted (the seed's counter-examples): ordinary paths, CJK text,
32-hex digests (MD5 sums, UUIDs without dashes), 40-hex git commits, numbers.

Cost: linear in the length of the text.  Every rule either is a regular expression whose
failed attempt at a position does bounded work (bounded lookbehinds, bounded repeats, or one
unbounded run that ends the pattern), or a hand-written step that resumes after whatever it
has read (a value, an URL authority, a PEM body).  ``benchmarks/redact_scaling.py`` measures
it; ``tests/test_redact.py`` asserts it on 1 MB adversarial inputs.

Structured values (tool-call arguments before they are serialised) go through
:func:`redact_value` first: a secret-named key hides whatever it holds.  Excerpts cut out of
a longer text go through :func:`redact_excerpt`, which redacts before it cuts.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator, Mapping
from typing import Any

__all__ = [
    "REDACTED",
    "SECRET_MARGIN",
    "redact_excerpt",
    "redact_head",
    "redact_secrets",
    "redact_value",
    "secret_spans",
    "whole_words_head",
]

REDACTED = "[REDACTED]"

#: How far past the edge of a shown window the redactor reads (code points): a secret that
#: starts inside the window is recognised whole when it is shorter than this.  Credentials
#: are far shorter (a 4,096-bit RSA key in PEM is ~3,300 characters, and a PEM body is
#: redacted to the end of the window anyway).
SECRET_MARGIN = 4096
#: How far back :func:`redact_excerpt` looks for the ``BEGIN`` marker of a PEM key whose body
#: the window starts in (code points).
PEM_LOOKBACK = 65536
#: Passes of :func:`redact_secrets` at most.  Two rules may read one quote differently (an
#: escaped JSON quote closing one value is an escaped backslash and a plain quote to another);
#: replacing both spans can leave a quote whose opener the next pass reads to the text's end.
#: So a text is redacted again until a pass changes nothing: what it returns is stable under
#: :func:`redact_secrets` (a second call changes nothing), within these passes.
MAX_PASSES = 8


def _start(before: str) -> str:
    """A value starts here: not after a character of the class ``before`` -- or right after a
    JSON escape (``\\n``, ``\\t``, ``\\u0000``...), since previews quote arguments as JSON: a key
    after an escaped newline is still a key."""
    return rf"(?:(?<!{before})|(?<=\\[nrtbf])|(?<=\\u[0-9a-fA-F]{{4}}))"


# A lookahead for the first character first lets the regex engine skip other positions fast.
# Each pattern below fails at a position after bounded work, or ends in one greedy run (which
# then succeeds): scanning a text with finditer is linear.
_PREFIXED_KEY = re.compile(
    r"(?=[sprgxAhSw])" + _start("[A-Za-z0-9_-]") + r"(?:"
    r"sk-(?:proj-|ant-)?[A-Za-z0-9_-]{16,}"
    r"|SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}"
    r"|whsec_[A-Za-z0-9+/=]{16,}"
    r"|(?:sk|pk|rk)_(?:live|test)_[A-Za-z0-9]{10,}"
    r"|gh[pousr]_[A-Za-z0-9]{20,}"
    r"|github_pat_[A-Za-z0-9_]{20,}"
    r"|glpat-[A-Za-z0-9_-]{20,}"
    r"|xox[abprs]-[A-Za-z0-9-]{10,}"
    # fixed-length keys: with the rest of their word (left behind, it would start a key of its own)
    r"|(?:AKIA|ASIA)[A-Z0-9]{16}[A-Za-z0-9_-]*"
    r"|AIza[A-Za-z0-9_-]{35,}"
    r"|hf_[A-Za-z0-9]{30,}"
    r")"
)
_BEARER = re.compile(r"(?i)(?=[bBtT])" + _start("[A-Za-z0-9_]") + r"(?:bearer|basic|token)\s+([A-Za-z0-9._~+/=-]{8,})")
# one start per run of segment characters (the lookbehind holds the segment class, ``-``
# included: ``eyJ-eyJ-...`` is one run, read once), and each segment ends at a dot
_JWT = re.compile(r"(?=e)" + _start("[A-Za-z0-9_-]") + r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")
_HEX64 = re.compile(r"(?=[0-9A-Fa-f])" + _start("[0-9A-Fa-f]") + r"[0-9A-Fa-f]{64}(?![0-9A-Fa-f])")
#: A secret's name (longest alternatives first: ``secret_key`` before ``secret``).
#: ``pass``, ``auth`` and ``cookie`` only as whole words or after ``_``/``-`` (``DB_PASS``,
#: ``_auth``, ``--pass``; not ``bypass``, ``oauth``); grouped by first letter (one branch tried
#: per position).  Groups ``auth`` (``Authorization``: the scheme word stays), ``cookie`` and
#: ``set`` (``Set-Cookie``): headers whose value is the rest of their line.
_NAME = re.compile(
    r"(?=[sSpPcCaAtTeEmM])(?i:token"
    r"|p(?:rivate[_-]?key|assphrase|ass[_-]?word|asswd|asscode|wd|(?<![a-z]p)ass)"
    r"|s(?:ecret[_-]?(?:access[_-]?)?key|ecret|hared[_-]?access[_-]?key|(?<=amz-s)ignature|igning[_-]?key|shpass"
    r"|(?<![a-z]s)(?P<set>et-cookie))"
    r"|c(?:lient[_-]?secret|redentials?|(?<![a-z]c)(?P<cookie>ookie))"
    r"|e(?:ncryption[_-]?key)"
    r"|m(?:aster[_-]?key)"
    r"|a(?:ccess[_-]?token|ccount[_-]?key|uth[_-]?token|pi[ _-]?key|(?P<auth>uthorization)|(?<![a-z]a)uth))"
)
#: After a name: an optional closing quote (JSON ``"password":``, escaped ``\"password\":``),
#: then ``=``, ``:``, ``=>`` (PHP, Perl) or ``:=``.
_KEY_TAIL = re.compile(r"""(?:\\*["'])?\s*(?:=>|:=|[=:])\s*""")
#: After a flag name: blanks, then a value that is not another flag (``-x`` may be a value).
_FLAG_TAIL = re.compile(r"[ \t]+(?=[^\s-]|-[^\s-])")
#: Values.  Unquoted: up to a blank or separator; a backslash escape stays inside unless it is
#: a JSON escape (``\n``, ``\"``...) that ends the value; a shell-escaped blank (``a\ b``, in
#: JSON ``a\\ b``) and a comma before a value character stay inside too.
_UNQUOTED = re.compile(r"""(?:[^\s"',;&}\\]|,(?=[^\s"',;&}\\])|\\\\ |\\[^nrtbfu"'/\r\n\t])+""")
_DOUBLE = re.compile(r'"((?:[^"\\\n]|\\.)*)"?')
_SINGLE = re.compile(r"'([^'\n]*)'?")
# JSON inside a JSON string: \\\\ is an escaped backslash, \\\" an escaped quote, \" closes
_ESCAPED = re.compile(r'\\"((?:\\\\\\\\|\\\\\\"|\\\\|\\[^"\\]|[^"\\\n])*)(?:\\")?')
_BACKSLASHES_QUOTE = re.compile(r'(\\+)"')
_BRACKETS = re.compile(r'\\.|["\[\]{}()]')
#: An ``Authorization`` header value: to the end of the line or of the quoted string.
_HEADER = re.compile(r"""[^\r\n"'\\]+""")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9._-]{0,30}[ \t]+(?=\S)")
#: mysql's ``-pVALUE`` after a blank or a quote: a quoted value, or 3+ characters unquoted
#: (group 1, 2 or 3; one pass) ...
_SHORT_P_AT = r"""(?=-)(?:^|(?<=[\s"'])|(?<=\\[nrt]))-p"""
_SHORT_P = re.compile(
    _SHORT_P_AT
    + r"""(?:"((?:[^"\\\n]|\\.)*)"?|'([^'\n]*)'?|(?=[^\s"',;&}\\\[({-][^\s"',;&}\\]{2})((?:[^\s"',;&}\\]|,(?=[^\s"',;&}\\])|\\[^nrtbfu"'/\r\n\t])+))"""
)
#: ... or a value in brackets or behind an escaped quote (read by :func:`_value`).
_SHORT_P_OTHER = re.compile(_SHORT_P_AT + r"""(?=\\|[\[({][^\s"',;&}\\]{2})""")
#: ``-u user:V`` / ``--user user:V`` (curl): the password after the colon (not a numeric
#: ``uid:gid``, ``docker run -u 1000:1000``).
_USER = re.compile(
    r"""(?=-)(?:^|(?<=[\s"'])|(?<=\\[nrt]))(?:-u[ \t]*|--user(?:[ \t]+|=))["']?(?![0-9]{1,256}:)[^\s:"'\\@/]{1,256}:(?=[^\s"'\\])"""
)
#: curl's ``-b 'name=V'`` (cookies; ``--cookie`` is a secret name).
_CURL_B = re.compile(r"""(?=-)(?:^|(?<=[\s"'])|(?<=\\[nrt]))-b[ \t]+(?=[^\s-])""")
#: ``.netrc``: ``machine h login u password V``.
_NETRC = re.compile(
    r"(?i)(?=[mla])(?<![\w-])(?:machine|login|account)[ \t\r\n]+[^\s]{1,256}[ \t\r\n]+password[ \t]+(?=\S)"
)
#: SQL: ``IDENTIFIED BY 'V'``, ``IDENTIFIED WITH plugin BY 'V'``, ``IDENTIFIED BY PASSWORD 'V'``.
_SQL = re.compile(
    r"(?i)(?=i)(?<![\w-])identified[ \t]+(?:with[ \t]+[^\s]{1,64}[ \t]+)?by[ \t]+(?:password[ \t]+)?(?=\S)"
)
#: Commands in which ``-p V`` (with a blank) is a password.
_PW_COMMAND = re.compile(
    r"(?i)(?=[dpsmtr])(?<![\w./-])(?:(?:docker|podman)[ \t]+login|sshpass|mysql|mariadb|twine|(?P<a>redis-cli))(?![\w.-])"
)
_COMMAND_REST = re.compile(r"[^\r\n;&|]*")
_SPACED_P = re.compile(r"(?<=[ \t])-p[ \t]+(?=[^\s-])")
_SPACED_A = re.compile(r"(?<=[ \t])-a[ \t]+(?=[^\s-])")  # redis-cli's password flag
#: The text of an XML element (``<password>V</password>``): to the next tag.
_XML_TEXT = re.compile(r"[^<]*")
#: A YAML block scalar's header (``|``, ``>-``, ``|2``...) to its line's end, and one line.
#: A JSON escape ``\\u00XX`` of an ASCII letter, digit, ``_`` or ``-``.
_WORD_ESCAPE = re.compile(r"\\u00(2[dD]|3[0-9]|4[1-9a-fA-F]|5[0-9aAfF]|6[1-9a-fA-F]|7[0-9aA])")
#: Group 1: the line break, real or a JSON escape (``\\n``: the scalar is inside a JSON string).
_BLOCK_HEAD = re.compile(r"""[|>][+-]?[1-9]?[+-]?[ \t]*(?:#[^\r\n\\"]*)?(\r?\n|(?:\\+r)?\\+n)""")
_LINE = re.compile(r"([ \t]*)([^\r\n]*)(?:\r?\n)?")
#: One line of a block scalar inside a JSON string (at any depth): up to ``\\n`` or a closing quote.
_ESCAPED_LINE = re.compile(r"""((?: |\\+t)*)((?:[^\\"\r\n]|\\+[^nr\\])*)(?:(?:\\+r)?\\+n)?""")
_URL_AUTHORITY = re.compile(r"""[^/\s"'<>\\?#]*""")
_SCHEME_CHAR = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-")
_FLAG_CHAR = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
_PEM_BEGIN = re.compile(r"-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")
#: A PEM body: base64, blanks, JSON line escapes, ``Proc-Type: ...`` header lines (bounded
#: words, so a failed header attempt costs at most 33 steps).
_PEM_BODY = re.compile(r"""(?:[A-Za-z]{1,16}-[A-Za-z]{1,16}:[^\r\n\\"']*|[A-Za-z0-9+/=\s]|\\+[nrt])*""")
_PEM_END = re.compile(r"-----END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----")
_WORD_EDGE = re.compile(r"\s")
#: Secret names a structured key may end with (lower case, separators dropped).
_SECRET_KEYS = (
    "password",
    "passwd",
    "pwd",
    "passphrase",
    "token",
    "secret",
    "apikey",
    "secretkey",
    "privatekey",
    "authorization",
    "credential",
    "credentials",
    "cookie",
    "passcode",
    "accountkey",
    "accesskey",
    "encryptionkey",
    "masterkey",
    "signingkey",
    "sshkey",
    "privatekeyid",
    "sharedaccesskey",
    "mnemonic",
    "seedphrase",
    "jwt",
)
_NOT_ALNUM = re.compile(r"[^a-z0-9]")
#: ``pass`` / ``auth`` as the last word of a key (``DB_PASS``, ``_auth``, ``npm auth``).
_SECRET_WORD_END = re.compile(r"(?:^|[^a-z])(?:pass|auth)$")

Span = tuple[int, int]


def _value(text: str, i: int, header: bool = False) -> tuple[int, int, int] | None:
    """The value starting at ``i``: ``(start, end)`` of its secret part and where reading
    resumes; ``None`` when there is no value."""
    if text.startswith("\\\\", i):  # a quote escaped twice or more: JSON in JSON in a string
        return _deep_quoted(text, i)
    if text.startswith('\\"', i):
        m = _ESCAPED.match(text, i)
    elif text.startswith('"', i):
        m = _DOUBLE.match(text, i)
    elif text.startswith("'", i):
        m = _SINGLE.match(text, i)
    elif not header and text[i : i + 1] in ("[", "{", "("):
        end = _bracket_end(text, i)
        return i, end, end
    else:
        m = (_HEADER if header else _UNQUOTED).match(text, i)
        if m is None:
            return None
        return i, m.end(), m.end()
    assert m is not None  # the quoted patterns match any text starting with their quote
    return m.start(1), m.end(1), m.end()


def _deep_quoted(text: str, i: int) -> tuple[int, int, int] | None:
    """A value in a quote escaped ``b >= 2`` times (``\\\\\\"``): it ends at the next quote after
    exactly ``b`` backslashes (an escaped quote inside has more), else at the text's end."""
    opening = _BACKSLASHES_QUOTE.match(text, i)
    if opening is None:
        m = _UNQUOTED.match(text, i)
        return (i, m.end(), m.end()) if m is not None else None
    depth = len(opening.group(1))
    for closing in _BACKSLASHES_QUOTE.finditer(text, opening.end()):
        if len(closing.group(1)) == depth:
            return opening.end(), closing.start(), closing.end()
    return opening.end(), len(text), len(text)


def _bracket_end(text: str, i: int) -> int:
    """The end of the bracketed value at ``i`` (a JSON array or object, a Python tuple): its
    closing bracket, else the text's end."""
    depth, quoted = 0, False
    for m in _BRACKETS.finditer(text, i):
        token = m.group()
        if token[0] == "\\":
            continue
        if token == '"':
            quoted = not quoted
        elif not quoted:
            depth += 1 if token in "[{(" else -1
            if depth <= 0:
                return m.end()
    return len(text)


def _is_flag(text: str, start: int) -> bool:
    """The name at ``start`` ends a command-line flag (``--password``, ``--db-token``, ``-pwd``)."""
    j, stop = start, max(0, start - 64)
    while j > stop and text[j - 1] in _FLAG_CHAR:
        j -= 1
    if j > 0 and text[j - 1] == "\\" and text[j] in "nrt":  # after a JSON escape: "a\n--password x"
        j += 1
    elif j == stop and j > 0 and text[j - 1] in _FLAG_CHAR:  # a word longer than a flag
        return False
    return j < start and text[j] == "-"


def _header_scheme(text: str, start: int, end: int) -> int:
    """Past the scheme word of an ``Authorization`` value (``Bearer``, ``Basic``, ``Digest``...)."""
    m = _SCHEME.match(text, start, end)
    return m.end() if m is not None else start


def _in_tag(text: str, start: int) -> bool:
    """The name at ``start`` ends an XML tag name (``<password>``, ``<db:password>``)."""
    j, stop = start, max(0, start - 64)
    while j > stop and (text[j - 1].isalnum() or text[j - 1] in "_.:-"):
        j -= 1
    return j > 0 and text[j - 1] == "<"


def _block_scalar(text: str, i: int, key: int) -> tuple[int, int, int] | None:
    """A YAML block scalar at ``i`` (``password: |`` then lines indented deeper than the key's
    line): ``(start, end)`` of its text and where reading resumes; ``None`` when there is none."""
    head = _BLOCK_HEAD.match(text, i)
    if head is None:
        return None
    escaped = head.group(1).startswith("\\")
    newline = text.rfind("\\n" if escaped else "\n", max(0, key - 256), key)  # a bounded look back
    line = newline + (2 if escaped else 1) if newline >= 0 else (0 if key <= 256 else key)
    lines = _ESCAPED_LINE if escaped else _LINE
    indent = line
    while indent < key and text[indent] in " \t":
        indent += 1
    indent -= line
    pos, start, end = head.end(), -1, -1
    while pos < len(text):
        lm = lines.match(text, pos)
        assert lm is not None  # the line pattern matches the empty string
        if lm.end() == pos:  # a lone \r or the end
            break
        if lm.group(2):
            if len(lm.group(1)) <= indent:
                break
            start, end = (lm.start(2) if start < 0 else start), lm.end(2)
        pos = lm.end()
    return (start, end, end) if start >= 0 else None


def _cookies(text: str, start: int, end: int, spans: list[Span], first: bool = False) -> None:
    """The values of the ``name=value`` pairs of a cookie header (only the first: ``Set-Cookie``,
    whose other pairs are attributes); the whole value when it has no pair."""
    at, found = start, False
    for part in text[start:end].split(";"):
        eq = part.find("=")
        if eq >= 0:
            spans.append((at + eq + 1, at + len(part.rstrip())))
            found = True
        at += len(part) + 1
        if first:
            break
    if not found:
        spans.append((start, end))


def _named(text: str, spans: list[Span]) -> None:
    """Values of secret-named assignments (``KEY=V``, ``"key": V``, ``'key' => V``, ``key := V``),
    flags (``--password V``), XML elements (``<password>V</password>``), YAML block scalars,
    ``Authorization`` and cookie headers.  Reading resumes after each value: linear."""
    pos, size = 0, len(text)
    while True:
        m = _NAME.search(text, pos)
        if m is None:
            return
        header = m.lastgroup is not None
        pos = m.end()
        tail = _KEY_TAIL.match(text, pos)
        if tail is None:
            if text.startswith(">", pos) and _in_tag(text, m.start()):
                element = _XML_TEXT.match(text, pos + 1)
                assert element is not None  # matches the empty string
                spans.append((pos + 1, element.end()))
                pos = max(pos, element.end())
                continue
            start = m.start()  # a flag's name follows "-" or another flag character
            if start == 0 or text[start - 1] not in _FLAG_CHAR:
                continue
            tail = _FLAG_TAIL.match(text, pos)
            if tail is not None and not _is_flag(text, start):
                tail = None
            header = False
        if tail is None or tail.end() >= size:
            continue
        value = _block_scalar(text, tail.end(), m.start()) if text[tail.end()] in "|>" else None
        if value is None:
            value = _value(text, tail.end(), header)
        if value is None:
            continue
        start, end, pos = value
        if header and m.lastgroup != "auth":
            _cookies(text, start, end, spans, first=m.lastgroup == "set")
            continue
        if header:
            start = _header_scheme(text, start, end)
        spans.append((start, end))


def _after(pattern: re.Pattern[str], text: str, spans: list[Span], cookie: bool = False) -> None:
    """The value after each match of ``pattern`` (``IDENTIFIED BY 'V'``, ``-u user:V``, netrc's
    ``password V``); with ``cookie``, only the cookie values of one holding ``=`` (curl's
    ``-b 'sid=V'``).  Reading resumes after each value: linear."""
    for start, end in _values_after(pattern, text):
        if not cookie:
            spans.append((start, end))
        elif "=" in text[start:end]:
            _cookies(text, start, end, spans)


def _values_after(pattern: re.Pattern[str], text: str, skip: int | None = None) -> Iterator[Span]:
    """``(start, end)`` of the value read after each match of ``pattern``: at its end, or
    ``skip`` code points after its start.  Reading resumes after each value (an unclosed
    bracket: the end): linear."""
    pos = 0
    while (m := pattern.search(text, pos)) is not None:
        pos = m.end()
        value = _value(text, pos if skip is None else m.start() + skip)
        if value is not None:
            pos = max(pos, value[2])
            yield value[:2]


def _password_commands(text: str, spans: list[Span]) -> None:
    """``-p V`` (a blank after ``-p``) in commands where ``-p`` is a password: ``docker login``,
    ``podman login``, ``sshpass``, ``mysql``/``mariadb``, ``twine`` (not ``ssh -p 22``, ``mkdir
    -p``), and ``redis-cli``'s ``-a V``: the
    first one up to the end of the command (``;``, ``&``, ``|``, a line end).  Each command is
    read once."""
    pos = 0
    while True:
        m = _PW_COMMAND.search(text, pos)
        if m is None:
            return
        command_end = _COMMAND_REST.match(text, m.end()).end()  # type: ignore[union-attr]
        pos = max(m.end(), command_end)
        flag = (_SPACED_A if m.group("a") else _SPACED_P).search(text, m.end(), command_end)
        if flag is not None:
            value = _value(text, flag.end())
            if value is not None:
                spans.append(value[:2])
                pos = max(pos, value[2])


def _short_password(text: str, spans: list[Span]) -> None:
    """mysql's ``-pVALUE`` (at least 3 characters unquoted: ``perl -pe`` is not a password):
    plain and quoted values in one pass; bracketed ones, and those behind an escaped quote, read
    by :func:`_value`, resuming after what was read."""
    spans += [m.span(m.lastindex or 0) for m in _SHORT_P.finditer(text)]
    spans += _values_after(_SHORT_P_OTHER, text, skip=2)


#: a URL's userinfo without a password this long, with letters and digits, is a token
_TOKEN_USERINFO = 20


def _token_like(text: str, start: int, end: int) -> bool:
    part = text[start:end]
    return any(c.isdigit() for c in part) and any(c.isalpha() for c in part) and "." not in part


def _url_credentials(text: str, spans: list[Span]) -> None:
    """The password of ``scheme://user:password@host``, and a token given as the whole userinfo
    (``https://<token>@host``, 20+ letters and digits); each authority is read once."""
    i = text.find("://")
    while i >= 0:
        start = i + 3
        if i > 0 and text[i - 1] in _SCHEME_CHAR:
            end = _URL_AUTHORITY.match(text, start).end()  # type: ignore[union-attr]
            at = text.rfind("@", start, end)
            colon = text.find(":", start, at) if at > start else -1
            if 0 <= colon < at - 1:
                spans.append((colon + 1, at))
            elif colon < 0 and at - start >= _TOKEN_USERINFO and _token_like(text, start, at):
                spans.append((start, at))  # https://<token>@github.com: the userinfo is the token
            start = max(start, end)
        i = text.find("://", start)


def _pem(text: str, spans: list[Span]) -> None:
    """PEM private-key bodies: after the BEGIN marker to the END marker, or -- when there is
    none (a cut key) -- to the first character no key body has (``[``, a quote, a dot...):
    the end of the text, for a key alone."""
    pos = 0
    while True:
        begin = _PEM_BEGIN.search(text, pos)
        if begin is None:
            return
        body = _PEM_BODY.match(text, begin.end())
        assert body is not None  # the body pattern matches the empty string
        spans.append((begin.end(), body.end()))
        end = _PEM_END.match(text, body.end())
        pos = end.end() if end is not None else max(body.end(), begin.end())


def _merge(spans: list[Span]) -> list[Span]:
    merged: list[Span] = []
    for start, end in sorted(spans):
        if end <= start:
            continue
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def secret_spans(text: str) -> list[tuple[int, int]]:
    """Where the secrets of ``text`` are: sorted, disjoint ``(start, end)`` code-point ranges
    (what one pass of :func:`redact_secrets` replaces; touching ranges are joined).  Linear time.

    Raises ``TypeError`` when ``text`` is not a ``str``.

    >>> secret_spans("login password=hunter2 user=bob")
    [(15, 22)]
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be str, not {type(text).__name__}")
    spans = _collect(text)
    if "\\u00" in text:  # JSON escapes of word characters: a key such as \u0070assword, read decoded
        decoded, starts, chars = _unescaped(text)
        if starts:
            named: list[Span] = []
            _named(decoded, named)
            spans += [(_original(starts, chars, s), _original(starts, chars, e)) for s, e in named]
    return _merge(spans)


def _unescaped(text: str) -> tuple[str, list[int], list[int]]:
    """``text`` with each JSON escape of a letter, digit, ``_`` or ``-`` (``\\u0070``, six code
    points) decoded, the positions of those escapes in ``text`` and of their characters in the
    decoded text (to map positions back: :func:`_original`).  One pass."""
    starts = [m.start() for m in _WORD_ESCAPE.finditer(text)]
    decoded = _WORD_ESCAPE.sub(_escaped_char, text) if starts else text
    return decoded, starts, [start - 5 * k for k, start in enumerate(starts)]


def _escaped_char(m: re.Match[str]) -> str:
    return chr(int(m.group(1), 16))


def _original(starts: list[int], chars: list[int], position: int) -> int:
    """The position in the original text of ``position`` in the decoded one (:func:`_unescaped`)."""
    k = bisect.bisect_right(chars, position) - 1
    if k < 0:
        return position
    return starts[k] if position == chars[k] else starts[k] + 5 + position - chars[k]


def _collect(text: str) -> list[Span]:
    """The spans of every rule over ``text``, unsorted and unmerged."""
    spans: list[Span] = []
    _pem(text, spans)
    for pattern in (_JWT, _PREFIXED_KEY, _HEX64):
        spans += [m.span() for m in pattern.finditer(text)]
    spans += [m.span(1) for m in _BEARER.finditer(text)]
    _url_credentials(text, spans)
    _named(text, spans)
    _short_password(text, spans)
    _password_commands(text, spans)
    for pattern in (_USER, _NETRC, _SQL):
        _after(pattern, text, spans)
    _after(_CURL_B, text, spans, cookie=True)
    return spans


def _render(text: str, spans: list[Span], start: int = 0, stop: int | None = None) -> str:
    """``text[start:stop]`` with each of the disjoint, sorted ``spans`` (clipped) replaced."""
    stop = len(text) if stop is None else stop
    out: list[str] = []
    at = start
    for s, e in spans:
        s, e = max(s, start), min(e, stop)
        if e <= s:
            continue
        out += [text[at:s], REDACTED]
        at = e
    out.append(text[at:stop])
    return "".join(out)


def redact_secrets(text: str) -> str:
    """``text`` with secret-looking values replaced by ``[REDACTED]``.

    Parameters
    ----------
    text : str
        Any text (a tool-argument preview, a model output excerpt, a log line).

    Returns
    -------
    str
        The text, redacted; unchanged when nothing looks secret.  Redacted again until a pass
        changes nothing (at most :data:`MAX_PASSES`), so a second call changes nothing.  Linear
        time in ``len(text)``.

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
    >>> redact_secrets('mysql --password "Hunt\\\\"er2" -pS3cret')
    'mysql --password "[REDACTED]" -p[REDACTED]'
    >>> redact_secrets("md5 9e107d9d372bb6826bd81d3542a419d6 in /srv/数据/file.txt")
    'md5 9e107d9d372bb6826bd81d3542a419d6 in /srv/数据/file.txt'
    """
    out = text
    for _ in range(MAX_PASSES):
        spans = secret_spans(out)
        if not spans:
            return out
        again = _render(out, spans)
        if again == out:
            return out
        out = again
    return out


def redact_head(text: str, limit: int, *, margin: int = SECRET_MARGIN) -> tuple[str, bool]:
    """At most ``limit`` code points of ``text`` redacted (redaction before the cut), and
    whether anything was cut.  Only ``limit + margin`` code points are read: a secret starting
    in the shown part is recognised whole (:data:`SECRET_MARGIN`).

    Raises ``TypeError`` when ``text`` is not a ``str``, ``ValueError`` for a negative ``limit``.

    >>> redact_head("token=abcdef0123 and more", 12)
    ('token=[REDAC', True)
    """
    if limit < 0:
        raise ValueError(f"limit must be >= 0, not {limit}")
    window = text[: limit + margin]
    shown = redact_secrets(window)
    return shown[:limit], len(shown) > limit or len(text) > len(window)


def redact_excerpt(text: str, start: int, stop: int, *, margin: int = SECRET_MARGIN) -> str:
    """``text[start:stop]`` with every secret that overlaps it replaced by ``[REDACTED]`` --
    also one that only starts before ``start`` or ends after ``stop`` (no head or tail of a
    secret is shown).  Reads ``margin`` code points either side (and looks back up to
    :data:`PEM_LOOKBACK` for the BEGIN marker of a PEM key the excerpt starts inside); a word
    cut by the edge of what was read is treated as a secret.  Positions in code points.

    Raises ``TypeError`` when ``text`` is not a ``str``.

    >>> redact_excerpt("x password=hunter2 y", 13, 20)
    '[REDACTED] y'
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be str, not {type(text).__name__}")
    start, stop = max(0, start), max(start, min(stop, len(text)))
    lo, hi = max(0, start - margin), min(len(text), stop + margin)
    spans = [(s + lo, e + lo) for s, e in secret_spans(text[lo:hi])]
    if lo > 0 and not text[lo - 1].isspace():  # a word cut by the left edge: maybe a secret's tail
        blank = _WORD_EDGE.search(text, lo, hi)
        spans.append((lo, blank.start() if blank else hi))
        spans += _pem_before(text, lo, hi)
    if hi < len(text) and not text[hi].isspace():  # ... or by the right edge: a secret's head
        last = max(text.rfind(" ", lo, hi), text.rfind("\n", lo, hi), text.rfind("\t", lo, hi))
        spans.append((last + 1 if last >= 0 else lo, hi))
    return _render(text, _merge(spans), start, stop)


def whole_words_head(text: str, size: int) -> str:
    """The first ``size`` code points of ``text`` for later redaction: when ``text`` goes on,
    the word the cut falls in is dropped (it may be the head of a secret too short to be
    recognised, ``AKIA12`` or ``https://u:pa``) and ``…`` marks the cut.

    >>> whole_words_head("key AKIAIOSFODNN7EXAMPLE", 10)
    'key …'
    """
    if len(text) <= size:
        return text
    head = text[:size]
    blank = max(head.rfind(" "), head.rfind("\n"), head.rfind("\t"))
    return head[: blank + 1] + "…"


def _pem_before(text: str, lo: int, hi: int) -> list[Span]:
    """The part of ``[lo, hi)`` inside a PEM key body whose BEGIN marker lies before ``lo``."""
    begins = list(_PEM_BEGIN.finditer(text, max(0, lo - PEM_LOOKBACK), lo))
    if not begins:
        return []
    body = _PEM_BODY.match(text, begins[-1].end(), hi)
    assert body is not None  # the body pattern matches the empty string
    return [(lo, body.end())] if body.end() > lo else []


def _secret_key(key: object) -> bool:
    """A mapping key naming a secret (``password``, ``db_password``, ``apiKey``, ``b"token"``,
    ``Pass_Word``, ``API KEY``, ``Set-Cookie``; ``pass`` and ``auth`` as a whole word at the end:
    ``DB_PASS``, ``_auth``, not ``bypass``)."""
    if isinstance(key, (bytes, bytearray)):
        key = bytes(key[-128:]).decode("utf-8", "replace")
    if not isinstance(key, str):
        return False
    lower = key[-128:].lower()
    return _NOT_ALNUM.sub("", lower).endswith(_SECRET_KEYS) or _SECRET_WORD_END.search(lower) is not None


_NAME_FIELDS = ("key", "name")
_VALUE_FIELDS = ("value",)


def _pair_value(members: list[tuple[Any, Any]]) -> Any:
    """The key of the ``value`` member of a name/value pair that names a secret
    (``{"name": "DB_PASSWORD", "value": ...}``, ``{"Key": "password", "Value": ...}``), else ``None``."""
    if len(members) > 8:
        return None
    named = value_key = None
    for key, member in members:
        if isinstance(key, str):
            lower = key.lower()
            if lower in _NAME_FIELDS and _secret_key(member):
                named = key
            elif lower in _VALUE_FIELDS:
                value_key = key
    return value_key if named is not None else None


def redact_value(value: Any) -> Any:
    """A copy of a structured value (tool-call arguments, a tool's result) in which every
    mapping key that names a secret (``password``, ``DB_PASSWORD``, ``apiKey``,
    ``client_secret``, ``Authorization``, ``credentials``, ``Set-Cookie``, ``b"token"``...) holds
    ``"[REDACTED]"`` instead of whatever it held (a string, a number, a list, a mapping), at any
    depth; so do name/value pairs naming a secret: the ``value`` of ``{"name": "DB_PASSWORD",
    "value": ...}`` (or ``"key"``), and the second item of a two-item list or tuple whose first
    item names one (``("Authorization", ...)``, ``["PASSWORD", ...]``: env lists, header
    tuples).  Mappings become ``dict``, lists and tuples ``list``; other values are kept as
    they are (strings are not scanned: run :func:`redact_secrets` over the serialised text
    too).  Shared and cyclic containers stay shared and cyclic.  Iterative: any depth.  Never
    raises for a value of any type.

    >>> redact_value({"user": "bob", "login": {"password": ["x"]}, b"token": 5})
    {'user': 'bob', 'login': {'password': '[REDACTED]'}, b'token': '[REDACTED]'}
    >>> redact_value({"env": [["PASSWORD", "x"], ["HOME", "/root"]], "h": ("Authorization", "y")})
    {'env': [['PASSWORD', '[REDACTED]'], ['HOME', '/root']], 'h': ['Authorization', '[REDACTED]']}
    """
    root: list[Any] = [None]
    copies: dict[int, Any] = {}
    stack: list[tuple[Any, Any, Any]] = [(value, root, 0)]
    while stack:
        item, parent, slot = stack.pop()
        if not isinstance(item, (Mapping, list, tuple)):
            parent[slot] = item
        elif id(item) in copies:
            parent[slot] = copies[id(item)]
        elif isinstance(item, Mapping):
            mapping: dict[Any, Any] = {}
            parent[slot] = copies[id(item)] = mapping
            members = list(item.items())
            hidden = _pair_value(members)
            for key, member in members:
                mapping[key] = REDACTED
                if not _secret_key(key) and (hidden is None or key != hidden):
                    stack.append((member, mapping, key))
        else:
            sequence: list[Any] = [None] * len(item)
            parent[slot] = copies[id(item)] = sequence
            pair = len(item) == 2 and isinstance(item[0], (str, bytes, bytearray)) and _secret_key(item[0])
            stack += [(member, sequence, index) for index, member in enumerate(item)]
            if pair:
                stack.pop()
                sequence[1] = REDACTED
    return root[0]
