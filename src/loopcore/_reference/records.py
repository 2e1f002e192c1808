"""Structure classification: the machine record lines of ``t``, on which N holds back.

Records -- JSON, CSV, YAML, logs, diffs, paths, hex dumps -- repeat a template with new field
values on every line, near-verbatim by nature, so N (:mod:`.near`, spec §2.7 ``default``)
holds back on a window made mostly of them (``near_max_record_share``).  :func:`is_record_line`
is the rule; :func:`record_chars` counts the code points of a window that lie on record lines.

>>> is_record_line('{"id": 7, "ok": true}'), is_record_line("2024-06-11T03:58:56.013Z GET /")
(True, True)
>>> is_record_line("Wait: the cache is stale."), is_record_line('"Again," she said.')
(False, False)
>>> record_chars("a: 1\\nPlain prose.\\nb: 2", 0, 22)  # "a: 1\\n" and "b: 2"
9
"""

from __future__ import annotations

import re

from .chars import _DIGITS, _HEX

#: Lines longer than this are never records (code points, without the newline): N holds back only on
#: windows made mostly of short structured lines.
RECORD_MAX_LINE = 200

_RECORD_KEY_RE = re.compile(r"[a-z_][A-Za-z0-9_.-]*:(?:[ \t]|$)")
_UTC_OFFSET_RE = re.compile(r"(?<=[0-9])\+[0-9][0-9](?::?[0-9][0-9])?\Z")


def _first_field(token: str) -> str:
    """``token`` up to its first comma that is not between two digits (``1,000`` is a number):
    the first field of a CSV line."""
    for j, ch in enumerate(token):
        if ch == "," and not (0 < j < len(token) - 1 and token[j - 1] in _DIGITS and token[j + 1] in _DIGITS):
            return token[:j]
    return token


def _json_string_item(s: str) -> bool:
    """Whether ``s`` (starting with ``"``) is a JSON string followed by ``: ] }``, or by ``,`` and
    then the line's end, a field with no blank before it (CSV) or, after blanks, a JSON value
    (``" { [ -`` or a digit); ``", she said`` is dialogue, not a record."""
    j = 1
    while j < len(s):
        if s[j] == "\\":
            j += 2
            continue
        if s[j] == '"':
            rest = s[j + 1 :].lstrip(" \t")
            if rest[:1] != ",":
                return rest != "" and rest[0] in ":]}"
            after = rest[1:]  # a comma: a field or element follows, or the line ends
            return after == "" or after[0] not in " \t" or after.lstrip(" \t")[:1] in ('"', "{", "[", "-", *_DIGITS)
        j += 1
    return False


def is_record_line(line: str) -> bool:
    """Whether ``line`` (without its newline) is a machine record line for N (near_cycle).

    Records repeat a template with new field values on every line -- near-verbatim by
    nature -- so N holds back on windows made mostly of them.  A record line is at most
    :data:`RECORD_MAX_LINE` code points and, after leading blanks/tabs, either

    * opens a JSON value or a table row: ``{ [ |``; or a JSON string or quoted CSV field:
      ``"``, where the string's closing ``"`` (not escaped by ``\\``) is followed, after
      blanks, by ``: ] }`` or by a comma and then the end, a field (no blank between) or a
      JSON value (:func:`_json_string_item`; a line of quoted prose -- dialogue, a quotation,
      ``"...", she said`` -- is not a record, even when a model loops on it);
    * is a ``key: value`` line (a lower-case identifier, ``:`` and a blank or the end;
      a leading ``- `` as in YAML lists is skipped);
    * is a diff/patch line: ``@@``, ``+++``, ``---``, ``diff ``, ``index `` after the
      blanks, or ``+``/``-`` in column 0 followed by the end, a non-blank, or two blanks
      (a changed code line; ``- item`` stays a bullet);
    * starts with a location: its first token (up to a blank or tab) contains ``/``,
      ``\\`` or ``::`` (paths, test ids, ``file.py:12:`` compiler and log lines, URLs);
    * starts with a number: its first token without one trailing ``:`` is a time, date
      or version (only digits and ``:.-,``, at least 3 digits, a separator between two
      digits; also ISO 8601's ``T`` between two digits and a final ``Z`` after one, as in
      ``2024-06-11T03:58:56.013Z``, and a final UTC offset ``+HH``, ``+HHMM`` or ``+HH:MM``
      after a digit, as in ``2024-05-01T12:00:00+00:00``: timestamped logs, timetables) or,
      without a ``0x``
      prefix too, an offset
      (at least 6 hexadecimal digits with a decimal digit among them:
      ``xxd``/``hexdump``/``od`` lines).
    """
    if len(line) > RECORD_MAX_LINE:
        return False
    s = line.lstrip(" \t")
    if not s:
        return False
    if s[0] in "{[|":
        return True
    if s[0] == '"' and _json_string_item(s):
        return True
    if _RECORD_KEY_RE.match(s[2:] if s.startswith("- ") else s):
        return True
    if s.startswith(("@@", "+++", "---", "diff ", "index ")):
        return True
    if line[0] in "+-" and (len(line) == 1 or line[1] not in " \t" or (len(line) > 2 and line[2] in " \t")):
        return True
    token = s.split(" ", 1)[0].split("\t", 1)[0]
    if "/" in token or "\\" in token or "::" in token:
        return True
    token = _first_field(token)  # a CSV line: its first field ("2024-03-01,EU,5")
    offset = token[:-1] if token.endswith(":") else token
    digits = sum(1 for ch in offset if ch in _DIGITS)
    body = offset[:-1] if len(offset) > 1 and offset[-1] == "Z" and offset[-2] in _DIGITS else offset
    utc = _UTC_OFFSET_RE.search(body)
    body = body[: utc.start()] if utc else body

    def inner(j: int) -> bool:  # a separator between two digits
        return 0 < j < len(body) - 1 and body[j] in ":.-,T" and body[j - 1] in _DIGITS and body[j + 1] in _DIGITS

    if (
        sum(1 for ch in body if ch in _DIGITS) >= 3
        and all(ch in _DIGITS or ch in ":.-," or inner(j) for j, ch in enumerate(body))
        and any(inner(j) for j in range(len(body)))
    ):
        return True  # a time, date or version: timestamped logs, timetables
    offset = offset[2:] if offset[:2] in ("0x", "0X") else offset
    return len(offset) >= 6 and all(ch in _HEX for ch in offset) and digits >= 1


def record_chars(t: str, lo: int, n: int) -> int:
    """How many code points of ``t[lo:n]`` lie on record lines (:func:`is_record_line`).

    Lines are those of ``t[:n]``; a newline belongs to the line it ends.
    """
    total = 0
    a = t.rfind("\n", 0, lo) + 1
    while a < n:
        b = t.find("\n", a, n)
        end = n if b < 0 else b
        if is_record_line(t[a:end]):
            total += (n if b < 0 else b + 1) - max(a, lo)
        a = end + 1
    return total
