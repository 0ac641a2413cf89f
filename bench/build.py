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


ARTIFACT_NAMES = [".DS_Store", "Thumbs.db", "desktop.ini", "~$Report.docx", ".~lock.Notes.odt#", "notes.md.swp",
                  "setup.crdownload", "._IMG_0001.jpg", "thumbcache_256.db", "Icon\r"]  # fmt: skip
ARTIFACT_DIRS = [".Trash/old", "$RECYCLE.BIN/S-1-5", "__MACOSX/Pictures", ".Spotlight-V100/Store",
                 "node_modules/left-pad", ".cache/thumbnails", ".git/objects/ab", "__pycache__"]  # fmt: skip


def _plant(source: Path, seed: int = 7) -> dict[str, list[tuple[str, str]] | list[str]]:
    """Plant OS artifacts, exact copies, edited text copies and re-encoded image copies into ``source``."""
    import random

    from PIL import Image

    rng = random.Random(seed)
    folders = sorted({p.parent for p in source.rglob("*") if p.is_file()})
    artifacts: list[str] = []
    for i, name in enumerate(ARTIFACT_NAMES * 2):
        folder = rng.choice(folders)
        path = folder / (name if i < len(ARTIFACT_NAMES) else f"{name}")
        if path.exists():
            continue
        path.write_bytes(
            b"" if name.endswith("#") else b"\x00\x05\x16\x07" + bytes(rng.randrange(256) for _ in range(64))
        )
        artifacts.append(path.relative_to(source).as_posix())
    for d in ARTIFACT_DIRS:
        path = source / d / f"cache{rng.randrange(1000)}.bin"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(bytes(rng.randrange(256) for _ in range(128)))
        artifacts.append(path.relative_to(source).as_posix())
    users = sorted(p for p in source.rglob("*") if p.is_file() and p.relative_to(source).as_posix() not in artifacts)
    exact, near_text, near_image = [], [], []
    for p in rng.sample(users, 20):
        copy = p.with_name(f"{p.stem} (1){p.suffix}")
        if not copy.exists():
            copy.write_bytes(p.read_bytes())
            os.utime(copy, (p.stat().st_mtime - 86400,) * 2)
            exact.append((p.relative_to(source).as_posix(), copy.relative_to(source).as_posix()))
    import importlib

    (source / "Notes" / "Reading").mkdir(parents=True, exist_ok=True)
    texts = []
    for name in ("json", "argparse", "textwrap", "collections", "functools", "pathlib", "statistics", "decimal",
                 "fractions", "heapq", "bisect", "difflib"):  # fmt: skip
        doc = importlib.import_module(name).__doc__ or ""
        if len(doc) > 600:
            note = source / "Notes" / "Reading" / f"{name} notes.md"
            note.write_text(doc, encoding="utf-8")
            texts.append(note)
    for p in texts[:10]:
        words = p.read_text(encoding="utf-8").split(" ")
        words[len(words) // 2] = "edited"
        copy = p.with_name(f"{p.stem} - Copy{p.suffix}")
        copy.write_text(" ".join(words), encoding="utf-8")
        near_text.append((p.relative_to(source).as_posix(), copy.relative_to(source).as_posix()))
    photos = [p for p in users if p.suffix == ".jpg"]
    for p in rng.sample(photos, min(10, len(photos))):
        copy = p.with_name(f"{p.stem} copy.jpg")
        with Image.open(p) as im:
            im.convert("RGB").resize((im.width * 4 // 5, im.height * 4 // 5)).save(copy, quality=60)
        near_image.append((p.relative_to(source).as_posix(), copy.relative_to(source).as_posix()))
    return {"artifacts": artifacts, "exact": exact, "near-text": near_text, "near-image": near_image}


def _planted(scale: str, workers: int) -> None:
    from hippocamp.build.pipeline import BuildConfig, run_build
    from hippocamp.synth.build import generate

    with tempfile.TemporaryDirectory(prefix="hc-build-plant-") as tmp_name:
        tmp = Path(tmp_name)
        made = generate(tmp / "synth", seed=13, scale=scale)  # seed 12 tuned the image check; 13 is held out
        source = tmp / "synth" / made.name
        planted = _plant(source)
        config = BuildConfig(name="Plant", workers=workers, force=True, perceive_media=False)
        run_build(source, tmp / "work", config)
        excluded = {r["file"] for r in json.loads((tmp / "work" / "02-filter.json").read_text())["excluded"]}
        arts = set(planted["artifacts"])  # type: ignore[arg-type]
        hit = len(arts & excluded)
        print(f"\n## planted artifacts and duplicates ({scale} profile, seed 13)\n")
        print("| what | planted | found | precision | recall |")
        print("|---|---|---|---|---|")
        precision, recall = hit / max(1, len(excluded)), hit / len(arts)
        print(f"| OS artifacts | {len(arts)} | {len(excluded)} | {precision:.2f} | {recall:.2f} |")
        dedup = json.loads((tmp / "work" / "03-dedup.json").read_text())
        together = {(g["kind"], frozenset([g["keep"], *g["drop"]])) for g in dedup["groups"]}
        for kind in ("exact", "near-text", "near-image"):
            pairs = planted[kind]
            found = sum(1 for a, b in pairs if any(k == kind and {a, b} <= members for k, members in together))  # type: ignore[misc]
            groups = [g for g in dedup["groups"] if g["kind"] == kind]
            drops = [d for g in groups for d in g["drop"]]
            planted_files = {f for pair in pairs for f in pair}  # type: ignore[union-attr]
            right = sum(1 for g in groups for d in g["drop"] if d in planted_files or kind == "exact")
            print(f"| {kind} duplicates | {len(pairs)} pairs | {len(drops)} drops | "
                  f"{right / max(1, len(drops)):.2f} | {found / max(1, len(pairs)):.2f} |")  # fmt: skip
        print("\n(exact drops are byte-identical by construction, the generator's own copies included; a near "
              "drop counts as right when it is one of the planted pairs)")  # fmt: skip


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
        _planted(args.scale, args.workers)
    _locomo()


if __name__ == "__main__":
    main()
