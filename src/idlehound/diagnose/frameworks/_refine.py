"""The framework rule: phrase fixes as the settings of the framework that runs the loop, name the framework
behind the sync points, and report a matched source as a risk where no GPU timeline shows its wait."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace
from typing import Optional

import numpy as np

from ...analysis import Analysis, SourceLoc
from ...vocabulary import Cause, FixName, Kind, Severity
from .._finding import Finding
from .._rule import PYTHON_STACKS, Rule
from ._match import _OWN_FRAMES, FrameworkMatch, _loc_json, _where, find_matches, source_text, sync_stacks
from ._table import Framework

EVIDENCE_MATCHES = 4  # framework matches named in the evidence (all are in details)


def refine(frameworks: tuple[Framework, ...]) -> Rule:
    """The rule that refines the other rules' findings with these frameworks' knowledge."""

    def annotate(a: Analysis, findings: list[Finding]) -> list[Finding]:
        return _annotate(a, findings, frameworks)

    return Rule.of(
        Cause.FRAMEWORK_SYNC,
        "a framework's own code reads tensor values (names the setting that fixes it)",
        (PYTHON_STACKS,),
        refine=annotate,
    )


def _annotate(a: Analysis, findings: list[Finding], frameworks: tuple[Framework, ...]) -> list[Finding]:
    """The sync finding's fix as the framework's own when a framework caused the syncs (its entries), and the
    generic causes' (loader, launches, fp32 math) when a Trainer runs the loop (its settings).

    Without a GPU timeline there is no sync finding (nothing idles): a matched framework source is then
    reported as a risk, since on a GPU the same reads wait for it. Where nothing matches, findings are unchanged.
    """
    findings = _runner_settings(a, findings, frameworks)
    entries = tuple(sorted((e for f in frameworks for e in f.entries), key=lambda e: e.order))
    try:
        matches = find_matches(a, entries) if a.trace.with_stack else []
    except Exception:  # a best-effort refinement: never lose the generic findings over it
        matches = []
    if not matches:
        return _library_evidence(a, findings)
    sync = next((f for f in findings if f.cause == Cause.SYNC), None)
    if sync is not None:
        return [_named(sync, matches, a.n_steps) if f is sync else f for f in findings]
    if a.gpu_recorded:
        return findings  # the GPU did not wait on these reads long enough to matter
    return [*findings, _risk(a, matches)]


def _lines(matches: list[FrameworkMatch], n_steps: int) -> list[str]:
    return [
        f"{m.library_str()}: {m.entry.title}, {m.count / n_steps:.1f}/step"
        + (f", reached from {m.user}" if m.user else "")
        for m in matches[:EVIDENCE_MATCHES]
    ]


def _named(sync: Finding, matches: list[FrameworkMatch], n_steps: int) -> Finding:
    """The sync finding as the framework's: its title, fix and code, and the user's self.log(...) line."""
    top = matches[0]
    details = [m.to_json(n_steps) for m in matches]
    return replace(
        sync,
        details={**sync.details, "framework": details, "generic_fix": {"fix": sync.fix, "code": sync.code}},
        evidence=(*sync.evidence, *_lines(matches, n_steps)),
        title=f"{sync.title}: {top.entry.title}",
        fix=top.entry.fix,
        code=top.entry.code,
        # the user's self.log(...), not the .fit() above the reads
        location=top.user if top.entry.set_at and top.user is not None else sync.location,
    )


def _risk(a: Analysis, matches: list[FrameworkMatch]) -> Finding:
    top = matches[0]
    return Finding(
        Cause.FRAMEWORK_SYNC,
        f"On a GPU this would wait: {top.entry.title}",
        0.0,
        a.step_ms,
        (
            "no GPU timeline in this trace: these host reads of tensor values (and collectives) make the "
            "host wait for the GPU once it runs on one",
            *_lines(matches, a.n_steps),
        ),
        top.entry.fix,
        top.entry.code,
        location=top.user,
        severity=Severity.MEDIUM,
        kind=Kind.RISK,
        details={"framework": [m.to_json(a.n_steps) for m in matches]},
    )


def runner(a: Analysis, frameworks: tuple[Framework, ...]) -> Optional[Framework]:
    """The framework whose code runs the loop, from the python_function frames in the trace (the first of
    `frameworks` that matches: the HF Trainer runs on accelerate, so it comes first); None without stacks or
    without a known framework."""
    if not a.trace.with_stack:
        return None
    for fw in frameworks:
        files = fw.runner_files
        if files and len(a.trace.events.name_ids(lambda n, fs=files: any(f in n for f in fs))):
            return fw
    return None


def replay_keys(a: Analysis, frameworks: tuple[Framework, ...]) -> dict[Cause, FixName]:
    """cause -> the replay fix its finding's fix makes where the runner's setting makes another change than the
    cause's generic fix (Lightning's launch-bound fix compiles the module in torch.compile's default mode, not
    CUDA graphs)."""
    if not any(s.replay for fw in frameworks for s in fw.settings):
        return {}
    who = runner(a, frameworks)
    return {s.cause: s.replay for s in (who.settings if who else ()) if s.replay}


def _runner_settings(
    a: Analysis, findings: list[Finding], frameworks: tuple[Framework, ...]
) -> list[Finding]:
    """Each generic finding's fix as the runner's own setting (the generic fix stays in details.generic_fix)."""
    if not any(s.cause == f.cause for fw in frameworks for s in fw.settings for f in findings):
        return findings
    try:
        found = runner(a, frameworks)
    except Exception:  # a best-effort refinement, as the sync matching
        return findings
    if found is None:
        return findings
    out = []
    for f in findings:
        setting = next((s for s in found.settings if s.cause == f.cause), None)
        if setting is None:
            out.append(f)
            continue
        workers = re.search(r"num_workers=(\d+)", f.code)
        fix, code = setting.phrased(source_text(f.location) or "" if f.location and f.location.exact else "")
        out.append(
            replace(
                f,
                details={
                    **f.details,
                    "generic_fix": {"fix": f.fix, "code": f.code},
                    "framework_setting": found.name,
                },
                evidence=(
                    *f.evidence,
                    f"the loop runs inside {found.words}: the fix below is its own setting",
                ),
                fix=fix,
                code=code.replace("{workers}", workers.group(1) if workers else "8"),
            )
        )
    return out


def _library_evidence(a: Analysis, findings: list[Finding]) -> list[Finding]:
    """Where no entry matches, the generic sync finding still names the library lines its reads ran in."""
    sync = next((f for f in findings if f.cause == Cause.SYNC), None)
    if sync is None or not a.trace.with_stack:
        return findings
    try:
        found = _library_lines(a)
    except Exception:  # best effort, as above
        return findings
    if not found:
        return findings
    top = found.most_common(3)
    named = replace(
        sync,
        evidence=(
            *sync.evidence,
            *(
                f"host waits in {_where(lib)}, {n / a.n_steps:.1f}/step"
                + (f", reached from {user}" if user else "")
                for (lib, user), n in top
            ),
        ),
        details={
            **sync.details,
            "library_lines": [
                {
                    "library": _loc_json(lib),
                    "user": user.to_json() if user else None,
                    "count_per_step": n / a.n_steps,
                }
                for (lib, user), n in top
            ],
        },
    )
    return [named if f is sync else f for f in findings]


def _library_lines(a: Analysis) -> Counter[tuple[SourceLoc, Optional[SourceLoc]]]:
    smap, points = sync_stacks(a)
    found: Counter[tuple[SourceLoc, Optional[SourceLoc]]] = Counter()
    for tid, ts, _ in points:
        lib = smap.library_line(tid, ts)
        if lib is not None and not smap.within(tid, ts, _OWN_FRAMES):
            found[(lib, smap.locate(np.array([tid]), np.array([ts]))[0])] += 1
    return found


__all__ = ["refine", "replay_keys", "runner"]
