from types import ModuleType

from ._core import ChannelStream as ChannelStream

IMPLEMENTATION: str
KINDS: tuple[str, str, str, str, str]

def implementations() -> dict[str, ModuleType]: ...
def implementation(name: str | None = None) -> ModuleType: ...
