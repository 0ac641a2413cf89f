"""The contributor's review: one self-contained HTML page and the JSON it is made from.

``06-review.json`` holds what the page shows (the approval is bound to its hash): the screen, the tree
before and after, every removed file with its reason (a system artifact's rule, a duplicate's group, a
file that could not be read or rewritten), every file's replacements (kind, original, pseudonym), the
metadata scrubbed, what a rewriter could not do, the residual originals found in the output, and the
coherence violations. ``06-review.html`` shows it with everything escaped; it links nothing outside.
It contains originals: it stays in the work folder, with the contributor.
"""

from __future__ import annotations

import html
import json
import os
from pathlib import Path
from typing import Any

__all__ = ["write"]

_CSS = """body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222}
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:1.8em}
table{border-collapse:collapse;width:100%;margin:.5em 0}td,th{border:1px solid #ddd;padding:3px 6px;
text-align:left;vertical-align:top;font-size:13px}th{background:#f4f4f4}.fail{color:#b00;font-weight:600}
.pass{color:#070;font-weight:600}code{background:#f6f6f6;padding:0 3px}del{color:#b00}ins{color:#070;
text-decoration:none}details{margin:.3em 0}.muted{color:#777}"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _table(headers: list[str], rows: list[list[Any]], raw: bool = False) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c if raw else _e(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>" if rows else "<p class=muted>none</p>"


def _example(left: str, original: str, new: str, right: str) -> str:
    squash = " ".join
    return (f"<li>…{_e(squash(left.split()))} <del>{_e(original)}</del> <ins>{_e(new)}</ins> "
            f"{_e(squash(right.split()))}…</li>")  # fmt: skip


def write(
    work: Path,
    summary: dict[str, Any],
    stages: dict[str, dict[str, Any]],
    failures: list[dict[str, str]],
    rows: list[dict[str, Any]],
    tree: list[tuple[str, str]],
) -> Path:
    """Write ``06-review.json`` and ``06-review.html`` into ``work``; returns the page's path."""
    files = [{k: r.get(k) for k in ("path", "new_path", "status", "reason", "edits", "changed", "scrubbed",
                                     "notes", "residual", "examples")} for r in rows]  # fmt: skip
    data = {
        "format": "hippocamp-build-review/1",
        "summary": summary,
        "screen": stages.get("screen", {}),
        "filter": stages.get("filter", {}),
        "dedup": stages.get("dedup", {}),
        "anonymize": {k: v for k, v in stages.get("anonymize", {}).items() if k != "written"},
        "cohere": stages.get("cohere", {}),
        "failures": failures,
        "files": files,
        "tree": [list(pair) for pair in tree],
    }
    data = json.loads(json.dumps(data, default=str))
    for stage in ("screen", "filter", "dedup", "cohere"):
        data[stage].pop("written", None)  # the page's hash must not change when nothing else did
    tmp = work / "06-review.json.tmp"
    tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, work / "06-review.json")
    page = work / "06-review.html"
    page.write_text(_html(data), encoding="utf-8")
    return page


def _html(d: dict[str, Any]) -> str:
    s = d["summary"]
    parts = [f"<!doctype html><meta charset=utf-8><title>Review: {_e(s['name'])}</title><style>{_CSS}</style>",
             f"<h1>Review of the profile {_e(s['name'])}</h1>",
             f"<p>Source <code>{_e(s['source'])}</code>: {s['files_in']} files in, {s['files_out']} files to "
             "release. Approve with <code>hippocamp build approve WORK --by NAME</code> once you have read "
             "every section; this page contains the originals and must not leave your computer.</p>"]  # fmt: skip
    parts.append("<h2>1. Screening</h2>")
    crit = d["screen"].get("criteria", [])
    parts.append(_table(["criterion", "verdict", "figures", "why"], [
        [f"{c['id']} {c['name']}", f"<span class={'pass' if c['passed'] else 'fail'}>"
         f"{'pass' if c['passed'] else 'fail'}</span>", _e(json.dumps(c["figures"])), _e(c["why"])] for c in crit],
        raw=True))  # fmt: skip
    parts.append("<h2>2. Removed files</h2>")
    removed = [[r["file"], f"system artifact: {r['rule']} ({r['why']})"] for r in d["filter"].get("excluded", [])]
    removed += [[r["file"], r["why"]] for r in d["filter"].get("skipped", [])]
    for g in d["dedup"].get("groups", []):
        removed += [
            [x, f"{g['kind']} duplicate of {g['keep']} ({g['similarity']:.2f}): {g['reason']}"] for x in g["drop"]
        ]
    removed += [[f["file"], f"{f['stage']}: {f['reason']}"] for f in d["failures"]]
    parts.append(_table(["file", "reason"], removed))
    versions = d["dedup"].get("versions", [])
    if versions:
        parts.append("<h3>Versions kept apart</h3>")
        parts.append(_table(["document", "versions"], [[v["stem"], ", ".join(v["members"])] for v in versions]))
    parts.append("<h2>3. Replacements, file by file</h2>")
    for f in d["files"]:
        if f["status"] != "ok":
            continue
        title = _e(f["path"]) + ("" if f["path"] == f["new_path"] else f" → {_e(f['new_path'])}")
        ex = "".join(_example(*example) for example in f["examples"] or [])
        body = [f"<p>{f['edits']} edits in: {_e(', '.join(f['changed'] or []) or 'nothing')}</p>"]
        if ex:
            body.append(f"<ul>{ex}</ul>")
        if f["scrubbed"]:
            body.append(f"<p>metadata scrubbed: {_e(', '.join(f['scrubbed']))}</p>")
        if f["notes"]:
            body.append(f"<p class=fail>could not be done: {_e('; '.join(f['notes']))}</p>")
        if f["residual"]:
            body.append(
                "<p class=fail>still in the output: " + _e(", ".join(f"{o} ({w})" for w, o in f["residual"])) + "</p>"
            )
        parts.append(f"<details><summary>{title}</summary>{''.join(body)}</details>")
    parts.append("<h2>4. Residual identifiers in the output</h2>")
    parts.append(_table(["file", "where", "original"], [[r["file"], r["where"], r["original"]]
                                                       for r in d["anonymize"].get("residual", [])]))  # fmt: skip
    parts.append("<h2>5. Coherence</h2>")
    parts.append(_table(["check", "message", "files"], [[v["check"], v["message"], ", ".join(v["files"])]
                                                       for v in d["cohere"].get("violations", [])]))  # fmt: skip
    parts.append("<h2>6. The tree</h2>")
    parts.append(_table(["before", "after"], [[b, a or "(not released)"] for b, a in d["tree"]]))
    return "\n".join(parts) + "\n"
