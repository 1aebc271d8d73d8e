"""tune's loader diff on every pytorch/examples script with a DataLoader, on both branches (issue 32, item 11).

For each script: the diff of tune's `workers2` candidate (num_workers=2, persistent_workers, pin_memory,
prefetch_factor=4, non_blocking copies) is made, applied with `patch -p1` to a copy of the script's folder,
and the original and the changed script are run (idlehound.tune._branches) with torch's accelerator forced
off (CPU) and forced on, each until it first iterates a loader. "broken" is a DataLoader call that raised on the
changed script (a keyword passed twice, prefetch_factor without workers); an error elsewhere, as in the
original, only ends the check early ("stopped"). Data sets are stand-ins (no network): torchvision's data set
classes give 64 blank samples.

    python benchmarks/tune_examples_branches.py PATH/TO/pytorch-examples

Prints one row per script and branch and the count of broken ones; exits 1 when any is broken.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from idlehound.tune._candidates import all_candidates
from idlehound.tune._diff import make_diff

_STANDINS = r"""
import sys, torch
import torch.utils.data as tud
class _Blank(tud.Dataset):
    def __init__(self, *a, transform=None, **k):
        self.data = torch.zeros(64, 28, 28, dtype=torch.uint8)
        self.targets = torch.arange(64) % 10
        self.classes = [str(i) for i in range(10)]
        self.transform = transform
    def __len__(self):
        return 64
    def __getitem__(self, i):
        return torch.zeros(1, 28, 28), int(self.targets[i])
try:
    import torchvision.datasets as tvd
    for name in ("MNIST", "FashionMNIST", "CIFAR10", "CIFAR100", "ImageFolder", "LSUN", "SVHN", "CelebA",
                 "ImageNet", "BSDS300"):
        setattr(tvd, name, _Blank)
except ImportError:
    pass
from idlehound.tune._branches import main
main()
"""


# what a script needs on its command line to reach its loaders (its required options, with stand-in values)
_ARGS = {
    "dcgan/main.py": ["--dataset", "fake", "--dataroot", "."],
    "distributed/ddp-tutorial-series/single_gpu.py": ["1", "1"],
    "distributed/ddp-tutorial-series/multigpu.py": ["1", "1"],
    "distributed/ddp-tutorial-series/multigpu_torchrun.py": ["1", "1"],
    "distributed/ddp-tutorial-series/multinode.py": ["1", "1"],
}


def _flags(source: str, accel: bool) -> list[str]:
    """The script's own switch for the branch, when it has one (opt-in --accel, opt-out --no-accel)."""
    if accel:
        return ["--accel"] if "'--accel'" in source or '"--accel"' in source else []
    return [f for f in ("--no-accel", "--no-cuda") if f"'{f}'" in source or f'"{f}"' in source][:1]


def _check(script: Path, rel: str, accel: bool, work: Path) -> dict:
    out = work / "branch.json"
    out.unlink(missing_ok=True)
    args = _ARGS.get(rel, []) + _flags(script.read_text(encoding="utf-8"), accel)
    cmd = [sys.executable, "-c", _STANDINS, str(out), "accel" if accel else "cpu", str(script), *args]
    try:
        r = subprocess.run(cmd, cwd=script.parent, capture_output=True, text=True, timeout=180)
    except subprocess.TimeoutExpired:
        return {"broken": "", "stopped": "timed out (180 s)", "built": []}
    if not out.exists():
        tail = (r.stderr.strip().splitlines() or ["no output"])[-1]
        return {"broken": "", "stopped": f"child failed: {tail[:80]}", "built": []}
    return json.loads(out.read_text())


def _patched(script: Path, root: Path, work: Path, settings: dict) -> tuple[Path, Path, str]:
    """(original copy, changed copy, "" or why the diff did not apply); each in a copy of its folder."""
    rel = script.relative_to(root)
    orig, new = work / "orig", work / "new"
    for d in (orig, new):
        shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(script.parent, d / rel.parent, ignore=shutil.ignore_patterns("data", "*.pt"))
    diff, _ = make_diff(script, settings)
    if not diff:
        return orig / rel, new / rel, "no diff"
    (work / "d.patch").write_text(diff, encoding="utf-8")
    r = subprocess.run(
        ["patch", "-p1", "-i", str(work / "d.patch")], cwd=new / rel.parent, capture_output=True, text=True
    )
    return orig / rel, new / rel, "" if r.returncode == 0 else f"patch failed: {r.stdout.strip()[:80]}"


def main() -> None:
    root = Path(sys.argv[1]).resolve()
    settings = {c.name: c for c in all_candidates(2, cuda=True)}["workers2"].settings
    scripts = sorted(p for p in root.rglob("*.py") if "DataLoader(" in p.read_text(encoding="utf-8"))
    broken = checked = 0
    print(f"{'script':50} {'branch':6} {'loaders':>7}  result")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for script in scripts:
            rel = str(script.relative_to(root))
            orig, new, why = _patched(script, root, work, settings)
            if why:
                broken += why != "no diff"
                print(f"{rel:50} {'-':6} {'-':>7}  {why}")
                continue
            for accel in (False, True):
                before, after = _check(orig, rel, accel, work), _check(new, rel, accel, work)
                branch = "accel" if accel else "cpu"
                if after["broken"] and not before["broken"]:
                    broken += 1
                    result = f"BROKEN: {after['broken']}"
                elif after["built"]:
                    checked += 1
                    result = "ok" + (f" (then {after['stopped']})" if after["stopped"] else "")
                else:
                    result = f"not reached: {after['stopped'] or before['stopped']}"
                print(f"{rel:50} {branch:6} {len(after['built']):>7}  {result[:100]}")
    print(f"\n{len(scripts)} scripts; {checked} script-branches built their loaders changed; {broken} broken")
    sys.exit(1 if broken else 0)


if __name__ == "__main__":
    main()
