"""The one parameter schema (loopcore._params): TextConfig, both implementations and the
type stub all follow it, under one name per key."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import loopcore
from loopcore import _params
from loopcore._params import BY_NAME, KIND_FLAGS, PARAMS
from loopguard import ConfigError, TextConfig
from loopguard.config import PROFILE_OVERRIDES

SRC = Path(__file__).resolve().parents[1] / "src" / "loopcore"  # the sources (an installed loopcore has none)
NAMES = [p.name for p in PARAMS]


def test_the_stub_declares_every_parameter_in_order_with_its_type() -> None:
    tree = ast.parse((SRC / "_core.pyi").read_text(encoding="utf-8"))
    stream = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ChannelStream")
    init = next(n for n in stream.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
    declared = [(a.arg, ast.unparse(a.annotation)) for a in init.args.kwonlyargs if a.annotation is not None]
    assert declared == [(p.name, p.kind.__name__) for p in PARAMS]


def test_the_compiled_core_reads_every_parameter_into_a_field_of_the_same_name() -> None:
    source = (SRC / "_core.pyx").read_text(encoding="utf-8")
    reads = re.findall(r"self\.p\.(\w+) = params\[\"(\w+)\"\]", source)
    assert all(field == key for field, key in reads)
    assert [key for _, key in reads] == NAMES


def test_the_kernels_params_struct_declares_every_parameter_in_order_with_its_c_type() -> None:
    source = (SRC / "_kernels" / "common.pxd").read_text(encoding="utf-8")
    body = source.split("cdef struct Params:", 1)[1].split("\n\n", 1)[0]
    fields = re.findall(r"^    (bint|Py_ssize_t|double) (\w+)$", body, re.M)
    c_type = {bool: "bint", int: "Py_ssize_t", float: "double"}
    assert fields == [(c_type[p.kind], p.name) for p in PARAMS]


def test_the_reference_keeps_every_parameter_under_its_name() -> None:
    params = TextConfig("fuse").stream_params("text")
    stream = loopcore.implementation("python").ChannelStream(**params)
    assert {name: getattr(stream, name) for name in NAMES} == params


def test_textconfig_fields_are_the_schema_minus_the_enable_flags() -> None:
    fields = [name for name in TextConfig.__slots__ if name not in ("profile", "enabled", "watch")]
    assert fields == [n for n in NAMES if n not in KIND_FLAGS] + ["fuse_hits_before_action"]
    hints = TextConfig.__annotations__
    for name in fields[:-1]:
        assert hints[name] == BY_NAME[name].kind.__name__, name


def test_stream_params_are_the_schema_in_order() -> None:
    params = TextConfig().stream_params("reasoning")
    assert list(params) == NAMES
    assert [k for k in KIND_FLAGS if params[k]] == ["cycle", "pool", "near_cycle", "salad"]
    assert params["skip_code_blocks"] is False and TextConfig().stream_params("text")["skip_code_blocks"] is True


def test_defaults_are_the_schema_but_where_a_profile_tunes_them() -> None:
    for profile in ("fuse", "rescue", "default"):
        config = TextConfig(profile)
        tuned = PROFILE_OVERRIDES.get(profile, {})
        for p in PARAMS:
            if p.name not in KIND_FLAGS:
                assert getattr(config, p.name) == tuned.get(p.name, p.default), (profile, p.name)


@pytest.mark.parametrize("param", [p for p in PARAMS if p.kind is not bool], ids=lambda p: p.name)
def test_a_value_out_of_range_is_refused_alike_by_config_and_core(param: _params.Param) -> None:
    assert param.high is not None
    bad = param.high + 1
    with pytest.raises(ConfigError) as info:
        TextConfig(**{param.name: bad})
    assert info.value.key == param.name and str(info.value).endswith(f"must be {param.rule()}")
    params = {**TextConfig().stream_params("text"), param.name: bad}
    for module in loopcore.implementations().values():
        with pytest.raises(ValueError, match=re.escape(f"{param.name}={bad!r} is invalid: must be {param.rule()}")):
            module.ChannelStream(**params)


def test_a_window_below_40_leaves_e_inert_with_a_warning() -> None:
    """spec §2.1: E checks only with ``window >= 40``. A shorter window is legal and E never
    fires; the config says so (a warning naming the key), the core accepts it."""
    import warnings as _warnings

    with _warnings.catch_warnings():
        _warnings.simplefilter("error")
        assert TextConfig(window=39).window == 39  # E is not enabled by the default profile
        assert TextConfig("fuse", window=40).window == 40
    with pytest.warns(UserWarning, match="window=39 must be >= 40 for exact_tail to fire"):
        inert = TextConfig("fuse", window=39)
    with pytest.warns(UserWarning, match="window=39"):
        TextConfig(window=39).replace(enabled=["exact_tail"])
    text = "The same paragraph of text, again and again, forty-two times. " * 60
    params = {**inert.stream_params("text"), "lowdiv_tail": False, "lowdiv_sliding": False}
    for module in loopcore.implementations().values():
        stream = module.ChannelStream(**params)
        assert stream.feed(text) + stream.finish() == []  # E alone, inert
        live = module.ChannelStream(**{**params, "window": 40})
        assert [d[0] for d in live.feed(text) + live.finish()][:1] == ["exact_tail"]


@pytest.mark.parametrize(
    ("low", "high"),
    [
        ("cycle_min_period", "cycle_max_period"),
        ("near_min_period", "near_max_period"),
        ("pool_min_distinct", "pool_max_distinct"),
    ],
)
def test_a_maximum_below_its_minimum_is_refused_by_both(low: str, high: str) -> None:
    with pytest.raises(ConfigError, match=f"{high}=3 is invalid: must be >= {low} \\(4\\)"):
        TextConfig(**{low: 4, high: 3})
    params = {**TextConfig().stream_params("text"), low: 4, high: 3}
    for module in loopcore.implementations().values():
        with pytest.raises(ValueError, match=f"{high}=3 is invalid"):
            module.ChannelStream(**params)


def test_the_docstring_lists_every_key_with_its_default() -> None:
    doc = " ".join((TextConfig.__doc__ or "").split())  # as read, whatever the line breaks
    for p in PARAMS:
        if p.name not in KIND_FLAGS:
            assert f"``{p.name}`` ({p.default!r}" in doc, p.name
    assert "``ngram`` (24; 40 in ``default``)" in doc
