"""The HTML report in a real browser: headless Chromium renders it offline with no console errors, the charts
have content, the numbers on the page equal the JSON's, and a screenshot is saved."""

import html
import json
import os
import re
import shutil
import subprocess

import pytest

from idlehound.pipeline import analyze_path
from idlehound.report import write
from idlehound.report.html import fmt_metric

from .conftest import TRACES

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
]

if CHROMIUM is None and os.environ.get("CI"):
    pytest.fail("CI must install chromium (see .ci/run)", pytrace=False)
pytestmark = [pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed"), pytest.mark.slow]


def chromium(tmp_path, *args):
    profile = tmp_path / "profile"
    profile.mkdir(exist_ok=True)
    return subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("name", ["sync_item", "dataloader_bound", "healthy", "memory_churn"])
def test_report_renders_with_matching_numbers(tmp_path, name):
    res = analyze_path(TRACES / name)
    page = write(res.report, tmp_path / "report.html")
    r = chromium(tmp_path, "--dump-dom", page.as_uri())
    assert r.returncode == 0, r.stderr[-2000:]
    console = [ln for ln in r.stderr.splitlines() if "CONSOLE" in ln]
    assert console == [], console
    dom = r.stdout
    # charts rendered: non-empty SVGs
    assert (
        len(re.findall(r"<rect", re.search(r"<svg id=\"breakdown-chart\".*?</svg>", dom, re.S).group(0))) > 3
    )
    assert len(re.findall(r"<rect", re.search(r"<svg id=\"timeline\".*?</svg>", dom, re.S).group(0))) > 3
    # every metric card shows the JSON value
    for key, m in res.report.metrics.items():
        if m.value is None:
            continue
        card = re.search(rf'data-metric="{key}"><div class="v">(.*?)</div>', dom)
        assert card and html.unescape(card.group(1)) == fmt_metric(m), key
    embedded = json.loads(html.unescape(re.search(r'id="idlehound-data">(.*?)</script>', dom, re.S).group(1)))
    assert embedded["metrics"] == res.doc["metrics"]
    for i, f in enumerate(res.doc["findings"], 1):
        assert f'data-finding-ms="{i}">{f["recoverable_ms_per_step"]:.3f}<' in dom
    shot = tmp_path / f"{name}.png"
    s = chromium(tmp_path, f"--screenshot={shot}", "--window-size=1280,2200", page.as_uri())
    assert s.returncode == 0 and shot.stat().st_size > 10_000


def test_memory_curve_drawn_when_recorded(tmp_path):
    res = analyze_path(TRACES / "memory_churn")
    page = write(res.report, tmp_path / "report.html")
    dom = chromium(tmp_path, "--dump-dom", page.as_uri()).stdout
    points = re.search(r'<svg id="memory-curve".*?points="([^"]+)"', dom, re.S).group(1).split()
    assert len(points) == len(res.doc["memory"]["curve"]) > 10


def test_ladder_page_bars_against_ceiling(tmp_path):
    from idlehound.ladder import RungResult, ladder_doc
    from idlehound.report.html import render_ladder_html

    baseline = RungResult("baseline", "0. baseline", samples_per_s=481.0, ms_per_step=66.5, gpu_busy_pct=17.2)
    baseline.nvml_util, baseline.peak_mem_gib, baseline.speedup, baseline.pct_of_ceiling = 8.0, 0.85, 1.0, 2.7
    baseline.top_finding = "Data loading starves the GPU"
    amp = RungResult("amp", "2. AMP", status="skipped", reason="needs CUDA")
    ceiling = RungResult("ceiling", "ceiling", samples_per_s=17950.0, ms_per_step=14.3, nvml_util=40.0)
    ceiling.peak_mem_gib, ceiling.speedup, ceiling.pct_of_ceiling = 2.95, 37.3, 100.0
    doc = ladder_doc([baseline, amp, ceiling], "cuda")
    page = tmp_path / "ladder.html"
    page.write_text(render_ladder_html(doc))
    r = chromium(tmp_path, "--dump-dom", page.as_uri())
    assert [ln for ln in r.stderr.splitlines() if "CONSOLE" in ln] == []
    chart = re.search(r'<svg id="ladder-chart".*?</svg>', r.stdout, re.S).group(0)
    assert chart.count("<rect") == 1 and "ceiling 17,950/s" in chart and "needs CUDA" in chart
