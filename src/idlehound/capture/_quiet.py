"""Keep Kineto's start-up chatter off the user's terminal, and nothing else.

On every run Kineto writes `USDT:... profiler_start/stop` lines, and on a machine without a GPU
`ERROR:... gpuGetDeviceCount failed`: neither says anything wrong. Around our own profiler calls stderr is caught
at the file-descriptor level (Kineto writes from C++) and replayed without those lines; any other line, a real
warning included, is kept in order.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from collections.abc import Iterator

NOISE = re.compile(rb"^(USDT:|STAGE:|ERROR:.*\] gpuGetDeviceCount failed)")  # STAGE: older Kineto's stages


@contextlib.contextmanager
def kineto_quiet() -> Iterator[None]:
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):  # no real stderr (embedded, closed): nothing to filter
        yield
        return
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield
        finally:
            with contextlib.suppress(OSError, ValueError, AttributeError):  # the script may have replaced it
                sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            kept = b"".join(line for line in tmp.read().splitlines(keepends=True) if not NOISE.match(line))
            if kept:
                with contextlib.suppress(OSError):  # a closed or broken stderr must not fail a training step
                    os.write(2, kept)
