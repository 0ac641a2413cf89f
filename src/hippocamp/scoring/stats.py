"""Aggregations and statistics over scored questions.

A question's outcome is a number in [0, 1] (a judge verdict as 1/0, or ``True``/``False``) or
``None`` when it could not be scored (a judge outage). **``None`` is never a 0**: every mean leaves
it out of the denominator and counts it in ``unscored``.

* Group means by profile (``data_source``), task family (``QA_type``, ``profiling_type``),
  capability label (a question counts once in every label it has, per dimension search /
  perception / reasoning) and difficulty bin (the release's score, `DifficultyModel`, fitted over
  the scored questions; fixed bins 0–20, 20–40, 40–60, 60–80, 80–100, lower bound inclusive, the
  last also holding 100; or bins at quantiles with `quantile_edges`).
* Overall is **profile-balanced**: the mean of the per-profile means (`balanced_mean`), as the
  paper reports; `mean_of` is the question-weighted mean.
* Several runs (epochs): per-run means, their mean and the worst run (`run_stats`); pass^k (all k
  of k runs right) and pass@k (at least one of k right) with the unbiased estimators over the n
  scored runs of each question (`pass_hat_k`, `pass_at_k`); an outcome counts as right when ≥ 0.5.
* Percentile bootstrap confidence intervals, seeded (`bootstrap_ci`; stratified by group for the
  balanced mean), and the paired Wilcoxon signed-rank test (`wilcoxon`), which reproduces
  ``scipy.stats.wilcoxon`` with its defaults (``zero_method="wilcox"``, ``correction=False``,
  ``method="auto"``): the exact null distribution when there are at most 50 differences and no ties
  or zeros; the exact sign-flip distribution of the tied ranks (scipy's permutation test, which
  enumerates every sign when n ≤ 13) with ties or zeros and n ≤ 13; otherwise the normal
  approximation with the tie correction (and the continuity correction when ``correction=True``).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import pairwise
from typing import Any, Literal

import numpy as np

from hippocamp.dataset.derived import DifficultyModel, TimesOf, features_of
from hippocamp.schema.record import HippoCampRecord

__all__ = [
    "CAPABILITY_DIMENSIONS",
    "CI",
    "DIFFICULTY_EDGES",
    "GroupMean",
    "Outcome",
    "PassK",
    "RunStats",
    "ScoredItem",
    "Summary",
    "WilcoxonResult",
    "aggregate",
    "balanced_mean",
    "bootstrap_ci",
    "by_capability",
    "by_difficulty",
    "by_profile",
    "by_profiling_type",
    "by_qa_type",
    "difficulty_scores",
    "group_means",
    "mean_of",
    "outcomes_by_question",
    "pass_at_k",
    "pass_hat_k",
    "quantile_edges",
    "run_stats",
    "summarize",
    "usage_summary",
    "wilcoxon",
    "with_difficulty",
]

Outcome = float | bool | None
Metric = str | Callable[["ScoredItem"], Outcome]
CAPABILITY_DIMENSIONS = ("search", "perception", "reasoning")
DIFFICULTY_EDGES: tuple[float, ...] = (0.0, 20.0, 40.0, 60.0, 80.0, 100.0)


# -- one scored question -------------------------------------------------------------------------
@dataclass(frozen=True)
class ScoredItem:
    """One question's scores in one run, with what it is grouped by.

    ``correct`` is the judge's verdict (1/0, or a score in [0, 1]); ``f1`` the file F1; either is
    None when not scored. ``caps`` maps a dimension (search/perception/reasoning) to its labels."""

    id: str
    correct: Outcome = None
    f1: float | None = None
    profile: str = ""
    qa_type: str = ""
    profiling_type: str = ""
    caps: Mapping[str, Sequence[str]] = field(default_factory=dict, hash=False)
    difficulty: float | None = None
    seconds: float | None = None
    tokens: int | None = None
    cost: float | None = None
    run: int | str = 0

    @classmethod
    def from_record(cls, record: HippoCampRecord, correct: Outcome, **kw: Any) -> ScoredItem:
        """Group keys from the record (``data_source``, ``QA_type``, ``profiling_type``, ``agent_cap``)."""
        caps = {k: tuple(v) for k, v in record.agent_cap.labels().items()} if record.agent_cap else {}
        return cls(
            id=record.key,
            correct=correct,
            profile=record.data_source or "",
            qa_type=record.qa_type or "",
            profiling_type=record.profiling_type or "",
            caps=caps,
            **kw,
        )


def _value(item: ScoredItem, metric: Metric) -> Outcome:
    return metric(item) if callable(metric) else getattr(item, metric)


@dataclass(frozen=True)
class GroupMean:
    """A mean over scored items: ``n`` scored, ``unscored`` left out; ``mean`` None when n = 0."""

    mean: float | None
    n: int
    unscored: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {"mean": self.mean, "n": self.n, "unscored": self.unscored}


def mean_of(values: Iterable[Outcome]) -> GroupMean:
    """The question-weighted mean of the scored values; ``None`` values are counted as unscored."""
    total, n, unscored = 0.0, 0, 0
    for v in values:
        if v is None:
            unscored += 1
        else:
            total += float(v)
            n += 1
    return GroupMean(total / n if n else None, n, unscored)


GroupKey = str | Callable[[ScoredItem], str | Iterable[str] | None]


def _keys(item: ScoredItem, by: GroupKey) -> list[str]:
    raw = by(item) if callable(by) else getattr(item, by)
    if raw is None:
        return []
    if isinstance(raw, str):
        return [raw]
    return list(dict.fromkeys(str(k) for k in raw))


def group_means(
    items: Iterable[ScoredItem], by: GroupKey, metric: Metric = "correct", *, missing: str | None = None
) -> dict[str, GroupMean]:
    """Mean of ``metric`` per group. ``by`` is an attribute name or a function giving one key or
    several (an item counts once in each); an empty key goes to ``missing``, or is skipped if None."""
    groups: dict[str, list[Outcome]] = defaultdict(list)
    for item in items:
        keys = [k for k in _keys(item, by) if k]
        if not keys and missing is not None:
            keys = [missing]
        for key in keys:
            groups[key].append(_value(item, metric))
    return {key: mean_of(groups[key]) for key in sorted(groups)}


def by_profile(items: Iterable[ScoredItem], metric: Metric = "correct") -> dict[str, GroupMean]:
    return group_means(items, "profile", metric, missing="unknown")


def by_qa_type(items: Iterable[ScoredItem], metric: Metric = "correct") -> dict[str, GroupMean]:
    return group_means(items, "qa_type", metric, missing="unknown")


def by_profiling_type(items: Iterable[ScoredItem], metric: Metric = "correct") -> dict[str, GroupMean]:
    """Only questions that have a ``profiling_type``."""
    return group_means(items, "profiling_type", metric)


def balanced_mean(items: Iterable[ScoredItem], metric: Metric = "correct", by: GroupKey = "profile") -> GroupMean:
    """The mean of the per-group means (groups without a scored item are left out): the paper's
    profile-balanced Overall. ``n`` and ``unscored`` are totals over the groups."""
    groups = group_means(items, by, metric, missing="unknown")
    means = [g.mean for g in groups.values() if g.mean is not None]
    return GroupMean(
        sum(means) / len(means) if means else None,
        sum(g.n for g in groups.values()),
        sum(g.unscored for g in groups.values()),
    )


def by_capability(items: Iterable[ScoredItem], metric: Metric = "correct") -> dict[str, dict[str, GroupMean]]:
    """Per dimension (search, perception, reasoning), the mean of every label's questions."""
    items = list(items)

    def labels_of(dim: str) -> Callable[[ScoredItem], Iterable[str]]:
        return lambda it: it.caps.get(dim, ())

    return {dim: group_means(items, labels_of(dim), metric) for dim in CAPABILITY_DIMENSIONS}


# -- difficulty ----------------------------------------------------------------------------------
def difficulty_scores(records: Iterable[HippoCampRecord], times_of: TimesOf | None = None) -> dict[str, float]:
    """The release's difficulty score (1–99) of each record, the model fitted over these records."""
    records = list({r.key: r for r in records}.values())
    if not records:
        return {}
    feats = [features_of(r, times_of) for r in records]
    model = DifficultyModel.fit(feats)
    return {r.key: model.score(f) for r, f in zip(records, feats, strict=True)}


def with_difficulty(
    items: Iterable[ScoredItem], records: Iterable[HippoCampRecord], times_of: TimesOf | None = None
) -> list[ScoredItem]:
    """Items with ``difficulty`` set, the model fitted over the records of the scored questions only."""
    items = list(items)
    ids = {it.id for it in items if it.correct is not None}
    scores = difficulty_scores((r for r in records if r.key in ids), times_of)
    return [replace(it, difficulty=scores.get(it.id, it.difficulty)) for it in items]


def quantile_edges(values: Iterable[float], bins: int = 5) -> tuple[float, ...]:
    """Bin edges at the 0, 1/bins, ..., 1 quantiles (linear, as numpy); repeated edges merged."""
    arr = np.asarray([v for v in values if v is not None], dtype=float)
    if arr.size == 0 or bins < 1:
        return ()
    edges = np.quantile(arr, np.linspace(0.0, 1.0, bins + 1))
    return tuple(dict.fromkeys(float(e) for e in edges))


def _bin_label(lo: float, hi: float) -> str:
    return f"{lo:g}-{hi:g}"


def by_difficulty(
    items: Iterable[ScoredItem], edges: Sequence[float] = DIFFICULTY_EDGES, metric: Metric = "correct"
) -> dict[str, GroupMean]:
    """Mean per difficulty bin ``[lo, hi)`` (the last bin also holds ``hi``), in bin order; items
    without a difficulty or outside the edges are left out."""
    edges = list(edges)
    if len(edges) < 2 or any(b <= a for a, b in pairwise(edges)):
        raise ValueError(f"edges must ascend strictly and number at least two, got {edges}")
    labels = [_bin_label(lo, hi) for lo, hi in pairwise(edges)]
    groups: dict[str, list[Outcome]] = {label: [] for label in labels}
    for item in items:
        d = item.difficulty
        if d is None or d < edges[0] or d > edges[-1]:
            continue
        i = min(int(np.searchsorted(edges, d, side="right")) - 1, len(labels) - 1)
        groups[labels[i]].append(_value(item, metric))
    return {label: mean_of(values) for label, values in groups.items()}


# -- usage ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Summary:
    """Median, p95 (linear, as numpy), sum and more of the known values; ``missing`` were None."""

    n: int
    missing: int
    total: float | None
    mean: float | None
    median: float | None
    p95: float | None
    min: float | None
    max: float | None

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def summarize(values: Iterable[float | None]) -> Summary:
    """Summary of the known values; None values are counted as ``missing``."""
    values = list(values)
    known = [float(v) for v in values if v is not None]
    return _summary(known, len(values) - len(known))


def _summary(known: list[float], missing: int) -> Summary:
    if not known:
        return Summary(0, missing, None, None, None, None, None, None)
    arr = np.asarray(known, dtype=float)
    return Summary(
        n=arr.size,
        missing=missing,
        total=float(arr.sum()),
        mean=float(arr.mean()),
        median=float(np.median(arr)),
        p95=float(np.percentile(arr, 95)),
        min=float(arr.min()),
        max=float(arr.max()),
    )


def usage_summary(items: Iterable[ScoredItem]) -> dict[str, Summary]:
    """Latency (seconds), tokens and cost over all items; unknown values (None) are ``missing``,
    never 0 (an unknown price stays unknown)."""
    items = list(items)
    out = {}
    for name in ("seconds", "tokens", "cost"):
        values = [getattr(it, name) for it in items]
        known = [float(v) for v in values if v is not None]
        out[name] = _summary(known, len(values) - len(known))
    return out


# -- several runs --------------------------------------------------------------------------------
@dataclass(frozen=True)
class RunStats:
    """Per-run means, their mean over runs and the worst and best run."""

    runs: dict[str, GroupMean]
    mean: float | None
    worst: float | None
    best: float | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "runs": {k: v.as_dict() for k, v in self.runs.items()},
            "mean": self.mean,
            "worst": self.worst,
            "best": self.best,
        }


def run_stats(items: Iterable[ScoredItem], metric: Metric = "correct", *, balanced: bool = False) -> RunStats:
    """Each run's mean (profile-balanced if ``balanced``), the mean over runs and the worst run."""
    per: dict[str, list[ScoredItem]] = defaultdict(list)
    for item in items:
        per[str(item.run)].append(item)
    runs = {
        run: balanced_mean(group, metric) if balanced else mean_of(_value(it, metric) for it in group)
        for run, group in sorted(per.items())
    }
    means = [g.mean for g in runs.values() if g.mean is not None]
    return RunStats(
        runs=runs,
        mean=sum(means) / len(means) if means else None,
        worst=min(means) if means else None,
        best=max(means) if means else None,
    )


def outcomes_by_question(items: Iterable[ScoredItem], metric: Metric = "correct") -> dict[str, list[Outcome]]:
    """Each question's outcomes over its runs, in run order."""
    out: dict[str, list[tuple[str, Outcome]]] = defaultdict(list)
    for item in items:
        out[item.id].append((str(item.run), _value(item, metric)))
    return {qid: [v for _, v in sorted(runs, key=lambda r: r[0])] for qid, runs in out.items()}


@dataclass(frozen=True)
class PassK:
    """pass^k or pass@k averaged over ``n`` questions; ``skipped`` had fewer than k scored runs."""

    value: float | None
    k: int
    n: int
    skipped: int
    unscored_runs: int

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _pass(outcomes: Mapping[str, Sequence[Outcome]], k: int, per_question: Callable[[int, int], float]) -> PassK:
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    values: list[float] = []
    skipped = unscored = 0
    for runs in outcomes.values():
        scored = [v for v in runs if v is not None]
        unscored += len(runs) - len(scored)
        n = len(scored)
        if n < k:
            skipped += 1
            continue
        c = sum(1 for v in scored if float(v) >= 0.5)
        values.append(per_question(n, c))
    return PassK(sum(values) / len(values) if values else None, k, len(values), skipped, unscored)


def pass_hat_k(outcomes: Mapping[str, Sequence[Outcome]], k: int) -> PassK:
    """pass^k = mean over questions of C(c, k) / C(n, k): the chance that k runs drawn without
    replacement from a question's n scored runs (c right) are all right."""
    return _pass(outcomes, k, lambda n, c: math.comb(c, k) / math.comb(n, k))


def pass_at_k(outcomes: Mapping[str, Sequence[Outcome]], k: int) -> PassK:
    """pass@k = mean over questions of 1 − C(n − c, k) / C(n, k): at least one of k runs right."""
    return _pass(outcomes, k, lambda n, c: 1.0 - math.comb(n - c, k) / math.comb(n, k))


# -- bootstrap -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class CI:
    """A percentile bootstrap interval around ``estimate`` (the statistic on the data)."""

    estimate: float | None
    low: float | None
    high: float | None
    confidence: float
    resamples: int
    n: int
    unscored: int

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _resampled_means(x: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    n = x.size
    out = np.empty(resamples, dtype=float)
    chunk = max(1, 4_000_000 // max(n, 1))
    for start in range(0, resamples, chunk):
        m = min(chunk, resamples - start)
        out[start : start + m] = x[rng.integers(0, n, size=(m, n))].mean(axis=1)
    return out


def bootstrap_ci(
    values: Sequence[Outcome],
    *,
    groups: Sequence[str] | None = None,
    confidence: float = 0.95,
    resamples: int = 10_000,
    seed: int = 0,
) -> CI:
    """Percentile bootstrap CI of the mean of the scored values (None left out, counted).

    With ``groups`` (one key per value) it is the CI of the balanced mean (mean of group means),
    resampling within each group. Same seed, same interval."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be within (0, 1), got {confidence}")
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    if groups is not None and len(groups) != len(values):
        raise ValueError(f"{len(groups)} group keys for {len(values)} values")
    keys = list(groups) if groups is not None else [""] * len(values)
    by_group: dict[str, list[float]] = defaultdict(list)
    unscored = 0
    for v, g in zip(values, keys, strict=True):
        if v is None:
            unscored += 1
        else:
            by_group[g].append(float(v))
    n = sum(len(v) for v in by_group.values())
    if n == 0:
        return CI(None, None, None, confidence, resamples, 0, unscored)
    rng = np.random.default_rng(seed)
    arrays = [np.asarray(by_group[g], dtype=float) for g in sorted(by_group)]
    estimate = float(np.mean([a.mean() for a in arrays]))
    stats = np.mean([_resampled_means(a, resamples, rng) for a in arrays], axis=0)
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(stats, [alpha, 1.0 - alpha])
    return CI(estimate, float(low), float(high), confidence, resamples, n, unscored)


# -- Wilcoxon signed-rank ------------------------------------------------------------------------
Alternative = Literal["two-sided", "less", "greater"]


@dataclass(frozen=True)
class WilcoxonResult:
    """``statistic`` is min(R+, R−) two-sided, else R+ (as scipy); ``n`` pairs used (zeros
    included), ``zeros`` of them with no difference, ``dropped`` pairs with an unscored side;
    ``method`` is ``exact``, ``permutation`` (exact over the tied ranks) or ``asymptotic``."""

    statistic: float
    pvalue: float
    n: int
    zeros: int
    dropped: int
    method: str
    zstatistic: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _average_ranks(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Average ranks (1-based) of ``a`` and the sizes of its tie groups."""
    order = np.argsort(a, kind="stable")
    sorted_a = a[order]
    starts = np.concatenate([[True], sorted_a[1:] != sorted_a[:-1]])
    idx = np.flatnonzero(starts)
    counts = np.diff(np.append(idx, a.size))
    avg = idx + 1 + (counts - 1) / 2.0
    ranks = np.empty(a.size, dtype=float)
    ranks[order] = np.repeat(avg, counts)
    return ranks, counts


def _signed_rank_counts(doubled: Sequence[int]) -> list[int]:
    """How many of the 2^m sign choices give each value of 2·R+ (ranks given doubled, integers)."""
    total = sum(doubled)
    counts = [0] * (total + 1)
    counts[0] = 1
    reach = 0
    for r in doubled:
        for s in range(reach, -1, -1):
            if counts[s]:
                counts[s + r] += counts[s]
        reach += r
    return counts


def _norm_sf(z: float) -> float:
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def wilcoxon(
    x: Sequence[Outcome],
    y: Sequence[Outcome] | None = None,
    *,
    alternative: Alternative = "two-sided",
    correction: bool = False,
    method: Literal["auto", "exact", "asymptotic"] = "auto",
) -> WilcoxonResult:
    """Paired Wilcoxon signed-rank test of ``x − y`` (or of ``x``), zeros dropped (Wilcoxon's
    method). Pairs with an unscored side (None) are dropped and counted. Matches
    ``scipy.stats.wilcoxon`` (see the module docstring); with no non-zero difference the p-value is
    1 (scipy gives NaN there for n > 13)."""
    if alternative not in ("two-sided", "less", "greater"):
        raise ValueError(f"alternative must be two-sided, less or greater, got {alternative!r}")
    if y is not None and len(x) != len(y):
        raise ValueError(f"x and y must pair up: {len(x)} vs {len(y)} values")
    pairs = zip(x, y, strict=True) if y is not None else ((v, 0.0) for v in x)
    diffs: list[float] = []
    dropped = 0
    for a, b in pairs:
        if a is None or b is None:
            dropped += 1
        else:
            diffs.append(float(a) - float(b))
    d = np.asarray(diffs, dtype=float)
    n = d.size
    if n == 0:
        return WilcoxonResult(math.nan, math.nan, 0, 0, dropped, "none")
    nonzero = d[d != 0]
    zeros = n - nonzero.size
    m = nonzero.size
    if m == 0:
        return WilcoxonResult(0.0, 1.0, n, zeros, dropped, "none")
    ranks, ties = _average_ranks(np.abs(nonzero))
    r_plus = float(ranks[nonzero > 0].sum())
    r_minus = float(ranks[nonzero < 0].sum())
    has_ties = bool((ties > 1).any())
    statistic = min(r_plus, r_minus) if alternative == "two-sided" else r_plus

    chosen: str = method
    if method == "auto":
        if n > 50:
            chosen = "asymptotic"
        elif not has_ties and zeros == 0:
            chosen = "exact"
        elif n <= 13:
            chosen = "permutation"
        else:
            chosen = "asymptotic"

    if chosen == "asymptotic":
        mean = m * (m + 1) / 4.0
        var = (m * (m + 1) * (2 * m + 1) - float((ties**3 - ties).sum()) / 2.0) / 24.0
        se = math.sqrt(var)
        z = (r_plus - mean) / se if se > 0 else math.nan
        if correction and se > 0:
            sign = {"greater": 1.0, "less": -1.0}.get(alternative, float(np.sign(z)))
            z -= sign * 0.5 / se
        if alternative == "greater":
            p = _norm_sf(z)
        elif alternative == "less":
            p = _norm_sf(-z)
        else:
            p = 2.0 * _norm_sf(abs(z))
        p = min(max(p, 0.0), 1.0)
        zstat = -abs(z) if alternative == "two-sided" else z
        return WilcoxonResult(statistic, p, n, zeros, dropped, chosen, zstat)

    # the exact test uses the untied null distribution of ranks 1..m (as scipy); the permutation
    # test the distribution of the actual (possibly tied) ranks under random signs
    doubled = [2 * i for i in range(1, m + 1)] if chosen == "exact" else [round(2 * r) for r in ranks]
    counts = _signed_rank_counts(doubled)
    total = float(2**m)
    observed = round(2 * r_plus)
    if chosen == "exact":
        # R+ is whole without ties; with ties (method="exact" forced) round as scipy: up for the
        # lower tail, down for the upper (on the doubled scale: to the next even value)
        lo_at = observed + (observed % 2)
        hi_at = observed - (observed % 2)
    else:
        lo_at = hi_at = observed
    cdf = sum(counts[: lo_at + 1]) / total
    sf = sum(counts[hi_at:]) / total
    if alternative == "less":
        p = cdf
    elif alternative == "greater":
        p = sf
    else:
        p = min(1.0, 2.0 * min(cdf, sf))
    return WilcoxonResult(statistic, p, n, zeros, dropped, chosen)


# -- everything at once --------------------------------------------------------------------------
def aggregate(items: Iterable[ScoredItem], metric: Metric = "correct") -> dict[str, Any]:
    """The report's tables as plain data: overall (balanced and question-weighted), by profile,
    task family, profiling type, capability and difficulty, runs and usage."""
    items = list(items)

    def table(groups: Mapping[str, GroupMean]) -> dict[str, Any]:
        return {k: v.as_dict() for k, v in groups.items()}

    return {
        "overall": balanced_mean(items, metric).as_dict(),
        "question_weighted": mean_of(_value(it, metric) for it in items).as_dict(),
        "file_f1": balanced_mean(items, "f1").as_dict(),
        "by_profile": table(by_profile(items, metric)),
        "by_qa_type": table(by_qa_type(items, metric)),
        "by_profiling_type": table(by_profiling_type(items, metric)),
        "by_capability": {dim: table(g) for dim, g in by_capability(items, metric).items()},
        "by_difficulty": table(by_difficulty(items, metric=metric)),
        "runs": run_stats(items, metric).as_dict(),
        "usage": {k: v.as_dict() for k, v in usage_summary(items).items()},
    }
