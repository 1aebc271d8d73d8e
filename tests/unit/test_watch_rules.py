"""Long runs, the parts without a process: the slowdown trigger on synthetic step times, the step clock's file
and its bound, the control file, `idlehound capture`'s refusals, and the curve's drawing."""

import errno
import json
import os
import shutil

import pytest
from click.testing import CliRunner

from idlehound.capture._clock import StepClock, merge_pairs, read_clock
from idlehound.capture._control import Poller, RequestExists, read_request, retire_request, write_request
from idlehound.capture._trigger import Trigger, TriggerRule, parse_when
from idlehound.cli import main
from idlehound.report._curve import sparkline, svg_values

from ..conftest import TRACES


def feed(trigger, times, start=0):
    """Every step at which the trigger asked for a window."""
    return [start + i for i, ms in enumerate(times) if trigger.feed(start + i, ms)]


# ---- the trigger
def test_a_slowdown_fires_once_within_2k_steps():
    t = Trigger(TriggerRule(slower=1.3, k=20, baseline=50, cooldown=0))
    fired = feed(t, [10.0] * 100 + [50.0] * 200)
    assert t.steady_ms == 10.0
    # the median of 20 passes the line at step 109, when 10 of the last 20 are slow (the mean of the middle two),
    # and must stay over it for K = 20 steps: 109 + 19
    assert fired == [128]
    assert t.rolling_ms == 50.0


def test_noise_under_the_ratio_never_fires():
    t = Trigger(TriggerRule(slower=1.3, k=10, baseline=20, cooldown=0))
    times = [10.0, 12.5, 9.0, 11.0] * 100  # up to 1.25x the median: jitter, not a slowdown
    assert feed(t, times) == []


def test_a_few_slow_steps_are_not_a_slowdown():
    t = Trigger(TriggerRule(slower=1.3, k=20, baseline=20, cooldown=0))
    times = [10.0] * 40 + ([10.0] * 11 + [40.0] * 9) * 10  # 9 of every 20 steps slow: the median stays at 10
    assert feed(t, times) == []


def test_it_rearms_after_recovery_and_honours_the_cooldown():
    t = Trigger(TriggerRule(slower=1.5, k=5, baseline=10, cooldown=100))
    times = [10.0] * 20 + [30.0] * 20 + [10.0] * 20 + [30.0] * 20
    fired = feed(t, times)
    assert fired == [20 + 2 + 5 - 1, 60 + 2 + 5 - 1]
    t2 = Trigger(TriggerRule(slower=1.5, k=5, baseline=10, cooldown=100))
    first = feed(t2, times[:40])
    t2.window_ended(first[0] + 5)  # the window ran: no trigger for 100 steps
    assert feed(t2, times[40:], start=40) == []


def test_every_n_steps_counts_steps_not_times():
    t = Trigger(TriggerRule(every=100, cooldown=0))
    assert [s for s in range(350) if t.every_due(s)] == [100, 200, 300]
    assert feed(t, [5.0] * 350) == []  # step times never decide it (on CUDA they arrive late, rank by rank)
    t2 = Trigger(TriggerRule(every=100, cooldown=150))
    t2.window_ended(105)
    assert [s for s in range(500) if t2.every_due(s)] == [300, 400]  # not within 150 steps after the window


def test_a_slowdown_window_asked_by_another_rank_serves_this_ranks_rise():
    # Rank 1 saw the slowdown first and asked; its window ended at step 140 while this rank's rolling median was
    # over the line too: this rank must not ask for a second window for the same rise once its cool-down ends.
    t = Trigger(TriggerRule(slower=1.3, k=5, baseline=10, cooldown=20))
    assert feed(t, [10.0] * 20 + [30.0] * 6) == []  # over the line, not yet for K steps
    t.window_ended(26, slowdown=True)
    assert feed(t, [30.0] * 100, start=26) == []
    # back to normal, then a new rise: that one is caught
    assert feed(t, [10.0] * 10 + [30.0] * 20, start=126) == [
        126 + 10 + 2 + 5 - 1
    ]  # the 3rd slow step tips the median of 5; then K steps


@pytest.mark.parametrize("text", ["faster=2", "slower=1", "slower=0.5", "slower=x", "slower=nan", "slower"])
def test_bad_capture_when_is_refused_with_the_reason(text):
    with pytest.raises(ValueError, match="--capture-when"):
        parse_when(text)


# ---- the step clock
def test_host_clock_appends_rows_and_coarsens_past_its_limit(tmp_path):
    path = tmp_path / "steps.jsonl"
    clock = StepClock(path, cuda=False, max_rows=8, flush_s=0.0)
    now = 0.0
    for step in range(1, 101):
        now += 0.010 if step <= 50 else 0.030
        clock.tick(step, now)
    clock.close()
    header, rows = read_clock(path)
    assert header["clock"] == "host" and len(rows) <= 16
    assert sum(r[1] for r in rows) == 99  # every timed step counted once (the first has no predecessor)
    assert rows[0][2] == pytest.approx(10.0, abs=0.01) and rows[-1][2] == pytest.approx(30.0, abs=0.01)
    assert header["steps_per_row"] == clock.width > 1


def test_merge_pairs_weights_means_by_steps():
    rows = [
        [0, 1, 10.0, 10.0, 1.0, None, 1.0],
        [1, 3, 20.0, 25.0, 2.0, None, 2.0],
        [4, 1, 5.0, 5.0, 0.0, None, 3.0],
    ]
    assert merge_pairs(rows) == [[0, 4, 17.5, 25.0, 1.75, None, 2.0], [4, 1, 5.0, 5.0, 0.0, None, 3.0]]


def test_a_torn_last_line_is_left_out_and_garbage_is_refused(tmp_path):
    p = tmp_path / "steps.jsonl"
    p.write_text('{"idlehound_steps": 1, "clock": "host"}\n[1,1,2.0,2.0,0.0,null,0.1]\n[2,1,2.')
    assert read_clock(p)[1] == [[1, 1, 2.0, 2.0, 0.0, None, 0.1]]
    p.write_text('{"idlehound_steps": 1}\n["a"]\n[1,1,2.0,2.0,0.0,null,0.1]\n')
    with pytest.raises(ValueError, match="line 2"):
        read_clock(p)


def test_a_full_disk_stops_the_clock_not_the_job(tmp_path, monkeypatch, capsys):
    clock = StepClock(tmp_path / "steps.jsonl", cuda=False, flush_s=0.0)
    real_open = open

    def full(path, *a, **kw):
        if str(path).endswith("steps.jsonl") and a and a[0] == "a":
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_open(path, *a, **kw)

    monkeypatch.setattr("builtins.open", full)
    clock.tick(1, 1.0)
    clock.tick(2, 2.0)
    clock.tick(3, 3.0)
    assert "No space left on device" in clock.failed
    assert capsys.readouterr().err.count("the step clock stopped") == 1


# ---- the control file
def test_one_request_at_a_time_and_each_is_seen_once(tmp_path):
    (tmp_path / "control").mkdir()
    req = write_request(tmp_path, 120, 3, by="test")
    with pytest.raises(RequestExists):
        write_request(tmp_path, 130, 3, by="test")
    assert read_request(tmp_path) == req
    assert not list((tmp_path / "control").glob(".request.*"))  # no temporary file left behind
    poller = Poller(tmp_path)
    assert poller.poll(100.0) == req
    assert poller.poll(101.0) is None


def test_a_request_is_retired_once_even_by_several_ranks_at_once(tmp_path):
    (tmp_path / "control").mkdir()
    old = write_request(tmp_path, 120, 3, by="test")
    retire_request(tmp_path, old["id"])  # the last rank to answer
    assert read_request(tmp_path) is None and (tmp_path / "control" / f"done.{old['id']}.json").is_file()
    new = write_request(tmp_path, 300, 3, by="idlehound capture")
    retire_request(tmp_path, old["id"])  # a slower rank retiring the old one again: the new request stays
    assert read_request(tmp_path) == new
    (tmp_path / "control" / f"done.{new['id']}.json").write_text("{}")  # as if another rank linked it first
    retire_request(tmp_path, new["id"])
    assert read_request(tmp_path) == new  # only the one whose link won removes it


def test_a_malformed_request_is_never_acted_on(tmp_path):
    (tmp_path / "control").mkdir()
    (tmp_path / "control" / "request.json").write_text('{"id": "x", "at_step": "soon"}')
    assert read_request(tmp_path) is None and Poller(tmp_path).poll(1.0) is None
    big = {"id": "x", "at_step": 100, "steps": 3, "by": "x" * 70_000}  # the training process never reads it
    (tmp_path / "control" / "request.json").write_text(json.dumps(big))
    assert read_request(tmp_path) is None and Poller(tmp_path).poll(2.0) is None
    big["by"] = "x" * 60_000
    (tmp_path / "control" / "request.json").write_text(json.dumps(big))
    assert read_request(tmp_path) == big


def running_folder(tmp_path, **changes):
    run = tmp_path / "run"
    (run / "control").mkdir(parents=True)
    info = {
        "idlehound_run": 1,
        "status": "running",
        "world_size": 1,
        "watch": {"pid": os.getpid(), "host": os.uname().nodename},
    }
    info.update(changes)
    (run / "run.json").write_text(json.dumps(info))
    (run / "steps.jsonl").write_text(
        '{"idlehound_steps": 1, "clock": "host"}\n[40,1,10.0,10.0,0.0,null,1.0]\n'
    )
    return run


def capture_cli(*args):
    r = CliRunner().invoke(main, ["capture", *map(str, args)])
    return r.exit_code, r.output


def test_capture_refuses_an_unknown_a_finished_and_an_unwatched_folder(tmp_path):
    code, out = capture_cli(tmp_path / "nowhere")
    assert code == 2 and "no such run folder" in out
    (tmp_path / "empty").mkdir()
    code, out = capture_cli(tmp_path / "empty")
    assert code == 2 and "not an idlehound run folder" in out
    code, out = capture_cli(running_folder(tmp_path / "a", status="done"))
    assert code == 2 and "has finished" in out
    code, out = capture_cli(running_folder(tmp_path / "b", watch=None))
    assert code == 2 and "not started with --watch" in out
    dead = running_folder(tmp_path / "c", watch={"pid": 2**22 + 12345, "host": os.uname().nodename})
    code, out = capture_cli(dead)
    assert code == 2 and "no longer running" in out
    assert all(len(o.strip().splitlines()) == 1 for o in [out])


def test_capture_asks_ahead_and_refuses_a_second_ask_while_the_first_is_pending(tmp_path):
    run = running_folder(tmp_path)
    code, out = capture_cli(run, "--steps", "3", "--wait", "0")
    assert code == 0, out
    req = read_request(run)
    assert req["steps"] == 3 and req["at_step"] > 40  # past the newest step the clock has seen
    code, out = capture_cli(run, "--wait", "0")
    assert code == 2 and "asked for already" in out and len(out.strip().splitlines()) == 1


def test_capture_names_a_corrupt_or_huge_run_json(tmp_path):
    run = running_folder(tmp_path)
    (run / "run.json").write_text('{"idlehound_run": 1, "status": "runn')
    code, out = capture_cli(run, "--wait", "0")
    assert code == 2 and "run.json: not valid JSON" in out and len(out.strip().splitlines()) == 1
    big = json.dumps({"idlehound_run": 1, "status": "running"}) + " " * (64 * 2**20)  # past the 64 MiB cap
    (run / "run.json").write_text(big)
    code, out = capture_cli(run, "--wait", "0")
    assert code == 2 and "run.json" in out and "limit" in out and len(out.strip().splitlines()) == 1


def watched_copy(tmp_path):
    """A recorded run folder with a step clock and one later window folder (its trace: the first's, copied)."""
    run = tmp_path / "run"
    shutil.copytree(TRACES / "pageable", run)
    rows = "".join(f"[{s},1,10.0,10.0,0.0,null,{s / 100}]\n" for s in range(1, 200))
    (run / "steps.jsonl").write_text('{"idlehound_steps": 1, "clock": "host"}\n' + rows)
    win = run / "windows" / "step100"
    win.mkdir(parents=True)
    for f in run.glob("*.json.gz"):
        shutil.copy(f, win / f.name)
    return run, win


def report_cli(run, out):
    r = CliRunner().invoke(main, ["report", str(run), "-o", str(out)])
    return r.exit_code, r.output


@pytest.mark.parametrize(
    "text, problem",
    [
        ('{"start_step": 100, "steps": 5, "stat', "window.json: not valid JSON"),
        ('{"start_step": "100", "steps": 5, "status": "saved"}', "window.json: 'start_step' must be int"),
        ('{"start_step": 100, "steps": 5, "status": ["saved"]}', "window.json: 'status' must be str"),
        ("[1, 2]", "window.json: not an idlehound window.json"),
    ],
)
def test_report_names_a_corrupt_window_json(tmp_path, text, problem):
    run, win = watched_copy(tmp_path)
    (win / "window.json").write_text(text)
    code, out = report_cli(run, tmp_path / "r.md")
    assert code == 2 and problem in out and len(out.strip().splitlines()) == 1, out
    assert not (tmp_path / "r.md").exists()


def test_report_names_a_corrupt_window_report_and_compares_a_good_one(tmp_path):
    run, win = watched_copy(tmp_path)
    (win / "window.json").write_text(
        '{"start_step": 100, "steps": 5, "reason": "every 100 steps", "status": "saved"}'
    )
    (win / "report.json").write_text('{"metrics": {"step_ms"')
    code, out = report_cli(run, tmp_path / "r.md")
    assert code == 2 and "report.json: not valid JSON" in out and "delete it" in out, out
    (win / "report.json").unlink()  # analysed again: the same trace as the first window, so nothing grew
    code, out = report_cli(run, tmp_path / "r.md")
    assert code == 0, out
    (line,) = [ln for ln in out.splitlines() if ln.startswith("window at step 100")]
    assert "(1.00x)" in line and "no cause grew by 5% of the step or more" in line


def test_capture_on_a_full_disk_says_so(tmp_path, monkeypatch):
    run = running_folder(tmp_path)

    def full(*a, **kw):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "link", full)
    code, out = capture_cli(run, "--wait", "0")
    assert code == 2 and "No space left on device" in out and read_request(run) is None


# ---- the curve
def test_sparkline_marks_each_window_and_svg_escapes_nothing_raw():
    rows = [[s, 1, 10.0 if s < 50 else 40.0, 10.0, 0.0, None, s / 10] for s in range(1, 101)]
    windows = [
        {"start_step": 12, "steps": 5, "reason": "first window", "status": "saved"},
        {"start_step": 60, "steps": 5, "reason": "<b>slower</b>", "status": "saved"},
    ]
    lines = sparkline({"clock": "host", "rows": rows, "windows": windows}, width=50)
    assert "10-40 ms" in lines[0]
    bars, marks = lines[1][2:], lines[2][2:]
    assert bars[0] == "▁" and bars[-1] == "█"
    assert [i for i, c in enumerate(marks) if c == "^"][:2] == [
        5,
        29,
    ]  # steps 12 and 60 of 1-100, 2 steps a bar
    v = svg_values({"clock": "host", "rows": rows, "windows": windows})
    assert len(v["bands"]) == 2 and v["bands"][1]["title"].startswith(
        "step 60: <b>"
    )  # the template escapes it
