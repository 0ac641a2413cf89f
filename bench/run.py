"""Benchmarks with targets as ratios against a baseline measured in the same run (medians).

    .venv/bin/python bench/run.py [--repeat N] [--json PATH]

* ``startup``: ``hippocamp --help`` against ``python -c "import click"``, the floor of any click
  command line (the CLI must start fast: subcommands and heavy libraries load only when used).
  Target: at most 1.5x that floor. The bare interpreter is measured too, for reference.
* ``validate``: validating 581 records (HippoCamp's size) over the bundled example's real files,
  against only reading and parsing the same records. Target: at most 8x the parse alone, i.e. the
  rules and file measurements cost little next to reading the data.
* ``stats``: statistics over the same 581 records against parsing them. Target: at most 3x.

Machines here are shared and noisy, so every figure is a median of several runs. Exit code 1 when
a target is missed.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from _common import median_seconds

TARGETS = {"startup": 1.5, "validate": 8.0, "stats": 3.0}


def bench_startup(repeat: int) -> dict[str, float]:
    exe = sys.executable

    def run(*args: str) -> Callable[[], object]:
        return lambda: subprocess.run([exe, *args], check=True, capture_output=True)

    run("-m", "hippocamp.cli", "--help")()  # warm the file cache
    bare = median_seconds(run("-c", "pass"), repeat)
    base = median_seconds(run("-c", "import click"), repeat)
    cli = median_seconds(run("-m", "hippocamp.cli", "--help"), repeat)
    return {"bare_python_s": bare, "baseline_s": base, "measured_s": cli, "ratio": cli / base}


def _big_records(tmp: Path, n: int = 581) -> Path:
    from hippocamp.examples import example_profile

    src = example_profile()
    records = json.loads((src / "Mira.json").read_text(encoding="utf-8"))
    big = [dict(records[i % len(records)], id=f"q{i:04d}") for i in range(n)]
    path = tmp / "Mira.json"
    path.write_text(json.dumps(big), encoding="utf-8")
    return path


def bench_validate(repeat: int) -> dict[str, float]:
    from hippocamp.dataset.profile import load_profile
    from hippocamp.examples import example_profile
    from hippocamp.schema.io import read_records
    from hippocamp.validate import validate_profile

    with tempfile.TemporaryDirectory() as tmp:
        path = _big_records(Path(tmp))
        root = example_profile() / "Mira"
        base = median_seconds(lambda: read_records(path), repeat)
        measured = median_seconds(lambda: validate_profile(load_profile(path, root=root)), repeat)
    return {"baseline_s": base, "measured_s": measured, "ratio": measured / base, "records": 581}


def bench_stats(repeat: int) -> dict[str, float]:
    from hippocamp.dataset.profile import load_profile
    from hippocamp.dataset.stats import compute_stats
    from hippocamp.examples import example_profile
    from hippocamp.schema.io import read_records

    with tempfile.TemporaryDirectory() as tmp:
        path = _big_records(Path(tmp))
        root = example_profile() / "Mira"
        base = median_seconds(lambda: read_records(path), repeat)

        def run() -> object:
            p = load_profile(path, root=root)
            return compute_stats([(p.name, p.records, p.times_of)])

        measured = median_seconds(run, repeat)
    return {"baseline_s": base, "measured_s": measured, "ratio": measured / base, "records": 581}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    results = {
        "startup": bench_startup(args.repeat * 2),
        "validate": bench_validate(args.repeat),
        "stats": bench_stats(args.repeat),
    }
    missed = 0
    print(f"{'benchmark':10s} {'baseline':>10s} {'measured':>10s} {'ratio':>7s} {'target':>7s}")
    for name, r in results.items():
        ok = r["ratio"] <= TARGETS[name]
        missed += not ok
        print(
            f"{name:10s} {r['baseline_s'] * 1000:8.1f}ms {r['measured_s'] * 1000:8.1f}ms "
            f"{r['ratio']:7.2f} {'<=' + str(TARGETS[name]):>7s} {'ok' if ok else 'MISSED'}"
        )
    if args.json:
        args.json.write_text(json.dumps({"targets": TARGETS, "results": results}, indent=2) + "\n")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
