"""CaptureOptions is the one spec of a capture: `idlehound run`'s options, idlehound.profile() and the framework
callbacks take their defaults from it, and every capture option of `idlehound run` reaches it by name."""

import dataclasses
import inspect
from pathlib import Path

from click.testing import CliRunner

from idlehound import app, cli
from idlehound.app._capture import capture_options
from idlehound.capture import CaptureOptions, WatchOptions, profile
from idlehound.integrations._window import Window, profile_steps

DEFAULT = CaptureOptions()


def _run_options(monkeypatch, *args: str) -> app.RunOptions:
    """The RunOptions `idlehound run ARGS train.py` hands to the application (nothing is run)."""
    seen = []
    monkeypatch.setattr(cli.app, "run", lambda o: (seen.append(o), (0, None))[1])
    r = CliRunner().invoke(cli.main, ["run", *args, "train.py"])
    assert r.exit_code == 0, r.output
    return seen[0]


def test_idlehound_run_with_no_options_captures_with_the_spec_defaults(monkeypatch):
    assert capture_options(_run_options(monkeypatch)) == DEFAULT


def test_every_capture_option_of_idlehound_run_reaches_the_spec(monkeypatch):
    o = _run_options(
        monkeypatch,
        *("--logdir", "elsewhere", "--name", "n", "--skip", "3", "--warmup", "0", "--active", "7"),
        *("--step-on", "dataloader", "--stop-after", "--no-stack", "--memory", "--run-dir", "rd"),
        *("--max-window-seconds", "9", "--max-window-mb", "64"),
    )
    assert capture_options(o) == dataclasses.replace(
        DEFAULT,
        logdir=Path("elsewhere"),
        run_name="n",
        skip=3,
        warmup=0,
        active=7,
        step_on="dataloader",
        stop_after=True,
        with_stack=False,
        profile_memory=True,
        run_dir=Path("rd"),
        max_window_seconds=9.0,
        max_window_mb=64.0,
    )
    watch = capture_options(
        _run_options(monkeypatch, "--active", "4", "--watch", "--capture-every", "50")
    ).watch
    assert isinstance(watch, WatchOptions) and (watch.every, watch.steps, watch.slower) == (50, 4, None)


def test_the_api_and_the_callbacks_show_the_spec_defaults():
    for fn in (profile, Window, profile_steps):
        params = inspect.signature(fn).parameters
        for name in ("skip", "warmup", "active"):
            assert params[name].default == getattr(DEFAULT, name), (fn, name)
    params = inspect.signature(profile).parameters
    shared = [f.name for f in dataclasses.fields(CaptureOptions) if f.name in params]
    assert len(shared) == 12
    assert {n: params[n].default for n in shared} == {n: getattr(DEFAULT, n) for n in shared}
