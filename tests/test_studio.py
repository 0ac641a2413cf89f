"""hippocamp studio: the pages over two real scored runs of a synthetic suite, the evidence rendered at its
locator, the paths it refuses, escaping of what agents wrote, and (slow) the real app in headless Chromium
driven by Playwright, with screenshots kept as artifacts."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from starlette.testclient import TestClient

from hippocamp.agents.base import Answer, Budget, EvidenceItem, Meter, Task
from hippocamp.models.types import Usage
from hippocamp.registry import register
from hippocamp.runs import SuiteOptions, load_suite, run
from hippocamp.scoring.judge import Judge
from hippocamp.scoring.run_scores import score_run
from hippocamp.studio.app import Studio, create_app

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'


@register("agent", "test-studio-a")
class StudioAgentA:
    """Right on even tasks (the gold answer, the gold files), a hostile wrong answer on odd ones; one tool step."""

    name: ClassVar[str] = "test-studio-a"
    gold: ClassVar[dict[str, Any]] = {}

    async def solve(self, task: Task, env: Any, model: Any, budget: Budget) -> Answer:
        meter = Meter(budget)
        record = self.gold[task.id]
        index = sorted(self.gold).index(task.id)
        text = record.answer if index % 2 == 0 else f"{HOSTILE} 987,654"
        meter.usage = Usage(input_tokens=10, output_tokens=5, calls=1, cost_usd=0.001)
        meter.observe("search", {"query": HOSTILE}, f"found {HOSTILE}")
        return meter.answer(text, evidence=[EvidenceItem(file_path=e.file_path) for e in record.evidence])


@register("agent", "test-studio-b")
class StudioAgentB(StudioAgentA):
    """Says it could not find it, cites nothing."""

    name: ClassVar[str] = "test-studio-b"

    async def solve(self, task: Task, env: Any, model: Any, budget: Budget) -> Answer:
        return Meter(budget).answer("I could not find it.", evidence=[])


@pytest.fixture(scope="module")
def runs(synth_small: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Path]]:
    root = tmp_path_factory.mktemp("studio-runs")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(root / "home"))
        mp.setenv("XDG_CACHE_HOME", str(root / "cache"))
        suite = load_suite(str(synth_small), SuiteOptions(ocr=False, asr=False, embed=False, store=root / "s.sqlite"))
        StudioAgentA.gold = suite.gold
        dirs = []
        for agent in ("test-studio-a", "test-studio-b"):
            out = root / agent
            asyncio.run(run(suite, agent, "mock", out=out))
            asyncio.run(score_run(out, Judge(None, mode="facts")))
            dirs.append(out)
        suite.close()
    yield dirs


@pytest.fixture(scope="module")
def client(runs: list[Path]) -> TestClient:
    return TestClient(create_app(Studio.open(runs)))


def _episode_links(client: TestClient, run_id: str) -> list[str]:
    page = client.get(f"/runs/{run_id}").text
    return re.findall(r'href="(/runs/' + run_id + r'/episodes/[0-9a-f]+)"', page)


def test_index_lists_runs_and_profiles(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200
    assert "test-studio-a" in page.text and "test-studio-b" in page.text and "/profiles/p0" in page.text


def test_a_run_filters_its_episodes(client: TestClient) -> None:
    everything = _episode_links(client, "r0")
    right = re.findall(r"/episodes/[0-9a-f]+", client.get("/runs/r0?correct=yes").text)
    wrong = re.findall(r"/episodes/[0-9a-f]+", client.get("/runs/r0?correct=no").text)
    assert everything and right and wrong and len(right) + len(wrong) <= len(everything)
    assert not set(right) & set(wrong)


def test_an_episode_shows_trace_verdict_files_and_rendered_evidence(client: TestClient) -> None:
    pages = [client.get(link).text for link in _episode_links(client, "r0")]
    assert all("Trace" in p and "Files: cited and gold" in p and 'id="verdict"' in p for p in pages)
    assert any('id="atomic-units"' in p and 'id="file-scores"' in p for p in pages)
    pictures = [src for p in pages for src in re.findall(r'<img class="rendered" src="(/picture/[0-9a-f]+)"', p)]
    assert pictures, "no evidence rendered as a picture (PDF pages, photos)"
    for src in pictures[:5]:
        shot = client.get(src)
        assert shot.status_code == 200 and shot.content.startswith(b"\x89PNG")
    players = [m for p in pages for m in re.findall(r'<(audio|video) class="player"[^>]*src="([^"]+)"', p)]
    assert players, [e for p in pages for e in re.findall(r'render-error">([^<]+)', p)]
    for _, src in players[:3]:
        assert "#t=" in src or src.startswith("/file/")
        assert client.get(src.split("#")[0]).status_code == 200


def test_what_agents_wrote_is_escaped(client: TestClient) -> None:
    pages = [client.get(link).text for link in _episode_links(client, "r0")] + [client.get("/runs/r0").text]
    joined = "\n".join(pages)
    assert "&lt;script&gt;" in joined
    assert "<script>" not in joined and "<img src=x" not in joined


@pytest.mark.parametrize(
    "path",
    ["../manifest.json", "Documents/../../etc/passwd", "/etc/passwd", "%2e%2e/%2e%2e/etc/passwd",
     "Documents%2F..%2F..%2Fetc%2Fpasswd", "..%2f..%2fetc%2fpasswd", "outside-link", "Documents/./x"],
)  # fmt: skip
def test_nothing_outside_the_opened_folders_is_served(client: TestClient, runs: list[Path], path: str) -> None:
    listed = re.findall(r'href="/view/p0/([^"]+)"', client.get("/profiles/p0").text)
    assert listed and client.get(f"/file/p0/{listed[0]}").status_code == 200  # what is inside is served
    response = client.get(f"/file/p0/{path}")
    assert response.status_code == 404
    assert "root:" not in response.text


def test_a_symlink_out_of_a_profile_is_refused(runs: list[Path], tmp_path: Path) -> None:
    studio = Studio.open(runs)
    profile = studio.roots.all("profile")[0].path
    link = profile / "outside-link"
    link.symlink_to("/etc/passwd")
    try:
        assert TestClient(create_app(studio)).get("/file/p0/outside-link").status_code == 404
    finally:
        link.unlink()


def test_bad_files_show_a_clear_message_in_the_page(runs: list[Path], tmp_path: Path) -> None:
    from PIL import Image

    profile = tmp_path / "Bad"
    profile.mkdir()
    (profile / "broken.pdf").write_bytes(b"%PDF-1.4 not really")
    big = Image.new("L", (8, 8))
    big.save(profile / "huge.png")
    data = bytearray((profile / "huge.png").read_bytes())
    data[16:24] = (60000).to_bytes(4, "big") + (60000).to_bytes(4, "big")  # IHDR claims 60000 x 60000
    (profile / "huge.png").write_bytes(bytes(data))
    client = TestClient(create_app(Studio.open([profile])))
    broken = client.get('/view/p0/broken.pdf?loc={"unit":"page","position":{"system_page":1}}')
    assert broken.status_code == 200 and "broken.pdf" in broken.text and "render-error" in broken.text
    huge = client.get("/view/p0/huge.png")
    assert huge.status_code == 200 and "render-error" in huge.text
    far = client.get('/view/p0/broken.pdf?loc={"unit":"page","position":{"system_page":99}}')
    assert "render-error" in far.text
    assert client.get("/view/p0/missing.pdf").status_code == 404


def test_compare_two_runs_side_by_side(client: TestClient) -> None:
    page = client.get("/compare?a=r0&b=r1")
    assert page.status_code == 200 and "test-studio-a" in page.text and "I could not find it." in page.text


def test_beyond_loopback_every_request_needs_the_token(runs: list[Path]) -> None:
    client = TestClient(create_app(Studio.open(runs, token="s3cret-token")))
    assert client.get("/").status_code == 403
    assert client.get("/?token=s3cret-token").status_code == 200
    assert client.get("/runs/r0").status_code == 200  # the cookie set by the first answer


@pytest.mark.slow
def test_the_app_in_a_real_browser(runs: list[Path], tmp_path: Path) -> None:
    """Playwright drives the system Chromium over the real server: index, a run, an episode with its rendered
    evidence; screenshots are kept in $HIPPOCAMP_ARTIFACTS (or the test's folder)."""
    import socket

    import uvicorn

    playwright = pytest.importorskip("playwright.sync_api")
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    if not os.access(chromium, os.X_OK):
        if os.environ.get("HIPPOCAMP_REQUIRE_MODELS") == "1":
            pytest.fail("required here: the chromium program (Debian package chromium)")
        pytest.skip("needs the chromium program (Debian package chromium)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(create_app(Studio.open(runs)), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    shots = Path(os.environ.get("HIPPOCAMP_ARTIFACTS", tmp_path)) / "studio"
    shots.mkdir(parents=True, exist_ok=True)
    try:
        deadline = time.time() + 30
        while not server.started and time.time() < deadline:
            time.sleep(0.05)
        errors: list[str] = []
        with playwright.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1280, "height": 1600})
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(f"http://127.0.0.1:{port}/")
            page.screenshot(path=str(shots / "index.png"), full_page=True)
            page.click("text=test-studio-a")
            page.wait_for_selector("#episodes")
            page.screenshot(path=str(shots / "run.png"), full_page=True)
            links = page.locator("#episodes a")
            assert links.count() > 0
            shown = False
            for i in range(links.count()):
                page.goto(f"http://127.0.0.1:{port}/runs/r0")
                page.locator("#episodes a").nth(i).click()
                page.wait_for_selector("#verdict")
                images = page.locator("img.rendered")
                if images.count():
                    images.first.wait_for()
                    width = page.evaluate("document.querySelector('img.rendered').naturalWidth")
                    assert width > 100
                    page.screenshot(path=str(shots / "episode.png"), full_page=True)
                    shown = True
                    break
            assert shown, "no episode showed rendered evidence"
            played = False
            page.goto(f"http://127.0.0.1:{port}/runs/r0")
            for i in range(page.locator("#episodes a").count()):
                page.goto(f"http://127.0.0.1:{port}/runs/r0")
                page.locator("#episodes a").nth(i).click()
                page.wait_for_selector("#verdict")
                player = page.locator(".player[src*='#t=']")
                if player.count():
                    src = player.first.get_attribute("src") or ""
                    start = float(src.split("#t=", 1)[1].split(",")[0])
                    page.wait_for_function("document.querySelector('.player').readyState >= 1", timeout=20_000)
                    at = page.evaluate("document.querySelector('.player').currentTime")
                    assert abs(at - start) < 0.5, (src, at)  # the player starts at the cited second
                    page.screenshot(path=str(shots / "episode-audio.png"), full_page=True)
                    played = True
                    break
            assert played, "no episode had a recording cited at a time"
            assert not [e for e in errors if "favicon" not in e], errors
            browser.close()
    finally:
        server.should_exit = True
        thread.join(timeout=10)
    assert (shots / "episode.png").stat().st_size > 10_000
    print(f"studio screenshots: {shots}")


def test_roots_refuse_every_path_that_leaves_or_is_odd(tmp_path: Path) -> None:
    from hippocamp.studio.files import Refused, Roots

    profile = tmp_path / "P"
    (profile / "a").mkdir(parents=True)
    (profile / "a" / "note.txt").write_text("hello")
    (tmp_path / "secret.txt").write_text("no")
    (profile / "a" / "out").symlink_to(tmp_path / "secret.txt")
    (profile / "a" / "in").symlink_to(profile / "a" / "note.txt")
    roots = Roots()
    root = roots.add("profile", profile)
    assert roots.resolve(root.id, "a/note.txt").read_text() == "hello"
    assert roots.resolve(root.id, "a/in").read_text() == "hello"  # a link that stays inside is fine
    for bad in ["../secret.txt", "/etc/passwd", "a/../../secret.txt", "a/..", "a%2F..%2F..%2Fsecret.txt",
                "a\\..\\..\\secret.txt", "", "a//note.txt", "./a/note.txt", "a/out", "a/note.txt\x00", "a",
                "C:/Windows"]:  # fmt: skip
        with pytest.raises(Refused):
            roots.resolve(root.id, bad)
    with pytest.raises(Refused):
        roots.resolve("p9", "a/note.txt")


def test_the_command_serves_on_loopback(runs: list[Path]) -> None:
    import socket
    import subprocess
    import sys
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    command = [sys.executable, "-m", "hippocamp", "studio", str(runs[0]), "--no-browser", "--port", str(port)]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as answer:
                    assert answer.status == 200 and b"test-studio-a" in answer.read()
                    break
            except OSError:
                assert proc.poll() is None and time.time() < deadline, "the studio did not start"
                time.sleep(0.2)
    finally:
        proc.terminate()
        proc.wait(timeout=20)


@register("agent", "test-studio-pc")
class StudioPcAgent:
    """Cites the first message of its case's first supporting fragment."""

    name: ClassVar[str] = "test-studio-pc"
    ids: ClassVar[dict[str, dict[str, list[str]]]] = {}
    gold: ClassVar[dict[str, Any]] = {}

    async def solve(self, task: Task, env: Any, model: Any, budget: Budget) -> Answer:
        persona = task.id.split("/", 1)[0]
        fragments = self.gold[task.id].get("supporting_fragments") or []
        cite = [i for f in fragments[:1] for i in self.ids[persona].get(f, [])[:1]]
        return Meter(budget).answer("I am not sure.", evidence=[EvidenceItem(file_path=c) for c in cite])


def test_a_pcontext_episode_shows_its_supporting_messages_in_their_sessions(tmp_path: Path) -> None:
    from hippocamp.pcontext import SetConfig, run_set

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HIPPOCAMP_CACHE_DIR", str(tmp_path / "cache"))
        run_set(SetConfig(out=tmp_path / "set", n=1, seed=3, days=14))
        suite = load_suite(f"pcontext:{tmp_path / 'set'}", SuiteOptions(embed=False, store=tmp_path / "pc.sqlite"))
        StudioPcAgent.gold = suite.gold
        StudioPcAgent.ids = {
            pid: {f: [str(x["id"]) for x in p.messages if x.get("fragment_id") == f]
                  for f in {str(x.get("fragment_id")) for x in p.messages}}
            for pid, p in suite.personas.items()
        }  # fmt: skip
        out = tmp_path / "pc-run"
        asyncio.run(run(suite, "test-studio-pc", "mock", out=out, limit=6))
        suite.close()
    client = TestClient(create_app(Studio.open([out])))
    links = _episode_links(client, "r0")
    pages = [client.get(link).text for link in links]
    assert pages and all('id="case"' in p for p in pages)
    assert any('<table class="session">' in p and 'class="yes">cited' in p for p in pages)
