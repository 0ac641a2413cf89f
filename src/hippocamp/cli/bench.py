"""``hippocamp bench retrieval``: the store's search alone against a suite's gold evidence."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from hippocamp.cli._common import fail
from hippocamp.cli.run import _load, suite_options


@click.group("bench")
def bench_group() -> None:
    """Measure parts of hippocamp on a suite."""


def _ks(_ctx: click.Context, _param: click.Parameter, value: str) -> tuple[int, ...]:
    try:
        ks = tuple(sorted({int(x) for x in value.split(",") if x.strip()}))
    except ValueError:
        raise click.BadParameter(f"expected numbers separated by commas, e.g. 1,5,10; got {value!r}") from None
    if not ks or ks[0] < 1:
        raise click.BadParameter(f"every k must be 1 or more; got {value!r}")
    return ks


def _modes(_ctx: click.Context, _param: click.Parameter, value: str) -> tuple[str, ...]:
    modes = tuple(dict.fromkeys(m.strip() for m in value.split(",") if m.strip()))
    bad = [m for m in modes if m not in ("fts", "vector", "hybrid")]
    if bad or not modes:
        raise click.BadParameter(f"modes are fts, vector and hybrid; got {value!r}")
    return modes


_WEIGHTS = ("fusion", "chat_fusion", "path", "context", "speaker", "date")


def _weights(_ctx: click.Context, _param: click.Parameter, value: tuple[str, ...]) -> dict[str, float]:
    out: dict[str, float] = {}
    for item in value:
        name, _, number = item.partition("=")
        name = name.strip().lower().removesuffix("_weight")
        try:
            weight = float(number)
        except ValueError:
            weight = -1.0
        if name not in _WEIGHTS or weight < 0 or (name.endswith("fusion") and weight > 1):
            raise click.BadParameter(f"expected NAME=VALUE with NAME one of {', '.join(_WEIGHTS)} and VALUE >= 0 "
                                     f"(fusion at most 1); got {item!r}")  # fmt: skip
        out[f"{name}_weight"] = weight
    return out


def _expansions(spec: str, cases: list[Any], quiet: bool) -> dict[str, list[str]]:
    """Each case's expansions by the model ``spec``; a question the model fails on keeps none (said)."""
    from hippocamp.agents.expand import expand_query
    from hippocamp.models import get_model
    from hippocamp.models.client import run_sync
    from hippocamp.models.errors import ModelError

    try:
        model = get_model(spec)
    except Exception as exc:
        fail(f"--expand-model {spec!r}: {exc}")
    out: dict[str, list[str]] = {}
    failed = 0
    try:
        for case in cases:
            try:
                out[case.id] = run_sync(expand_query(model, case.query))
            except ModelError as exc:
                failed += 1
                if failed == 1 and not quiet:
                    click.echo(f"expansion failed for {case.id}: {exc} (searched without)", err=True)
    finally:
        run_sync(model.aclose())
    if failed and not quiet:
        click.echo(f"{failed} of {len(cases)} questions could not be expanded", err=True)
    return out


@bench_group.command("retrieval")
@click.option("--suite", "spec", required=True, help="A suite with gold evidence: a profile, synth:..., an "
              "imported release or FinanceBench, a P-ContextBench persona set or LoCoMo import.")  # fmt: skip
@click.option("--k", "ks", default="1,5,10", show_default=True, callback=_ks, help="Cut-offs, comma-separated.")
@click.option("--modes", default="fts,vector,hybrid", show_default=True, callback=_modes)
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Only the first N questions.")
@click.option(
    "--half",
    type=click.Choice(["even", "odd"]),
    default=None,
    help="Only the even- or odd-numbered questions (0-based): tune on one half, report on the other.",
)
@click.option("--fusion-weight", type=click.FloatRange(0, 1), default=None,
              help="Hybrid: BM25's share of the fused score (default: the searcher's).")  # fmt: skip
@click.option("--path-weight", type=click.FloatRange(min=0), default=None,
              help="Hybrid: the weight of the file prior (query words in the file's path; 0: off).")  # fmt: skip
@click.option("--weight", "weights", multiple=True, callback=_weights, metavar="NAME=VALUE",
              help="Hybrid: any of the searcher's weights (fusion, chat_fusion, path, context, speaker, date), e.g. "
                   "--weight date=0 (repeatable).")  # fmt: skip
@click.option(
    "--expand-model",
    default=None,
    metavar="MODEL",
    help="Expand each question with this model (e.g. local:qwen2.5-coder-1.5b) and rank the "
    "expansions with it (hippocamp.agents.expand); the expansions are made once per question.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
@suite_options
def retrieval(spec: str, ks: tuple[int, ...], modes: tuple[str, ...], limit: int | None, fusion_weight: float | None,
              path_weight: float | None, half: str | None, weights: dict[str, float], expand_model: str | None,
              as_json: bool,
              store_path: Path | None, no_ocr: bool, no_asr: bool, no_embed: bool, terminal: str) -> None:  # fmt: skip
    """Recall@k of the store's search by file and by evidence unit, per mode, with latency p50/p95:
    every question of SUITE is the query, searched within its profile or persona."""
    from hippocamp.scoring.retrieval import cases_of, evaluate, format_table
    from hippocamp.store.search import Searcher, SearchFilters

    suite = _load(spec, store_path, no_ocr, no_asr, no_embed, quiet=as_json)
    try:
        cases = cases_of(suite)
        if half:
            cases = cases[0 if half == "even" else 1 :: 2]
        cases = cases[:limit] if limit else cases
        if not cases:
            fail(f"suite {spec!r}: no question with gold evidence to measure retrieval on")
        if not suite.store.has_vectors() and set(modes) & {"vector"}:
            fail(f"suite {spec!r}: the store has no vectors (indexed with --no-embed?); use --modes fts")
        searchers: dict[str, Any] = {}

        def searcher_for(case: Any) -> Any:
            parts = getattr(suite, "parts", None) or {}
            store = parts[case.part].store if case.part in parts else suite.store
            searcher = searchers.get(str(store.path))
            if searcher is None:
                settings = {k: v for k, v in (("fusion_weight", fusion_weight), ("path_weight", path_weight))
                            if v is not None} | weights  # fmt: skip
                searcher = searchers[str(store.path)] = Searcher(store, **settings)
            return searcher

        expansions = _expansions(expand_model, cases, quiet=as_json) if expand_model else {}

        def search(case: Any, mode: str, k: int) -> list[Any]:
            also = expansions.get(case.id, [])
            return searcher_for(case).search(case.query, k=k, filters=SearchFilters(glob=case.glob), mode=mode,
                                             also=also)  # fmt: skip

        def rank_files(case: Any, mode: str, k: int) -> list[str]:
            found = searcher_for(case).search_files(case.query, k=k, filters=SearchFilters(glob=case.glob), mode=mode,
                                                    also=expansions.get(case.id, []))  # fmt: skip
            return [f.path for f in found]

        results = evaluate(search, cases, modes, ks, rank_files)
    finally:
        suite.close()
    if as_json:
        click.echo(json.dumps({"suite": spec, "cases": len(cases), "results": [r.as_dict() for r in results]},
                              indent=2))  # fmt: skip
        return
    click.echo(f"{spec}: {len(cases)} questions with gold evidence")
    for line in format_table(results, ks):
        click.echo(line)
