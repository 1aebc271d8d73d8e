import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT / "tests" / "traces"
SCRIPTS = ROOT / "tests" / "scripts"
# shared/ lies beside the checkout (developers and CI); IDLEHOUND_SHARED overrides.
SHARED = Path(os.environ.get("IDLEHOUND_SHARED", ROOT.parent / "shared")) / "fixtures" / "kineto_samples"


def shared(name: str) -> Path:
    p = SHARED / name
    if not p.exists():
        pytest.skip(f"shared fixture {name} not present")
    return p


@pytest.fixture
def run_cli():
    """Run the idlehound CLI in a subprocess; returns CompletedProcess."""
    import subprocess

    def _run(*args, cwd=None, env=None, timeout=600):
        full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
        return subprocess.run(
            [sys.executable, "-m", "idlehound", *map(str, args)],
            cwd=cwd,
            env=full_env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    return _run
