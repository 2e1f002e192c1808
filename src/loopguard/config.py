"""Text detector configuration: profiles and validation (spec §2, §2.7, §7)."""

from __future__ import annotations

import textwrap
import warnings
from collections.abc import Iterable, Mapping
from typing import Any

from loopcore._params import KIND_FLAGS, PARAMS, Param, rule_errors

from .errors import ConfigError

__all__ = ["TextConfig", "PROFILES", "PROFILE_OVERRIDES", "DETECTOR_KINDS"]

#: Detector kinds, in evaluation order (spec §2; the seeds' single letters for them are in
#: docs/rules.md).
DETECTOR_KINDS: tuple[str, ...] = (
    "exact_tail",
    "lowdiv_tail",
    "lowdiv_sliding",
    "cycle",
    "pool",
    "near_cycle",
    "salad",
)
_KIND_ORDER = DETECTOR_KINDS
#: The seed letter of each kind (spec §2), only to say which name a letter means in an error.
_SEED_LETTERS = dict(zip("ELSCPNT", DETECTOR_KINDS))
_FUSE = frozenset({"exact_tail", "lowdiv_tail", "lowdiv_sliding"})
_RESCUE = frozenset({"cycle", "pool"})
_NEAR = frozenset({"near_cycle"})
_SALAD = frozenset({"salad"})

#: Detectors each profile enables.  ``fuse`` and ``rescue`` are the seeds' own
#: sets (002 and 003) and never change; ``default`` is loopguard's tuned set.
#: ``default`` = C, P, N: C for verbatim cycles (exact cut), P for rotating phrases, N for
#: near-verbatim cycles -- copies with edits, which is how most loops of real models look.
#: L and S (the seed's low-diversity checks) are not in it: every loop they catch on the labelled
#: cases, the real records and the probe is caught by C or N, and their one class of their own is a
#: false positive (LaTeX derivations: few distinct characters plus a constant scaffold, gemma
#: ``[527]``); E adds nothing C does not catch.  See docs/detection.md.
PROFILES: dict[str, frozenset[str]] = {
    "fuse": _FUSE,
    "rescue": _RESCUE,
    "default": _RESCUE | _NEAR | _SALAD,
    "tokens": frozenset({"cycle"}) | _NEAR,
}

#: Where a profile departs from the spec numbers, and why (spec §2.7: only ``default`` is tuned).
#: ``ngram`` 40 for L and S: a repeated 24-gram is what the fixed boilerplate of structured
#: records (JSON Lines keys and punctuation, log prefixes) already gives, so the seed's 24 lets
#: L fire on every JSON Lines text of ``benchmarks/quality.py`` (100 of 100) and L/S on three of
#: the four borderline real reasoning records; 40-grams need the repeat to span more than that
#: boilerplate: JSON Lines 0 of 100 and the borderline records 0 of 4, while every labelled loop
#: and real loop caught with 24 is still caught (cases 14/17, real 13/14; probe recall 143 vs
#: 144 of 200).  See ``docs/detection.md``.
#: ``pool_skip_key_value`` True: ``key: value`` data lines (YAML, headers, config dumps) are
#: not sentences for P (as list, table and quote lines already are not): the YAML family of
#: ``benchmarks/quality.py`` is flagged by P in 94 % of its texts with it off and 0 % with it on,
#: and P catches the same labelled loops either way.
#: The phrase pool as "sentences recurring in the recent window" rather than 2–8 phrases of
#: 48 characters seen 3 times: ``pool_min_occurrences`` 2, ``pool_max_distinct`` 16,
#: ``pool_max_phrase_chars`` 64.  Model loops rotate more and longer sentences than the seed
#: allows (case 011: 14 sentences in a random walk; R1-Distill ``tasks[352]``: a near-verbatim
#: paragraph): with these, P catches both, the labelled cases go from 14 to 15 of 17 and the
#: real loops from 13 to 14 of 14, the probe gains 2 loops, and no legitimate text anywhere
#: fires more (the YAML case 023 would, without the data-line rule).  64 is the shortest phrase
#: length that catches ``tasks[352]`` (48 and 56 do not); each character of it costs the pool
#: 120 bytes of record text per channel at Latin-1 (480 once an astral code point arrives).
#: ``lowdiv_max_data_share`` 0.8: L and S hold back on a window made more than 80 % of hex-dump
#: characters (hex digits, blanks, ``.``, ``:``): a hex dump of a zeroed region is as repetitive
#: as a loop (case 033; 90 % of the probe's hex dumps fired), while the loops L and S catch are
#: at most 55 % such characters (case 004) and prose about 25–40 %.
#: ``cycle_min_period`` 2: C also looks at periods 2–15 (still verbatim, at least 600 code points
#: and 3 copies), so the short verbatim floods L and S now hold back on as data runs (a digit ruler
#: ``1234567890``…) and floods of several symbols (``!!!???...``, kaomoji, emoji cycles) are
#: caught: probe loops +6 of 200, no legitimate text anywhere fires.  Single-character runs (period
#: 1, e.g. long blank padding) stay L's and S's.
PROFILE_OVERRIDES: dict[str, dict[str, Any]] = {
    "default": {
        "ngram": 40,
        "pool_skip_key_value": True,
        "pool_min_occurrences": 2,
        "pool_max_distinct": 16,
        "pool_max_phrase_chars": 64,
        "lowdiv_max_data_share": 0.8,
        "cycle_min_period": 2,
        "fence_repeat_lines": 8,
    }
}
#: ``tokens`` counts ``default``'s lengths in tokens (each token holds at least one character,
#: so every window holds at least as much text as in text mode: never more eager than it).
PROFILE_OVERRIDES["tokens"] = dict(PROFILE_OVERRIDES["default"])

#: The config's keys: every core parameter but the enable flags (``enabled`` holds those),
#: then the policy's own.  Names, types, spec defaults, bounds and docs: loopcore's one schema.
_POLICY: tuple[Param, ...] = (
    Param(
        "fuse_hits_before_action",
        int,
        2,
        "policy",
        "checkpoints at which the seed-002 checks (E, L, S) must hold before a cut",
        1,
        1_000_000,
    ),
)
_FIELDS: tuple[Param, ...] = tuple(p for p in PARAMS if p.name not in KIND_FLAGS) + _POLICY
_WATCH = ("both", "reasoning", "text")


def _default_text(p: Param) -> str:
    tuned = PROFILE_OVERRIDES["default"].get(p.name)
    base = repr(p.default)
    return base if tuned is None or tuned == p.default else f"{base}; {tuned!r} in ``default``"


def _keys_doc() -> str:
    """The docstring's key list, from the schema."""
    rows: list[str] = []
    for detector in ("stream", *KIND_FLAGS, "policy"):
        fields = [p for p in _FIELDS if p.detector == detector]
        if fields:
            text = f"*{detector}*: " + "; ".join(f"``{p.name}`` ({_default_text(p)}): {p.doc}" for p in fields) + "."
            rows.append(
                textwrap.fill(text, 96, initial_indent="    ", subsequent_indent="      ", break_on_hyphens=False)
            )
    return "\n".join(rows)


def _parse_enabled(value: Any) -> frozenset[str]:
    expected = "a collection of detector kinds (" + ", ".join(DETECTOR_KINDS) + ")"
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise ConfigError("enabled", value, expected)
    kinds = set()
    for item in value:
        if not isinstance(item, str):
            raise ConfigError("enabled", value, expected)
        if item not in DETECTOR_KINDS:
            if item in _SEED_LETTERS:
                expected += f"; {item!r} is the spec's letter for {_SEED_LETTERS[item]!r}: use the name"
            raise ConfigError("enabled", value, expected)
        kinds.add(item)
    return frozenset(kinds)


class TextConfig:
    """Configuration of the text loop detectors (spec §2).

        ``TextConfig(profile="default", **overrides)``.  The profile sets which
        detectors are enabled: ``"fuse"`` = ``exact_tail``, ``lowdiv_tail``,
        ``lowdiv_sliding`` exactly as seed 002; ``"rescue"`` = ``cycle``, ``pool``
        exactly as seed 003; ``"default"`` = ``cycle``, ``pool``, ``near_cycle``,
        ``salad`` (docs/detection.md says why not the other three), at the
        spec numbers except where :data:`PROFILE_OVERRIDES` tunes them (with the
        reason).  Every other key defaults to the spec number; lengths and
        positions are Unicode code points.

        Keys (defaults; the ``default`` profile's own values after ``;``), by the
        detector that reads them -- generated from loopcore's one parameter schema
        (``loopcore._params``):

    {KEYS}

        and ``watch`` (``"both"`` | ``"reasoning"`` | ``"text"``), ``enabled`` (the
        profile's kinds; a collection of names from :data:`DETECTOR_KINDS`).

        Raises
        ------
        ConfigError
            (a ``ValueError``) naming the key, the value and the rule, for an
            unknown profile or key, a value of the wrong type or out of range, or a
            broken cross-field rule (a maximum below its minimum).  ``window`` below 40
            while E is enabled is legal (E never fires, spec §2.1) and gives a ``UserWarning``.

        Examples
        --------
        >>> TextConfig("fuse").enabled == frozenset({"exact_tail", "lowdiv_tail", "lowdiv_sliding"})
        True
        >>> TextConfig(window=0)
        Traceback (most recent call last):
        ...
        loopguard.errors.ConfigError: TextConfig: window=0 is invalid: must be an integer from 1 to 1000000
    """

    __slots__ = ("profile", "enabled", "watch", *(p.name for p in _FIELDS))

    profile: str
    enabled: frozenset[str]
    watch: str
    skip_code_blocks: bool
    pool_skip_key_value: bool
    pool_min_coverage: float
    lowdiv_max_data_share: float
    lowdiv_art_max_alnum: float
    near_min_lag_share: float
    near_min_coverage: float
    near_max_record_share: float
    near_min_recurrence: float
    salad_max_alnum: float
    salad_max_space: float
    check_every: int
    min_chars: int
    window: int
    history: int
    repeats: int
    lowdiv_window: int
    ngram: int
    lowdiv_max_unique: int
    lowdiv_min_repeat: int
    slide_window: int
    slide_step: int
    slide_max_unique: int
    slide_min_repeat: int
    cycle_min_period: int
    cycle_max_period: int
    cycle_min_copies: int
    cycle_min_chars: int
    cycle_scan_chars: int
    pool_window: int
    pool_max_phrase_chars: int
    pool_min_occurrences: int
    pool_min_distinct: int
    pool_max_distinct: int
    near_ngram: int
    near_min_period: int
    near_max_period: int
    near_min_window: int
    near_recurrence_window: int
    salad_window: int
    salad_max_unique: int
    salad_max_words: int
    salad_min_words: int
    near_tolerance: int
    fence_repeat_lines: int
    fuse_hits_before_action: int

    def __init__(self, profile: str = "default", **overrides: Any) -> None:
        if not isinstance(profile, str) or profile not in PROFILES:
            raise ConfigError("profile", profile, "one of " + ", ".join(PROFILES))
        unknown = sorted(set(overrides) - set(self.__slots__) - {"profile"})
        if unknown:
            raise ConfigError(unknown[0], overrides[unknown[0]], "a known key (see TextConfig's docstring)")
        set_ = object.__setattr__
        set_(self, "profile", profile)
        tuned = PROFILE_OVERRIDES.get(profile, {})
        for p in _FIELDS:
            value = overrides.get(p.name, tuned.get(p.name, p.default))
            if p.problem(value) is not None:
                raise ConfigError(p.name, value, p.rule())
            set_(self, p.name, float(value) if p.kind is float else value)
        watch = overrides.get("watch", "both")
        if watch not in _WATCH:
            raise ConfigError("watch", watch, "one of both, reasoning, text")
        set_(self, "watch", watch)
        enabled = overrides.get("enabled")
        set_(self, "enabled", PROFILES[profile] if enabled is None else _parse_enabled(enabled))
        params = self.stream_params("text")
        for key, rule in rule_errors(params):
            raise ConfigError(key, getattr(self, key), rule)
        for key, rule in rule_errors(params, inert=True):  # legal, but a detector never fires
            warnings.warn(f"TextConfig: {key}={getattr(self, key)!r} must be {rule}", UserWarning, stacklevel=2)

    def __setattr__(self, key: str, value: Any) -> None:
        raise AttributeError("TextConfig is immutable; use .replace(**changes)")

    def __copy__(self) -> TextConfig:
        return self  # immutable: a copy is the same config

    def __deepcopy__(self, memo: dict[int, Any]) -> TextConfig:
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle as ``(profile, every key)``; unpickling validates like the constructor."""
        values = self.to_dict()
        return _text_config, (values.pop("profile"), values)

    def replace(self, **changes: Any) -> TextConfig:
        """A copy with ``changes`` applied (validated like the constructor)."""
        values = self.to_dict()
        profile = changes.pop("profile", values.pop("profile"))
        if profile != self.profile:  # keep only what was set by hand, not the old profile's own values
            base = TextConfig(self.profile).to_dict()
            values = {k: v for k, v in values.items() if k != "profile" and v != base[k]}
        if "profile" in changes or ("enabled" not in changes and profile != self.profile):
            values.pop("enabled", None)
        values.update(changes)
        return TextConfig(profile, **values)

    def to_dict(self) -> dict[str, Any]:
        """All keys and values; ``enabled`` as a sorted list of kinds."""
        out: dict[str, Any] = {key: getattr(self, key) for key in self.__slots__}
        out["enabled"] = [k for k in _KIND_ORDER if k in self.enabled]
        return out

    def stream_params(self, channel: str) -> dict[str, Any]:
        """Keyword arguments of ``loopcore.ChannelStream`` for ``channel`` (``"reasoning"`` or
        ``"text"``): every schema key by its one name, the enable flags from ``enabled``,
        ``skip_code_blocks`` on the text channel only (spec §2.6)."""
        params: dict[str, Any] = {}
        for p in PARAMS:
            params[p.name] = p.name in self.enabled if p.name in KIND_FLAGS else getattr(self, p.name)
        params["skip_code_blocks"] = self.skip_code_blocks and channel == "text"
        return params

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TextConfig) and self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash(tuple(sorted((k, str(v)) for k, v in self.to_dict().items())))

    def __repr__(self) -> str:
        base = TextConfig(self.profile).to_dict()
        diff = {k: v for k, v in self.to_dict().items() if k != "profile" and base[k] != v}
        extra = "".join(f", {k}={v!r}" for k, v in diff.items())
        return f"TextConfig({self.profile!r}{extra})"

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> TextConfig:
        """Build from a mapping such as a parsed config file (``profile`` optional)."""
        values = dict(data)
        return cls(values.pop("profile", "default"), **values)


def _text_config(profile: str, values: dict[str, Any]) -> TextConfig:
    return TextConfig(profile, **values)


TextConfig.__doc__ = (TextConfig.__doc__ or "").replace("{KEYS}", _keys_doc())
