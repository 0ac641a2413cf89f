"""The studio's web app (Starlette, server-rendered Jinja2 templates, no JavaScript build).

Pages: ``/`` (the opened runs and profiles), ``/runs/{run}`` (a run's episodes, filtered by profile,
family, capability, correctness), ``/runs/{run}/episodes/{episode}`` (the trace, the answer, the
verdict, cited against gold files, and the gold evidence rendered at its locator), ``/compare`` (two
runs side by side on one question), ``/profiles/{root}`` (a profile's files) and ``/view/{root}/{path}``
(one file rendered). Files are served only from the opened folders (`files.Roots`); rendered pictures
are made on the server (`render`) and kept in a small in-memory cache. Every template escapes what it
shows. When the server listens beyond the loopback address, every request needs the session token.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, PlainTextResponse, Response
from starlette.routing import Route

from hippocamp.studio.files import Refused, Roots
from hippocamp.studio.runs import OpenRun, open_run

__all__ = ["Studio", "create_app"]

MAX_OBSERVATION = 6000


@dataclass
class Studio:
    """The studio's state: the opened folders, the runs read from them, the picture cache."""

    roots: Roots = field(default_factory=Roots)
    runs: dict[str, OpenRun] = field(default_factory=dict)
    token: str | None = None
    #: the annotation workspace, when authoring is on (`hippocamp studio --workspace`)
    workspace: Any = None
    export_dir: Path | None = None
    #: the model that proposes questions from bounded metadata (a model string), and its proposals
    model: str | None = None
    #: the work folder of `hippocamp build` that made the profile: its originals must not come back
    build_work: Path | None = None
    #: coverage targets, share per value per axis (default: the HippoCamp release's family mix)
    targets: dict[str, dict[str, float]] | None = None
    proposals: list[Any] = field(default_factory=list)
    pictures: OrderedDict[str, bytes] = field(default_factory=OrderedDict)
    max_pictures: int = 128
    #: (root, path, locator) -> the cached picture's key: a page shown again is not rendered again
    rendered: dict[tuple[str, str, str], str] = field(default_factory=dict)

    @classmethod
    def open(cls, paths: list[Path], token: str | None = None, workspace: Path | None = None,
             export_dir: Path | None = None) -> Studio:  # fmt: skip
        """Open run directories (a folder with ``manifest.json``) and profiles (any other folder). With a
        ``workspace`` (an annotation database), the first path is the profile questions are authored over."""
        studio = cls(token=token, export_dir=export_dir)
        if workspace is not None:
            from hippocamp.studio.workspace import Workspace

            if not paths:
                raise FileNotFoundError("authoring needs the profile: hippocamp studio PROFILE --workspace FILE")
            studio.workspace = Workspace.open(workspace, paths[0])
            studio.roots.add("profile", Path(studio.workspace.profile.root), studio.workspace.profile.name)
            studio.export_dir = export_dir or Path(workspace).with_suffix("")
            paths = paths[1:]
        for path in paths:
            path = Path(path)
            if (path / "manifest.json").is_file():
                root = studio.roots.add("run", path)
                run = open_run(path)
                studio.runs[root.id] = run
                for profile in run.profile_roots:
                    if profile.is_dir():
                        studio.roots.add("profile", profile)
            elif path.is_dir():
                for runpath in sorted(p.parent for p in path.glob("*/manifest.json")):
                    studio.runs[studio.roots.add("run", runpath).id] = run = open_run(runpath)
                    for profile in run.profile_roots:
                        if profile.is_dir():
                            studio.roots.add("profile", profile)
                if not any(path.glob("*/manifest.json")):
                    studio.roots.add("profile", path)
            else:
                raise FileNotFoundError(f"{path}: no such folder")
        return studio

    def remember(self, data: bytes) -> str:
        key = hashlib.sha256(data).hexdigest()[:24]
        self.pictures[key] = data
        self.pictures.move_to_end(key)
        while len(self.pictures) > self.max_pictures:
            self.pictures.popitem(last=False)
        return key


_ENV = Environment(loader=PackageLoader("hippocamp.studio", "templates"), autoescape=select_autoescape(["html"]))
_ENV.filters["pretty"] = lambda v: json.dumps(v, indent=1, ensure_ascii=False, default=str)


def _page(name: str, status: int = 200, **context: Any) -> HTMLResponse:
    return HTMLResponse(_ENV.get_template(name).render(**context), status_code=status)


def _not_found(message: str) -> HTMLResponse:
    return _page("message.html", status=404, title="Not found", message=message)


def create_app(studio: Studio) -> Starlette:
    """The ASGI app over ``studio``."""

    def run_of(request: Request) -> OpenRun | None:
        return studio.runs.get(request.path_params["run"])

    async def index(request: Request) -> Response:
        runs = [(rid, r) for rid, r in studio.runs.items()]
        return _page("index.html", runs=runs, profiles=studio.roots.all("profile"))

    async def run_page(request: Request) -> Response:
        run = run_of(request)
        if run is None:
            return _not_found("no such run")
        q = request.query_params
        rows = list(run.rows.values())
        facets = {
            "profile": sorted({r.profile for r in rows if r.profile}),
            "family": sorted({r.family for r in rows if r.family}),
            "capability": sorted({c for r in rows for c in r.capabilities}),
            "correct": ["yes", "no", "unscored"],
        }
        if q.get("profile"):
            rows = [r for r in rows if r.profile == q["profile"]]
        if q.get("family"):
            rows = [r for r in rows if r.family == q["family"]]
        if q.get("capability"):
            rows = [r for r in rows if q["capability"] in r.capabilities]
        if q.get("correct"):
            rows = [r for r in rows if r.correct == q["correct"]]
        others = [(rid, r) for rid, r in studio.runs.items() if rid != request.path_params["run"]]
        return _page("run.html", rid=request.path_params["run"], run=run, rows=rows, facets=facets,
                     chosen=dict(q), others=others)  # fmt: skip

    async def episode_page(request: Request) -> Response:
        run = run_of(request)
        row = run.rows.get(request.path_params["episode"]) if run else None
        if run is None or row is None:
            return _not_found("no such episode")
        evidence = _evidence(studio, row) if row.gold is not None else []
        from hippocamp.studio.runs import support_of

        support = support_of(run, row)
        cited = list(row.episode.answer.files)
        gold_files = row.gold_files
        files = [(f, f in cited, f in gold_files) for f in sorted(set(cited) | set(gold_files))]
        return _page("episode.html", rid=request.path_params["run"], run=run, row=row, evidence=evidence,
                     files=files, support=support, max_observation=MAX_OBSERVATION)  # fmt: skip

    async def compare_page(request: Request) -> Response:
        q = request.query_params
        a, b, task = studio.runs.get(q.get("a", "")), studio.runs.get(q.get("b", "")), q.get("task", "")
        if a is None or b is None:
            return _not_found("choose two opened runs")
        tasks = sorted({r.episode.task_id for r in a.rows.values()} & {r.episode.task_id for r in b.rows.values()})
        pick = task if task in tasks else (tasks[0] if tasks else "")
        left = [r for r in a.rows.values() if r.episode.task_id == pick]
        right = [r for r in b.rows.values() if r.episode.task_id == pick]
        return _page("compare.html", a=a, b=b, aid=q["a"], bid=q["b"], tasks=tasks, task=pick, left=left, right=right)

    async def profile_page(request: Request) -> Response:
        try:
            root = studio.roots.get(request.path_params["root"])
        except Refused as exc:
            return _not_found(str(exc))
        files = sorted(p.relative_to(root.path).as_posix() for p in root.path.rglob("*") if p.is_file())[:5000]
        return _page("profile.html", root=root, files=files)

    async def view_page(request: Request) -> Response:
        root_id, rel = request.path_params["root"], request.path_params["path"]
        try:
            studio.roots.resolve(root_id, rel)
        except Refused as exc:
            return _not_found(str(exc))
        loc = request.query_params.get("loc")
        page_no = request.query_params.get("page", "")
        try:
            locator = json.loads(loc) if loc else None
        except ValueError:
            return _page("message.html", status=400, title="Bad locator", message=f"{rel}: the locator is not JSON")
        if locator is None and page_no.isdigit():
            locator = {"unit": "page", "position": {"system_page": int(page_no)}}
        if locator is None and rel.lower().endswith(".pdf"):
            locator = {"unit": "page", "position": {"system_page": 1}}
        pick = request.query_params.get("pick", "")
        shown_page = (locator or {}).get("position", {}).get("system_page") if isinstance(locator, dict) else None
        item = _render_item(studio, root_id, rel, locator)
        if pick and item.get("kind") == "media":
            from hippocamp.studio import render

            try:
                data, duration = render.waveform_png(studio.roots.resolve(root_id, rel))
                item.update(waveform=f"/picture/{studio.remember(data)}", duration=round(duration, 3))
            except render.RenderError as exc:
                item.update(waveform_error=str(exc))
        return _page("view.html", root_id=root_id, rel=rel, item=item,
                     pick=pick if pick.replace("_", "").isalnum() else "", page=shown_page)  # fmt: skip

    async def raw_file(request: Request) -> Response:
        try:
            path = studio.roots.resolve(request.path_params["root"], request.path_params["path"])
        except Refused as exc:
            return PlainTextResponse(str(exc), status_code=404)
        return FileResponse(path)

    async def picture(request: Request) -> Response:
        data = studio.pictures.get(request.path_params["key"])
        if data is None:
            return PlainTextResponse("this picture is no longer cached: reload the page", status_code=404)
        return Response(data, media_type="image/png", headers={"Cache-Control": "max-age=3600"})

    routes = [
        Route("/", index),
        Route("/runs/{run}", run_page),
        Route("/runs/{run}/episodes/{episode}", episode_page),
        Route("/compare", compare_page),
        Route("/profiles/{root}", profile_page),
        Route("/view/{root}/{path:path}", view_page),
        Route("/file/{root}/{path:path}", raw_file),
        Route("/picture/{key}", picture),
    ]

    async def need_token(request: Request, call_next: Any) -> Response:
        given = request.query_params.get("token") or request.cookies.get("hippocamp_studio")
        if not given or not secrets.compare_digest(given, studio.token or ""):
            return PlainTextResponse("this studio needs its token (printed when it started)", status_code=403)
        response: Response = await call_next(request)
        response.set_cookie("hippocamp_studio", studio.token or "", httponly=True, samesite="strict")
        return response

    if studio.workspace is not None:
        from hippocamp.studio.authoring import authoring_routes

        routes += authoring_routes(studio, _page)
    middleware = [Middleware(BaseHTTPMiddleware, dispatch=need_token)] if studio.token else []
    return Starlette(routes=routes, middleware=middleware)


# --- evidence ----------------------------------------------------------------------------------------


def _evidence(studio: Studio, row: Any) -> list[dict[str, Any]]:
    """Each gold evidence item of an episode with what to show for it."""
    out = []
    root = studio.roots.find("profile", row.profile_root) if row.profile_root else None
    for ev in row.gold.evidence:
        locators = list(ev.locators) or [None]
        for locator in locators:
            raw = locator.model_dump(mode="json") if locator is not None else None
            item = (_render_item(studio, root.id, ev.file_path, raw) if root is not None
                    else {"kind": "error", "message": "the profile's files are not opened"})  # fmt: skip
            out.append({"file": ev.file_path, "text": ev.evidence_text or "", "root": root.id if root else "",
                        "locator": raw, **item})  # fmt: skip
    return out


def _render_item(studio: Studio, root_id: str, rel: str, locator: dict[str, Any] | None) -> dict[str, Any]:
    """What the page shows for one file at one locator: a picture (cached PNG), a media player, a cell grid,
    lines, a slide's text; or the reason it cannot be shown."""
    from hippocamp.schema.locators import parse_locator
    from hippocamp.studio import render

    try:
        path = studio.roots.resolve(root_id, rel)
    except Refused as exc:
        return {"kind": "error", "message": f"{rel}: {exc}"}
    try:
        parsed = parse_locator(locator) if locator else None
        plan = render.render_plan(path, parsed)
        described = render.describe(parsed) if parsed is not None else ""
        if plan.kind in ("pdf-page", "image"):
            memo = (root_id, rel, json.dumps(locator, sort_keys=True))
            key = studio.rendered.get(memo)
            if key is None or key not in studio.pictures:
                if len(studio.rendered) > 10 * studio.max_pictures:
                    studio.rendered.clear()
                key = studio.rendered[memo] = studio.remember(render.render_png(path, plan))
            return {"kind": "picture", "src": f"/picture/{key}", "describe": described}
        if plan.kind == "media":
            fragment = render.media_fragment(parsed) if parsed is not None else ""
            tag = "video" if plan.media == "video" else "audio"
            return {"kind": "media", "tag": tag, "src": f"/file/{root_id}/{rel}{fragment}", "describe": described}
        if plan.kind == "grid":
            return {"kind": "grid", "grid": render.render_grid(path, plan), "describe": described}
        if plan.kind in ("lines", "text", "slide"):
            return {"kind": "lines", "lines": render.render_lines(path, plan), "describe": described}
        return {"kind": "error", "message": plan.message or f"{rel}: nothing to show for this file"}
    except render.RenderError as exc:
        return {"kind": "error", "message": str(exc)}
