"""CIFAR10 in torchvision's on-disk format: the real data when given, else a synthetic copy written once.

Nothing can be downloaded here, so the synthetic set is written in the exact `cifar-10-batches-py` pickle
layout and read back through torchvision.datasets.CIFAR10 itself: the loading path is the real one.
"""

from __future__ import annotations

import hashlib
import json
import pickle
from pathlib import Path
from typing import Any, Optional

import numpy as np

from .. import settings

MARKER = "IDLEHOUND_SYNTHETIC"
_BATCHES = ["data_batch_1", "data_batch_2", "data_batch_3", "data_batch_4", "data_batch_5"]
CLASSES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]


def write_synthetic(root: Path, per_batch: int = 10000, test: int = 10000, seed: int = 0) -> Path:
    """Write cifar-10-batches-py under root (5 training batches of per_batch images, one test batch)."""
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    for i, name in enumerate([*_BATCHES, "test_batch"]):
        n = test if name == "test_batch" else per_batch
        labels = rng.integers(0, 10, n)
        # Class-dependent colour bias plus noise, so the labels are learnable.
        base = (labels[:, None] * 23 % 256).astype(np.uint8)
        data = (rng.integers(0, 128, (n, 3072), dtype=np.uint8) + base).astype(np.uint8)
        # Keys as torchvision reads them (pickle.load(..., encoding="latin1") of the published files).
        entry = {
            "batch_label": f"synthetic batch {i + 1}",
            "labels": labels.tolist(),
            "data": data,
            "filenames": [f"synthetic_{i}_{j}.png" for j in range(n)],
        }
        with open(folder / name, "wb") as f:
            pickle.dump(entry, f, protocol=2)
    with open(folder / "batches.meta", "wb") as f:
        pickle.dump(
            {"label_names": CLASSES, "num_cases_per_batch": per_batch, "num_vis": 3072}, f, protocol=2
        )
    sums = {name: _md5(folder / name) for name in [*_BATCHES, "test_batch", "batches.meta"]}
    (folder / MARKER).write_text(json.dumps({"per_batch": per_batch, "md5": sums}))
    return root


def _md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes()).hexdigest()


def ensure_data(data: Optional[Path] = None, per_batch: int = 10000) -> tuple[Path, bool]:
    """(root, synthetic): the user's CIFAR10 if `data` holds it, else a cached synthetic copy."""
    if data is not None and (Path(data) / "cifar-10-batches-py" / "data_batch_1").exists():
        return Path(data), False
    root = settings.cache_dir() / f"cifar10-synthetic-{per_batch}"
    if not (root / "cifar-10-batches-py" / MARKER).exists():
        write_synthetic(root, per_batch=per_batch, test=max(per_batch // 5, 100))
    return root, True


def cifar10(root: Path, train: bool = True, transform: Any = None, synthetic: bool = False) -> Any:
    """torchvision.datasets.CIFAR10 over root; the md5 check is skipped only for the synthetic copy."""
    from torchvision.datasets import CIFAR10

    if not synthetic:
        return CIFAR10(str(root), train=train, transform=transform, download=False)

    sums = json.loads((Path(root) / "cifar-10-batches-py" / MARKER).read_text())["md5"]

    class SyntheticCIFAR10(CIFAR10):  # type: ignore[misc]  # torchvision is not followed: Any
        # Same files and checks as the real set; only the checksums are those of the synthetic copy.
        train_list = [[name, sums[name]] for name in _BATCHES]
        test_list = [["test_batch", sums["test_batch"]]]
        meta = {**CIFAR10.meta, "md5": sums["batches.meta"]}

    return SyntheticCIFAR10(str(root), train=train, transform=transform, download=False)
