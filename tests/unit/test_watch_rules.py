"""Long runs, the parts without a process: the slowdown trigger on synthetic step times, the step clock's file
and its bound, the control file, `idlehound capture`'s refusals, and the curve's drawing."""

import errno
import json
import os

import pytest
from click.testing import CliRunner

from idlehound.capture._clock import StepClock, merge_pairs, read_clock
from idlehound.capture._control import Poller, RequestExists, read_request, write_request
from idlehound.capture._trigger import Trigger, TriggerRule, parse_when
from idlehound.cli import main
from idlehound.report._curve import sparkline, svg_values


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


def test_every_n_steps():
    t = Trigger(TriggerRule(every=100, cooldown=0))
    assert feed(t, [5.0] * 350) == [100, 200, 300]


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


def test_a_malformed_request_is_never_acted_on(tmp_path):
    (tmp_path / "control").mkdir()
    (tmp_path / "control" / "request.json").write_text('{"id": "x", "at_step": "soon"}')
    assert read_request(tmp_path) is None and Poller(tmp_path).poll(1.0) is None


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
