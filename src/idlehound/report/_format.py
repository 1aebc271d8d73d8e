"""Number formatting shared by every renderer, so a figure reads the same everywhere."""

from __future__ import annotations

from typing import Optional


def num(v: Optional[float], nd: int = 2, unit: str = "", signed: bool = False) -> str:
    """'—' for a missing value; thousands separators; an optional sign and unit."""
    if v is None:
        return "—"
    return f"{v:+,.{nd}f}{unit}" if signed else f"{v:,.{nd}f}{unit}"
