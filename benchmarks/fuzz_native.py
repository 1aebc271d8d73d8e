"""Compare the C decoder (trace/_native.c) with the msgspec path on mutated pieces of real events.

    python benchmarks/fuzz_native.py [--pieces 100000] [--seed 1]

Each case is a sequence of 2 to 12 pieces (the arrays' elements the loader hands the decoder one at a time) fed
to two TableBuilders, one with the C decoder (a piece it leaves goes the msgspec way, as in the loader) and one
with IDLEHOUND_NATIVE=0. Pieces are runs of events of the recorded traces in tests/traces/, each with input-type
lists, and then one of: left as they are; every event dropped (ts out of range, or no ts, name and category),
which the C decoder must still number the input types of (issue 31); bytes flipped, dropped, doubled or replaced
by JSON's special characters; a field replaced by a hostile value (huge or odd numbers, nulls, odd types).
It prints how many pieces were compared, how many the C decoder took (all-dropped ones apart) and the number of
cases whose tables, counts or errors differ, with the first few. Target (issue 31): >= 100,000 pieces, 0
differences.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "src")]

from tests.fuzzing import flip_bytes  # noqa: E402

from idlehound.trace import _decode, _table  # noqa: E402

HOSTILE: list[str] = [
    "9" * 400,
    "-" + "9" * 400,
    "1e400",
    "-1e400",
    "9e15",
    "-9e15",
    "8.99e15",
    "1e20",
    "-3",
    "0",
    "null",
    "true",
    '"1"',
    '""',
    "[]",
    "{}",
    "18446744073709551616",
    "-9223372036854775809",
    "1.5",
    "-0.0",
]
FIELDS = ["ts", "dur", "pid", "tid", "name", "cat", "ph"]
ARGS = ["External id", "correlation", "bytes", "Bytes", "blocks per SM", "est. achieved occupancy %"]
ARGS += ["Total Allocated", "Total Reserved", "Device Type", "Input type", "Python id", "Python parent id"]


def load_events(limit: int = 3000) -> list[dict]:
    out: list[dict] = []
    for p in sorted((ROOT / "tests" / "traces").glob("*/*.pt.trace.json.gz"))[:8]:
        doc = json.loads(gzip.decompress(p.read_bytes()))
        out += [e for e in doc["traceEvents"] if isinstance(e, dict)][:limit]
    return out


def make_piece(events: list[dict], rng: random.Random, serial: list[int]) -> tuple[str, bytes]:
    k = rng.randrange(len(events) - 40)
    evs = [dict(e) for e in events[k : k + rng.randint(1, 30)]]
    for e in evs:
        if rng.random() < 0.6:  # a list of its own, or one used before
            serial[0] += 1
            n = serial[0] if rng.random() < 0.7 else rng.randrange(max(1, serial[0]))
            e["args"] = dict(
                e.get("args") or {}, **{"Input type": ["float", f"t{n}", ""][: rng.randint(1, 3)]}
            )
    kind = rng.choices(["plain", "dropped", "bytes", "field"], [3, 3, 1, 2])[0]
    if kind == "dropped":
        for e in evs:
            if rng.random() < 0.5:
                e["ts"] = rng.choice([9e15, -9e15, 1e300, 9.5e15])
            else:
                for f in ("ts", "name", "cat"):
                    e.pop(f, None)
    text = ",".join(json.dumps(e, ensure_ascii=rng.random() < 0.5) for e in evs)
    if kind == "field":
        e = rng.randrange(len(evs))
        parts = text.split("}, {") if "}, {" in text else [text]
        key = rng.choice(FIELDS + ARGS)
        value = rng.choice(HOSTILE)
        target = parts[min(e, len(parts) - 1)]
        if key in ARGS:
            target = (
                target.replace('"args": {', f'"args": {{"{key}": {value}, ', 1)
                if '"args": {' in target
                else target
            )
        else:
            target = _set_field(target, key, value)
        parts[min(e, len(parts) - 1)] = target
        text = "}, {".join(parts)
    b = bytearray(text.encode("utf-8", "surrogatepass"))
    if kind == "bytes":
        flip_bytes(b, rng)
    return kind, bytes(b)


def _set_field(text: str, key: str, value: str) -> str:
    at = text.find(f'"{key}": ')
    if at < 0:
        return text.replace("{", f'{{"{key}": {value}, ', 1)
    end = at + len(key) + 4
    stop = end
    depth = 0
    in_str = False
    while stop < len(text):  # the end of the old value: a comma or brace at its own level
        c = text[stop]
        if in_str:
            if c == "\\":
                stop += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif c in "[{":
            depth += 1
        elif c in "]}":
            if depth == 0:
                break
            depth -= 1
        elif c == "," and depth == 0:
            break
        stop += 1
    return text[:end] + value + text[stop:]


def add_piece(b: _table.TableBuilder, piece: bytes, stats: dict[str, int]) -> None:
    """One JSON array of whole events the msgspec way; odd-typed fields fall back to the lenient path."""
    try:
        b.add(_decode.decode_batch(piece))
    except msgspec.ValidationError:
        for batch in _decode.iter_event_batches(_decode.split_events(piece), stats):
            b.add(batch)


def outcome(pieces: list[bytes], native: bool) -> tuple[Any, ...]:
    os.environ[_table.ENV_NATIVE] = "1" if native else "0"
    b = _table.TableBuilder()
    stats: dict[str, int] = {}
    try:
        for p in pieces:
            if native and b.add_text(p, 0, len(p)):
                continue
            add_piece(b, b"[" + p + b"]", stats)
        t = b.build()
    except Exception as e:  # noqa: BLE001 - an error is an outcome to compare (its type and text)
        return ("error", type(e).__name__, str(e)[:200])
    return ("table", t, dict(stats), b.bad_times, b.empty, b.negative_durs)


def same(a: tuple, b: tuple) -> str:
    """'' when the two outcomes are equal, else what differs."""
    if a[0] != b[0] or a[0] == "error":
        return "" if a == b else f"{a[:3]} vs {b[:3]}"
    if a[2:] != b[2:]:
        return f"counts {a[2:]} vs {b[2:]}"
    ta, tb = a[1], b[1]
    for k, vb in vars(tb).items():
        va = getattr(ta, k)
        if isinstance(vb, np.ndarray):
            ok = va.shape == vb.shape and np.array_equal(va, vb, equal_nan=vb.dtype.kind == "f")
        else:
            ok = _eq(va, vb)
        if not ok:
            return f"column {k}: {str(va)[:150]} vs {str(vb)[:150]}"
    return ""


def _eq(a: Any, b: Any) -> bool:
    """Equal, nan equal to nan (kernel figures may be nan)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_eq(a[k], b[k]) for k in a)
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    return type(a) is type(b) and a == b


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pieces", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if _table._native is None:
        sys.exit("the C decoder is not built here (pip install -e . builds trace/_native.c)")
    rng = random.Random(a.seed)
    events = load_events()
    counts: collections.Counter = collections.Counter()
    diffs: list[str] = []
    serial = [0]
    t0 = time.perf_counter()
    while counts["pieces"] < a.pieces:
        made = [make_piece(events, rng, serial) for _ in range(rng.randint(2, 12))]
        pieces = [p for _, p in made]
        for kind, p in made:
            counts["pieces"] += 1
            counts[kind] += 1
            taken = _table._native.Decoder().decode(p, 0, len(p)) is not None
            counts["taken"] += taken
            counts["dropped taken"] += taken and kind == "dropped"
        fast, plain = outcome(pieces, True), outcome(pieces, False)
        counts["cases"] += 1
        counts["error cases"] += fast[0] == "error"
        d = same(fast, plain)
        if d:
            counts["differences"] += 1
            diffs.append(d)
    dt = time.perf_counter() - t0
    print(f"{counts['pieces']:,} pieces in {counts['cases']:,} cases (seed {a.seed}) in {dt:.0f} s")
    print(
        f"  plain {counts['plain']:,}, all dropped {counts['dropped']:,}, bytes mutated {counts['bytes']:,}, "
        f"a hostile field {counts['field']:,}"
    )
    print(
        f"  taken by the C decoder (alone) {counts['taken']:,}, of them all dropped {counts['dropped taken']:,}; "
        f"cases ending in an error {counts['error cases']:,}"
    )
    print(f"  differences (C vs msgspec) {counts['differences']}")
    for d in diffs[:5]:
        print("   ", d)


if __name__ == "__main__":
    main()
