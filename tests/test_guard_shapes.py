"""Issue 15's shapes: what counts as information, state changes, shell-aware scope, notices.

Each test is a hand-built call sequence replayed as a host drives the guard
(``before_call``; ``after_call`` unless denied or cancelled) with the exact
decisions worked out from the rules in :mod:`loopguard.guard`'s docstring; the
comment above each expectation says why.  Loops and legitimate runs alike.
"""

from __future__ import annotations

from typing import Any

import pytest

from loopguard import ToolGuard, ToolGuardConfig
from loopguard.results import content_line, is_failure, mask_counters, says_nothing
from loopguard.shell import changes_state, command_of, parse, search_scope

WRAP_EMPTY = "<returncode>0</returncode>\n<output>\n</output>"
SILENT = "Your command ran successfully and did not produce any output.\n(Open file: n/a)\n(Current directory: /repo)\nbash-$"
FAIL = "<returncode>1</returncode>\n<output>\nTraceback (most recent call last):\nAssertionError: 1 != 2\n</output>"
SEED = {
    "ignore_boilerplate": False,
    "drift_confirm": False,
    "mask_failure_counters": False,
    "progress_resets_repeats": False,
}


def bash(command: str) -> tuple[str, dict[str, str]]:
    return "bash", {"command": command}


def replay(calls: list[tuple[str, Any, Any, bool]], **config: Any) -> list[tuple[int, str, str]]:
    """``(call index, action, kind)`` of every decision or intervention that is not a plain allow."""
    guard = ToolGuard(ToolGuardConfig(**config))
    out = []
    for i, (tool, args, result, error) in enumerate(calls):
        d = guard.before_call("s", tool, args)
        if d.action != "allow":
            out.append((i, d.action, str(d.kind)))
        if d.action in ("deny", "cancel"):
            continue
        out += [(i, iv.action, iv.kind) for iv in guard.after_call("s", tool, args, result, error=error)]
    return out


def run(*steps: tuple[tuple[str, Any], Any] | tuple[tuple[str, Any], Any, bool]) -> list[tuple[str, Any, Any, bool]]:
    return [(s[0][0], s[0][1], s[1], bool(s[2]) if len(s) > 2 else False) for s in steps]  # type: ignore[misc]


# --------------------------------------------------------------------------- helpers' values


def test_content_lines_and_nothing() -> None:
    assert [content_line(x) for x in ("<returncode>0</returncode>", "<output>", "</output>", "OK", "[]")] == [False] * 5
    assert [content_line(x) for x in ("x = 1", "42", "<class 'int'>", "Updated 1 path from the index")] == [True] * 4
    assert says_nothing(frozenset(SILENT.splitlines()))
    assert not says_nothing(frozenset({"no output here, but", "a", "b", "c", "d", "e", "f", "g", "h"}))  # 9 lines


def test_failures_and_their_counters() -> None:
    assert is_failure("ok", error=True) and is_failure("bash: x: command not found")
    assert not is_failure("3 passed in 0.2s") and not is_failure("Script completed successfully, no errors.")
    assert (
        mask_counters("/bin/bash: line 3487: ls.dvc: command not found")
        == "/bin/bash: line #: ls.dvc: command not found"
    )
    assert mask_counters('File "a.py", line 12, in f') == 'File "a.py", line #, in f'
    # quantities stay: a rollout that makes progress is not the same failure
    assert (
        mask_counters("error: 2 of 6 updated replicas are available") == "error: 2 of 6 updated replicas are available"
    )


def test_shell_parse() -> None:
    assert [c.words for c in parse("cd src && FOO=1 sudo -E grep -rn 'a b' . | head -3")] == [
        ("cd", "src"),
        ("grep", "-rn", "a b", "."),
        ("head", "-3"),
    ]
    assert parse("cat <<'EOF' > a.py\nrm -rf /\nEOF\npython a.py")[0].writes == ("a.py",)
    assert [c.name for c in parse("cat <<'EOF' > a.py\nrm -rf /\nEOF\npython a.py")] == ["cat", "python"]
    assert parse("ls > /dev/null 2>&1")[0].writes == ()
    assert [c.words for c in parse('echo "unclosed')] == [("echo", '"unclosed')]  # shlex fails: whitespace split
    # SWE-agent's multi-line actions: the first line is the command, the rest its body
    assert command_of("edit", "edit 1:1\nrm -rf /\nend_of_edit") == "edit 1:1"
    assert command_of("grep", "grep -r x src") == "grep -r x src"
    assert command_of("python", "pytest -q") is None and command_of("bash", {"cmd": "ls"}) == "ls"


@pytest.mark.parametrize(
    ("command", "changes"),
    [
        ("cat a.py | grep x", False),
        ("python t.py", False),
        ("ls -la > /dev/null", False),
        ("git diff", False),
        ("git checkout a.py", True),
        ("cp a.bak a.py", True),
        ("sed -i 's/a/b/' f.py", True),
        ("echo x >> f.py", True),
        ("pip install -e .", True),
        ("python -m pip install x", True),
        ("cd src", True),
        ("sudo -E mv a b", True),
    ],
)
def test_shell_state_changes(command: str, changes: bool) -> None:
    assert changes_state(parse(command)) is changes


@pytest.mark.parametrize(
    ("command", "scope"),
    [
        ("grep -r 'class Btn' sepal_ui", "scoped"),
        ("grep -rn x src/ tests/", "scoped"),
        ("git grep foo -- src", "scoped"),
        ("grep -r x .", "root"),
        ("grep -r x", "root"),
        ("rg TODO", "root"),
        ("grep -r --include=*.py x .", "root"),
        ("grep -r x /", "machine"),
        ("rg -l TODO ~", "machine"),
        ("grep -rn x src /", "machine"),
        ("grep -n x a.py", None),
        ("cat a.py | grep x", None),
        ("ls -R", None),
    ],
)
def test_shell_search_scope(command: str, scope: str | None) -> None:
    assert search_scope(parse(command)) == scope


# --------------------------------------------------------------------------- boilerplate


def test_silent_writes_in_an_exit_code_wrapper_are_progress_not_drift() -> None:
    """mini-swe-agent's empty wrapper after each write (agentbench django-14349 / 16100)."""
    calls = run(
        (bash("cat a.py"), "<returncode>0</returncode>\n<output>\nline one\nline two\n</output>"),
        (bash("echo 'x = 1' >> a.py"), WRAP_EMPTY),
        (bash("echo 'y = 2' >> a.py"), WRAP_EMPTY),
        (bash("echo 'z = 3' >> a.py"), WRAP_EMPTY),
        (bash("sed -i 's/x/w/' a.py"), WRAP_EMPTY),
        (bash("python a.py"), WRAP_EMPTY),
        (bash("echo 'q = 4' >> a.py"), WRAP_EMPTY),
        (bash("python a.py"), WRAP_EMPTY),
    )
    # the wrapper has no content: `drift` does not compare it, each write is a new action, and the
    # re-run after the write at call 6 starts a new chain (1 identical result, no reminder)
    assert replay(calls) == []
    # seed-exact reading: every silent result is a near-copy of the one before (`drift` at 2-7),
    # 5 calls without new information (anchor at 6), the re-run's 2nd identical result (reminder at 7)
    # and the 6th intervention in a row: the breaker cancels at 7
    assert replay(calls, **SEED) == [
        (2, "notice", "drift"),
        (3, "notice", "drift"),
        (4, "notice", "drift"),
        (5, "notice", "drift"),
        (6, "notice", "drift"),
        (6, "notice", "no_progress"),
        (7, "notice", "repeat"),
        (7, "notice", "drift"),
        (7, "cancel", "circuit_breaker"),
    ]


def test_silent_commands_framed_by_a_prompt_are_not_drift() -> None:
    """SWE-agent's "did not produce any output" with its open-file / directory trailer."""
    calls = run(*((("touch", f"touch f{i}"), SILENT) for i in range(6)))
    assert replay(calls) == []


def test_the_same_blocked_page_for_eight_urls() -> None:
    page = "Access denied\nYour request was blocked by the site's firewall.\nRay ID: blocked\nPlease contact support\nPowered by a CDN"
    calls = run(*((("fetch", {"url": f"https://example.com/{i}"}), page) for i in range(8)))
    # url 1 is the first near-copy (no new information, no notice yet); url 2 confirms it
    # (`drift` notice) and so does every later one; 5 calls without new information (1-5): anchor at 5;
    # the 6th call in a row with an intervention and no new information (2-7) cancels at 7
    assert replay(calls) == [
        (2, "notice", "drift"),
        (3, "notice", "drift"),
        (4, "notice", "drift"),
        (5, "notice", "drift"),
        (5, "notice", "no_progress"),
        (6, "notice", "drift"),
        (7, "notice", "drift"),
        (7, "cancel", "circuit_breaker"),
    ]


# --------------------------------------------------------------------------- failures and counters


def test_the_same_failure_with_a_growing_line_number() -> None:
    """agentbench nebius dvc-8177: ``/bin/bash: line 318: ls.dvc: command not found``, 318 times."""
    calls = run(*((("ls.dvc", "ls.dvc\n"), f"/bin/bash: line {318 + i}: ls.dvc: command not found") for i in range(4)))
    # the line number is a counter: the 2nd failure is identical (reminder), the 3rd request is denied, the
    # 4th is the escape run (it runs), whose identical failure locks the key
    assert replay(calls) == [(1, "notice", "repeat"), (2, "deny", "repeat"), (3, "notice", "locked")]
    assert replay(calls, mask_failure_counters=False) == []


def test_a_poll_whose_failure_reports_progress_is_not_a_repeat() -> None:
    calls = run(
        *(
            (
                (bash("kubectl rollout status deploy/web")),
                f"error: timed out: {n} of 6 updated replicas are available",
                True,
            )
            for n in (1, 2, 3, 4, 5)
        )
    )
    assert replay(calls) == []


# --------------------------------------------------------------------------- state changes


def test_rerunning_a_test_after_different_edits_is_progress() -> None:
    calls = run(
        (bash("python t.py"), FAIL, True),
        (bash("sed -i 's/1/2/' m.py"), WRAP_EMPTY),
        (bash("python t.py"), FAIL, True),
        (bash("sed -i 's/2/3/' m.py"), WRAP_EMPTY),
        (bash("python t.py"), FAIL, True),
    )
    # each edit is a new call that changes the world: the test's chain restarts after it, and the
    # same failure after *different* edits is the agent trying things (no no_effect notice)
    assert replay(calls) == []


def test_the_same_edit_and_the_same_test_again_and_again() -> None:
    calls = run(
        *([(bash("sed -i 's/a/b/' m.py"), WRAP_EMPTY), (bash("python t.py"), FAIL, True)] * 3),
        (bash("sed -i 's/a/b/' m.py"), WRAP_EMPTY),
    )
    # call 2 (the edit again) counts as a change once (the test ran in between); call 3 restarts the
    # test's chain.  Call 4 repeats the edit with nothing changed since: not a change, its 2nd
    # identical result (reminder); the test at 5 too (reminder), where the pair has also repeated for 3 full
    # periods of 2 (cycle notice); the edit at 6 is denied
    assert replay(calls) == [
        (4, "notice", "repeat"),
        (5, "notice", "repeat"),
        (5, "notice", "cycle"),
        (6, "deny", "repeat"),
    ]


def test_an_edit_inserted_again_and_again_grows_the_file() -> None:
    """agentbench nebius structlog-221 / dvc-5335: the same edit, a growing file, the same failure."""
    edit = ("edit", {"path": "m.py", "line": 21, "text": "x = 1"})
    calls = run(
        *[
            step
            for n in range(4)
            for step in (
                (edit, f"[File: m.py ({10 + 2 * n} lines total)]\n" + "\n".join(f"{i}: x = 1" for i in range(n + 1))),
                ((("python", "python t.py")), FAIL, True),
            )
        ]
    )
    # the edit's result changes each time (the file grows), so each edit is a change; the test
    # returns the same failure after it: at its 3rd identical result a few calls apart, with only
    # repeated changes in between, the changes have no effect (no_effect notice at call 5)
    assert replay(calls) == [(5, "notice", "no_effect")]


def test_a_checkout_after_a_change_is_a_new_action() -> None:
    """agentbench mini astropy-12907: ``git checkout pyproject.toml`` between ``git diff``."""
    updated = "<returncode>0</returncode>\n<output>\nUpdated 1 path from the index\n</output>"
    diff = "<returncode>0</returncode>\n<output>\ndiff --git a/x.py b/x.py\n+fixed\n</output>"
    calls = run(
        (bash("git checkout pyproject.toml"), updated),
        (bash("pytest t.py"), "<returncode>0</returncode>\n<output>\n3 passed\n</output>"),
        (bash("git diff"), diff),
        (bash("git checkout pyproject.toml"), updated),
        (bash("git diff"), diff),
        (bash("git checkout pyproject.toml"), updated),
        (bash("git diff"), diff),
    )
    # call 3: the world changed since the first checkout (new results at 1, 2): a new action, and it
    # changes the world, so the diff at 4 starts a new chain.  Calls 5 and 6 repeat them with
    # nothing changed in between: their 2nd identical results (reminder)
    assert replay(calls) == [(5, "notice", "repeat"), (6, "notice", "repeat")]


def test_an_edit_after_opening_another_file_is_a_new_action() -> None:
    """agentbench nebius auth0-python-354: SWE-agent's ``edit`` writes to the open file."""
    edit = ("edit", "edit 11:11\nretries = 10\nend_of_edit")
    opened = ("open", "open a.py"), ("open", "open b.py")
    calls = run(
        (opened[0], "[File: a.py (20 lines total)]\n1: import os"),
        (edit, "File updated."),
        (opened[1], "[File: b.py (30 lines total)]\n1: import sys"),
        (edit, "File updated."),
        (opened[0], "[File: a.py (20 lines total)]\n1: import os"),
        (edit, "File updated."),
    )
    assert replay(calls) == []
    # without the opens: the same edit three times is the zero-information repeat of seed 001
    assert replay(run((edit, "File updated."), (edit, "File updated."), (edit, "File updated."))) == [
        (1, "notice", "repeat"),
        (2, "deny", "repeat"),
    ]


def test_a_no_op_interleaved_with_a_failing_command() -> None:
    calls = run(
        *([(bash("make test"), "error: build failed", True), (bash("true"), "")] * 3),
        (bash("make test"), "error: build failed", True),
    )
    # the first `true` is new information (a new call): the build's chain restarts at 2; from then
    # on nothing is new: `true`'s 2nd identical result at 3 (reminder), the build's at 4 (reminder), then both
    # are denied
    assert replay(calls) == [
        (3, "notice", "repeat"),
        (4, "notice", "repeat"),
        (5, "deny", "repeat"),
        (6, "deny", "repeat"),
    ]


def test_a_b_rereads_that_both_fail() -> None:
    calls = run(
        *(
            [
                (("read", {"path": "a.py"}), "Error: no such file: a.py", True),
                (("read", {"path": "b.py"}), "Error: no such file: b.py", True),
            ]
            * 3
        )
    )
    # b's first failure is new information (a new call): a's chain restarts at 2; b's 2nd identical
    # failure at 3 (reminder), a's at 4 (reminder); b's third request is denied
    assert replay(calls) == [(3, "notice", "repeat"), (4, "notice", "repeat"), (5, "deny", "repeat")]


def test_a_paging_sweep_that_wraps_around() -> None:
    pages = [
        (
            ("read", {"path": "big.txt", "offset": 100 * i}),
            f"page {i}\n" + "\n".join(f"row {100 * i + j}" for j in range(3)),
        )
        for i in range(4)
    ]
    calls = run(*(pages * 3))
    # pass 1 (0-3) is all new: pages 0-2's chains are broken by the new pages after them, page 3's
    # is not (nothing new came after it).  Pass 2 (4-7) brings nothing new: page 3's 2nd identical
    # result at 7 (reminder).  Pass 3: pages 0-2 get their 2nd identical results (reminder at 8-10), 8 is the 5th
    # call without new information (anchor), and page 3's third request is denied (`repeat` comes before the
    # cycle, which would reach 3 full periods of 4 there)
    assert replay(calls) == [
        (7, "notice", "repeat"),
        (8, "notice", "repeat"),
        (8, "notice", "no_progress"),
        (9, "notice", "repeat"),
        (10, "notice", "repeat"),
        (11, "deny", "repeat"),
    ]


# --------------------------------------------------------------------------- `unscoped_search` on shell commands


@pytest.mark.parametrize(
    ("tool", "args", "config", "action"),
    [
        ("grep", 'grep -r "class Btn" sepal_ui', {}, "allow"),  # the tool named after the command
        ("grep", "grep -n 'format' brain.py", {}, "allow"),  # not recursive: reads what it names
        ("bash", {"command": "grep -rn foo /"}, {}, "deny"),
        ("bash", {"command": "cd /repo && rg -l TODO ~"}, {}, "deny"),
        ("bash", {"command": "grep -r foo ."}, {}, "allow"),  # the working directory: root_search
        ("bash", {"command": "grep -r foo ."}, {"root_search": "notice"}, "notice"),
        ("bash", {"command": "grep -r foo ."}, {"root_search": "deny"}, "deny"),
        ("bash", {"command": "grep -rn foo /"}, {"unscoped_search": "allow"}, "allow"),
        ("grep", {"pattern": "foo"}, {}, "deny"),  # seed 001: a search tool without path/include
        ("grep", {"pattern": "foo", "path": "src"}, {}, "allow"),
    ],
)
def test_d5_reads_the_parsed_command(tool: str, args: Any, config: dict[str, Any], action: str) -> None:
    d = ToolGuard(ToolGuardConfig(**config)).before_call("s", tool, args)
    assert d.action == action
    if action != "allow":
        assert d.kind == "unscoped_search" and d.rule == "unscoped_search"


def test_shell_identity_reads_the_parsed_command() -> None:
    guard = ToolGuard()
    for command in ("grep -r 'def f' src", 'grep  -r "def f"  src'):
        guard.before_call("s", "bash", {"command": command})
        guard.after_call("s", "bash", {"command": command}, "src/a.py:1: def f")
    # quoting and spacing aside it is the same call: the third request is denied
    assert guard.before_call("s", "bash", {"command": "grep -r def\\ f src"}).action == "deny"
    # a multi-line command keeps its text as its identity (a here-document's body differs)
    g2 = ToolGuard()
    for body in ("a", "b", "c"):
        args = {"command": f"cat <<'EOF' > t.py\n{body}\nEOF"}
        assert g2.before_call("s", "bash", args).action == "allow"
        g2.after_call("s", "bash", args, WRAP_EMPTY)


# --------------------------------------------------------------------------- `error_avoidance`


def test_d3_an_alternative_of_the_failed_lookup_remedies_it() -> None:
    """agentbench tau2 retail: ``find_user_id_by_email`` fails, ``find_user_id_by_name_zip`` finds the user."""
    calls = run(
        (("find_user_id_by_email", {"email": "ds@example.com"}), "Error: User not found", True),
        (("find_user_id_by_name_zip", {"first_name": "Daiki", "zip": "46233"}), "daiki_3253"),
        (("get_user_details", {"user_id": "daiki_3253"}), '{"user_id": "daiki_3253", "orders": ["#W1"]}'),
        (("get_order_details", {"order_id": "#W1"}), '{"order_id": "#W1", "status": "delivered"}'),
    )
    assert replay(calls) == []
    # an unrelated tool three times after the failure: `error_avoidance` at the third
    calls[1] = ("list_products", {}, '["p1", "p2"]', False)
    assert replay(calls) == [(3, "notice", "error_avoidance")]


def test_d3_a_call_naming_what_the_failure_reports_remedies_it() -> None:
    calls = run(
        (("book", {"total": 375, "paid": 299}), "Error: payment does not add up, total is 375, paid 299", True),
        (("think", {"thought": "the gift card covers part"}), ""),
        (("calculate", {"expression": "375 - 299"}), "76"),
        (("think", {"thought": "ask the user"}), ""),
        (("think", {"thought": "then book"}), ""),
    )
    assert replay(calls) == []


def test_d3_an_empty_failure_starts_no_watch() -> None:
    calls = run(
        (bash("grep -rn needle src"), "<returncode>1</returncode>\n<output>\n</output>", True),
        *((bash(f"ls d{i}"), f"<returncode>0</returncode>\n<output>\nf{i}.py\n</output>") for i in range(4)),
    )
    assert replay(calls) == []


# --------------------------------------------------------------------------- rewording


def test_a_memory_recalled_again_in_other_words() -> None:
    """hermes-agent #112920: query-variant memory recalls with the same return."""
    queries = (
        "user preferred editor theme",
        "preferred editor theme of the user",
        "the editor theme the user preferred",
        "user's preferred editor theme",
    )
    calls = run(*((("memory_search", {"query": q}), "(core memory is empty)") for q in queries))
    # every query has the argument words {user, preferred, editor, theme} ("the", "of" are too
    # short or too common): call 1 is a rewording of call 0 with the same answer, no new
    # information; calls 2 and 3 continue it: notices
    assert replay(calls) == [(2, "notice", "drift"), (3, "notice", "drift")]
    # different questions with the same answer are different actions
    others = ("user preferred editor theme", "deadline of the project", "name of the dog")
    assert replay(run(*((("memory_search", {"query": q}), "(core memory is empty)") for q in others))) == []


def test_a_memory_saved_again_in_other_words() -> None:
    contents = ("User prefers dark mode", "The user prefers dark mode in the editor", "User prefers the dark mode")
    # a write's receipt says nothing about whether two writes were the same: different actions
    assert replay(run(*((("memory_save", {"content": c}), "Memory saved.") for c in contents))) == []
    # ... but the same failure for each rewording is an answer (hermes-agent #13984)
    failed = run(*((("memory_save", {"content": c}), "Error: memory is full", True) for c in contents))
    assert replay(failed) == [(2, "notice", "drift")]


def test_rewording_needs_the_identical_answer() -> None:
    queries = ("how to reset a password", "reset password how", "how do I reset my password")
    same = run(*((("search_docs", {"query": q}), "No results.") for q in queries))
    assert replay(same) == [(2, "notice", "drift")]
    answers = run(*((("search_docs", {"query": q}), f"1 result: page {i}") for i, q in enumerate(queries)))
    assert replay(answers) == []
    # shell commands are other actions whatever words they share (different scripts, same output)
    scripts = run(*((bash(f"python check_{name}.py"), "Success!") for name in ("a", "b", "c", "d")))
    assert replay(scripts) == []


def test_shell_facts_are_cached_per_shape_of_the_arguments() -> None:
    """A review found the shell cache keyed by the command alone: ``{"command": "ls"}`` then
    ``{"command": "ls", "cwd": d}`` shared the command's identity."""
    guard = ToolGuard()
    guard.before_call("s", "bash", {"command": "ls"})
    guard.after_call("s", "bash", {"command": "ls"}, "a.py")
    actions = []
    for d in range(6):
        args = {"command": "ls", "cwd": f"/d{d}"}
        actions.append(guard.before_call("s", "bash", args).action)
        guard.after_call("s", "bash", args, "a.py")
    assert actions == ["allow"] * 6  # six different calls (a different cwd each)
    g2 = ToolGuard()
    for args in ("edit 11:11", "edit 11:11\nfoo\nend_of_edit", "edit 11:11\nbar\nend_of_edit"):
        assert g2.before_call("s", "edit", args).action == "allow"
        g2.after_call("s", "edit", args, "File updated.")


def test_a_deny_of_a_huge_call_previews_it_quickly() -> None:
    from loopguard.messages import arguments_preview

    args = {"command": "sk-" + "a" * 40 + " " + "x" * 1_000_000}
    preview = arguments_preview(args, 300)
    assert len(preview) == 301 and preview.endswith("…") and "sk-aaaa" not in preview


def test_a_change_the_guard_cannot_see() -> None:
    guard = ToolGuard()
    args = {"id": "L1002"}
    for _ in range(2):
        guard.before_call("s", "get_details_by_id", args)
        guard.after_call("s", "get_details_by_id", args, '{"line": "L1002", "status": "active"}')
    # the user toggled something on the phone: the third lookup is a new action, not a repeat
    guard.note_change("s")
    assert guard.before_call("s", "get_details_by_id", args).action == "allow"
    guard.after_call("s", "get_details_by_id", args, '{"line": "L1002", "status": "active"}')
    g2 = ToolGuard()
    for _ in range(2):
        g2.before_call("s", "get_details_by_id", args)
        g2.after_call("s", "get_details_by_id", args, '{"line": "L1002", "status": "active"}')
    assert g2.before_call("s", "get_details_by_id", args).action == "deny"


def test_the_same_write_repeated_verbatim_while_its_receipt_grows() -> None:
    """agentbench nebius adaptive-229: one edit applied ten times in a row, the file growing."""
    edit = ("edit", {"path": "m.py", "line": 350, "text": "def __init__(self): ..."})
    calls = run(*((edit, f"File updated ({10 + 2 * n} lines total).") for n in range(7)))
    # the receipt changes each time, but a verbatim repeated change keeps seed 002's streak: the
    # 6th identical request in a row is cancelled (repeat_call_limit), and the 7th too
    assert replay(calls) == [(5, "cancel", "repeat_streak"), (6, "cancel", "repeat_streak")]
    # a read whose result changes (a poll) restarts the streak: never cancelled
    poll = ("job_status", {"id": 7})
    assert replay(run(*((poll, f"running: {n} of 9 steps") for n in range(8)))) == []


# --------------------------------------------------------------------------- the parser never fails

from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_PIECES = list("ab -./~*'\"\\;&|<>()$=\n\t#12") + ["grep", "rg", " -r ", "git ", "<<EOF", "EOF", "sudo ", "cd ", "> f"]
_SHELLISH = st.lists(st.sampled_from(_PIECES), max_size=30).map("".join)


@given(st.one_of(_SHELLISH, st.text(max_size=200)))
def test_shell_parsing_never_raises_and_is_stable(command: str) -> None:
    first = parse(command)
    assert parse(command) == first  # deterministic
    assert all(isinstance(w, str) for c in first for w in c.words)
    assert changes_state(first) in (True, False)
    assert search_scope(first) in (None, "scoped", "root", "machine")
    guard = ToolGuard()
    d = guard.before_call("s", "bash", {"command": command})
    assert d.action in ("allow", "notice", "deny")
    assert len(command) < 8 or command not in str(d.evidence)
    guard.after_call("s", "bash", {"command": command}, "ok")
