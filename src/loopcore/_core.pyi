"""Type stubs for the compiled extension ``loopcore._core`` (same API as ``_reference``; the
parameters are ``loopcore._params.PARAMS``, in order -- ``tests/test_params.py`` keeps them in line)."""

from typing import Any, final

from typing_extensions import disjoint_base

KINDS: tuple[str, str, str, str, str, str, str]

RawDetection = tuple[str, int, int, int, dict[str, Any]]

@final
class ChannelStream:
    def __init__(
        self,
        *,
        skip_code_blocks: bool,
        fence_repeat_lines: int,
        check_every: int,
        exact_tail: bool,
        min_chars: int,
        window: int,
        history: int,
        repeats: int,
        lowdiv_tail: bool,
        lowdiv_window: int,
        ngram: int,
        lowdiv_max_unique: int,
        lowdiv_min_repeat: int,
        lowdiv_max_data_share: float,
        lowdiv_art_max_alnum: float,
        lowdiv_sliding: bool,
        slide_window: int,
        slide_step: int,
        slide_max_unique: int,
        slide_min_repeat: int,
        cycle: bool,
        cycle_min_period: int,
        cycle_max_period: int,
        cycle_min_copies: int,
        cycle_min_chars: int,
        cycle_scan_chars: int,
        pool: bool,
        pool_window: int,
        pool_min_coverage: float,
        pool_max_phrase_chars: int,
        pool_min_occurrences: int,
        pool_min_distinct: int,
        pool_max_distinct: int,
        pool_skip_key_value: bool,
        near_cycle: bool,
        near_ngram: int,
        near_min_period: int,
        near_max_period: int,
        near_min_window: int,
        near_tolerance: int,
        near_min_lag_share: float,
        near_min_coverage: float,
        near_max_record_share: float,
        near_recurrence_window: int,
        near_min_recurrence: float,
        salad: bool,
        salad_window: int,
        salad_max_unique: int,
        salad_max_alnum: float,
        salad_max_space: float,
        salad_max_words: int,
        salad_min_words: int,
    ) -> None: ...
    @property
    def length(self) -> int: ...
    @property
    def masked_length(self) -> int: ...
    @property
    def hits(self) -> dict[str, int]: ...
    @property
    def fuse_checkpoints(self) -> int: ...
    @property
    def finished(self) -> bool: ...
    @property
    def memory_bytes(self) -> int: ...
    def feed(self, delta: str) -> list[RawDetection]: ...
    def feed_tokens(self, ids: Any) -> list[RawDetection]: ...
    def finish(self) -> list[RawDetection]: ...

def finish_streams(streams: list[ChannelStream]) -> list[list[RawDetection]]: ...

@disjoint_base
class FeedBase:
    _streams: dict[str, Any]
    def feed(self, delta: str, channel: str = "text") -> Any: ...
