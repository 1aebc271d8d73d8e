"""Moved to idlehound.runfolder; this name stays for tests/unit/test_sampler.py."""

from ..runfolder import read_json, read_run_info, read_samples

__all__ = ["read_json", "read_run_info", "read_samples"]
