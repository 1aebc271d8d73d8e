"""Moved to idlehound.runfolder; this name stays for tests/test_capture_faults.py."""

from ..runfolder import check_run_name, make_dir, new_run_dir, shared_run_dir, usable_logdir

__all__ = ["check_run_name", "make_dir", "new_run_dir", "shared_run_dir", "usable_logdir"]
