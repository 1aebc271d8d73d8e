"""Framework integrations: profile a window of steps from inside a Trainer or a hand-written loop.

    from idlehound.integrations.lightning import IdlehoundCallback      # Lightning Trainer(callbacks=[...])
    from idlehound.integrations.transformers import IdlehoundCallback   # HF Trainer(callbacks=[...])
    from idlehound.integrations import profile_steps                    # accelerate / plain loops

Each writes the same run folder as `idlehound run` (trace, sidecar, run.json, report.*). The framework
modules are imported only when you import their integration, so idlehound itself needs neither.
"""

from __future__ import annotations

from ._window import Window, headline, profile_steps

__all__ = ["Window", "headline", "profile_steps"]

__all__ = ["Window", "headline", "profile_steps"]
