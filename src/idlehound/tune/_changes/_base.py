"""What a change of tune is: the settings key it owns, and with it how the child injects it at start-up, when
it would do nothing in this script, and how the diff makes it in the script's source."""

from __future__ import annotations

from typing import Any, Callable

from .._recorder import Recorder
from .._source import SourceEdits


class Change:
    """One kind of change, keyed by the settings key it owns (the value is what the candidate asks for)."""

    key = ""  # set by @change
    order = 0  # where the child injects it and the diff makes it among all the changes, lowest first

    def inject(self, value: Any, rec: Recorder) -> None:
        """Apply the change in the child before the script runs (rec: the child's Recorder)."""
        raise NotImplementedError

    def no_op(self, value: Any, facts: dict[str, Any]) -> str:
        """Why the change would do nothing in this script as it runs (from the baseline's facts), or ""."""
        return ""

    def edit(self, value: Any, src: SourceEdits) -> None:
        """Make the change in the script's source (or add a snippet saying where)."""
        raise NotImplementedError


# The registry, by settings key in the order the child injects them and the diff makes them (Change.order):
# autocast is entered before channels_last and the graphs (a graph recorded under autocast replays its casts),
# and the header lines of the diff keep one order.
CHANGES: dict[str, Change] = {}


def change(key: str, order: int) -> Callable[[type[Change]], type[Change]]:
    """Register a change class (a decorator: `@change("tf32", order=60)`): the settings key it owns and where
    the child injects it and the diff makes it among the others. Two changes cannot share a key or an order."""

    def register(cls: type[Change]) -> type[Change]:
        taken = next((c for c in CHANGES.values() if c.key == key or c.order == order), None)
        if taken is not None:
            raise TypeError(f"{cls.__name__}: key {key!r} or order {order} is {type(taken).__name__}'s")
        cls.key, cls.order = key, order
        ordered = sorted([*CHANGES.values(), cls()], key=lambda c: c.order)
        CHANGES.clear()
        CHANGES.update((c.key, c) for c in ordered)
        return cls

    return register
