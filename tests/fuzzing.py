"""Mutate real recorded run folders (tests/traces/*/) and check what idlehound makes of them.

Used by tests/unit/test_fuzz_recorded.py (a few seconds, through hypothesis) and benchmarks/fuzz_traces.py
(thousands of cases). A case is a run folder: trace, run.json, samples.json and sidecar, some of them
mutated. The outcome is one of: a clean error (IdlehoundError, one line), an analysis (whose document must
pass check_document and encode as strict JSON), or an internal error (any other exception: a bug).
"""

from __future__ import annotations

import copy
import gzip
import io
import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT / "tests" / "traces"
BIGINT = "__BIGINT__"  # replaced in the encoded text by an integer of thousands of digits
BIG_DIGITS = "9" * 5000

NUMBERS: list[Any] = [
    -1,
    0,
    -1e30,
    1e30,
    2**63,
    2**64 + 1,
    -(2**63) - 1,
    10**30,
    1e308,
    -1e308,
    0.5,
    1e-9,
    1,
    3,
    BIGINT,
    "NaN",
    "Infinity",
    "-Infinity",
    "1e999",
    "12",
    "",
    None,
    True,
    [],
    {},
    [1, 2],
    {"a": 1},
]
STEP_SUFFIXES = ["-1", BIG_DIGITS, "1e5", "", "\u0661\u0662", "00001", str(2**70), "0", "3", "3"]
NAMES = [
    "ProfilerStep#1",
    "aten::mm",
    "cudaStreamSynchronize",
    "[memory]",
    "cudaLaunchKernel",
    "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
    "Memcpy HtoD (Pageable -> Device)",
    "",
    "x" * 300,
    "[/]",
    "\x1b[31mred",
    "this.x/y.py(1): f",
]
CATS = [
    "cpu_op",
    "kernel",
    "gpu_memcpy",
    "cuda_runtime",
    "user_annotation",
    "python_function",
    "gpu_user_annotation",
    "cpu_instant_event",
    "Trace",
    "",
    7,
]
INTERESTING = ("user_annotation", "kernel", "gpu_memcpy", "cuda_runtime", "cpu_instant_event", "gpu_memset")


@dataclass
class Source:
    """One recorded run folder, decoded once and trimmed to its first steps (keeps cases fast)."""

    name: str
    trace_name: str
    doc: dict[str, Any]
    run: Optional[dict[str, Any]]
    samples: Optional[dict[str, Any]]
    sidecar: Optional[dict[str, Any]]
    interesting: list[int] = field(default_factory=list)


def load_sources(names: Optional[list[str]] = None, max_steps: int = 2) -> list[Source]:
    out = []
    for folder in sorted(TRACES.iterdir()):
        if not folder.is_dir() or (names and folder.name not in names):
            continue
        trace = next(folder.glob("*.pt.trace.json.gz"), None)
        if trace is None:  # a folder of run folders (tests/traces/replay)
            continue
        doc = json.loads(gzip.decompress(trace.read_bytes()))
        doc["traceEvents"] = _trim(doc["traceEvents"], max_steps)
        side = next(folder.glob("*.sidecar.json.gz"), None)
        src = Source(
            folder.name,
            trace.name,
            doc,
            _json(folder / "run.json"),
            _json(folder / "samples.json"),
            json.loads(gzip.decompress(side.read_bytes())) if side else None,
        )
        src.interesting = [
            i
            for i, e in enumerate(doc["traceEvents"])
            if e.get("cat") in INTERESTING or e.get("name") == "[memory]"
        ]
        out.append(src)
    return out


def _json(p: Path) -> Optional[dict]:
    return json.loads(p.read_text()) if p.exists() else None


def _trim(events: list[dict], max_steps: int) -> list[dict]:
    steps = sorted(
        (e for e in events if str(e.get("name", "")).startswith("ProfilerStep#")), key=lambda e: e["ts"]
    )
    if len(steps) <= max_steps:
        return events
    end = steps[max_steps - 1]["ts"] + steps[max_steps - 1]["dur"]
    lo = steps[0]["ts"]
    # keep the GPU work of the kept steps (it ends after them) and drop the later host activity
    return [
        e
        for e in events
        if "ts" not in e
        or e["ts"] <= end
        or (e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and e["ts"] < end + (end - lo))
    ]


@dataclass
class Case:
    """A mutated run folder, ready to write; `ops` says what was changed."""

    source: str
    trace_name: str
    trace: dict[str, Any]
    run: Optional[dict[str, Any]]
    samples: Optional[dict[str, Any]]
    sidecar: Optional[dict[str, Any]]
    ops: list[str] = field(default_factory=list)
    gz: bool = False

    def write(self, folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        name = self.trace_name if self.gz else self.trace_name[:-3]
        data = encode(self.trace)
        path = folder / name
        path.write_bytes(gzip.compress(data, 1) if self.gz else data)
        if self.run is not None:
            (folder / "run.json").write_bytes(encode(self.run))
        if self.samples is not None:
            (folder / "samples.json").write_bytes(encode(self.samples))
        if self.sidecar is not None:
            stem = name.split(".pt.trace.json")[0]
            (folder / f"{stem}.sidecar.json.gz").write_bytes(gzip.compress(encode(self.sidecar), 1))
        return path


def flip_bytes(b: bytearray, rng: random.Random) -> None:
    """1-3 byte-level mutations in place: a JSON-significant or invalid byte, a deletion, a repeat, a bit flip."""
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(b))
        op = rng.randrange(4)
        if op == 0:
            b[i] = rng.choice(b'"\\{}[],:0123456789-+.eEtfnu \x00\x1f\x7f\x80\xc3\xed\xff')
        elif op == 1:
            del b[i]
        elif op == 2:
            b[i:i] = b[i : i + rng.randint(1, 8)]
        else:
            b[i] ^= 1 << rng.randrange(8)


def encode(obj: Any) -> bytes:
    """JSON as Python writes it (NaN and Infinity literals allowed), with BIGINT markers made huge."""
    text = json.dumps(obj, allow_nan=True)
    return text.replace(f'"{BIGINT}"', BIG_DIGITS).encode()


def mutate(src: Source, rng: random.Random, n_ops: int = 0) -> Case:
    """A copy of src with 1 to 4 random mutations (copies only what it changes)."""
    doc = dict(src.doc)
    doc["traceEvents"] = list(src.doc["traceEvents"])
    case = Case(
        src.name,
        src.trace_name,
        doc,
        copy.deepcopy(src.run),
        copy.deepcopy(src.samples),
        copy.deepcopy(src.sidecar),
        gz=rng.random() < 0.3,
    )
    for _ in range(n_ops or rng.randint(1, 4)):
        op = rng.choice(_OPS)
        case.ops.append(op.__name__.strip("_") + ":" + op(case, src, rng))
    return case


def _pick_event(case: Case, src: Source, rng: random.Random) -> tuple[int, dict]:
    events = case.trace["traceEvents"]
    pool = src.interesting if src.interesting and rng.random() < 0.8 else range(len(events))
    i = rng.choice(pool) if pool else 0
    i = min(i, len(events) - 1)
    ev = copy.deepcopy(events[i]) if isinstance(events[i], dict) else {}
    events[i] = ev
    return i, ev


def _value(rng: random.Random, old: Any = None) -> Any:
    r = rng.random()
    if r < 0.6:
        return rng.choice(NUMBERS)
    if r < 0.7 and isinstance(old, (int, float)) and not isinstance(old, bool):
        return old * rng.choice([-1, 1000, 1e6, 1e12])
    if r < 0.8:
        return rng.choice(NAMES)
    return _nest(old, rng.randint(1, 5))


def _nest(v: Any, depth: int) -> Any:
    for _ in range(depth):
        v = [v] if depth % 2 else {"a": v}
    return v


def _event_field(case: Case, src: Source, rng: random.Random) -> str:
    i, ev = _pick_event(case, src, rng)
    key = rng.choice(["ts", "dur", "ts", "dur", "name", "cat", "ph", "pid", "tid", "args"])
    if key == "name" and str(ev.get("name", "")).startswith("ProfilerStep#"):
        ev["name"] = "ProfilerStep#" + rng.choice(STEP_SUFFIXES)
    elif key == "cat":
        ev["cat"] = rng.choice(CATS)
    elif key == "name":
        ev["name"] = rng.choice(NAMES)
    else:
        ev[key] = _value(rng, ev.get(key))
    return f"{ev.get('cat')}.{key}"


def _event_arg(case: Case, src: Source, rng: random.Random) -> str:
    _, ev = _pick_event(case, src, rng)
    args = ev.get("args")
    if not isinstance(args, dict) or not args:
        ev["args"] = args = {"External id": 1}
    key = rng.choice(
        list(args)
        + [
            "bytes",
            "Total Allocated",
            "Total Reserved",
            "blocks per SM",
            "est. achieved occupancy %",
            "correlation",
            "External id",
            "Device Type",
        ]
    )
    args[key] = _value(rng, args.get(key))
    return f"{ev.get('cat')}.args.{key}"


def _drop(case: Case, src: Source, rng: random.Random) -> str:
    i, ev = _pick_event(case, src, rng)
    if ev and rng.random() < 0.6:
        key = rng.choice(list(ev))
        del ev[key]
        return f"{ev.get('cat')}.{key}"
    del case.trace["traceEvents"][i]
    return "event"


def _duplicate(case: Case, src: Source, rng: random.Random) -> str:
    i, ev = _pick_event(case, src, rng)
    n = rng.choice([1, 2, 100])
    case.trace["traceEvents"][i + 1 : i + 1] = [copy.deepcopy(ev) for _ in range(n)]
    return f"{ev.get('cat')}x{n}"


def _swap_types(case: Case, src: Source, rng: random.Random) -> str:
    _, ev = _pick_event(case, src, rng)
    for k, v in list(ev.items()):
        if rng.random() < 0.5:
            ev[k] = str(v) if isinstance(v, (int, float)) else [v] if isinstance(v, dict) else {"v": v}
    return str(ev.get("cat"))


def _top(case: Case, src: Source, rng: random.Random) -> str:
    doc = case.trace
    key = rng.choice(
        [
            "deviceProperties",
            "baseTimeNanoseconds",
            "distributedInfo",
            "with_stack",
            "cuda_runtime_version",
            "traceEvents",
        ]
    )
    props = doc.get("deviceProperties")
    if key == "deviceProperties" and isinstance(props, list) and props and rng.random() < 0.8:
        p = dict(props[0])
        f = rng.choice(["id", "name", "totalGlobalMem", "computeMajor", "computeMinor", "numSms"])
        p[f] = _value(rng, p.get(f))
        doc["deviceProperties"] = [p] + list(props[1:])
        return f"deviceProperties.{f}"
    if key == "traceEvents":
        doc["traceEvents"] = doc["traceEvents"][: rng.randint(0, len(doc["traceEvents"]))]
        return "traceEvents:cut"
    doc[key] = _value(rng, doc.get(key))
    return key


def _outliers(case: Case, src: Source, rng: random.Random) -> str:
    """Events at far-off times (issue 31: a whole-trace step of 63 years), with or without the step markers."""
    events = case.trace["traceEvents"]
    for t in rng.sample([-1e15, 9.99e14, 8.9e15, -8.9e15, 1e13, 4e12], rng.randint(1, 3)):
        i, ev = _pick_event(case, src, rng)
        ev["ts"] = t
    if rng.random() < 0.5:  # no ProfilerStep: the whole trace is one step
        case.trace["traceEvents"] = [
            e
            for e in events
            if not (isinstance(e, dict) and str(e.get("name", "")).startswith("ProfilerStep#"))
        ]
        return "ts:no steps"
    return "ts"


def _dropped_run(case: Case, src: Source, rng: random.Random) -> str:
    """A run of events that are all dropped (ts out of range, or no ts, name and category), each with an
    input-type list of its own, before events that keep theirs (issue 31: the C decoder's ids then shifted)."""
    events = case.trace["traceEvents"]
    lo = rng.randrange(max(1, len(events) - 60))
    far = rng.random() < 0.5
    for j in range(lo, min(len(events), lo + rng.randint(5, 60))):
        ev = copy.deepcopy(events[j]) if isinstance(events[j], dict) else {}
        ev["args"] = dict(ev.get("args") or {}, **{"Input type": ["float", f"dropped{j}"]})
        if far:
            ev["ts"] = 9.5e15
        else:
            for k in ("ts", "name", "cat"):
                ev.pop(k, None)
        events[j] = ev
    return "far" if far else "empty"


SPOOF = ["\x1b[2J\x1b[31m", "\nfake line", "\u202eexe.txt", "\u2066x\u2069", "\x07\x9b"]


def _spoof(case: Case, src: Source, rng: random.Random) -> str:
    """Control characters in names that reach every report (issue 31: shown, never obeyed, in HTML too)."""
    _, ev = _pick_event(case, src, rng)
    ev["name"] = str(ev.get("name", "")) + rng.choice(SPOOF)
    return str(ev.get("cat"))


def _run_json(case: Case, src: Source, rng: random.Random) -> str:
    if not isinstance(case.run, dict):
        return "none"
    return _mutate_tree(case, "run", rng)


def _samples(case: Case, src: Source, rng: random.Random) -> str:
    if not isinstance(case.samples, dict):
        return "none"
    s = case.samples
    if rng.random() < 0.5 and isinstance(s.get("samples"), list) and s["samples"]:
        rows = s["samples"]
        j = rng.randrange(len(rows))
        row = list(rows[j]) if isinstance(rows[j], list) else rows[j]
        if isinstance(row, list) and row and rng.random() < 0.8:
            row[rng.randrange(len(row))] = _value(rng)
        else:
            row = _value(rng)
        rows[j] = row
        return "samples.row"
    return _mutate_tree(case, "samples", rng)


def _sidecar(case: Case, src: Source, rng: random.Random) -> str:
    if not isinstance(case.sidecar, dict):
        return "none"
    rows = case.sidecar.get("frames")
    if isinstance(rows, list) and rows and rng.random() < 0.6:
        j = rng.randrange(len(rows))
        row = list(rows[j]) if isinstance(rows[j], list) and rows[j] else [None]
        row[rng.randrange(len(row))] = _value(rng)
        rows[j] = row
        return "frames.row"
    return _mutate_tree(case, "sidecar", rng)


def _mutate_tree(case: Case, attr: str, rng: random.Random) -> str:
    """Replace one value anywhere in a JSON tree (run.json, samples.json, the sidecar), or the whole tree."""
    root = getattr(case, attr)
    if rng.random() < 0.05:
        setattr(case, attr, _value(rng))
        return "root"
    node, path = root, []
    while isinstance(node, dict) and node and rng.random() < 0.7:
        k = rng.choice(list(node))
        if not isinstance(node[k], dict) or not node[k]:
            node[k] = _value(rng, node[k])
            return ".".join(path + [k])
        path.append(k)
        node = node[k]
    if isinstance(node, dict) and node:
        k = rng.choice(list(node))
        node[k] = _value(rng, node[k])
        return ".".join(path + [k])
    return "leaf"


_OPS = [
    _event_field,
    _event_field,
    _event_field,
    _event_arg,
    _event_arg,
    _drop,
    _duplicate,
    _swap_types,
    _top,
    _run_json,
    _run_json,
    _samples,
    _sidecar,
    _outliers,
    _dropped_run,
    _spoof,
]


@dataclass
class Outcome:
    kind: str  # "error" (clean), "analysed", "internal"
    message: str = ""
    problems: list[str] = field(default_factory=list)  # impossible figures
    invalid_json: str = ""


def run_case(path: Path) -> Outcome:
    """Analyse a written case as the CLI would (document, JSON, terminal and markdown renderings)."""
    from rich.console import Console

    from idlehound.errors import IdlehoundError
    from idlehound.pipeline import analyze_path
    from idlehound.report._data import check_document
    from idlehound.report.html import render_html
    from idlehound.report.markdown import render_markdown
    from idlehound.report.terminal import render

    try:
        res = analyze_path(path)
        doc = res.doc
        render(doc, Console(file=io.StringIO(), width=120))
        render_markdown(doc)
        page = render_html(doc)
    except IdlehoundError as e:
        msg = str(e)
        if "\n" in msg:
            return Outcome("internal", f"multi-line error: {msg[:200]!r}")
        return Outcome("error", msg)
    except Exception as e:  # noqa: BLE001 - any other exception is what the fuzzer looks for
        return Outcome("internal", f"{type(e).__name__}: {str(e)[:200]}")
    out = Outcome("analysed", problems=check_document(doc) + _raw_controls(page))
    try:
        json.loads(json.dumps(doc), parse_constant=_reject)
    except ValueError as e:
        out.invalid_json = str(e)[:200]
    return out


def _reject(name: str):
    raise ValueError(f"{name} in the JSON output")


_RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _raw_controls(page: str) -> list[str]:
    """Control characters an HTML page would show raw (the JSON data block apart: JSON escapes them)."""
    text = re.sub(r"<script type='application/json'.*?</script>", "", page, flags=re.S)
    m = _RAW.search(text)
    return [f"html: raw {m.group(0)!r} at {text[max(0, m.start() - 40) : m.start()]!r}"] if m else []
