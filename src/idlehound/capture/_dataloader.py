"""Record the DataLoader settings a script uses, by wrapping DataLoader construction."""

from __future__ import annotations

import contextlib
from typing import Any, Callable


def record_dataloaders(sink: list[dict[str, Any]]) -> Callable[[], None]:
    """Patch DataLoader.__init__ to append each loader's settings to sink. Returns an undo function."""
    from torch.utils.data import DataLoader

    original = DataLoader.__init__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        with contextlib.suppress(Exception):  # an exotic subclass: settings unknown, training unaffected
            sink.append(
                {
                    "batch_size": self.batch_size,
                    "num_workers": self.num_workers,
                    "pin_memory": self.pin_memory,
                    "persistent_workers": self.persistent_workers,
                    "prefetch_factor": self.prefetch_factor,
                    "drop_last": self.drop_last,
                    "dataset": type(self.dataset).__name__,
                }
            )

    DataLoader.__init__ = __init__

    def undo() -> None:
        DataLoader.__init__ = original

    return undo
