from types import ModuleType

from ._core import ChannelStream as ChannelStream
from ._scan import TokenFinder as TokenFinder
from ._scan import word_lines as word_lines

__all__ = ["ChannelStream", "IMPLEMENTATION", "KINDS", "TokenFinder", "implementations", "implementation", "word_lines"]

IMPLEMENTATION: str
KINDS: tuple[str, str, str, str, str, str, str]

def implementations() -> dict[str, ModuleType]: ...
def implementation(name: str | None = None) -> ModuleType: ...
