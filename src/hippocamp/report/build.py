"""A report's data, assembled from scored run directories (rendering is in ``markdown.py`` and ``html.py``).

Every number is computed from ``scores.jsonl`` (one judge and mode per run), the episodes and the gold
records the manifest points to, with the functions of `hippocamp.scoring.stats`, so a run's headline
figures equal its ``scores.summary.json``. Unscored answers are counted and never scored 0; an unknown
cost stays unknown. A ``pcontext:`` run (P-ContextBench personas) has no HippoCamp records: its tables
are in `hippocamp.report.pcontext`, the HippoCamp sections cover the other runs, and both kinds can be
reported together.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hippocamp.dataset.derived import features_of
from hippocamp.report.pcontext import PContextGold, PContextTables, build_pcontext, graded, load_gold, pcontext_row
from hippocamp.report.pcontext import saved_summary as read_saved_summary
from hippocamp.report.pcontext import summary_of as pcontext_summary
from hippocamp.report.plots import AccuracyPanel, plot_accuracy_panels, plot_latency
from hippocamp.runs.episodes import Episode, EpisodeKey, read_episodes
from hippocamp.schema.record import HippoCampRecord
from hippocamp.scoring.evidence import normalize_path
from hippocamp.scoring.run_scores import SCORES, ScoreLine, _gold, load_scores, scored_items, summarize_scores
from hippocamp.scoring.stats import (
    CAPABILITY_DIMENSIONS,
    CI,
    GroupMean,
    ScoredItem,
    Summary,
    WilcoxonResult,
    balanced_mean,
    bootstrap_ci,
    by_capability,
    by_difficulty,
    group_means,
    mean_of,
    usage_summary,
    wilcoxon,
    with_difficulty,
)

__all__ = [
    "OVERALL",
    "Comparison",
    "Report",
    "ReportError",
    "RunData",
    "build_report",
    "family_name",
    "load_run",
]

OVERALL = "Overall"
#: the paper's column order; other task families follow in name order
FAMILY_ORDER = ("profiling", "factual_retention")
FAMILY_NAMES = {"profiling": "Profiling", "factual_retention": "Factual retention"}
#: bootstrap resamples (as `summarize_scores`, so the CI equals the summary's with one profile)
RESAMPLES = 2000
#: (feature, title, x label, last bucket "N+")
BREADTH_AXES = (
    ("evidence_files", "Evidence breadth", "gold files", 5),
    ("modality_count", "Modality breadth", "modalities", 3),
    ("reasoning_steps", "Reasoning depth", "reasoning steps", 8),
)


class ReportError(Exception):
    """A run directory that cannot be reported (no manifest, no scores, no such judge)."""


def family_name(family: str) -> str:
    return FAMILY_NAMES.get(family, family.replace("_", " ").capitalize() or "Unknown")


# -- one run -------------------------------------------------------------------------------------
@dataclass
class RunData:
    """One scored run: its manifest fields, one judge's score lines, episodes, gold and scored items."""

    path: Path
    agent: str
    model: str
    suite: str
    suite_spec: str
    dataset_sha256: str
    epochs: int
    created: str
    judge: str
    mode: str
    lines: list[ScoreLine]
    items: list[ScoredItem]
    episodes: dict[EpisodeKey, Episode]
    gold: dict[str, HippoCampRecord]
    summary: dict[str, Any]
    #: episodes with no score line from this judge and mode
    not_scored: int
    #: task ids of episodes whose question is not in the gold records
    missing_gold: list[str]
    label: str = ""
    #: "profile" (HippoCamp records) or "pcontext" (P-ContextBench personas)
    kind: str = "profile"
    #: pcontext runs: the answer keys, and the ``scores.summary.json`` as written (for retrieval recall)
    pcontext_gold: PContextGold | None = None
    saved_summary: dict[str, Any] = field(default_factory=dict)
    #: why the reported judge is not the one asked for
    judge_note: str = ""

    @property
    def short_sha(self) -> str:
        return self.dataset_sha256[:12] if self.dataset_sha256 else "unknown"

    @property
    def is_pcontext(self) -> bool:
        return self.kind == "pcontext"


def _choose_judge(lines: list[ScoreLine], mode: str | None, judge: str | None, where: Path) -> tuple[str, str]:
    """The (judge, mode) to report: the one given, else the one with most lines (ties: written last)."""
    last: dict[tuple[str, str], int] = {}
    for i, s in enumerate(lines):
        last[(s.judge, s.mode)] = i
    counts = Counter(
        (s.judge, s.mode) for s in lines if (mode is None or s.mode == mode) and (judge is None or s.judge == judge)
    )
    if not counts:
        have = ", ".join(f"{j or '?'}/{m}" for j, m in sorted(last)) or "none"
        raise ReportError(f"{where}: no scores for judge {judge or 'any'} / mode {mode or 'any'} (found: {have})")
    return max(counts, key=lambda p: (counts[p], last[p]))


def _manifest(path: Path) -> dict[str, Any]:
    """The run's manifest; one that cannot be read is a `ReportError` naming the file."""
    from hippocamp.scoring.run_scores import read_run_manifest

    try:
        return read_run_manifest(path, required=False)
    except (OSError, ValueError) as exc:
        raise ReportError(str(exc)) from None


def _described(manifest: dict[str, Any]) -> dict[str, Any]:
    """What a run's manifest says of it: agent, model, suite, dataset hash, epochs, creation time."""
    config, suite = manifest.get("config", {}), manifest.get("suite", {})
    model = config.get("model", {})
    return {
        "agent": str(config.get("agent", "?")),
        "model": str(model.get("id", "?") if isinstance(model, dict) else model),
        "suite": str(suite.get("name") or config.get("suite", {}).get("name", "?")),
        "suite_spec": str(suite.get("spec", "")),
        "dataset_sha256": str(config.get("suite", {}).get("dataset_sha256", "")),
        "epochs": int(config.get("epochs", 1) or 1),
        "created": str(manifest.get("created", "")),
    }


def _load_pcontext(path: Path, manifest: dict[str, Any], judge_mode: str | None, judge: str | None) -> RunData:
    """A ``pcontext:`` run: its rubric lines (the judge asked for when it has lines, else the one with most)."""
    if not (path / SCORES).is_file():
        raise ReportError(f"{path}: no {SCORES}; score the run first (hippocamp score {path})")
    all_lines = load_scores(path)
    note = ""
    try:
        judge_id, mode = _choose_judge(all_lines, judge_mode, judge, path)
    except ReportError as exc:
        if judge_mode is None and judge is None:
            raise
        judge_id, mode = _choose_judge(all_lines, None, None, path)
        note = f"{exc}; its P-ContextBench rubric scores ({judge_id}/{mode}) are reported instead"
    lines = [s for s in all_lines if s.judge == judge_id and s.mode == mode]
    episodes = {e.key: e for e in read_episodes(path / "episodes.jsonl").episodes}
    scored_keys = {(s.task_id, s.agent, s.epoch) for s in lines}
    gold = load_gold(manifest)
    saved = read_saved_summary(path)
    return RunData(
        path=path,
        **_described(manifest),
        judge=judge_id,
        mode=mode,
        lines=lines,
        items=[],
        episodes=episodes,
        gold={},
        summary=pcontext_summary(pcontext_row("", graded(lines, gold))),
        not_scored=sum(k not in scored_keys for k in episodes),
        missing_gold=sorted({k[0] for k in episodes if gold.cases and k[0] not in gold.cases}),
        kind="pcontext",
        pcontext_gold=gold,
        saved_summary=saved,
        judge_note=note,
    )


def load_run(run_dir: str | Path, *, judge_mode: str | None = None, judge: str | None = None) -> RunData:
    """Read a scored run directory; ``judge_mode``/``judge`` pick among several judges' scores."""
    from hippocamp.redact import redact_text

    path = Path(run_dir)
    judge = redact_text(judge) if judge else judge  # score lines hold redacted judge ids
    manifest = _manifest(path)
    if manifest.get("suite", {}).get("kind") == "pcontext":
        return _load_pcontext(path, manifest, judge_mode, judge)
    try:
        gold, manifest = _gold(path)
    except (FileNotFoundError, ValueError) as exc:
        raise ReportError(str(exc)) from None
    if not (path / SCORES).is_file():
        raise ReportError(f"{path}: no {SCORES}; score the run first (hippocamp score {path})")
    all_lines = load_scores(path)
    judge_id, mode = _choose_judge(all_lines, judge_mode, judge, path)
    chosen = [s for s in all_lines if s.judge == judge_id and s.mode == mode]
    lines = [s for s in chosen if s.task_id in gold]
    items = scored_items(lines, gold)
    items = with_difficulty(items, [gold[i.id] for i in items])
    episodes = {e.key: e for e in read_episodes(path / "episodes.jsonl").episodes}
    scored_keys = {(s.task_id, s.agent, s.epoch) for s in chosen}
    return RunData(
        path=path,
        **_described(manifest),
        judge=judge_id,
        mode=mode,
        lines=lines,
        items=items,
        episodes=episodes,
        gold=gold,
        summary=summarize_scores(lines, gold),
        not_scored=sum(k not in scored_keys for k in episodes),
        missing_gold=sorted({k[0] for k in episodes if k[0] not in gold}),
    )


def _labels(runs: list[RunData]) -> None:
    """``agent · model``, made unique with the directory name when two runs share it."""
    base = [f"{r.agent} · {r.model}" for r in runs]
    counts = Counter(base)
    for run, label in zip(runs, base, strict=True):
        run.label = f"{label} ({run.path.name})" if counts[label] > 1 else label


# -- tables --------------------------------------------------------------------------------------
@dataclass
class Table2Row:
    """One run in the paper's Table 2: (profile or Overall, family) -> (file F1, accuracy)."""

    run: str
    cells: dict[tuple[str, str], tuple[GroupMean, GroupMean]]
    overall: GroupMean
    ci: CI
    file_f1: GroupMean
    unscored: int


@dataclass
class Table2:
    profiles: list[str]
    families: list[str]
    rows: list[Table2Row]

    @property
    def groups(self) -> list[str]:
        """The column groups: each profile, then Overall (left out with one profile: it would repeat it)."""
        return [*self.profiles, OVERALL] if len(self.profiles) > 1 else list(self.profiles)


@dataclass
class AccuracyTable:
    """Accuracy per row label (and optional group) per run, in run order."""

    title: str
    key: str
    rows: list[tuple[str, str, list[GroupMean]]]

    def panel(self, runs: Sequence[str], title: str | None = None) -> AccuracyPanel:
        return AccuracyPanel(
            title=title or self.title,
            xlabel=self.key,
            labels=[label for _, label, _ in self.rows],
            values={r: [row[2][i].mean for row in self.rows] for i, r in enumerate(runs)},
            counts={r: [row[2][i].n for row in self.rows] for i, r in enumerate(runs)},
        )


@dataclass
class CostRow:
    run: str
    episodes: int
    seconds: Summary
    model_seconds: Summary
    tokens: Summary
    cost: Summary
    stops: dict[str, int]


@dataclass
class Delta:
    """A paired difference (other − base) over the questions both runs answered and had scored."""

    metric: str
    unit: str
    base: float | None
    other: float | None
    ci: CI
    test: WilcoxonResult


@dataclass
class Comparison:
    base: str
    other: str
    questions: int
    deltas: list[Delta]


@dataclass
class Attempt:
    """One run's answer to one question (one epoch) and how it was scored."""

    run: str
    epoch: int
    answer: str
    verdict: str
    reason: str
    rationale: str
    decided_by: str
    cited: list[tuple[str, bool]]
    stop: str
    seconds: float | None
    error: str | None


@dataclass
class QuestionView:
    id: str
    question: str
    gold_answer: str
    family: str
    profile: str
    gold_files: list[tuple[str, bool]]
    attempts: list[Attempt]

    @property
    def verdicts(self) -> list[str]:
        return [a.verdict for a in self.attempts]


@dataclass
class Report:
    """Everything a report shows, as plain data; figures are PNG bytes by name."""

    title: str
    runs: list[RunData]
    table2: Table2
    capability: AccuracyTable
    difficulty: AccuracyTable
    breadth: list[AccuracyTable]
    costs: list[CostRow]
    comparisons: list[Comparison]
    questions: list[QuestionView]
    figures: dict[str, bytes] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    #: the P-ContextBench tables, when some run is a pcontext run
    pcontext: PContextTables | None = None
    #: pcontext runs against the first one, paired by case id (e.g. a filler-ratio or decoy ablation: two
    #: persona sets generated with the same seed hold the same cases)
    pcontext_comparisons: list[Comparison] = field(default_factory=list)

    @property
    def labels(self) -> list[str]:
        return [r.label for r in self.runs]

    @property
    def profile_runs(self) -> list[RunData]:
        """The runs over HippoCamp records (the sections by profile, capability, difficulty, questions)."""
        return [r for r in self.runs if not r.is_pcontext]

    @property
    def profile_labels(self) -> list[str]:
        return [r.label for r in self.profile_runs]


def _families(runs: list[RunData]) -> list[str]:
    seen = {it.qa_type or "unknown" for r in runs for it in r.items}
    return [f for f in FAMILY_ORDER if f in seen] + sorted(seen - set(FAMILY_ORDER))


def _table2(runs: list[RunData]) -> Table2:
    profiles = sorted({it.profile or "unknown" for r in runs for it in r.items})
    families = _families(runs)
    rows = []
    for run in runs:
        cells: dict[tuple[str, str], tuple[GroupMean, GroupMean]] = {}
        for family in families:
            fam = [it for it in run.items if (it.qa_type or "unknown") == family]
            for profile in profiles:
                mine = [it for it in fam if (it.profile or "unknown") == profile]
                cells[(profile, family)] = (mean_of(it.f1 for it in mine), mean_of(it.correct for it in mine))
            cells[(OVERALL, family)] = (balanced_mean(fam, "f1"), balanced_mean(fam))
        values = [it.correct for it in run.items]
        groups = [it.profile or "unknown" for it in run.items]
        rows.append(
            Table2Row(
                run=run.label,
                cells=cells,
                overall=balanced_mean(run.items),
                ci=bootstrap_ci(values, groups=groups, resamples=RESAMPLES),
                file_f1=balanced_mean(run.items, "f1"),
                unscored=sum(v is None for v in values),
            )
        )
    return Table2(profiles, families, rows)


def _capability(runs: list[RunData]) -> AccuracyTable:
    per_run = [by_capability(r.items) for r in runs]
    rows = []
    for dim in CAPABILITY_DIMENSIONS:
        labels = sorted({label for caps in per_run for label in caps[dim]})
        for label in labels:
            rows.append((dim, label, [caps[dim].get(label, GroupMean(None, 0)) for caps in per_run]))
    return AccuracyTable("Accuracy by capability", "label", rows)


def _difficulty(runs: list[RunData]) -> AccuracyTable:
    per_run = [by_difficulty(r.items) for r in runs]
    bins = list(per_run[0]) if per_run else []
    return AccuracyTable("Accuracy by difficulty", "difficulty score", [("", b, [p[b] for p in per_run]) for b in bins])


def _bucket(value: float, top: int) -> tuple[int, str]:
    v = int(value)
    return (top, f"{top}+") if v >= top else (v, str(v))


def _breadth(runs: list[RunData]) -> list[AccuracyTable]:
    features: dict[str, Any] = {}
    for run in runs:
        for key, record in run.gold.items():
            features.setdefault(key, features_of(record))
    tables = []
    for attr, title, xlabel, top in BREADTH_AXES:
        buckets = {key: _bucket(getattr(f, attr), top) for key, f in features.items()}
        per_run = [group_means(r.items, lambda it, b=buckets: b[it.id][1]) for r in runs]
        seen = {buckets[it.id] for r in runs for it in r.items}
        labels = [label for _, label in sorted(seen)]
        rows = [("", label, [g.get(label, GroupMean(None, 0)) for g in per_run]) for label in labels]
        tables.append(AccuracyTable(title, xlabel, rows))
    return tables


def _costs(runs: list[RunData]) -> list[CostRow]:
    rows = []
    for run in runs:
        if run.is_pcontext:  # no gold records: usage straight from the score lines
            usage = usage_summary([ScoredItem(id=s.task_id, seconds=s.seconds, tokens=s.tokens, cost=s.cost)
                                   for s in run.lines])  # fmt: skip
            model_s = usage_summary([ScoredItem(id=k[0], seconds=e.model_s) for k, e in run.episodes.items()])
            stops = Counter(s.stop for s in run.lines)
            rows.append(CostRow(run.label, len(run.lines), usage["seconds"], model_s["seconds"], usage["tokens"],
                                usage["cost"], dict(stops)))  # fmt: skip
            continue
        usage = usage_summary(run.items)
        model_s = usage_summary(
            [ScoredItem(id=k[0], seconds=e.model_s) for k, e in run.episodes.items() if k[0] in run.gold]
        )["seconds"]
        stops = Counter(s.stop for s in run.lines)
        rows.append(
            CostRow(run.label, len(run.lines), usage["seconds"], model_s, usage["tokens"], usage["cost"], dict(stops))
        )
    return rows


# -- comparisons ---------------------------------------------------------------------------------
LineMetric = Callable[[ScoreLine], float | None]


def _correct(s: ScoreLine) -> float | None:
    return None if s.correct is None else float(s.correct)


#: (name, unit, task family or None for all, value of a score line)
_METRICS: tuple[tuple[str, str, str | None, LineMetric], ...] = (
    ("Accuracy", "%", None, _correct),
    ("Accuracy · Profiling", "%", "profiling", _correct),
    ("Accuracy · Factual retention", "%", "factual_retention", _correct),
    ("File F1", "%", None, lambda s: float(s.files["hippocamp"]["f1"])),
    ("AU recall", "%", None, lambda s: float(s.au["recall"])),
    ("Latency", "s", None, lambda s: s.seconds),
    ("Tokens", "", None, lambda s: float(s.tokens)),
)


def _per_question(run: RunData, metric: LineMetric) -> dict[str, float | None]:
    """Each question's value, averaged over its epochs' known values (None when none is known)."""
    values: dict[str, list[float]] = defaultdict(list)
    for s in run.lines:
        known = values[s.task_id]
        v = metric(s)
        if v is not None:
            known.append(v)
    return {q: (sum(v) / len(v) if v else None) for q, v in values.items()}


def _balanced(values: list[float], groups: list[str]) -> float | None:
    by: dict[str, list[float]] = defaultdict(list)
    for v, g in zip(values, groups, strict=True):
        by[g].append(v)
    means = [sum(v) / len(v) for v in by.values()]
    return sum(means) / len(means) if means else None


def _compare(base: RunData, other: RunData) -> Comparison:
    common = sorted(set(base.gold) & {s.task_id for s in base.lines} & {s.task_id for s in other.lines})
    deltas = []
    for name, unit, family, metric in _METRICS:
        ids = [q for q in common if family is None or (base.gold[q].qa_type or "unknown") == family]
        if not ids:
            continue
        a, b = _per_question(base, metric), _per_question(other, metric)
        xs, ys = [b[q] for q in ids], [a[q] for q in ids]
        both = [(x, y, base.gold[q].data_source or "unknown") for q, x, y in zip(ids, xs, ys, strict=True)
                if x is not None and y is not None]  # fmt: skip
        groups = [g for _, _, g in both]
        ci = bootstrap_ci([x - y for x, y, _ in both], groups=groups, resamples=RESAMPLES)
        deltas.append(
            Delta(
                metric=name,
                unit=unit,
                base=_balanced([y for _, y, _ in both], groups),
                other=_balanced([x for x, _, _ in both], groups),
                ci=ci,
                test=wilcoxon(xs, ys),
            )
        )
    return Comparison(base.label, other.label, len(common), deltas)


def _case_means(run: RunData) -> dict[str, tuple[str, float]]:
    """Each pcontext case's type and accuracy over its scored epochs (cases never scored left out)."""
    from hippocamp.report.pcontext import graded

    values: dict[str, list[bool]] = defaultdict(list)
    types: dict[str, str] = {}
    for g in graded(run.lines, run.pcontext_gold):
        types[g.task_id] = g.type
        if g.correct is not None:
            values[g.task_id].append(g.correct)
    return {q: (types[q], sum(v) / len(v)) for q, v in values.items() if v}


def _compare_pcontext(base: RunData, other: RunData) -> Comparison | None:
    """Accuracy of ``other`` against ``base`` over the cases both scored (same task ids), overall and by
    task type: Δ with a bootstrap interval and the paired Wilcoxon test on per-case accuracy."""
    a, b = _case_means(base), _case_means(other)
    common = sorted(set(a) & set(b))
    if not common:
        return None
    deltas = []
    types = sorted({a[q][0] for q in common})
    for name, ids in [("Accuracy", common), *((f"Accuracy · {t}", [q for q in common if a[q][0] == t]) for t in types)]:
        xs, ys = [b[q][1] for q in ids], [a[q][1] for q in ids]
        ci = bootstrap_ci([x - y for x, y in zip(xs, ys, strict=True)], resamples=RESAMPLES)
        try:
            test = wilcoxon(xs, ys)
        except ValueError:  # too few pairs
            continue
        deltas.append(Delta(name, "%", sum(ys) / len(ys), sum(xs) / len(xs), ci, test))
    return Comparison(base.label, other.label, len(common), deltas)


# -- drill-down ----------------------------------------------------------------------------------
def _verdict(line: ScoreLine | None) -> tuple[str, str]:
    if line is None:
        return "not scored", "no score line for this judge"
    if line.correct is None:
        return "unscored", line.error or line.rationale or line.status
    return ("correct" if line.correct else "wrong"), ""


def _questions(runs: list[RunData]) -> list[QuestionView]:
    gold: dict[str, HippoCampRecord] = {}
    for run in runs:
        for key, record in run.gold.items():
            gold.setdefault(key, record)
    asked = {k[0] for r in runs for k in r.episodes}
    views = []
    for qid, record in gold.items():
        if qid not in asked:
            continue
        gold_files = {normalize_path(p) for p in record.file_path}
        attempts, cited_any = [], set()
        for run in runs:
            lines = {(s.task_id, s.epoch): s for s in run.lines}
            for (task, _, epoch), episode in sorted(run.episodes.items(), key=lambda kv: kv[0][2]):
                if task != qid:
                    continue
                line = lines.get((qid, epoch))
                verdict, reason = _verdict(line)
                cited = [(p, normalize_path(p) in gold_files) for p in episode.answer.files]
                cited_any.update(normalize_path(p) for p, _ in cited)
                attempts.append(
                    Attempt(
                        run=run.label,
                        epoch=epoch,
                        answer=episode.answer.text,
                        verdict=verdict,
                        reason=reason,
                        rationale=line.rationale if line else "",
                        decided_by=line.decided_by if line else "",
                        cited=cited,
                        stop=episode.answer.stop,
                        seconds=episode.wall_s,
                        error=episode.answer.error,
                    )
                )
        views.append(
            QuestionView(
                id=qid,
                question=record.question,
                gold_answer=record.answer,
                family=family_name(record.qa_type or "unknown"),
                profile=record.data_source or "unknown",
                gold_files=[(p, normalize_path(p) in cited_any) for p in record.file_path],
                attempts=attempts,
            )
        )
    return views


# -- everything ----------------------------------------------------------------------------------
def _notes(runs: list[RunData], pcontext: PContextTables | None) -> list[str]:
    notes = []
    profile = [r for r in runs if not r.is_pcontext]
    if len({r.dataset_sha256 for r in profile}) > 1:
        notes.append("The runs are over different datasets (dataset sha256 differs): they are not compared.")
    if len({r.dataset_sha256 for r in runs if r.is_pcontext}) > 1:
        notes.append("The P-ContextBench runs are over different persona sets (dataset sha256 differs).")
    for run in runs:
        if run.judge_note:
            notes.append(f"{run.label}: {run.judge_note}.")
        if run.not_scored:
            notes.append(f"{run.label}: {run.not_scored} episode(s) have no score from {run.judge}/{run.mode}.")
        if run.missing_gold:
            notes.append(f"{run.label}: {len(run.missing_gold)} episode(s) have no gold record and are left out.")
        gold = run.pcontext_gold
        if gold is not None and gold.error:
            notes.append(f"{run.label}: no answer keys for the per-case view ({gold.error}); the tables come from "
                         f"{SCORES}.")  # fmt: skip
    for row in pcontext.rows if pcontext else []:
        if row.stale:
            notes.append(f"{row.run}: {row.stale}; it is older than the score lines, which this report uses.")
    return notes


def _figures(report: Report) -> dict[str, bytes]:
    labels = report.profile_labels
    figures: dict[str, bytes] = {}
    if report.difficulty.rows:
        panel = report.difficulty.panel(labels)
        figures["difficulty"] = plot_accuracy_panels([panel], "Accuracy vs difficulty")
    panels = [t.panel(labels) for t in report.breadth if t.rows]
    if panels:
        figures["breadth"] = plot_accuracy_panels(panels, "Accuracy by evidence breadth and reasoning depth")
    caps = report.capability
    cap_panels = []
    for dim in CAPABILITY_DIMENSIONS:
        rows = [row for row in caps.rows if row[0] == dim]
        if rows:
            cap_panels.append(AccuracyTable(dim.capitalize(), f"{dim} label", rows).panel(labels))
    if cap_panels:
        figures["capability"] = plot_accuracy_panels(cap_panels, "Accuracy by capability label")
    seconds = [[s.seconds for s in r.lines] for r in report.runs]
    if any(seconds):
        figures["latency"] = plot_latency(labels, seconds)
    return figures


def build_report(
    run_dirs: Sequence[str | Path],
    *,
    judge_mode: str | None = None,
    judge: str | None = None,
    title: str = "hippocamp report",
    figures: bool = True,
) -> Report:
    """Read the runs and compute every table, comparison (against the first run) and figure."""
    if not run_dirs:
        raise ReportError("no run directories given")
    runs = [load_run(d, judge_mode=judge_mode, judge=judge) for d in run_dirs]
    _labels(runs)
    profile = [r for r in runs if not r.is_pcontext]
    pcontext = [r for r in runs if r.is_pcontext]
    same_suite = len({r.dataset_sha256 for r in profile}) == 1
    tables = build_pcontext(pcontext) if pcontext else None
    report = Report(
        title=title,
        runs=runs,
        table2=_table2(profile),
        capability=_capability(profile),
        difficulty=_difficulty(profile),
        breadth=_breadth(profile),
        costs=_costs(runs),
        comparisons=[_compare(profile[0], other) for other in profile[1:]] if same_suite else [],
        questions=_questions(profile),
        notes=_notes(runs, tables),
        pcontext=tables,
        pcontext_comparisons=[c for other in pcontext[1:] if (c := _compare_pcontext(pcontext[0], other))],
    )
    if figures:
        report.figures = _figures(report)
    return report
