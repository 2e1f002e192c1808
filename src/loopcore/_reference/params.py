"""The parameters of one stream: the detector keys of spec §2, one attribute each.

``loopcore._params.PARAMS`` is the one schema (names, types, defaults, bounds and docs).
:class:`Params` checks a stream's keywords against it and keeps each under its own name;
:class:`.stream.ChannelStream` is a :class:`Params`, and every detector reads its keys from the
stream it belongs to (``self.params.window``).

>>> from loopcore import _params
>>> Params(**_params.defaults()).window
600
"""

from __future__ import annotations

from typing import Any

from .. import _params


class Params:
    """The parameters of :class:`.stream.ChannelStream` (all keyword-only and required, checked
    by ``loopcore._params.check``: it raises TypeError or ValueError for invalid ones)."""

    def __init__(self, **params: Any) -> None:
        _params.check(params)
        self.skip_code_blocks: bool = params["skip_code_blocks"]
        self.fence_repeat_lines: int = params["fence_repeat_lines"]
        self.check_every: int = params["check_every"]
        self.exact_tail, self.min_chars, self.window = params["exact_tail"], params["min_chars"], params["window"]
        self.history, self.repeats = params["history"], params["repeats"]
        self.lowdiv_tail, self.lowdiv_window, self.ngram = (
            params["lowdiv_tail"],
            params["lowdiv_window"],
            params["ngram"],
        )
        self.lowdiv_max_unique = params["lowdiv_max_unique"]
        self.lowdiv_max_data_share = params["lowdiv_max_data_share"]
        self.lowdiv_art_max_alnum = params["lowdiv_art_max_alnum"]
        self.lowdiv_min_repeat = params["lowdiv_min_repeat"]
        self.lowdiv_sliding, self.slide_window, self.slide_step = (
            params["lowdiv_sliding"],
            params["slide_window"],
            params["slide_step"],
        )
        self.slide_max_unique, self.slide_min_repeat = params["slide_max_unique"], params["slide_min_repeat"]
        self.cycle = params["cycle"]
        self.cycle_min_period, self.cycle_max_period = params["cycle_min_period"], params["cycle_max_period"]
        self.cycle_min_copies, self.cycle_min_chars = params["cycle_min_copies"], params["cycle_min_chars"]
        self.cycle_scan_chars = params["cycle_scan_chars"]
        self.pool, self.pool_window = params["pool"], params["pool_window"]
        self.pool_min_coverage = params["pool_min_coverage"]
        self.pool_max_phrase_chars = params["pool_max_phrase_chars"]
        self.pool_min_occurrences = params["pool_min_occurrences"]
        self.pool_min_distinct, self.pool_max_distinct = params["pool_min_distinct"], params["pool_max_distinct"]
        self.pool_skip_key_value = params["pool_skip_key_value"]
        self.near_cycle, self.near_ngram = params["near_cycle"], params["near_ngram"]
        self.near_min_period, self.near_max_period = params["near_min_period"], params["near_max_period"]
        self.near_min_window, self.near_tolerance = params["near_min_window"], params["near_tolerance"]
        self.near_min_lag_share = params["near_min_lag_share"]
        self.near_min_coverage = params["near_min_coverage"]
        self.near_max_record_share = params["near_max_record_share"]
        self.near_recurrence_window = params["near_recurrence_window"]
        self.near_min_recurrence = params["near_min_recurrence"]
        self.salad, self.salad_window = params["salad"], params["salad_window"]
        self.salad_max_unique = params["salad_max_unique"]
        self.salad_max_alnum, self.salad_max_space = params["salad_max_alnum"], params["salad_max_space"]
        self.salad_max_words, self.salad_min_words = params["salad_max_words"], params["salad_min_words"]
