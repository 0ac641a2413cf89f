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
from collections import Counter
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
from hippocamp.report.markdown import md_escape, render_markdown
from hippocamp.runs import SuiteOptions, load_suite, run
from hippocamp.schema.pcontext import BOUNDARIES
from hippocamp.scoring.judge import Judge
from hippocamp.scoring.run_scores import SUMMARY, load_scores, score_run
from hippocamp.scoring.stats import wilcoxon

MALICIOUS = "<script>alert(1)</script>"


def hip(report: Report) -> Any:
    """The report's HippoCamp section."""
    return report.section("hippocamp")


def pc(report: Report) -> Any:
    """The report's P-ContextBench tables."""
    return report.section("pcontext").tables


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
    for run_dir, row, data in zip(runs, hip(report).table2.rows, report.runs, strict=True):
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
        caps = {(dim, label): means[column] for dim, label, means in hip(report).capability.rows}
        for dim, labels in s["by_capability"].items():
            for label, group in labels.items():
                assert caps[(dim, label)].mean == group["mean"] and caps[(dim, label)].n == group["n"]
        difficulty = {label: means[column] for _, label, means in hip(report).difficulty.rows}
        assert {k: v.as_dict() for k, v in difficulty.items()} == s["by_difficulty"]
        assert data.judge == "facts" and data.mode == "facts" and len(data.lines) == s["episodes"] == 21
    # every scored question lands in exactly one breadth / depth bucket
    for table in hip(report).breadth:
        assert sum(means[0].n for _, _, means in table.rows) == hip(report).table2.rows[0].overall.n
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
    views = {q.id: q for q in hip(report).questions}
    attempt = next(a for a in views[unscored[0].task_id].attempts if a.run == "test-report-a · mock")
    assert attempt.verdict == "unscored" and attempt.reason
    assert html.count('class="pill v-unscored"') >= 2 * len(unscored)
    assert "⚠️ unscored" in md


def test_paired_comparison(runs: list[Path], report: Report, rendered: tuple[str, str]) -> None:
    (comparison,) = hip(report).comparisons
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


# -- P-ContextBench runs -------------------------------------------------------------------------------
HOSTILE = '<img src=x onerror="alert(2)">'


@register("agent", "test-report-pc")
class PContextAgent:
    """Scripted by case: a quarter always right, a quarter right once then wrong (so worst run and Pass^2
    fall below accuracy), the rest wrong in a type-specific way (stale state, missing conclusion, refusal,
    blind compliance, no citation), one of them with a hostile answer. Cites supporting messages by id."""

    name: ClassVar[str] = "test-report-pc"
    gold: ClassVar[dict[str, Any]] = {}
    #: persona -> fragment id -> message/event ids
    ids: ClassVar[dict[str, dict[str, list[str]]]] = {}
    calls: ClassVar[dict[str, int]] = {}

    def right(self, case: dict[str, Any], cite: str) -> str:
        keys = [*case.get("labels", []), *(case.get(k) or "" for k in ("current_state", "conclusion", "mechanism"))]
        text = "; ".join(k for k in keys if k) + f" (see {cite})"
        return f"{case['boundary'].replace('_', ' ')}: {text}" if case["type"] == "T5" else text

    def wrong(self, case: dict[str, Any], cite: str, second: bool) -> str:
        ctype = case["type"]
        if ctype == "T3":
            return "I could not tell." if second or not case.get("stale_state") else f"{case['stale_state']} ({cite})"
        if ctype == "T4":
            return "No idea." if second else "; ".join(case["labels"]) + f" ({cite})"
        if ctype == "T5":
            return "Done, booked it right away." if second else "I refuse to do that."
        return "Nothing in the logs." if second else "; ".join(case["labels"])

    async def solve(self, task: Task, env: Any, model: Any, budget: Budget) -> Answer:
        case = self.gold[task.id]
        persona = task.id.split("/", 1)[0]
        calls = self.calls[task.id] = self.calls.get(task.id, 0) + 1
        cite = ", ".join(self.ids[persona][f][0] for f in case["supporting_fragments"][:2] if self.ids[persona].get(f))
        mode = sorted(t for t in self.gold if self.gold[t]["type"] == case["type"]).index(task.id) % 4
        if mode == 0 or (mode == 1 and calls == 1):
            text = self.right(case, cite)
        else:
            text = self.wrong(case, cite, second=mode == 3)
        if mode == 3 and case["type"] == "T1":
            text = f"{HOSTILE} {MALICIOUS} {text}"
        return Answer(text=text, stop="answered", usage=Usage(input_tokens=80, output_tokens=12, calls=1))


@pytest.fixture(scope="module")
def pc_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A template persona set (2 personas, 14 days) run twice by the scripted agent, scored by the rubrics."""
    from hippocamp.pcontext import SetConfig, run_set

    root = tmp_path_factory.mktemp("report-pc")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(root / "home"))
        mp.setenv("XDG_CACHE_HOME", str(root / "cache"))
        mp.setenv("HIPPOCAMP_CACHE_DIR", str(root / "cache" / "hippocamp"))
        mp.setenv("MPLCONFIGDIR", str(root / "mpl"))
        run_set(SetConfig(out=root / "set", n=2, seed=11, days=14))
        suite = load_suite(f"pcontext:{root / 'set'}", SuiteOptions(embed=False, store=root / "pc.sqlite"))
        PContextAgent.gold = suite.gold
        PContextAgent.ids = {
            pid: {f: [str(x["id"]) for x in p.messages + p.events if x.get("fragment_id") == f]
                  for f in {str(x.get("fragment_id")) for x in p.messages + p.events}}
            for pid, p in suite.personas.items()
        }  # fmt: skip
        PContextAgent.calls = {}
        out = root / "pc-run"
        asyncio.run(run(suite, "test-report-pc", "mock", out=out, epochs=2, concurrency=1))
        suite.close()
        asyncio.run(score_run(out, Judge(None, mode="facts")))
    yield out


@pytest.fixture(scope="module")
def pc_report(pc_run: Path) -> Report:
    return build_report([pc_run], figures=False)


def _pc_lines(run_dir: Path) -> list[Any]:
    return [s for s in load_scores(run_dir) if s.judge.startswith("pcontext-guard")]


def _expected(lines: list[Any]) -> dict[str, dict[str, float]]:
    """Table 2 computed by hand from score lines: accuracy, worst epoch, Pass^2 (both epochs right)."""
    out: dict[str, dict[str, float]] = {}
    scored = [s for s in lines if s.correct is not None]
    for ctype in sorted({s.grade["type"] for s in scored}):
        mine = [s for s in scored if s.grade["type"] == ctype]
        epochs = sorted({s.epoch for s in mine})
        cases = sorted({s.task_id for s in mine})
        both = [c for c in cases if sum(s.correct for s in mine if s.task_id == c) == 2]
        out[ctype] = {
            "n": len(mine), "cases": len(cases), "accuracy": sum(s.correct for s in mine) / len(mine),
            "worst": min(sum(s.correct for s in mine if s.epoch == e) / sum(s.epoch == e for s in mine)
                         for e in epochs),
            "pass": len(both) / len(cases),
        }  # fmt: skip
    return out


def test_pcontext_table2_equals_the_score_lines_and_summary(pc_run: Path, pc_report: Report) -> None:
    lines = _pc_lines(pc_run)
    expected = _expected(lines)
    t = pc(pc_report)
    assert t is not None and t.pass_label == "Pass^2" and len(t.rows) == 1
    row = t.rows[0]
    assert row.k == 2 and row.unscored == 0 and set(row.types) == set(expected)
    for ctype, e in expected.items():
        r = row.types[ctype]
        assert (r.n, r.cases) == (e["n"], e["cases"])
        assert r.accuracy == pytest.approx(e["accuracy"])
        assert r.worst_run == pytest.approx(e["worst"])
        assert r.pass_k == pytest.approx(e["pass"])
    # the scripted flakiness makes the reliability columns meaningful
    assert any(r.pass_k < r.accuracy for r in row.types.values())
    assert any(r.worst_run < r.accuracy for r in row.types.values())
    # Avg.: test-count-weighted (episodes for accuracy, cases for worst run and Pass^k)
    scored = [s for s in lines if s.correct is not None]
    assert row.average.accuracy == pytest.approx(sum(s.correct for s in scored) / len(scored))
    cases = sum(e["cases"] for e in expected.values())
    assert row.average.worst_run == pytest.approx(sum(e["worst"] * e["cases"] for e in expected.values()) / cases)
    assert row.average.pass_k == pytest.approx(sum(e["pass"] * e["cases"] for e in expected.values()) / cases)
    # ... and the summary the scorer wrote agrees
    s = _summary(pc_run)
    assert s["accuracy"] == pytest.approx(row.average.accuracy) and s["runs"] == 2
    for ctype, r in row.types.items():
        mine = s["by_type"][ctype]
        assert mine["accuracy"] == pytest.approx(r.accuracy) and mine["worst_run"] == pytest.approx(r.worst_run)
        assert mine["pass^2"] == pytest.approx(r.pass_k) and mine["verdicts"] == r.verdicts
    assert s["failures"] == row.failures and s["evidence_recall"] == pytest.approx(row.evidence_recall)
    w = s["wilcoxon_t12_gt_t35"]
    assert row.wilcoxon is not None and row.wilcoxon.personas == w["personas"] == 2
    assert row.wilcoxon.pvalue == pytest.approx(w["pvalue"]) and row.wilcoxon.statistic == pytest.approx(w["statistic"])
    assert not any("older than the score lines" in n for n in pc_report.notes)
    seen = [x.grade["seen_recall"] for x in scored if x.grade.get("seen_recall") is not None]
    assert row.seen_n == len(seen) and row.seen_recall == (pytest.approx(sum(seen) / len(seen)) if seen else None)
    if "seen_recall" in s:
        assert s["seen_recall"] == pytest.approx(row.seen_recall)
    if "retrieval" in s:  # the scorer's own recall@k of the store's retrieval, shown as written
        assert row.retrieval is not None and row.retrieval.recall == pytest.approx(s["retrieval"]["recall"])
    # rendered: the Markdown row and the HTML table carry the numbers
    md, html = render_markdown(pc_report), render_html(pc_report)
    table = md.split("## P-ContextBench: accuracy by task type")[1].split("\n### ")[0]
    md_row = next(line for line in table.splitlines() if line.startswith("| test-report-pc · mock |"))
    cells = [c.strip() for c in md_row.strip("|").split("|")]
    for i, ctype in enumerate(t.types):
        e = expected[ctype]
        assert cells[1 + 3 * i : 4 + 3 * i] == [fmt.pct(e["accuracy"]), fmt.pct(e["worst"]), fmt.pct(e["pass"])]
    assert cells[-4] == f"**{fmt.pct(row.average.accuracy)}**" and cells[-1] == "0"
    pc_table = re.search(r'<table id="pc-table2-table">(.*?)</table>', html, re.S)
    assert pc_table is not None and f"<b>{fmt.pct(row.average.accuracy)}</b>" in pc_table.group(1)
    # a pcontext-only report has no HippoCamp sections
    assert "## Results by profile" not in md and 'id="table2-table"' not in html and "## Per question" not in md


def test_pcontext_failure_categories(pc_run: Path, pc_report: Report) -> None:
    lines = [s for s in _pc_lines(pc_run) if s.correct is not None]
    t = pc(pc_report)
    assert t is not None
    got = {(f.type, f.category): f.cells[0] for f in t.failures}
    expected: dict[tuple[str, str], int] = {}
    for s in lines:
        for f in s.grade.get("failures", []):
            if not s.correct:
                expected[(s.grade["type"], f)] = expected.get((s.grade["type"], f), 0) + 1
    assert {k: c.errors_with for k, c in got.items() if c.errors_with} == expected
    for (ctype, _), cell in got.items():
        errors = sum(not s.correct for s in lines if s.grade["type"] == ctype)
        assert cell.errors == errors and cell.share == pytest.approx(cell.errors_with / errors)
    # the paper's categories that the script provokes (not T4's inference gap: a template mechanism restates
    # the labels), and one outside Table 3
    for key in [("T3", "omitted_current_state"), ("T3", "wrong_or_stale_state"), ("T4", "omitted_label"),
                ("T5", "over_refusal"), ("T5", "unsafe_boundary"), ("T5", "constraint_recognition"),
                ("T1", "no_evidence")]:  # fmt: skip
        assert got[key].errors_with > 0, key
    assert [f.category for f in t.failures if f.type == "T5"][:3] == [
        "constraint_recognition", "over_refusal", "unsafe_boundary"
    ]  # fmt: skip
    md = render_markdown(pc_report)
    table3 = md.split("## P-ContextBench: failure categories")[1].split("\n### ")[0]
    refusal = got[("T5", "over_refusal")]
    assert f"| T5 | over-refusal | {refusal.errors_with} ({fmt.pct(refusal.share)}%) |" in table3
    assert "| T1 | no supporting evidence cited (other) |" in table3
    # T5 verdicts and the mean normalized score
    t5 = [s for s in lines if s.grade["type"] == "T5"]
    r5 = pc(pc_report).rows[0].types["T5"]
    assert r5.verdicts == {v: sum(s.grade["verdict"] == v for s in t5) for v in {s.grade["verdict"] for s in t5}}
    assert r5.mean_score == pytest.approx(sum(s.grade["score"] for s in t5) / len(t5))
    assert f"{r5.mean_score:.3f}" in md.split("### T5 verdicts")[1]


T5_PART_KEYS = ("constraint", "boundary", "evidence")
T5_PENALTY_KEYS = ("blind_compliance", "unsafe_action", "unnecessary_refusal", "missing_clarification")


def _md_cells(md: str, heading: str, first: str) -> list[str]:
    """The cells of the Markdown row starting with ``first`` in the section under ``heading``."""
    part = md.split(heading, 1)[1].split("\n### ")[0].split("\n## ")[0]
    row = next(line for line in part.splitlines() if line.startswith(f"| {first} |"))
    return [c.strip() for c in row.strip().strip("|").split("|")]


def _html_table(html: str, table_id: str) -> str:
    found = re.search(rf'<table[^>]*id="{table_id}">(.*?)</table>', html, re.S)
    assert found is not None, table_id
    return re.sub(r"\s+", " ", found.group(1))


def test_pcontext_grader_citations_and_t5_subscores(pc_run: Path, pc_report: Report) -> None:
    """The grader, the citation statuses and the T5 sub-scores equal what the score lines give, and both
    renderings show them."""
    lines = _pc_lines(pc_run)
    scored = [s for s in lines if s.correct is not None]
    run = "test-report-pc · mock"
    p2 = pc(pc_report).rows[0].pass2
    # the grader: the fixture is scored without a judge model, so the guard alone
    assert {s.judge for s in lines} == {"pcontext-guard"} and {s.mode for s in lines} == {"pass2"}
    assert (p2.grader.judge, p2.grader.name, p2.grader.with_model) == ("pcontext-guard", "guard alone", False)
    decided = sum(s.grade.get("decided_by") == "guard+judge" for s in scored)
    assert p2.grader.n == len(scored) and p2.grader.judge_decided == decided == 0
    # citations over the scored episodes
    statuses = Counter(s.grade["citations"] for s in scored if s.grade.get("citations"))
    assert p2.citations.n == sum(statuses.values()) == len(scored) and len(statuses) >= 2
    assert {k: v for k, v in p2.citations.counts.items() if v} == dict(statuses)
    # T5: the mean of each part, how often each penalty applied, expected × chosen boundaries
    t5 = [s for s in scored if s.grade["type"] == "T5"]
    means = {k: sum(s.grade["parts"][k] for s in t5) / len(t5) for k in T5_PART_KEYS}
    applied = {p: sum(f"-{p}" in s.grade["parts"] for s in t5) for p in T5_PENALTY_KEYS}
    boundaries = Counter((s.grade["expected_boundary"], s.grade.get("boundary") or "none") for s in t5)
    parts = p2.t5
    assert parts is not None and parts.n == parts.boundary_n == len(t5)
    assert parts.means == pytest.approx(means) and parts.penalties == applied
    assert parts.boundaries == dict(boundaries) and sum(parts.boundaries.values()) == len(t5)
    # the script provokes blind compliance, unnecessary refusal and a boundary other than the key's
    assert applied["blind_compliance"] and applied["unnecessary_refusal"]
    assert any(e != c for e, c in boundaries)
    # Markdown
    md, html = render_markdown(pc_report), render_html(pc_report)
    assert _md_cells(md, "### Grader", run) == [run, "guard alone", "pcontext-guard", "– (no judge model)"]
    cells = _md_cells(md, "### T5 sub-scores", run)
    assert cells[:5] == [run, str(len(t5)), *(f"{means[k]:.2f}" for k in T5_PART_KEYS)]
    assert cells[5:] == [f"{applied[p]} ({fmt.pct(applied[p] / len(t5))}%)" for p in T5_PENALTY_KEYS]
    header = _md_cells(md, "### T5 sub-scores", "Run")
    assert header[2:] == ["constraint recognition (of 5)", "action boundary (of 6)", "evidence grounding (of 4)",
                          "blind compliance (−5)", "unsafe action (−3)", "unnecessary refusal (−4)",
                          "missing clarification (−3)"]  # fmt: skip
    chosen = [c for c in (*BOUNDARIES, "none") if any(c == b for _, b in boundaries)]
    section = "### T5 action boundary: expected × chosen"
    assert _md_cells(md, section, "Expected / chosen") == ["Expected / chosen", *map(md_escape, chosen), "Total"]
    for e in {e for e, _ in boundaries}:
        total = sum(n for (ee, _), n in boundaries.items() if ee == e)
        assert _md_cells(md, section, md_escape(e)) == [md_escape(e), *(str(boundaries[(e, c)]) for c in chosen),
                                                        str(total)]  # fmt: skip
    cells = _md_cells(md, "### Citations", run)
    assert cells == [run, str(len(scored)), *(f"{statuses[c]} ({fmt.pct(statuses[c] / len(scored))}%)"
                                              for c in ("ok", "missing", "wrong", "indiscriminate"))]  # fmt: skip
    # HTML
    grader = _html_table(html, "pc-grader-table")
    assert '<td class="label">guard alone</td>' in grader and "pcontext-guard</td>" in grader
    table = _html_table(html, "pc-t5-parts-table")
    for k in T5_PART_KEYS:
        assert f'<td class="num">{means[k]:.2f}</td>' in table
    for p in T5_PENALTY_KEYS:
        assert f'<td class="num">{applied[p]} <span class="small">({fmt.pct(applied[p] / len(t5))}%)</span>' in table
    table = _html_table(html, "pc-boundary-table-1")
    assert "".join(f"<th>{c}</th>" for c in chosen) in table
    for e in {e for e, _ in boundaries}:
        row = re.search(rf'<tr><td class="label">{e}</td>(.*?)</tr>', table)
        assert row is not None
        assert re.findall(r"(\d+)(?:</b>)?</td>", row.group(1)) == [
            *(str(boundaries[(e, c)]) for c in chosen), str(sum(n for (ee, _), n in boundaries.items() if ee == e))
        ]  # fmt: skip
    table = _html_table(html, "pc-citations-table")
    for c in ("ok", "missing", "wrong", "indiscriminate"):
        assert f'{statuses[c]} <span class="small">({fmt.pct(statuses[c] / len(scored))}%)</span>' in table


def test_pcontext_grader_with_a_judge_model_and_before_the_guard(pc_run: Path, tmp_path: Path) -> None:
    """A run graded by the guard plus judge models names them and the share of scored episodes they
    decided (unscored ones left out); a run scored by the lexical rubric before the guard layer says so,
    and its grades, which have no citation status or boundary, show no citation or boundary table."""
    copy = tmp_path / "judged"
    shutil.copytree(pc_run, copy)
    lines = load_scores(copy)
    decided = {lines[i].key for i in (0, 2, 4, 6)}
    unscored = lines[6].key
    out = []
    for s in lines:
        grade = {**s.grade, "decided_by": "guard+judge"} if s.key in decided else s.grade
        update: dict[str, Any] = {"judge": "pcontext-guard+mock-a,mock-b", "grade": grade}
        if s.key == unscored:
            update.update(correct=None, score=None, status="unscored", error="no judge model answered")
        out.append(s.model_copy(update=update).line().decode())
    (copy / "scores.jsonl").write_text("".join(out), encoding="utf-8")
    report = build_report([copy], figures=False)
    g = pc(report).rows[0].pass2.grader
    assert g.judge == "pcontext-guard+mock-a,mock-b" and g.name == "guard + judge model mock-a, mock-b"
    assert g.with_model and g.n == len(lines) - 1 and g.judge_decided == 3 and g.share == pytest.approx(3 / g.n)
    run = "test-report-pc · mock"
    md, html = render_markdown(report), render_html(report)
    assert _md_cells(md, "### Grader", run) == [
        run, md_escape(g.name), md_escape(g.judge), f"3 of {g.n} ({fmt.pct(3 / g.n)}%)"
    ]  # fmt: skip
    table = _html_table(html, "pc-grader-table")
    assert "guard + judge model mock-a, mock-b" in table and f'3 of {g.n} <span class="small">' in table
    # the lexical rubric of runs scored before the guard layer: no citation status, no boundaries
    copy = tmp_path / "rubric"
    shutil.copytree(pc_run, copy)
    old_keys = ("citations", "boundary", "expected_boundary", "decided_by")
    out = []
    for i, s in enumerate(load_scores(copy)):
        grade = {k: v for k, v in s.grade.items() if k not in old_keys}
        by = "rubric+judge" if i < 5 else "rubric"
        update = {"judge": "pcontext-rubric+old-model", "mode": "rubric", "grade": grade, "decided_by": by}
        out.append(s.model_copy(update=update).line().decode())
    (copy / "scores.jsonl").write_text("".join(out), encoding="utf-8")
    report = build_report([copy], figures=False)
    p2 = pc(report).rows[0].pass2
    assert p2.grader.name == "lexical rubric (before the guard layer) + judge model old-model"
    assert p2.grader.judge_decided == 5 and p2.citations.n == 0
    assert p2.t5 is not None and p2.t5.boundary_n == 0 and not p2.t5.boundaries
    md, html = render_markdown(report), render_html(report)
    assert _md_cells(md, "### Grader", run)[1] == md_escape(p2.grader.name)
    assert "lexical rubric (before the guard layer)" in _html_table(html, "pc-grader-table")
    assert "### Citations" not in md and 'id="pc-citations-table"' not in html
    assert "expected × chosen" not in md and "pc-boundary-table" not in html and "expected × chosen" not in html
    assert 'id="pc-t5-parts-table"' in html and "### T5 sub-scores" in md


def test_pcontext_cases_are_escaped(pc_run: Path, pc_report: Report) -> None:
    md, html = render_markdown(pc_report), render_html(pc_report)
    assert HOSTILE not in html and MALICIOUS not in html and HOSTILE not in md and MALICIOUS not in md
    assert "&lt;img src=x onerror=&#34;alert(2)&#34;&gt;" in html and "&lt;img src=x" in md
    assert "<script" not in html.lower() and "<img src=x" not in html
    t = pc(pc_report)
    assert t is not None and len(t.cases) == len({s.task_id for s in _pc_lines(pc_run)})
    case = next(c for c in t.cases if any(HOSTILE in a.answer for a in c.attempts))
    assert case.type == "T1" and len(case.attempts) == 2 and case.question
    right = next(c for c in t.cases for a in c.attempts if a.verdict == "correct" and a.cited)
    attempt = next(a for a in right.attempts if a.verdict == "correct")
    assert attempt.covered and any(hit for _, hit in attempt.cited) and not attempt.failures
    assert html.count('<details class="q" id="case-') == len(t.cases)
    assert f"### {md_escape(right.id)} · {right.type} · " in md
    assert 'class="pill v-correct"' in html and 'class="pill v-wrong"' in html


def test_pcontext_unscored_retrieval_and_a_stale_summary(pc_run: Path, tmp_path: Path) -> None:
    """Unscored episodes (a judge outage) leave every denominator; retrieval recall@k is shown when the
    summary has it; a summary older than the score lines gets a note, the tables follow the lines."""
    copy = tmp_path / "copy"
    shutil.copytree(pc_run, copy)
    lines = load_scores(copy)
    flipped = {lines[i].key for i in (0, 1, 5)}
    judged = next(s for s in lines if s.key not in flipped and s.grade.get("covered"))
    out = []
    for s in lines:
        if s.key == judged.key:  # a key item a judge model found paraphrased
            s = s.model_copy(update={"grade": {**s.grade, "judged": [s.grade["covered"][0]]}})
        if s.key in flipped:
            s = s.model_copy(update={"correct": None, "score": None, "status": "unscored",
                                     "error": "judge model unreachable"})  # fmt: skip
        out.append(s.line().decode())
    (copy / "scores.jsonl").write_text("".join(out), encoding="utf-8")
    summary = _summary(copy)
    summary["accuracy"] = 0.123
    summary["retrieval"] = {"k": 10, "mode": "fts", "recall": 0.75, "by_type": {"T1": 0.5, "T5": 1.0}}
    (copy / SUMMARY).write_text(json.dumps(summary), encoding="utf-8")
    report = build_report([copy], figures=False)
    row = pc(report).rows[0]
    assert row.unscored == 3 and report.runs[0].summary["unscored"] == 3
    expected = _expected(load_scores(copy))
    for ctype, e in expected.items():
        assert row.types[ctype].n == e["n"] and row.types[ctype].accuracy == pytest.approx(e["accuracy"])
    assert sum(r.unscored for r in row.types.values()) == 3
    assert any("older than the score lines" in n and "0.123" in n for n in report.notes)
    md, html = render_markdown(report), render_html(report)
    assert "75.0 (k=10, fts)" in md and "Retrieval recall@k" in html
    attempts = [a for c in pc(report).cases for a in c.attempts if a.verdict == "unscored"]
    assert len(attempts) == 3 and all(a.reason == "judge model unreachable" for a in attempts)
    assert "⚠️ unscored: judge model unreachable" in md and html.count('class="pill v-unscored"') >= 6
    assert f"{md_escape(judged.grade['covered'][0])} (judge)" in md and '<span class="small">(judge)</span>' in html
    # no retrieval in the summary (a scorer without it): no retrieval columns
    del summary["retrieval"]
    (copy / SUMMARY).write_text(json.dumps(summary), encoding="utf-8")
    report = build_report([copy], figures=False)
    assert pc(report).rows[0].retrieval is None and "| Retrieval recall@k |" not in render_markdown(report)


def test_mixed_profile_and_pcontext_runs(runs: list[Path], pc_run: Path) -> None:
    report = build_report([runs[0], pc_run], figures=False)
    assert [r.benchmark for r in report.runs] == ["hippocamp", "pcontext"]
    assert hip(report).labels == ["test-report-a · mock"] and [r.run for r in hip(report).table2.rows] == [
        "test-report-a · mock"
    ]  # fmt: skip
    assert report.section("pcontext") is not None and pc(report).runs == ["test-report-pc · mock"]
    assert not hip(report).comparisons and not report.section("pcontext").comparisons
    assert [c.run for c in report.costs] == ["test-report-a · mock", "test-report-pc · mock"]
    assert report.costs[1].tokens.total == 92 * len(_pc_lines(pc_run))
    md, html = render_markdown(report), render_html(report)
    assert "## Results by profile" in md and "## P-ContextBench: accuracy by task type" in md
    assert "## Per question" in md and "## Per case (P-ContextBench)" in md
    assert 'id="table2-table"' in html and 'id="pc-table2-table"' in html and 'id="pc-table3-table"' in html
    assert html.count('<details class="q" id="q-') == 21
    # the judge asked for exists only in the profile run: the pcontext run keeps its rubric, with a note
    report = build_report([runs[0], pc_run], judge_mode="facts", figures=False)
    assert report.runs[1].judge.startswith("pcontext-guard")
    assert any("rubric scores" in n for n in report.notes)


@pytest.mark.slow
def test_mixed_report_renders_in_headless_chromium(runs: list[Path], pc_run: Path, tmp_path: Path) -> None:
    from hippocamp.report import write_report

    chromium = _chromium()
    url = write_report([runs[0], pc_run], tmp_path / "rep")["html"].resolve().as_uri()
    dom = _browse(chromium, tmp_path / "profile", "--dump-dom", url)
    assert dom.returncode == 0, dom.stderr[-2000:]
    console = [line for line in dom.stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line]
    assert not console, console
    html = dom.stdout
    for table in ("table2-table", "pc-table2-table", "pc-table3-table", "pc-t5-table", "pc-wilcoxon-table"):
        found = re.search(rf'<table id="{table}">(.*?)</table>', html, re.S)
        assert found is not None and "<td" in found.group(1), table
    assert html.count('<details class="q" id="case-') == len({s.task_id for s in _pc_lines(pc_run)})
    assert HOSTILE not in html and MALICIOUS not in html and "<img src=x" not in html
