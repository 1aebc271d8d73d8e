# The C decoder (trace/_native.c); see TableBuilder.add_text for what decode returns.
from typing import Any, Optional, Union

class Decoder:
    nbytes: int
    def decode(
        self, buf: Union[bytes, bytearray, memoryview], lo: int, hi: int, /
    ) -> Optional[tuple[Any, ...]]: ...
