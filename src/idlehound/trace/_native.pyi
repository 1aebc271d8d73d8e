# The C decoder (trace/_native.c). decode's tuple is unpacked by name as trace/_native_columns.NativePiece, the
# list its C side is generated from (tools/gen_native_columns.py).
from typing import Any, Optional, Union

class Decoder:
    nbytes: int
    def decode(
        self, buf: Union[bytes, bytearray, memoryview], lo: int, hi: int, /
    ) -> Optional[tuple[Any, ...]]: ...
