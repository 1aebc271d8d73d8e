"""A checker of the Trace Event Format (the JSON that chrome://tracing and Perfetto's UI read), written from the
format's specification ("Trace Event Format", Google, the catapult project's document):

- the file is a JSON object with a `traceEvents` array (or a bare array of events);
- every event is an object with a one-letter phase `ph` the format defines, a `pid`, and (all but metadata) a
  numeric `ts` in microseconds; `args`, where present, is an object;
- duration events: `B` (with a `name`) and `E` pair up per thread, last in, first out; complete events `X` carry a
  `name` and a `dur` >= 0, and on one thread any two either do not overlap or one holds the other (the nesting
  the viewers draw as a stack);
- instant events `i`/`I` have a `name` and a scope `s` of `g`, `p` or `t`;
- counters `C` have a `name` and `args` of numbers (one series per key);
- async events `b`/`n`/`e` have a `cat` and an `id` (or `id2`);
- flows `s`/`t`/`f` have a `cat`, a `name` and an `id`; per id one `s`, any `t`, one `f`, in time order; the
  start (and steps) bind to the slice enclosing their time on their thread, the end to the enclosing slice with
  `bp: "e"`, else to the next slice that starts on its thread; `bp` is only ever `"e"`;
- metadata `M` events are `process_name`, `process_labels`, `process_sort_index`, `thread_name` or
  `thread_sort_index` with the matching `args` (`name`, `labels`, `sort_index`).

check() returns the problems as sentences (no event indices, so two files' lists compare).
"""

from __future__ import annotations

import bisect
import json
from collections import Counter, defaultdict
from typing import Any

PHASES = set("BEXiICbneNODsftPMVvRc()STpF") | {"t"}
META = {
    "process_name": ("name", str),
    "thread_name": ("name", str),
    "process_labels": ("labels", str),
    "process_sort_index": ("sort_index", int),
    "thread_sort_index": ("sort_index", int),
}


def _num(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _ns(us: float) -> int:
    return round(us * 1000)


def load(path) -> list[dict]:
    import gzip

    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    doc = json.loads(data)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def check(events: list) -> list[str]:
    out: list[str] = []
    slices: dict[tuple, list[tuple[int, int, str]]] = defaultdict(list)  # (pid, tid) -> (start, end, name)
    flows: dict[tuple, list[dict]] = defaultdict(list)
    be: dict[tuple, list[str]] = defaultdict(list)
    for e in events:
        out += _fields(e)
        if not isinstance(e, dict) or e.get("ph") not in PHASES or not _num(e.get("ts", 0)):
            continue
        ph, key = e["ph"], (e.get("pid"), e.get("tid"))
        if ph == "X" and _num(e.get("dur")) and e["dur"] >= 0:
            slices[key].append((_ns(e["ts"]), _ns(e["ts"] + e["dur"]), str(e.get("name"))))
        elif ph == "B":
            be[key].append(str(e.get("name")))
        elif ph == "E":
            if not be[key]:
                out.append(f"E without a B on thread {key}")
            else:
                be[key].pop()
        elif ph in "stf" and "id" in e:
            flows[(e.get("cat"), e["id"])].append(e)
    out += [f"B '{n}' never ended on thread {k}" for k, names in be.items() for n in names]
    for k, sl in slices.items():
        out += _nesting(k, sl)
    index = {k: _Thread(sl) for k, sl in slices.items()}
    for fid, group in flows.items():
        out += _flow(fid, group, index)
    return out


def _fields(e: Any) -> list[str]:
    if not isinstance(e, dict):
        return [f"an event that is not an object: {str(e)[:60]}"]
    ph = e.get("ph")
    if ph not in PHASES:
        return [f"unknown phase {ph!r} ({str(e.get('name'))[:60]})"]
    name = str(e.get("name"))[:80]
    bad = []
    if "pid" not in e:
        bad.append("no pid")
    if ph != "M" and not _num(e.get("ts")):
        bad.append("ts is not a number")
    if "args" in e and not isinstance(e["args"], dict):
        bad.append("args is not an object")
    if ph in "BXiICbneNODstfM" and not isinstance(e.get("name"), str):
        bad.append("no name")
    if ph in "BEXstf" and "tid" not in e:
        bad.append("no tid")
    if ph == "X" and not (_num(e.get("dur")) and e["dur"] >= 0):
        bad.append("a complete event without a dur >= 0")
    if ph in "iI" and e.get("s", "t") not in ("g", "p", "t"):
        bad.append(f"instant scope {e.get('s')!r}")
    if ph == "C":
        args = e.get("args")
        if not isinstance(args, dict) or not args or not all(_num(v) for v in args.values()):
            bad.append("a counter whose args are not numbers")
    if ph in "bne" and not ("id" in e or "id2" in e) or ph in "bnestf" and "cat" not in e:
        bad.append("an async or flow event without its id and cat")
    if ph in "stf" and "id" not in e:
        bad.append("a flow event without an id")
    if ph in "stf" and "bp" in e and e["bp"] != "e":
        bad.append(f"flow binding point {e['bp']!r}")
    if ph == "M":
        spec = META.get(e.get("name"))
        args = e.get("args")
        if spec is None:
            bad.append("unknown metadata")
        elif not isinstance(args, dict) or not isinstance(args.get(spec[0]), spec[1]):
            bad.append(f"metadata without args.{spec[0]}")
        elif e["name"].startswith("thread") and "tid" not in e:
            bad.append("thread metadata without a tid")
    return [f"{ph} '{name}': {b}" for b in bad]


def _nesting(key: tuple, sl: list[tuple[int, int, str]]) -> list[str]:
    """Complete events on one thread: sorted by start (longest first), each ends within the one it starts in."""
    out = []
    stack: list[tuple[int, int, str]] = []
    for s, t, name in sorted(sl, key=lambda x: (x[0], -x[1])):
        while stack and stack[-1][1] <= s:
            stack.pop()
        if stack and t > stack[-1][1]:
            out.append(f"X '{name[:60]}' on thread {key} overlaps '{stack[-1][2][:60]}' without nesting")
            continue
        stack.append((s, t, name))
    return out


class _Thread:
    """The slices of one thread, for flow binding: which encloses a time, which starts next."""

    def __init__(self, sl: list[tuple[int, int, str]]) -> None:
        self.sl = sorted(sl)
        self.starts = [s for s, _, _ in self.sl]
        self.longest = max((t - s for s, t, _ in sl), default=0)

    def encloses(self, t: int) -> bool:
        k = bisect.bisect_right(self.starts, t)
        lo = bisect.bisect_left(self.starts, t - self.longest)
        return any(self.sl[j][1] >= t for j in range(lo, k))

    def next_starts(self, t: int) -> bool:
        return bisect.bisect_left(self.starts, t) < len(self.starts)


def _flow(fid: tuple, group: list[dict], index: dict[tuple, _Thread]) -> list[str]:
    phases = Counter(e["ph"] for e in group)
    if phases["s"] != 1 or phases["f"] != 1:
        return [f"flow {fid}: {phases['s']} start(s) and {phases['f']} end(s) (one each)"]
    order = {"s": 0, "t": 1, "f": 2}
    seq = sorted(group, key=lambda e: (_ns(e["ts"]), order[e["ph"]]))
    if [e["ph"] for e in seq][0] != "s" or seq[-1]["ph"] != "f":
        return [f"flow {fid}: not in time order (start, steps, end)"]
    out = []
    for e in seq:
        thread = index.get((e.get("pid"), e.get("tid")))
        t = _ns(e["ts"])
        enclosing = e["ph"] != "f" or e.get("bp") == "e"
        ok = thread is not None and (thread.encloses(t) if enclosing else thread.next_starts(t))
        if not ok:
            where = "an enclosing slice" if enclosing else "a next slice"
            out.append(
                f"flow {fid}: its {e['ph']} event has no {where} on thread {(e.get('pid'), e.get('tid'))}"
            )
    return out
