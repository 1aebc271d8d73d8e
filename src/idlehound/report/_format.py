"""Number formatting shared by every renderer, so a figure reads the same everywhere."""

from __future__ import annotations

from typing import Optional

from ._model_report import Metric


def num(v: Optional[float], nd: int = 2, unit: str = "", signed: bool = False) -> str:
    """'—' for a missing value; thousands separators; an optional sign and unit."""
    if v is None:
        return "—"
    return f"{v:+,.{nd}f}{unit}" if signed else f"{v:,.{nd}f}{unit}"


def metric_text(m: Metric) -> str:
    """A report metric as every renderer writes it: percentages with one decimal, the rest with two."""
    if m.value is None:
        return "—"
    if m.unit == "%":
        return f"{m.value:.1f} %"
    return f"{m.value:,.2f} {m.unit}".strip()
