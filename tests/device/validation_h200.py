"""Issue 30, item 5: validation registered before the A/B, on public training loops the model was never tuned on.

The loops are pytorch/examples scripts, run unmodified on synthetic data (random MNIST idx files, a random
Cora-shaped graph, a random word corpus; dcgan and imagenet bring their own FakeData). They are not part of this
repository: copy them from a snapshot (`git archive` of pytorch/examples at the commit in .ext/examples/COMMIT)
to .ext/examples/ and carry that folder to the GPU machine.

    python3 tests/device/validation_h200.py record OUT [names...]
        records each loop under `idlehound run` (window after `skip` steps, --stop-after, no report) and packs the
        run folders into OUT/fresh_runs.tgz; the reports are made and committed elsewhere, before any A/B.
    python3 tests/device/validation_h200.py ab OUT PLAN.json
        interleaved A/B without the profiler: per round, every variant of a loop once (the order rotated each
        round), each a fresh process timed by ab_time.py (CUDA events after `skip` steps); OUT/ab.json.

PLAN.json: {"rounds": 3, "loops": {NAME: {"variants": {VARIANT: {"replace": [[old, new], ...],
"args": [[old, new], ...], "extra": [...]}}}}}: a variant is the base script with exact text replaced (each old
text must occur), arguments swapped or added; "base" is the script as published.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import struct
import subprocess
import sys
import tarfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))

from _common import log  # noqa: E402

EXAMPLES = ROOT / ".ext" / "examples"
WORK = Path("/tmp/idlehound-validation")
# name: (folder, script, args, skip): the window and the A/B's timing both start after `skip` steps.
LOOPS: dict[str, tuple[str, str, list[str], int]] = {
    "wlm_lstm": ("word_language_model", "main.py", ["--accel", "--use-optimizer", "--epochs", "1"], 30),
    "dcgan": ("dcgan", "main.py", ["--dataset", "fake", "--accel", "--niter", "6"], 24),
    "vae": ("vae", "main.py", ["--epochs", "1"], 30),
    "mnist": ("mnist", "main.py", ["--epochs", "1"], 30),
    "imagenet_r18": (
        "imagenet",
        "main.py",
        ["--dummy", "-a", "resnet18", "-b", "256", "--gpu", "0", "-j", "4", "--epochs", "1"],
        20,
    ),
    "gat": ("gat", "main.py", [], 30),
    "siamese": ("siamese_network", "main.py", ["--epochs", "1"], 30),
    "mnist_rnn": ("mnist_rnn", "main.py", ["--accel", "--epochs", "1"], 30),
}
AB_STEPS = {"imagenet_r18": 30}


def prepare() -> None:
    """A fresh copy of the examples with synthetic data where the script would download."""
    shutil.rmtree(WORK, ignore_errors=True)
    shutil.copytree(EXAMPLES, WORK)
    rng = random.Random(0)
    raw = WORK / "data" / "MNIST" / "raw"
    raw.mkdir(parents=True)
    for prefix, n in (("train", 60000), ("t10k", 10000)):
        (raw / f"{prefix}-images-idx3-ubyte").write_bytes(
            struct.pack(">IIII", 2051, n, 28, 28) + os.urandom(n * 784)
        )
        labels = bytes(rng.randrange(10) for _ in range(n))
        (raw / f"{prefix}-labels-idx1-ubyte").write_bytes(struct.pack(">II", 2049, n) + labels)
    _cora(WORK / "gat" / "cora", rng)
    _corpus(WORK / "word_language_model" / "data" / "wikitext-2", rng)


def _cora(folder: Path, rng: random.Random, nodes: int = 2708, feats: int = 1433, edges: int = 5429) -> None:
    folder.mkdir(parents=True)
    ids = rng.sample(range(1, 10**6), nodes)
    classes = ["Case_Based", "Genetic_Algorithms", "Neural_Networks", "Probabilistic_Methods"]
    classes += ["Reinforcement_Learning", "Rule_Learning", "Theory"]
    with open(folder / "cora.content", "w") as f:
        for i in ids:
            row = ["1" if rng.random() < 0.013 else "0" for _ in range(feats)]
            row[rng.randrange(feats)] = "1"
            f.write(f"{i}\t" + "\t".join(row) + f"\t{rng.choice(classes)}\n")
    with open(folder / "cora.cites", "w") as f:
        for _ in range(edges):
            f.write(f"{rng.choice(ids)}\t{rng.choice(ids)}\n")


def _corpus(folder: Path, rng: random.Random) -> None:
    """A Zipf-like random corpus with wikitext-2's vocabulary size (33k words), 600k training tokens (857 batches)."""
    folder.mkdir(parents=True)
    vocab = [f"w{i}" for i in range(33000)]
    weights = [1.0 / (r + 1) for r in range(len(vocab))]
    for name, tokens in (("train", 600_000), ("valid", 60_000), ("test", 60_000)):
        words = rng.choices(vocab, weights=weights, k=tokens)
        lines = [" ".join(words[i : i + 90]) for i in range(0, tokens, 90)]
        (folder / f"{name}.txt").write_text("\n".join(lines) + "\n")


def _env() -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONUNBUFFERED": "1",
        "PYTHONPATH": f"{ROOT / 'src'}:{os.environ.get('PYTHONPATH', '')}",
    }


def record(out: Path, names: list[str]) -> int:
    prepare()
    runs = out / "runs"
    for name in names or list(LOOPS):
        folder, script, args, skip = LOOPS[name]
        cmd = [sys.executable, "-m", "idlehound", "run", "--logdir", str(runs / name), "--name", name]
        cmd += [
            "--skip",
            str(skip),
            "--warmup",
            "2",
            "--active",
            "5",
            "--stop-after",
            "--no-report",
            script,
            *args,
        ]
        t0 = time.time()
        try:
            p = subprocess.run(
                cmd, cwd=WORK / folder, env=_env(), capture_output=True, text=True, timeout=150
            )
            rc, tail = p.returncode, (p.stdout + p.stderr)[-1500:]
        except subprocess.TimeoutExpired:
            rc, tail = "timeout", ""
        done = sorted((runs / name).glob("*/run.json"))
        log(out, f"{name}: rc={rc} {len(done)} run folder(s) in {time.time() - t0:.0f} s")
        if rc != 0 or not done:
            log(out, tail)
    with tarfile.open(out / "fresh_runs.tgz", "w:gz") as tar:
        tar.add(runs, arcname="runs")
    return 0


def variant_script(name: str, variant: str, spec: dict) -> tuple[Path, list[str]]:
    """The script of one variant (a patched copy beside the original) and its arguments."""
    folder, script, args, _ = LOOPS[name]
    path = WORK / folder / script
    text = path.read_text()
    for old, new in spec.get("replace", []):
        if old not in text:
            raise SystemExit(f"{name}/{variant}: {old!r} not in {script}")
        text = text.replace(old, new)
    if spec.get("replace"):
        path = path.with_name(f"{path.stem}__{re.sub(r'[^A-Za-z0-9_]', '_', variant)}.py")
        path.write_text(text)
    args = list(args)
    for old, new in spec.get("args", []):
        args[args.index(old)] = new
    return path, args + list(spec.get("extra", []))


def ab(out: Path, plan_file: Path) -> int:
    plan = json.loads(plan_file.read_text())
    prepare()
    rows = []
    start = time.time()
    budget = float(os.environ.get("AB_BUDGET", "0"))
    for name, loop in plan["loops"].items():
        if budget and time.time() - start > budget:
            log(out, f"A/B budget of {budget:.0f} s spent: {name} and later loops not measured")
            break
        skip = LOOPS[name][3]
        steps = loop.get("steps", AB_STEPS.get(name, 40))
        variants = list(loop["variants"])
        for r in range(plan.get("rounds", 3)):
            order = variants[r % len(variants) :] + variants[: r % len(variants)]
            for v in order:
                path, args = variant_script(name, v, loop["variants"][v])
                cmd = [sys.executable, str(HERE / "ab_time.py"), str(skip), str(steps), str(path), *args]
                try:
                    p = subprocess.run(
                        cmd, cwd=path.parent, env=_env(), capture_output=True, text=True, timeout=120
                    )
                    found = re.findall(r"AB_MS ([0-9.]+)", p.stdout)
                    ms = float(found[-1]) if found else None
                    err = "" if found else (p.stdout + p.stderr)[-600:]
                except subprocess.TimeoutExpired:
                    ms, err = None, "timeout"
                rows.append({"loop": name, "variant": v, "round": r, "ms": ms})
                log(out, f"{name} {v} round {r}: {ms} ms {err}")
                (out / "ab.json").write_text(json.dumps({"rows": rows, "summary": summary(rows)}, indent=1))
    log(out, json.dumps(summary(rows), indent=1))
    return 0


def summary(rows: list[dict]) -> dict:
    """Per loop and variant: mean ms and the gain over base (mean of per-round paired gains, its spread)."""
    out: dict = {}
    for name in dict.fromkeys(r["loop"] for r in rows):
        mine = [r for r in rows if r["loop"] == name and r["ms"]]
        base = {r["round"]: r["ms"] for r in mine if r["variant"] == "base"}
        out[name] = {}
        for v in dict.fromkeys(r["variant"] for r in mine):
            ms = {r["round"]: r["ms"] for r in mine if r["variant"] == v}
            entry: dict = {"mean_ms": round(statistics.fmean(ms.values()), 3), "rounds": len(ms)}
            gains = [(base[k] - ms[k]) / base[k] for k in ms if k in base]
            if v != "base" and gains:
                entry["gain"] = round(statistics.fmean(gains), 4)
                entry["gain_min"], entry["gain_max"] = round(min(gains), 4), round(max(gains), 4)
            out[name][v] = entry
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mode", choices=["record", "ab"])
    ap.add_argument("out", type=Path)
    ap.add_argument("rest", nargs="*")
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    return record(a.out, a.rest) if a.mode == "record" else ab(a.out, Path(a.rest[0]))


if __name__ == "__main__":
    raise SystemExit(main())
