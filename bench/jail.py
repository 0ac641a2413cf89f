"""The jail's cost: start-up per episode and time per command, as ratios against the emulated terminal.

    .venv/bin/python bench/jail.py [--repeat 30]

Builds a small profile (text files and a 3-page PDF) and its store, then times, by medians: making a
terminal (the jail starts bubblewrap, the broker and the supervisor; the emulated one builds objects),
and the same command lines in both (a shell built-in, a file read, a grep over the profile, a release
tool answered by the broker, a pipe into jq/python3 that only the jail can run). Prints one table.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    from conftest import make_pdf
    from hippocamp.envs import JailTerminal, Terminal, jail_support
    from hippocamp.store import IndexOptions, Store, index_profile

    why = jail_support()
    if why is not None:
        print(f"skipped: {why}")
        return
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "Mira"
        (root / "Docs").mkdir(parents=True)
        for i in range(200):
            (root / "Docs" / f"note{i:03d}.txt").write_text(f"note {i}\nDeposit: EUR {i},900\n" * 20)
        make_pdf(root / "Docs/contract.pdf", ["Cover page", "Rent: EUR 1,450", "Deposit: EUR 2,900"])
        store = Store(Path(tmp) / "store.sqlite", root=root)
        index_profile(root, store, IndexOptions(embed=False, workers=1))

        def make(kind: str) -> object:
            cls = JailTerminal if kind == "jail" else Terminal
            return cls(root, texts=store.segments_of, budget_chars=100_000)

        rows = []
        starts = {}
        for kind in ("emulated", "jail"):
            times = []
            for _ in range(max(5, args.repeat // 3)):
                began = time.perf_counter()
                term = make(kind)
                times.append(time.perf_counter() - began)
                term.close()  # type: ignore[attr-defined]
            starts[kind] = statistics.median(times)
        rows.append(("start a terminal (per episode)", starts["emulated"], starts["jail"]))
        commands = [
            ("pwd", "pwd"),
            ("cat a file", "cat Docs/note007.txt"),
            ("grep -r over 200 files", "grep -rl 'EUR 7,900' Docs"),
            ("list_files '*.pdf'", "list_files '*.pdf'"),
            ("return_txt a PDF", "return_txt Docs/contract.pdf"),
        ]
        terms = {kind: make(kind) for kind in ("emulated", "jail")}
        try:
            for label, line in commands:
                medians = {}
                for kind, term in terms.items():
                    times = []
                    for _ in range(args.repeat):
                        began = time.perf_counter()
                        obs = term.run(line)  # type: ignore[attr-defined]
                        times.append(time.perf_counter() - began)
                        assert obs.ok, (kind, line, obs)
                    medians[kind] = statistics.median(times)
                rows.append((label, medians["emulated"], medians["jail"]))
            jq = [terms["jail"].run("list_files | jq '.count'") for _ in range(5)]  # type: ignore[attr-defined]
            assert all(o.ok for o in jq)
            times = []
            for _ in range(args.repeat):
                began = time.perf_counter()
                terms["jail"].run("list_files | jq '.count'")  # type: ignore[attr-defined]
                times.append(time.perf_counter() - began)
            jq_median = statistics.median(times)
        finally:
            for term in terms.values():
                term.close()  # type: ignore[attr-defined]
        store.close()
    print(f"\nJail vs emulated terminal, medians of {args.repeat} (ms)\n")
    print("| what | emulated | jail | jail / emulated |")
    print("|---|---|---|---|")
    for label, emulated, jail in rows:
        print(f"| {label} | {1000 * emulated:.2f} | {1000 * jail:.2f} | {jail / emulated:.1f} |")
    print(f"| list_files \\| jq '.count' (jail only) | refused | {1000 * jq_median:.2f} | |")


if __name__ == "__main__":
    main()
