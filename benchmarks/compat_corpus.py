"""Load and analyse every trace of a corpus of peers' published traces; check against their expected figures.

    python benchmarks/compat_corpus.py CORPUS_DIR [--tolerance 1.0]

CORPUS_DIR holds copies of Holistic Trace Analysis' tests/data and the retired TensorBoard profiler plugin's
tb_plugin/samples and tb_plugin/test (see docs/compatibility.md for how to fetch them). For every *.json and
*.json.gz file it prints the exit status idlehound's CLI would give (0 analysed, 2 a one-line error, 3 a bug),
the error or the step time, step source, device, breakdown shares and findings. Where the plugin's
result_check_file.txt is present, the ResNet50 samples (num_workers 0 and 4, span 1) are checked category by
category against the plugin's own figures, the data-loading finding must be named on num_workers=0 and not on
num_workers=4, and `compare` of the pair must list it as gone. Exit 1 when a check fails.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Optional

from idlehound.compare import compare_docs
from idlehound.errors import IdlehoundError
from idlehound.pipeline import analyze_path

CATEGORIES = ("Kernel", "Memcpy", "Memset", "Runtime", "DataLoader", "CPU Exec", "Other")
# Lines of result_check_file.txt holding the Overview of span 1 of each run (the plugin test's request order).
PLUGIN_OVERVIEW_LINE = {"resnet50_num_workers_0": 0, "resnet50_num_workers_4": 5}


def trace_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and p.name.endswith((".json", ".json.gz")))


def run_one(path: Path) -> tuple[int, str, Optional[dict[str, Any]]]:
    """(exit status, one-line message, report document) as the CLI would end for `analyze path`."""
    try:
        return 0, "", analyze_path(path).doc
    except IdlehoundError as e:
        return 2, str(e).replace(str(path), "").lstrip(": "), None
    except Exception as e:  # a bug in idlehound: the CLI says "internal error" and exits 3
        return 3, f"internal error: {type(e).__name__}: {e}", None


def summary(doc: dict[str, Any]) -> str:
    step = doc["metrics"]["step_ms"]["value"] or 0.0
    bd = doc["breakdown_ms"]
    shares = " ".join(f"{k}={100 * v / step:.1f}%" for k, v in bd.items() if v and step)
    found = "; ".join(f["cause"] for f in doc["findings"]) or "no findings"
    return (
        f"{step:.2f} ms/step x{len(doc['steps'])} ({doc['trace']['step_source']}) · "
        f"{doc['device']['name'] or 'no device name'} · {shares} · {found}"
    )


def plugin_expected(root: Path) -> dict[str, dict[str, float]]:
    """run -> {'step': µs, category: µs} from the plugin's result_check_file.txt, when present."""
    found = list(root.rglob("result_check_file.txt"))
    if not found:
        return {}
    lines = found[0].read_text().splitlines()
    out = {}
    for run, i in PLUGIN_OVERVIEW_LINE.items():
        perf = json.loads(lines[i])["performance"][0]
        out[run] = {"step": perf["value"], **{c["name"]: c["value"] for c in perf["children"]}}
    return out


def span1(root: Path, run: str) -> Optional[Path]:
    """The plugin's span 1 of worker0: the file whose time stamp sorts first as a string."""
    files = sorted(
        (p for p in root.rglob("worker0.*.pt.trace.json.gz") if p.parent.name == run), key=lambda p: p.name
    )
    return files[0] if files else None


def check_plugin(root: Path, docs: dict[Path, dict[str, Any]], tol_pct: float) -> list[str]:
    failures = []
    expected = plugin_expected(root)
    if not expected:
        print("\n(no tb_plugin/test/result_check_file.txt: plugin figures not checked)")
        return failures
    print(
        f"\nTensorBoard plugin expected figures vs idlehound (ms per step; tolerance {tol_pct}% of the value)"
    )
    pair = {}
    for run, exp in expected.items():
        path = span1(root, run)
        doc = docs.get(path) if path else None
        if doc is None:
            failures.append(f"{run}: sample missing or not analysed")
            continue
        pair[run] = doc
        ours = {"step": doc["metrics"]["step_ms"]["value"], **doc["breakdown_ms"]}
        print(f"  {run} ({path.name})")
        for key in ("step", *CATEGORIES):
            want, got = exp[key] / 1000.0, ours[key]
            dev = 100.0 * abs(got - want) / want if want else (0.0 if got == 0 else float("inf"))
            ok = dev <= tol_pct
            share = f"{100 * got / ours['step']:5.2f}% vs {100 * want / (exp['step'] / 1000.0):5.2f}%"
            print(
                f"    {key:<10} idlehound {got:9.3f}  plugin {want:9.3f}  dev {dev:6.3f}%  share {share}  "
                f"{'ok' if ok else 'FAIL'}"
            )
            if not ok:
                failures.append(f"{run} {key}: {got:.3f} vs {want:.3f} ms")
    causes = {run: [f["cause"] for f in d["findings"]] for run, d in pair.items()}
    for run, want in (("resnet50_num_workers_0", True), ("resnet50_num_workers_4", False)):
        if run in causes:
            named = "data_loading" in causes[run]
            print(f"  {run}: data loading named: {named} (expected {want}); findings {causes[run]}")
            if named != want:
                failures.append(f"{run}: data-loading finding named={named}")
    if len(pair) == 2:
        c = compare_docs(pair["resnet50_num_workers_0"], pair["resnet50_num_workers_4"])
        gone = [f["cause"] for f in c["findings_gone"]]
        print(
            f"  compare num_workers_0 -> num_workers_4: gone {gone}, new {[f['cause'] for f in c['findings_new']]}"
        )
        if "data_loading" not in gone:
            failures.append("compare: the data-loading finding is not listed as gone")
    return failures


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--tolerance", type=float, default=1.0, help="allowed deviation from the plugin, percent")
    args = ap.parse_args(argv)
    files = trace_files(args.corpus)
    if not files:
        print(f"{args.corpus}: no *.json or *.json.gz files", file=sys.stderr)
        return 2
    docs: dict[Path, dict[str, Any]] = {}
    counts = {0: 0, 2: 0, 3: 0}
    for p in files:
        status, msg, doc = run_one(p)
        counts[status] += 1
        if doc is not None:
            docs[p] = doc
        print(f"{status}  {p.relative_to(args.corpus)}\n     {summary(doc) if doc else msg}")
    print(
        f"\n{len(files)} files: {counts[0]} analysed, {counts[2]} one-line errors, {counts[3]} internal errors"
    )
    failures = check_plugin(args.corpus, docs, args.tolerance)
    if counts[3]:
        failures.append(f"{counts[3]} internal error(s)")
    print("\nall checks passed" if not failures else "\nFAILED: " + "; ".join(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
