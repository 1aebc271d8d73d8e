"""Score issue 30's registered predictions against the interleaved A/B (docs/measurements/validation-h200.md).

    python benchmarks/validation_score.py REGISTERED.json AB.json PLAN.json

REGISTERED.json: benchmarks/register_validation.py's output (committed before the A/B ran). AB.json:
tests/device/validation_h200.py ab's output. PLAN.json: the A/B plan; its "causes" (and a loop's own "causes") map a finding's
cause to the variant that applies its fix. A row is one measured fix of one loop: the predicted share of the step (0 when the
fix was measured but not named) against the A/B gain (mean of the per-round paired gains).

Targets (issue 30): >= 80% of rows within 0.5x-2x of the A/B gain or within 5 points of the step; no fix named at
>= 5% whose A/B gain is under 3%; the first-named fix is the largest measured gain in >= 80% of loops. As bare
traces: the printed interval holds the A/B gain in >= 80% of rows; the first-named fix is the same as with run.json
in >= 80% of loops.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Optional


def _named(findings: list[dict[str, Any]], cause_to_variant: dict[str, str], variant: str) -> Optional[dict]:
    for f in findings:
        if cause_to_variant.get(f["cause"]) == variant:
            return f
    return None


def within(pred: float, gain: float) -> bool:
    if abs(pred - gain) <= 0.05:
        return True
    return gain > 0 and pred > 0 and 0.5 <= pred / gain <= 2.0


def rows_of(name: str, reg: dict, ab: dict, causes: dict[str, str]) -> list[dict[str, Any]]:
    out = []
    for variant, m in ab.items():
        if variant == "base" or "gain" not in m:
            continue
        row: dict[str, Any] = {"loop": name, "variant": variant, "ab_gain": m["gain"]}
        row["ab_range"] = [m["gain_min"], m["gain_max"]]
        for mode in ("with_run_json", "bare"):
            f = _named(reg[mode]["findings"], causes, variant)
            row[mode] = {
                "cause": f and f["cause"],
                "pred": (f["share"] or 0.0) if f else 0.0,
                "range": (f["share_range"] if f else [0.0, 0.0]) or [0.0, 0.0],
            }
        out.append(row)
    return out


def first_variant(findings: list[dict], causes: dict[str, str]) -> Optional[str]:
    return causes.get(findings[0]["cause"]) if findings else None


def score(registered: dict, ab: dict, plan: dict) -> dict[str, Any]:
    rows: list[dict] = []
    firsts = []
    for name, reg in registered["loops"].items():
        measured = ab["summary"].get(name)
        if not measured or name not in plan["loops"]:
            continue
        causes = {**plan["causes"], **plan["loops"][name].get("causes", {})}
        mine = rows_of(name, reg, measured, causes)
        rows += mine
        best = max(mine, key=lambda r: r["ab_gain"])["variant"] if mine else None
        first = first_variant(reg["with_run_json"]["findings"], causes)
        first_bare = first_variant(reg["bare"]["findings"], causes)
        firsts.append({"loop": name, "first": first, "first_bare": first_bare, "largest_measured": best})
    ok = [within(r["with_run_json"]["pred"], r["ab_gain"]) for r in rows]
    false_named = [r for r in rows if r["with_run_json"]["pred"] >= 0.05 and r["ab_gain"] < 0.03]
    held = [r["bare"]["range"][0] - 0.005 <= r["ab_gain"] <= r["bare"]["range"][1] + 0.005 for r in rows]
    first_ok = [f["first"] == f["largest_measured"] for f in firsts]
    same_first = [f["first"] == f["first_bare"] for f in firsts]
    return {
        "rows": rows,
        "loops": firsts,
        "within_0.5_2x_or_5_points": f"{sum(ok)}/{len(ok)}",
        "named_at_5pct_measured_under_3pct": [f"{r['loop']}/{r['variant']}" for r in false_named],
        "first_named_is_largest_gain": f"{sum(first_ok)}/{len(first_ok)}",
        "bare_interval_holds_gain": f"{sum(held)}/{len(held)}",
        "bare_first_same_as_run_json": f"{sum(same_first)}/{len(same_first)}",
    }


def main() -> int:
    registered, ab, plan = (json.loads(Path(p).read_text()) for p in sys.argv[1:4])
    s = score(registered, ab, plan)
    for r in s["rows"]:
        w, b = r["with_run_json"], r["bare"]
        print(
            f"{r['loop']:13s} {r['variant']:8s} A/B {100 * r['ab_gain']:6.1f}% "
            f"[{100 * r['ab_range'][0]:.1f}, {100 * r['ab_range'][1]:.1f}] | run.json {100 * w['pred']:5.1f}% "
            f"({w['cause']}) | bare {100 * b['pred']:5.1f}% [{100 * b['range'][0]:.1f}, {100 * b['range'][1]:.1f}]"
        )
    for f in s["loops"]:
        print(
            f"{f['loop']:13s} first named {f['first']} (bare {f['first_bare']}), largest measured {f['largest_measured']}"
        )
    for k, v in s.items():
        if k not in ("rows", "loops"):
            print(f"{k}: {v}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
