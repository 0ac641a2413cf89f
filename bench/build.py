"""`hippocamp build` on the medium synthetic profile: files per second per stage and peak memory; and the
name finder on held-out text (LoCoMo's conversations, which nothing in hippocamp was tuned on).

    .venv/bin/python bench/build.py [--workers 1] [--scale medium] [--keep DIR]

Part 1 generates a synthetic profile (seed 11) with its questions, builds it from scratch (screen forced
when the scale is below C1), then builds it again (a re-run: everything resumes from the cache) and prints
seconds and files per second for each stage, with the peak resident memory of this process (``ru_maxrss``)
and of its worker processes (sampled from /proc). Part 2 reads each LoCoMo conversation's messages, learns
the names the finder can find in them, then counts how many mentions of the two speakers' names in the
message texts were replaced, and lists the other words replaced (for a person to judge).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import LOCOMO


class _Peak:
    """Samples the resident memory of this process and all its descendants (the fork server's workers are
    not our direct children, so ``RUSAGE_CHILDREN`` does not see them) every 0.2 s."""

    def __init__(self) -> None:
        self.total = self.worker = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> _Peak:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        me = os.getpid()
        while not self._stop.wait(0.2):
            parents: dict[int, int] = {}
            rss: dict[int, float] = {}
            for entry in os.listdir("/proc"):
                if not entry.isdigit():
                    continue
                try:
                    status = Path(f"/proc/{entry}/status").read_text()
                except OSError:
                    continue
                fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
                parents[int(entry)] = int(fields.get("PPid", "0").strip())
                rss[int(entry)] = float(fields.get("VmRSS", "0 kB").split()[0]) / 1024
            family = {me}
            grew = True
            while grew:
                grew = False
                for pid, parent in parents.items():
                    if parent in family and pid not in family:
                        family.add(pid)
                        grew = True
            self.total = max(self.total, sum(rss.get(p, 0.0) for p in family))
            self.worker = max([self.worker, *(rss.get(p, 0.0) for p in family - {me})])


def _build(scale: str, workers: int, keep: Path | None) -> None:
    from hippocamp.build.pipeline import BuildConfig, run_build
    from hippocamp.build.screen import ScreenConfig
    from hippocamp.synth.build import generate

    tmp = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="hc-build-bench-"))
    try:
        made = generate(tmp / "synth", seed=11, scale=scale)
        source = tmp / "synth" / made.name
        files = sum(1 for p in source.rglob("*") if p.is_file())
        config = BuildConfig(name="Bench", questions=tmp / "synth" / f"{made.name}.json", workers=workers,
                             force=True, screen=ScreenConfig())  # fmt: skip
        rows = []
        peak = _Peak()
        peak.__enter__()
        for label in ("first build", "re-run"):
            began = time.perf_counter()
            state = run_build(source, tmp / "work", config)
            total = time.perf_counter() - began
            summary = json.loads((tmp / "work" / "06-review.json").read_text())["summary"]
            rows.append((label, total, summary["timings"], state))
        print(f"## build: {scale} synthetic profile, {files} files, {workers} worker(s)\n")
        stages = list(rows[0][2])
        print("| stage | " + " | ".join(f"{label} s | files/s" for label, *_ in rows) + " |")
        print("|---|" + "---|---|" * len(rows))
        for stage in stages:
            cells = []
            for _, _, timings, _ in rows:
                s = timings.get(stage, 0.0)
                cells += [f"{s:.2f}", f"{files / s:.0f}" if s > 0 else "-"]
            print(f"| {stage} | " + " | ".join(cells) + " |")
        print("| total | " + " | ".join(f"{t:.2f} | {files / t:.1f}" for _, t, _, _ in rows) + " |")
        state = rows[0][3]
        a = state.stages["anonymize"]
        print(f"\nreleased {a['files']} files, {a['renamed']} renamed, {a['edits']} edits, "
              f"{len(a['residual'])} residual identifiers, {len(state.failures)} left out, "
              f"{len(state.stages['cohere']['violations'])} coherence violations")  # fmt: skip
        peak.__exit__()
        parent = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(
            f"peak memory: this process {parent:.0f} MB, largest worker {peak.worker:.0f} MB, "
            f"all processes together {peak.total:.0f} MB (sampled every 0.2 s)"
        )
    finally:
        if keep is None:
            shutil.rmtree(tmp, ignore_errors=True)


def _locomo() -> None:
    if not LOCOMO.is_file():
        print(f"\nskipped the held-out name check: {LOCOMO} is not here")
        return
    from hippocamp.build.anonymize import Anonymizer
    from hippocamp.build.pseudonyms import Pseudonyms

    data = json.loads(LOCOMO.read_text(encoding="utf-8"))
    print("\n## names in LoCoMo's conversations (held out)\n")
    print("| conversation | messages | speaker-name mentions | replaced | recall | other words replaced |")
    print("|---|---|---|---|---|---|")
    others: Counter[str] = Counter()
    for conv in data:
        c = conv["conversation"]
        speakers = {c["speaker_a"], c["speaker_b"]}
        lines = [m["text"] for key, session in sorted(c.items())
                 if re.fullmatch(r"session_\d+", key) for m in session if m.get("text")]  # fmt: skip
        anonymizer = Anonymizer(Pseudonyms(b"locomo-bench-secret-0123456789"))
        for line in lines:
            anonymizer.learn(line)
        anonymizer.freeze()
        mentions = replaced = 0
        for line in lines:
            new = anonymizer.apply(line)
            for m in re.finditer(r"\b(" + "|".join(map(re.escape, speakers)) + r")\b", line):
                mentions += 1
                replaced += m.group(0) not in new
        for (kind, original), _new in anonymizer.replacements.items():
            if original not in speakers:
                others[f"{kind}:{original}"] += 1
        distinct = sum(1 for k in others if k)
        print(f"| {conv.get('sample_id')} ({' & '.join(sorted(speakers))}) | {len(lines)} | {mentions} | "
              f"{replaced} | {replaced / mentions:.1%} | {distinct} |" if mentions else "| - |")  # fmt: skip
    print("\nother words replaced (kind:original, for a person to judge): "
          + ", ".join(k for k, _ in others.most_common(60)))  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--scale", default="medium")
    parser.add_argument("--keep", type=Path, default=None, help="Keep the profile and work folder here.")
    parser.add_argument("--skip-build", action="store_true")
    args = parser.parse_args()
    if not args.skip_build:
        _build(args.scale, args.workers, args.keep)
    _locomo()


if __name__ == "__main__":
    main()
