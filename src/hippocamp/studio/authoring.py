"""Authoring, agreement and adjudication pages over a `Workspace` (enabled by ``hippocamp studio --workspace``).

- ``/author`` lists the items with who drafted them and whether the drafts agree; ``/author/new`` adds one.
- ``/author/{item}`` is the annotator's form (the name comes from ``/whoami``, kept in a cookie): question,
  answer, labels, evidence items (file, text, locator), rationale steps. A locator is picked on the file
  itself: ``/view/...?pick=FIELD`` shows the page or picture with a box to drag, or the player with
  "start"/"end" buttons, and writes the locator back into the form. Every save runs validate's rules on
  the record and shows the problems; a save based on an old version is refused and shows what the other
  person saved, never losing either edit.
- ``/adjudicate`` is the queue of disagreements; ``/adjudicate/{item}`` shows both drafts with the fields
  they disagree on and a form (prefilled from the first draft) the adjudicator saves.
- ``/export`` writes the release-layout records file (refused, with the errors, if any record has one).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from hippocamp.studio.workspace import StaleEdit, Workspace, WorkspaceError

__all__ = ["authoring_routes", "record_from_form"]

COOKIE = "hippocamp_annotator"
MAX_EVIDENCE = 8


def _list(text: str) -> list[str]:
    return [x.strip() for x in text.replace("\n", ",").split(",") if x.strip()]


def record_from_form(form: Any, item: str) -> dict[str, Any]:
    """A release-spelled record from the form's fields; a locator field holds JSON (or is empty)."""
    evidence = []
    for i in range(MAX_EVIDENCE):
        path = str(form.get(f"ev{i}_file") or "").strip()
        if not path:
            continue
        raw = str(form.get(f"ev{i}_loc") or "").strip()
        try:
            locator = json.loads(raw) if raw else None
        except ValueError:
            locator = {"unit": "invalid", "raw": raw}
        ev: dict[str, Any] = {"evidence_id": len(evidence) + 1, "file_path": path,
                              "evidence_text": str(form.get(f"ev{i}_text") or "")}  # fmt: skip
        if locator is not None:
            ev["evidence_locator"] = [locator]
        evidence.append(ev)
    rationale = []
    for line in str(form.get("rationale") or "").splitlines():
        text, _, ids = line.partition("|")
        if text.strip():
            rationale.append(
                {"rationale_text": text.strip(), "evidence_id": [int(x) for x in _list(ids) if x.isdigit()]}
            )
    files = list(dict.fromkeys(e["file_path"] for e in evidence))
    return {
        "id": item,
        "question": str(form.get("question") or ""),
        "answer": str(form.get("answer") or ""),
        "QA_type": str(form.get("qa_type") or "factual_retention"),
        "profiling_type": str(form.get("profiling_type") or ""),
        "file_path": files,
        "file_number": len(files),
        "agent_cap": json.dumps(
            {
                "search": _list(str(form.get("cap_search") or "")),
                "evidence_perception": _list(str(form.get("cap_perception") or "")),
                "reasoning": _list(str(form.get("cap_reasoning") or "")),
            }
        ),
        "evidence": evidence,
        "rationale": rationale,
    }


def _form_values(record: dict[str, Any] | None) -> dict[str, Any]:
    """The form's fields from a saved record (the reverse of `record_from_form`)."""
    record = record or {}
    cap = record.get("agent_cap") or {}
    if isinstance(cap, str):
        try:
            cap = json.loads(cap)
        except ValueError:
            cap = {}
    evidence = []
    for ev in record.get("evidence") or []:
        locs = ev.get("evidence_locator") or ev.get("locators") or []
        evidence.append({"file": ev.get("file_path", ""), "text": ev.get("evidence_text") or "",
                         "loc": json.dumps(locs[0]) if locs else ""})  # fmt: skip
    while len(evidence) < MAX_EVIDENCE:
        evidence.append({"file": "", "text": "", "loc": ""})
    rationale = "\n".join(
        f"{r.get('rationale_text', '')} | {', '.join(str(x) for x in r.get('evidence_id') or [])}"
        for r in record.get("rationale") or []
    )
    perception = cap.get("evidence_perception", cap.get("perception", []))
    return {
        "question": record.get("question", ""),
        "answer": record.get("answer", ""),
        "qa_type": record.get("QA_type") or record.get("qa_type") or "factual_retention",
        "profiling_type": record.get("profiling_type") or "",
        "cap_search": ", ".join(cap.get("search", [])),
        "cap_perception": ", ".join(perception),
        "cap_reasoning": ", ".join(cap.get("reasoning", [])),
        "evidence": evidence,
        "rationale": rationale,
    }


def authoring_routes(studio: Any, page: Any) -> list[Route]:
    """The routes over ``studio.workspace``; ``page(template, **context)`` renders a page."""

    def ws() -> Workspace:
        workspace: Workspace = studio.workspace
        return workspace

    def who(request: Request) -> str:
        return str(request.cookies.get(COOKIE) or "")

    def files() -> list[str]:
        root = studio.roots.all("profile")[0]
        return sorted(p.relative_to(root.path).as_posix() for p in root.path.rglob("*") if p.is_file())[:5000]

    async def save_posted(
        request: Request, item: str, me: str, save: Any
    ) -> tuple[dict[str, Any], StaleEdit | None, Response | None]:
        """The posted form saved as ``me``'s draft or adjudication (``save``): the record, the stale edit that
        refused it (shown with the other person's record), or a page saying why it was not saved."""
        form = await request.form()
        record = record_from_form(form, item)
        expected = int(str(form.get("version") or "0")) or None
        try:
            save(item, me, record, expected)
        except StaleEdit as exc:
            return record, exc, None
        except WorkspaceError as exc:
            return record, None, page("message.html", status=400, title="Not saved", message=str(exc))
        return record, None, None

    async def whoami(request: Request) -> Response:
        name = str((await request.form()).get("name") or "").strip()[:80] if request.method == "POST" else ""
        back = request.query_params.get("next", "/author")
        back = back if back.startswith("/") and not back.startswith("//") else "/author"
        if not name:
            return page("whoami.html", next=back)
        response = RedirectResponse(back, status_code=303)
        response.set_cookie(COOKIE, name, httponly=True, samesite="strict")
        return response

    async def items(request: Request) -> Response:
        return page("author_items.html", items=ws().items(), me=who(request), proposals=studio.proposals,
                    model=studio.model, note=request.query_params.get("note", ""))  # fmt: skip

    async def proposals(request: Request) -> Response:
        from urllib.parse import quote

        from hippocamp.models import get_model
        from hippocamp.studio.propose import propose

        if not studio.model:
            return RedirectResponse("/author?note=" + quote("start the studio with --model to get proposals"), 303)
        seeds = [str(r.question) for r in ws().profile.records][:5]
        root = studio.roots.all("profile")[0].path
        found, note = await propose(get_model(studio.model), root, seeds)
        studio.proposals[:] = found
        return RedirectResponse("/author?note=" + quote(note or f"{len(found)} proposals"), status_code=303)

    async def take(request: Request) -> Response:
        index = int(request.path_params["n"])
        if not 0 <= index < len(studio.proposals):
            return page("message.html", status=404, title="Not found", message="no such proposal")
        item = ws().add_item()
        return RedirectResponse(f"/author/{item}?proposal={index}", status_code=303)

    async def new_item(request: Request) -> Response:
        item = ws().add_item()
        return RedirectResponse(f"/author/{item}", status_code=303)

    async def author(request: Request) -> Response:
        item, me = request.path_params["item"], who(request)
        if not me:
            return RedirectResponse(f"/whoami?next=/author/{item}", status_code=303)
        problems: list[Any] = []
        stale = None
        saved_now = False
        if request.method == "POST":
            record, stale, refused = await save_posted(request, item, me, ws().save_draft)
            if refused is not None:
                return refused
            saved_now = stale is None
            problems = ws().check(record, item)
            values = _form_values(record)
        else:
            saved = ws().draft(item, me)
            values = _form_values(saved.record if saved else _from_proposal(request.query_params.get("proposal")))
            if saved:
                problems = ws().check(saved.record, item)
        current = ws().draft(item, me)
        return page("author.html", item=item, me=me, v=values, version=current.version if current else 0,
                    problems=problems, stale=stale, saved=saved_now, files=files(),
                    qa_types=["factual_retention", "profiling"])  # fmt: skip

    async def coverage_page(request: Request) -> Response:
        from hippocamp.models.embedding import get_embedder
        from hippocamp.studio.coverage import coverage, near_duplicates

        records: dict[str, dict[str, Any]] = {}
        for it in ws().items():
            chosen = ws().adjudication(it.id)
            drafts = ws().drafts(it.id)
            if chosen is not None:
                records[it.id] = chosen.record
            elif drafts:
                records[it.id] = drafts[0].record
        from hippocamp.studio.coverage import HIPPOCAMP_TARGETS

        table = coverage(list(records.values()), studio.targets or HIPPOCAMP_TARGETS)
        try:
            groups = near_duplicates({k: str(r.get("question") or "") for k, r in records.items()}, get_embedder())
            note = ""
        except Exception as exc:  # no embedder installed: the page still shows the counts
            groups, note = [], f"near duplicates not computed: {type(exc).__name__}: {exc}"
        questions = {k: str(r.get("question") or "") for k, r in records.items()}
        return page("coverage.html", cov=table, groups=groups, questions=questions, note=note)

    def _from_proposal(index: str | None) -> dict[str, Any] | None:
        if index is None or not index.isdigit() or int(index) >= len(studio.proposals):
            return None
        p = studio.proposals[int(index)]
        return {"question": p.question, "QA_type": p.family,
                "evidence": [{"file_path": f, "evidence_text": ""} for f in p.files]}  # fmt: skip

    async def qc_page(request: Request) -> Response:
        from hippocamp.studio.qc import release_qc

        rows, skipped = release_qc(ws(), studio.build_work)
        return page("qc.html", rows=rows, skipped=skipped, build_work=studio.build_work)

    async def queue(request: Request) -> Response:
        from hippocamp.studio.agreement import disagreements

        return page("adjudicate_queue.html", queue=disagreements(ws()), items=ws().items())

    async def adjudicate(request: Request) -> Response:
        from hippocamp.studio.agreement import compare

        item, me = request.path_params["item"], who(request)
        if not me:
            return RedirectResponse(f"/whoami?next=/adjudicate/{item}", status_code=303)
        drafts = ws().drafts(item)
        stale = None
        problems: list[Any] = []
        if request.method == "POST":
            record, stale, refused = await save_posted(request, item, me, ws().adjudicate)
            if refused is not None:
                return refused
            problems = ws().check(record, item)
            values = _form_values(record)
        else:
            chosen = ws().adjudication(item)
            values = _form_values(chosen.record if chosen else (drafts[0].record if drafts else None))
        fields = compare(drafts[0].record, drafts[1].record) if len(drafts) == 2 else []
        current = ws().adjudication(item)
        return page("adjudicate.html", item=item, me=me, drafts=drafts, fields=fields, v=values,
                    version=current.version if current else 0, stale=stale, problems=problems, files=files(),
                    qa_types=["factual_retention", "profiling"])  # fmt: skip

    async def export(request: Request) -> Response:
        out = Path(studio.export_dir)
        try:
            result = ws().export(out)
        except WorkspaceError as exc:  # ExportError too: the errors that block the export, listed
            return page("message.html", status=400, title="Not exported", message=str(exc))
        return page("exported.html", result=result)

    return [
        Route("/whoami", whoami, methods=["GET", "POST"]),
        Route("/author", items),
        Route("/author/new", new_item, methods=["POST"]),
        Route("/author/coverage", coverage_page),
        Route("/author/qc", qc_page),
        Route("/author/propose", proposals, methods=["POST"]),
        Route("/author/take/{n:int}", take, methods=["POST"]),
        Route("/author/{item}", author, methods=["GET", "POST"]),
        Route("/adjudicate", queue),
        Route("/adjudicate/{item}", adjudicate, methods=["GET", "POST"]),
        Route("/export", export, methods=["POST"]),
    ]
