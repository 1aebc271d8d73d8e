"""Issue 19 on an H200, in about 9 minutes: `idlehound tune` on the blog's baseline script (>= 5x in under 5
minutes, losses checked), then on a Hugging Face Trainer script and a Lightning script with a tight budget; each
recommended change's diff is applied with `patch --dry-run` and re-measured by an independent interleaved A/B
(no profiler, CUDA events, >= 3 rounds); channels_last on GPT-2 must come out "not applicable".

    OUT=/some/folder python tests/device/tune_h200.py        # repo root, on the GPU machine
    TUNE_H200_TINY=1 OUT=/tmp/t python tests/device/tune_h200.py   # the same flow, tiny, on a CPU

Writes under $OUT: summary.txt (what the lead reads), blog.json, hf.json, pl.json (the tune documents),
ab.json (the A/B runs) and logs.tgz (the tune folders and the commands' output). Budgets: BLOG_BUDGET,
FRAMEWORK_BUDGET (seconds), AB_ROUNDS; TOTAL_S (default 560) caps the whole: later phases get what is left.
PHASES (default blog,hf,pl) picks the phases to run. Three tunes with 3-round intervals and the A/B runs do not
all fit one 10-minute call: the one call does what fits (the summary says what was cut); for every phase with its
full budget, call it twice: PHASES=blog, then PHASES=hf,pl (about 7 minutes, the A/B runs included).
"""

from __future__ import annotations

import json
import math
import os
import random
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "src"))
TINY = os.environ.get("TUNE_H200_TINY") == "1"
OUT = Path(os.environ.get("OUT") or tempfile.mkdtemp(prefix="tune_h200_"))
WORK = Path(tempfile.mkdtemp(prefix="tune_h200_work_"))
CACHE = os.environ.get("IDLEHOUND_CACHE") or tempfile.mkdtemp(
    prefix="tune_h200_cache_"
)  # the synthetic CIFAR
ENV = {
    **os.environ,
    "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
    "PYTHONUNBUFFERED": "1",
    "COLUMNS": "170",
    "IDLEHOUND_CACHE": CACHE,
}
if TINY:
    ENV["IDLEHOUND_TUNE_COMPILE_BACKEND"] = "eager"  # no C++ compile on the CPU
BLOG_BUDGET = float(os.environ.get("BLOG_BUDGET", 1500 if TINY else 290))  # a shared CPU is slow; < 5 min
FRAMEWORK_BUDGET = float(os.environ.get("FRAMEWORK_BUDGET", 1500 if TINY else 150))
DEADLINE = time.monotonic() + float(os.environ.get("TOTAL_S", 6000 if TINY else 560))


def left() -> float:
    return DEADLINE - time.monotonic()


AB_ROUNDS = int(os.environ.get("AB_ROUNDS", 2 if TINY else 3))
SUMMARY = OUT / "summary.txt"
AB: list[dict] = []


def log(line: str) -> None:
    line = f"{time.strftime('%H:%M:%S')} {line}"
    print(line, flush=True)
    with SUMMARY.open("a") as f:
        f.write(line + "\n")


def sh(cmd: list[str], name: str, timeout: float) -> subprocess.CompletedProcess:
    """Run cmd; its stdout and stderr go to logs/NAME.out/.err (into logs.tgz)."""
    logs = WORK / "logs"
    logs.mkdir(exist_ok=True)
    try:
        r = subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout, env=ENV, cwd=ROOT, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired as e:
        r = subprocess.CompletedProcess(cmd, 124, e.stdout or "", e.stderr or "")
        r.stdout = r.stdout.decode() if isinstance(r.stdout, bytes) else r.stdout
        r.stderr = r.stderr.decode() if isinstance(r.stderr, bytes) else r.stderr
    (logs / f"{name}.out").write_text(r.stdout or "")
    (logs / f"{name}.err").write_text(r.stderr or "")
    return r


def tune(name: str, script: Path, budget: float, extra: list[str], args: list[str]) -> dict | None:
    cmd = [
        sys.executable,
        "-m",
        "idlehound",
        "tune",
        "--json",
        "--budget",
        str(budget),
        "--logdir",
        str(WORK / "tune"),
        *extra,
        str(script),
        *args,
    ]
    start = time.monotonic()
    r = sh(cmd, f"tune_{name}", budget + (1200 if TINY else 120))  # the budget leaves the last runs out
    wall = time.monotonic() - start
    if r.returncode != 0:
        tail = (r.stderr.strip().splitlines() or ["no output"])[-1]
        log(f"{name}: tune FAILED rc={r.returncode} after {wall:.0f} s: {tail}")
        return None
    doc = json.loads(r.stdout)
    doc["device_wall_s"] = round(wall, 1)
    (OUT / f"{name}.json").write_text(json.dumps(doc, indent=2))
    log(
        f"{name}: tune rc=0 wall {wall:.0f} s (budget {budget:g} s); causes {', '.join(doc['diagnosed_causes'])}; "
        f"prediction {'yes' if doc.get('prediction', {}).get('available') else 'no'}"
    )
    for v in doc["variants"]:
        log("  " + _variant_line(v))
    best = doc["best"]
    log(
        f"  best: {best['candidate']} {best['speedup']:.2f}x {best.get('speedup_ci')}"
        if best
        else "  best: none"
    )
    return doc


def _variant_line(v: dict) -> str:
    from idlehound.report.tune import verdict, versus

    speed = f"{v['speedup']:.2f}x" if v.get("speedup") else "-"
    return (
        f"{v['candidate']:<22} {v['status']:<15} speed-up {speed:<7} {versus(v)} | {verdict(v)} | "
        f"{v.get('loss_check') or ''}"
    )


def check_blog(doc: dict | None) -> None:
    if doc is None:
        return
    best = doc["best"]
    ran = [v for v in doc["variants"][1:] if v["status"] in ("ok", "rejected")]
    checked = all(v["loss_check"] and ": ok" in v["loss_check"] for v in ran if v["status"] == "ok")
    speed = best["speedup"] if best else 1.0
    log(
        f"blog: TARGET best {speed:.2f}x (>= 5x: {'yes' if speed >= 5 else 'NO'}), "
        f"wall {doc['device_wall_s']:.0f} s (< 300 s: {'yes' if doc['device_wall_s'] < 300 else 'NO'}), losses checked on every kept variant: "
        f"{'yes' if checked else 'NO'}"
    )


def ab(name: str, script: Path, doc: dict, variant: dict, args: list[str]) -> None:
    """Apply the variant's diff to a copy (patch --dry-run first), then time the copy against the script as
    written, interleaved in random order each round, and say whether tune's interval holds the A/B ratio."""
    from idlehound.tune._diff import make_diff

    diff = (
        doc["diff"]
        if variant is doc["best"] and doc["diff"]
        else make_diff(script, variant["settings"], variant.get("graphed_inputs"))[0]
    )
    if not diff:
        log(f"{name}: {variant['candidate']}: no diff (snippets only): not A/B-tested")
        return
    folder = WORK / f"ab_{name}_{variant['candidate']}"
    folder.mkdir()
    shutil.copy(script, folder / script.name)
    (folder / "change.patch").write_text(diff)
    dry = subprocess.run(
        ["patch", "--dry-run", "-p1", "-i", "change.patch"], cwd=folder, capture_output=True, text=True
    )
    log(f"{name}: {variant['candidate']}: patch --dry-run rc={dry.returncode} {dry.stdout.strip()[:200]}")
    if dry.returncode != 0:
        return
    subprocess.run(["patch", "-p1", "-i", "change.patch"], cwd=folder, capture_output=True, check=True)
    skip, steps = (3, 6) if TINY else (doc["skip"], doc["steps"])
    times: dict[str, list[float]] = {"as written": [], "changed": []}
    rng = random.Random(0)
    for rnd in range(AB_ROUNDS):
        order = list(times)
        rng.shuffle(order)
        for arm in order:
            path = script if arm == "as written" else folder / script.name
            r = sh(
                [sys.executable, str(HERE / "ab_time.py"), str(skip), str(steps), str(path), *args],
                f"ab_{name}_{variant['candidate']}_{arm.replace(' ', '_')}_{rnd}",
                600,
            )
            got = [ln.split()[1] for ln in r.stdout.splitlines() if ln.startswith("AB_MS ")]
            if got:
                times[arm].append(float(got[0]))
    if not all(len(t) == AB_ROUNDS for t in times.values()):
        log(f"{name}: {variant['candidate']}: A/B incomplete {times}")
        AB.append(
            {"script": name, "variant": variant["candidate"], "times_ms": times, "status": "incomplete"}
        )
        return
    from idlehound.tune._stats import interval

    iv = interval([math.log(a / b) for a, b in zip(times["as written"], times["changed"])])
    ratio, own = iv.estimate, [round(iv.low, 3), round(iv.high, 3)]
    ci = variant.get("speedup_ci")
    holds = bool(ci) and ci[0] <= ratio <= ci[1]
    overlap = bool(ci) and own[0] <= ci[1] and ci[0] <= own[1]
    log(
        f"{name}: {variant['candidate']}: A/B {AB_ROUNDS} rounds: as written {times['as written']} ms, changed "
        f"{times['changed']} ms: {ratio:.3f}x (its 95% interval {own}) vs tune {variant['speedup']}x {ci}: "
        f"{'REPRODUCES within the interval' if holds else 'does NOT reproduce within the interval'}"
        f"{'' if holds else ' (the intervals overlap)' if overlap else ' (the intervals do not overlap)'}"
    )
    AB.append(
        {
            "script": name,
            "variant": variant["candidate"],
            "times_ms": times,
            "ratio": round(ratio, 4),
            "ratio_ci": own,
            "tune_speedup": variant["speedup"],
            "tune_ci": ci,
            "reproduces": holds,
            "intervals_overlap": overlap,
        }
    )


TINY_TRY = {
    "hf": "hf_nan_filter,channels_last",
    "pl": "pl_log_epoch,pl_compile,pl_benchmark",  # pl_benchmark: no conv
}


def framework(name: str, script: Path, later: int) -> list:
    """Tune one framework script; returns its (script, doc, variant) A/B jobs. `later`: framework tunes still to
    come after this one, each kept 120 s of what is left (the least that fits one experiment on an H200)."""
    steps = (
        [
            "--skip",
            "3",
            "--steps",
            "6",
            "--min-rounds",
            "2",
            "--max-rounds",
            "2",
            "--no-diagnose",
            "--try",
            TINY_TRY[name],
        ]
        if TINY
        else ["--skip", "10", "--steps", "40", "--min-rounds", "3", "--max-rounds", "4"]
    )
    budget = min(FRAMEWORK_BUDGET, left() - 40 - later * 120)
    if budget < 60:
        log(f"{name}: not run: {left():.0f} s left of TOTAL_S (run it alone with PHASES={name})")
        return []
    doc = tune(name, script, round(budget), steps, [])
    if doc is None:
        return []
    v = {x["candidate"]: x for x in doc["variants"]}
    if name == "hf":
        cl = v.get("channels_last")
        ok = cl is not None and cl["status"] == "not applicable"
        log(
            f"hf: channels_last on GPT-2: {cl['status'] + ': ' + cl['reason'] if cl else 'not proposed'} -> "
            f"{'OK' if ok else 'CHECK' if cl is None else 'WRONG'}"
        )
    recommended = [x for x in doc["variants"][1:] if x["status"] == "ok" and x.get("effect") == "faster"]
    if doc["best"] is not None and doc["best"]["candidate"] not in [x["candidate"] for x in recommended]:
        recommended.insert(0, doc["best"])
    if not recommended and TINY and name == "hf":  # exercise the patch and A/B path on the CPU too
        recommended = [x for x in doc["variants"][1:] if x["status"] == "ok"][:1]
    if not recommended:
        log(f"{name}: no change recommended (none measurably faster with the losses kept): nothing to A/B")
    best = doc["best"]
    return [
        (name, script, doc, best if best and x["candidate"] == best["candidate"] else x) for x in recommended
    ]


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    probe = "import torch; print(torch.__version__, torch.cuda.get_device_name() if torch.cuda.is_available() else 'cpu')"
    machine = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True).stdout.strip()
    log(
        f"tune_h200{' (tiny)' if TINY else ''}: {machine}, {os.cpu_count()} cores; budgets blog {BLOG_BUDGET:g} s, "
        f"frameworks {FRAMEWORK_BUDGET:g} s"
    )
    try:
        blog_args = ["--image-size", "32", "--batch-size", "8"] if TINY else []
        blog_opts = (
            [
                "--skip",
                "2",
                "--steps",
                "6",
                "--min-rounds",
                "2",
                "--max-rounds",
                "2",
                "--no-diagnose",
                "--try",
                "workers2",
            ]
            if TINY
            else []
        )  # a CPU diagnosis proposes nothing
        phases = os.environ.get("PHASES", "blog,hf,pl").split(",")
        if "blog" in phases:
            check_blog(
                tune(
                    "blog", ROOT / "examples" / "train_resnet18_cifar10.py", BLOG_BUDGET, blog_opts, blog_args
                )
            )
        frameworks = [
            (n, s) for n, s in (("hf", "tune_hf_gpt2.py"), ("pl", "tune_pl_encoder.py")) if n in phases
        ]
        jobs = []
        for i, (name, script) in enumerate(frameworks):  # the tunes first, then the A/B runs in the time left
            jobs += framework(name, HERE / script, len(frameworks) - i - 1)
        for name, script, doc, variant in jobs:
            if left() < 60:
                log(f"{name}: {variant['candidate']}: A/B not run: {left():.0f} s left of TOTAL_S")
                continue
            ab(name, script, doc, variant, [])
    finally:
        (OUT / "ab.json").write_text(json.dumps(AB, indent=2))
        with tarfile.open(OUT / "logs.tgz", "w:gz") as tar:
            tar.add(
                WORK,
                arcname="tune_h200",
                filter=lambda t: (
                    None if "compile_cache" in t.name or t.name.endswith(".pt.trace.json.gz") else t
                ),
            )
        log(f"done in {time.monotonic() - start:.0f} s; files under {OUT}")


if __name__ == "__main__":
    main()
