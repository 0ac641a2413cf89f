"""The run report: built from two real scored runs over a synthetic suite, its numbers checked against
``scores.summary.json``, untrusted answers escaped, unscored answers and unknown costs shown as such,
the paired comparison, the CLI, and (slow) the HTML opened in headless Chromium.

Locally a missing Chromium skips the browser test; with HIPPOCAMP_REQUIRE_MODELS=1 (CI) it fails."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from click.testing import CliRunner

from hippocamp.agents.base import Answer, Budget, EvidenceItem, Meter, Task
from hippocamp.cli import main
from hippocamp.models.types import Usage
from hippocamp.registry import register
from hippocamp.report import fmt
from hippocamp.report.build import Report, ReportError, build_report
from hippocamp.report.html import render_html
from hippocamp.report.markdown import render_markdown
from hippocamp.runs import SuiteOptions, load_suite, run
from hippocamp.scoring.judge import Judge
from hippocamp.scoring.run_scores import SUMMARY, load_scores, score_run
from hippocamp.scoring.stats import wilcoxon

MALICIOUS = "<script>alert(1)</script>"


@register("agent", "test-report-a")
class AgentA:
    """Right on even tasks, a wrong number with a script tag on odd ones; cites the gold files; its
    model's price is unknown (cost None)."""

    name: ClassVar[str] = "test-report-a"
    gold: ClassVar[dict[str, Any]] = {}

    async def solve(self, task: Task, env: Any, model: Any, budget: Budget) -> Answer:
        meter = Meter(budget)
        record = self.gold[task.id]
        index = sorted(self.gold).index(task.id)
        text = record.answer if index % 2 == 0 else f"{MALICIOUS} It was 987,654."
        meter.usage = Usage(input_tokens=100 + index, output_tokens=20, calls=1, cost_usd=None)
        return meter.answer(text, evidence=[EvidenceItem(file_path=e.file_path) for e in record.evidence])


@register("agent", "test-report-b")
class AgentB(AgentA):
    """Wrong on every third task, cites only the first gold file on odd tasks; a known price."""

    name: ClassVar[str] = "test-report-b"

    async def solve(self, task: Task, env: Any, model: Any, budget: Budget) -> Answer:
        meter = Meter(budget)
        record = self.gold[task.id]
        index = sorted(self.gold).index(task.id)
        text = record.answer if index % 3 != 1 else "I could not find it."
        meter.usage = Usage(input_tokens=50, output_tokens=10, calls=1, cost_usd=0.002)
        cited = [EvidenceItem(file_path=record.file_path[0])] if index % 2 and record.file_path else []
        return meter.answer(text, evidence=cited)


@pytest.fixture(scope="module")
def runs(synth_small: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Path]]:
    """Two runs over the same suite, scored by the facts judge (no model needed)."""
    root = tmp_path_factory.mktemp("report-runs")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(root / "home"))
        mp.setenv("XDG_CACHE_HOME", str(root / "cache"))
        mp.setenv("MPLCONFIGDIR", str(root / "mpl"))
        suite = load_suite(str(synth_small), SuiteOptions(ocr=False, asr=False, embed=False, store=root / "s.sqlite"))
        AgentA.gold = suite.gold
        dirs = []
        for agent in ("test-report-a", "test-report-b"):
            out = root / agent
            asyncio.run(run(suite, agent, "mock", out=out))
            asyncio.run(score_run(out, Judge(None, mode="facts")))
            dirs.append(out)
        suite.close()
    yield dirs


@pytest.fixture(scope="module")
def report(runs: list[Path]) -> Report:
    return build_report(runs)


@pytest.fixture(scope="module")
def rendered(report: Report) -> tuple[str, str]:
    return render_markdown(report), render_html(report)


def _summary(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / SUMMARY).read_text())


def test_headline_numbers_equal_the_summary(runs: list[Path], report: Report, rendered: tuple[str, str]) -> None:
    md, html = rendered
    for run_dir, row, data in zip(runs, report.table2.rows, report.runs, strict=True):
        s = _summary(run_dir)
        assert row.overall.mean == pytest.approx(s["overall"]["mean"])
        assert row.unscored == s["unscored"] > 0
        assert (row.ci.low, row.ci.high) == pytest.approx((s["accuracy_ci"]["low"], s["accuracy_ci"]["high"]))
        assert row.file_f1.mean == pytest.approx(s["file_f1_hippocamp"])
        headline = f"**{fmt.pct(s['overall']['mean'])}** {fmt.ci(row.ci)}"
        assert headline in md
        assert f'<b>{fmt.pct(s["overall"]["mean"])}</b> <span class="ci">{fmt.ci(row.ci)}</span>' in html
        factual = s["by_qa_type"]["factual_retention"]["mean"]
        assert row.cells[("Daniel", "factual_retention")][1].mean == pytest.approx(factual)
        table2 = md.split("## Results by profile")[1].split("\n## ")[0]
        md_row = next(line for line in table2.splitlines() if line.startswith(f"| {row.run} | "))
        assert f" {fmt.pct(factual)} " in md_row
        column = runs.index(run_dir)
        caps = {(dim, label): means[column] for dim, label, means in report.capability.rows}
        for dim, labels in s["by_capability"].items():
            for label, group in labels.items():
                assert caps[(dim, label)].mean == group["mean"] and caps[(dim, label)].n == group["n"]
        difficulty = {label: means[column] for _, label, means in report.difficulty.rows}
        assert {k: v.as_dict() for k, v in difficulty.items()} == s["by_difficulty"]
        assert data.judge == "facts" and data.mode == "facts" and len(data.lines) == s["episodes"] == 21
    # every scored question lands in exactly one breadth / depth bucket
    for table in report.breadth:
        assert sum(means[0].n for _, _, means in table.rows) == report.table2.rows[0].overall.n
    assert "Table 2" in md and 'id="table2-table"' in html and 'id="capability-table"' in html


def test_untrusted_answers_are_escaped(rendered: tuple[str, str]) -> None:
    md, html = rendered
    assert MALICIOUS not in md and MALICIOUS not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;script&gt;alert" in md
    assert "<script" not in html.lower()  # no scripts at all: the page works without JavaScript


def test_unscored_items_and_unknown_cost_are_explicit(runs: list[Path], report: Report,
                                                      rendered: tuple[str, str]) -> None:  # fmt: skip
    md, html = rendered
    lines = load_scores(runs[0])
    unscored = [s for s in lines if s.correct is None]
    assert unscored and all(s.cost is None for s in lines)
    cost_a, cost_b = report.costs
    assert fmt.cost(cost_a.cost) == "unknown" and cost_a.cost.missing == 21
    assert fmt.cost(cost_b.cost) == "$0.0420"
    md_costs = next(line for line in md.splitlines() if line.startswith("| test-report-a · mock | 21 |"))
    assert "unknown" in md_costs and "$0" not in md_costs
    views = {q.id: q for q in report.questions}
    attempt = next(a for a in views[unscored[0].task_id].attempts if a.run == "test-report-a · mock")
    assert attempt.verdict == "unscored" and attempt.reason
    assert html.count('class="pill v-unscored"') >= 2 * len(unscored)
    assert "⚠️ unscored" in md


def test_paired_comparison(runs: list[Path], report: Report, rendered: tuple[str, str]) -> None:
    (comparison,) = report.comparisons
    assert comparison.base == "test-report-a · mock" and comparison.questions == 21
    acc = next(d for d in comparison.deltas if d.metric == "Accuracy")
    a, b = ({s.task_id: s.correct for s in load_scores(r)} for r in runs)
    ids = sorted(a)
    expected = wilcoxon([b[q] for q in ids], [a[q] for q in ids])
    assert acc.test.pvalue == pytest.approx(expected.pvalue) and acc.test.dropped == expected.dropped
    both = [q for q in ids if a[q] is not None and b[q] is not None]
    assert acc.ci.estimate == pytest.approx(sum(b[q] - a[q] for q in both) / len(both))
    assert acc.ci.low is not None and acc.ci.low <= acc.ci.estimate <= acc.ci.high
    f1 = next(d for d in comparison.deltas if d.metric == "File F1")
    assert f1.other is not None and f1.base == 1.0 and f1.other < 1.0 and f1.ci.high < 0
    md, html = rendered
    assert "Wilcoxon p" in md and fmt.pvalue(acc.test.pvalue) in md and 'class="comparison"' in html


def test_html_is_self_contained(rendered: tuple[str, str]) -> None:
    from PIL import Image

    _, html = rendered
    assert not re.search(r"(src|href)=\"(https?:)?//", html) and "@import" not in html
    images = re.findall(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"', html)
    assert len(images) == 4
    for data in images:
        with Image.open(io.BytesIO(base64.b64decode(data))) as im:
            assert im.format == "PNG" and im.width > 300


def test_cli_report(runs: list[Path], tmp_path: Path) -> None:
    out = tmp_path / "rep"
    result = CliRunner().invoke(main, ["report", *map(str, runs), "--out", str(out), "--judge-mode", "facts"])
    assert result.exit_code == 0, result.output
    assert (out / "report.md").is_file() and (out / "report.html").is_file()
    assert sorted(p.name for p in (out / "figures").iterdir()) == [
        "breadth.png", "capability.png", "difficulty.png", "latency.png"
    ]  # fmt: skip
    assert "](figures/difficulty.png)" in (out / "report.md").read_text()
    result = CliRunner().invoke(main, ["report", str(runs[0]), "--out", str(out), "--judge-mode", "simple"])
    assert result.exit_code == 2 and "no scores for judge any / mode simple (found: facts/facts)" in result.output
    empty = tmp_path / "empty"
    empty.mkdir()
    result = CliRunner().invoke(main, ["report", str(empty)])
    assert result.exit_code == 2 and "no manifest.json" in result.output


def test_an_unscored_run_is_refused(runs: list[Path], tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(runs[0], copy)
    (copy / "scores.jsonl").unlink()
    with pytest.raises(ReportError, match="score the run first"):
        build_report([copy], figures=False)


# -- the browser -----------------------------------------------------------------------------------
CHROMIUM = "/usr/bin/chromium"
WINDOW = (1280, 2000)


def _chromium() -> str:
    path = CHROMIUM if os.access(CHROMIUM, os.X_OK) else shutil.which("chromium")
    if path is None:
        reason = "needs the chromium program (Debian package chromium)"
        if os.environ.get("HIPPOCAMP_REQUIRE_MODELS") == "1":
            pytest.fail(f"required here (HIPPOCAMP_REQUIRE_MODELS=1): {reason}")
        pytest.skip(reason)
    return path


def _browse(chromium: str, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", *args]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, timeout=180, check=False)


@pytest.mark.slow
def test_report_renders_in_headless_chromium(runs: list[Path], tmp_path: Path) -> None:
    from PIL import Image

    from hippocamp.report import write_report

    chromium = _chromium()
    url = write_report(runs, tmp_path / "rep")["html"].resolve().as_uri()
    shot = tmp_path / "shot.png"
    width, height = WINDOW
    done = _browse(chromium, tmp_path / "profile", f"--screenshot={shot}", f"--window-size={width},{height}", url)
    assert done.returncode == 0, done.stderr[-2000:]
    console = [line for line in done.stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line]
    assert not console, console
    with Image.open(shot) as im:
        assert im.format == "PNG" and im.size == WINDOW
        colors = im.convert("RGB").getcolors(maxcolors=1 << 20)
        assert colors is not None and len(colors) > 200  # text, tables and plots, not a blank page
    dom = _browse(chromium, tmp_path / "profile", "--dump-dom", url)
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    assert 'id="table2-table"' in html and 'id="capability-table"' in html and 'id="cost-table"' in html
    rows = re.search(r'<table id="table2-table">(.*?)</table>', html, re.S)
    assert rows is not None and rows.group(1).count("test-report-") == 2
    images = re.findall(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"', html)
    assert len(images) >= 4
    for data in images:
        with Image.open(io.BytesIO(base64.b64decode(data))) as im:
            im.verify()
    assert html.count("<details") == 21 and MALICIOUS not in html
