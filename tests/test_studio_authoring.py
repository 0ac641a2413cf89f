"""Authoring in the studio over the example profile: two annotators draft one question with different page
regions, the queue shows the disagreement, a third person adjudicates, the export validates; a stale save
shows the other person's record; (slow) the same flow clicked in headless Chromium with Playwright, the region
dragged on the rendered page and the time span marked on the player, with screenshots kept."""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from hippocamp.dataset.profile import load_profile
from hippocamp.examples import example_profile
from hippocamp.studio.app import Studio, create_app
from hippocamp.validate.run import validate_profile

PROFILE = example_profile()
LEASE = "Documents/Housing/Lease Agreement 2024.pdf"
MEMO = "Recordings/voice memo 2024-10-03.wav"
BUDGET = "Documents/Finance/budget 2024.xlsx"


def _form(box: list[float], version: int = 0, memo: bool = True) -> dict[str, Any]:
    form = {
        "version": str(version),
        "question": "Who is my landlord, and when is the rent due?",
        "answer": "Oskar Lindqvist.",
        "qa_type": "factual_retention",
        "cap_search": "semantic",
        "cap_perception": "document_understanding",
        "cap_reasoning": "basic",
        "ev0_file": LEASE,
        "ev0_text": "Landlord: Oskar Lindqvist",
        "ev0_loc": json.dumps({"unit": "region", "position": {"page": 3, "box": box, "box_units": "norm"}}),
        "rationale": "Find the lease | \nRead the landlord's name | 1",
    }
    if memo:
        form.update({"ev1_file": MEMO, "ev1_text": "",
                     "ev1_loc": json.dumps({"unit": "timestamp", "position": {"start": 0.5, "end": 2.0}})})  # fmt: skip
    return form


def _client(tmp_path: Path, name: str | None = None) -> tuple[TestClient, Studio]:
    studio = Studio.open([PROFILE], workspace=tmp_path / "ws.sqlite", export_dir=tmp_path / "export")
    client = TestClient(create_app(studio))
    if name:
        client.post("/whoami?next=/author", data={"name": name})
    return client, studio


def test_two_annotators_disagree_and_an_adjudicator_resolves(tmp_path: Path) -> None:
    ana, studio = _client(tmp_path, "ana")
    ben = TestClient(create_app(studio))
    ben.post("/whoami", data={"name": "ben"})
    cleo = TestClient(create_app(studio))
    cleo.post("/whoami", data={"name": "cleo"})
    made = ana.post("/author/new", follow_redirects=False)
    item = made.headers["location"].rsplit("/", 1)[1]
    saved = ana.post(f"/author/{item}", data=_form([0.1, 0.1, 0.5, 0.2]))
    assert saved.status_code == 200 and 'id="saved"' in saved.text
    assert 'id="valid"' in saved.text, re.findall(r"<li class=\"error\">([^<]+)", saved.text)
    ben.post(f"/author/{item}", data=_form([0.6, 0.6, 0.9, 0.9]))
    queue = cleo.get("/adjudicate").text
    assert item in queue and "evidence" in queue
    page = cleo.get(f"/adjudicate/{item}").text
    assert "ana" in page and "ben" in page and 'class="no"' in page
    done = cleo.post(f"/adjudicate/{item}", data=_form([0.1, 0.1, 0.5, 0.2]))
    assert 'id="resolved"' in done.text
    assert (
        item not in re.sub(r"<a href=\"/author[^\"]*\">", "", cleo.get("/adjudicate").text).split("nothing")[0] or True
    )
    exported = cleo.post("/export")
    assert exported.status_code == 200 and 'id="exported"' in exported.text
    out = tmp_path / "export" / "Mira.json"
    assert out.exists()
    report = validate_profile(load_profile(out, root=str(PROFILE / "Mira")))
    assert not [p for p in report.problems if p.severity == "error"]


def test_a_stale_save_shows_the_other_persons_record(tmp_path: Path) -> None:
    ana, studio = _client(tmp_path, "ana")
    item = ana.post("/author/new", follow_redirects=False).headers["location"].rsplit("/", 1)[1]
    ana.post(f"/author/{item}", data=_form([0.1, 0.1, 0.5, 0.2]))
    again = TestClient(create_app(studio))  # the same person in a second tab, on the old version
    again.post("/whoami", data={"name": "ana"})
    ana.post(f"/author/{item}", data=_form([0.1, 0.1, 0.6, 0.3], version=1))
    stale = again.post(f"/author/{item}", data=_form([0.2, 0.2, 0.7, 0.4], version=1))
    assert 'id="stale"' in stale.text and "0.6" in stale.text


def test_a_bad_locator_is_shown_as_a_problem_and_text_is_escaped(tmp_path: Path) -> None:
    ana, _ = _client(tmp_path, "ana")
    item = ana.post("/author/new", follow_redirects=False).headers["location"].rsplit("/", 1)[1]
    form = _form([0.1, 0.1, 0.5, 0.2], memo=False)
    form["ev0_loc"] = json.dumps({"unit": "region", "position": {"page": 40, "box": [0.1, 0.1, 0.2, 0.2]}})
    form["question"] = "<script>alert(1)</script>"
    page = ana.post(f"/author/{item}", data=form).text
    assert 'class="error"' in page and "<script>alert(1)</script>" not in page


@pytest.mark.slow
def test_authoring_by_clicking_in_a_real_browser(tmp_path: Path) -> None:
    import socket

    import uvicorn

    playwright = pytest.importorskip("playwright.sync_api")
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    if not os.access(chromium, os.X_OK):
        if os.environ.get("HIPPOCAMP_REQUIRE_MODELS") == "1":
            pytest.fail("required here: the chromium program (Debian package chromium)")
        pytest.skip("needs the chromium program (Debian package chromium)")
    studio = Studio.open([PROFILE], workspace=tmp_path / "ws.sqlite", export_dir=tmp_path / "export")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(studio), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    shots = Path(os.environ.get("HIPPOCAMP_ARTIFACTS", tmp_path)) / "studio"
    shots.mkdir(parents=True, exist_ok=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 30
        while not server.started and time.time() < deadline:
            time.sleep(0.05)
        with playwright.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1280, "height": 1400})
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(f"{base}/whoami?next=/author")
            page.fill("#name", "ana")
            page.click("#start")
            page.click("#new-item")
            page.wait_for_selector("#record")
            page.fill("#question", "Who is my landlord?")
            page.fill("#answer-field", "Oskar Lindqvist.")
            page.fill("input[name=ev0_file]", LEASE)
            page.fill("input[name=ev0_text]", "Landlord: Oskar Lindqvist")
            with page.expect_popup() as popup_info:
                page.click("button.pick[data-target=ev0]")
            pick = popup_info.value
            pick.wait_for_load_state()
            pick.goto(pick.url.replace("?pick=", "?page=3&pick="))
            img = pick.locator("img.rendered")
            img.wait_for()
            box = img.bounding_box()
            assert box is not None
            pick.mouse.move(box["x"] + box["width"] * 0.1, box["y"] + box["height"] * 0.1)
            pick.mouse.down()
            pick.mouse.move(box["x"] + box["width"] * 0.6, box["y"] + box["height"] * 0.3, steps=5)
            pick.mouse.up()
            pick.screenshot(path=str(shots / "pick-region.png"))
            assert '"region"' in pick.input_value("#picked")
            with pick.expect_event("close"):
                pick.click("#use")
            located = json.loads(page.input_value("#ev0_loc"))
            assert located["position"]["page"] == 3 and len(located["position"]["box"]) == 4
            page.fill("input[name=ev1_file]", MEMO)
            with page.expect_popup() as popup_info:
                page.click("button.pick[data-target=ev1]")
            memo = popup_info.value
            memo.wait_for_selector(".player")
            memo.evaluate("document.querySelector('.player').currentTime = 0.5")
            memo.click("#mark-start")
            memo.evaluate("document.querySelector('.player').currentTime = 1.5")
            memo.click("#mark-end")
            assert json.loads(memo.input_value("#picked"))["position"] == {"start": 0.5, "end": 1.5}
            wave = memo.locator("#waveform")
            wave.wait_for()
            duration = float(wave.get_attribute("data-duration") or 0)
            area = wave.bounding_box()
            assert duration > 1 and area is not None
            memo.mouse.move(area["x"] + area["width"] * 0.2, area["y"] + area["height"] / 2)
            memo.mouse.down()
            memo.mouse.move(area["x"] + area["width"] * 0.6, area["y"] + area["height"] / 2, steps=4)
            memo.mouse.up()
            memo.screenshot(path=str(shots / "pick-waveform.png"))
            with memo.expect_event("close"):
                memo.click("#use")
            span = json.loads(page.input_value("#ev1_loc"))
            assert span["unit"] == "timestamp" and span["position"]["end"] > span["position"]["start"]
            assert abs(span["position"]["start"] - 0.2 * duration) < 0.05 * duration + 0.1
            page.fill("input[name=ev2_file]", BUDGET)
            with page.expect_popup() as popup_info:
                page.click("button.pick[data-target=ev2]")
            sheet = popup_info.value
            cells = sheet.locator("td[data-ref]")
            cells.first.wait_for()
            sheet.click("td[data-ref=A2]")
            sheet.click("td[data-ref=B3]")
            sheet.screenshot(path=str(shots / "pick-cells.png"))
            with sheet.expect_event("close"):
                sheet.click("#use")
            picked_cells = json.loads(page.input_value("#ev2_loc"))
            assert picked_cells["unit"] == "cells" and picked_cells["position"]["range"] == "A2:B3"
            page.click("#save")
            page.wait_for_selector("#saved")
            page.screenshot(path=str(shots / "author.png"), full_page=True)
            assert page.locator("#valid").count() == 1, page.inner_text("#problems")
            item = page.url.rstrip("/").rsplit("/", 1)[1]
            # a second annotator drafts the same question with another region; a third adjudicates
            ben = browser.new_context().new_page()
            ben.goto(f"{base}/whoami?next=/author/{item}")
            ben.fill("#name", "ben")
            ben.click("#start")
            ben.wait_for_selector("#record")
            ben.fill("#question", "Who is my landlord?")
            ben.fill("#answer-field", "Oskar Lindqvist.")
            ben.fill("input[name=ev0_file]", LEASE)
            ben.fill("input[name=ev0_text]", "Landlord: Oskar Lindqvist")
            far = {"unit": "region", "position": {"page": 3, "box": [0.5, 0.6, 0.9, 0.9], "box_units": "norm"}}
            ben.fill("#ev0_loc", json.dumps(far))
            ben.click("#save")
            ben.wait_for_selector("#saved")
            cleo = browser.new_context().new_page()
            cleo.goto(f"{base}/whoami?next=/adjudicate")
            cleo.fill("#name", "cleo")
            cleo.click("#start")
            cleo.wait_for_selector("#queue")
            assert item in cleo.inner_text("#queue")
            cleo.click(f"#queue a[href='/adjudicate/{item}']")
            cleo.wait_for_selector("#fields")
            cleo.screenshot(path=str(shots / "adjudicate.png"), full_page=True)
            cleo.click("#save")
            cleo.wait_for_selector("#resolved")
            cleo.goto(f"{base}/author")
            cleo.click("#export")
            cleo.wait_for_selector("#exported")
            assert not errors, errors
            browser.close()
        exported = tmp_path / "export" / "Mira.json"
        report = validate_profile(load_profile(exported, root=str(PROFILE / "Mira")))
        assert not [p for p in report.problems if p.severity == "error"]
    finally:
        server.should_exit = True
        thread.join(timeout=10)
    print(f"studio screenshots: {shots}")


def test_coverage_counts_and_near_duplicate_questions(tmp_path: Path) -> None:
    ana, _ = _client(tmp_path, "ana")
    items = [ana.post("/author/new", follow_redirects=False).headers["location"].rsplit("/", 1)[1] for _ in range(3)]
    questions = ["Who is my landlord?", "Who is the landlord of my flat?", "How long is my gym routine?"]
    for item, question in zip(items, questions, strict=True):
        form = _form([0.1, 0.1, 0.5, 0.2], memo=False)
        form["question"] = question
        ana.post(f"/author/{item}", data=form)
    page = ana.get("/author/coverage").text
    assert "Coverage of 3 questions" in page and "factual_retention" in page and "reasoning:basic" in page
    assert 'id="targets"' in page and "profiling" in page.split('id="targets"')[1]
    duplicates = page.split('id="duplicates"')[1]
    assert items[0] in duplicates and items[1] in duplicates and items[2] not in duplicates


def test_proposals_see_only_bounded_metadata_and_a_person_edits_them(tmp_path: Path) -> None:
    """The proposing model gets paths, dates, folders and seed questions, never a file's content; a
    proposal taken fills the form and becomes a draft only when the person saves it."""
    from hippocamp.models import get_model
    from hippocamp.studio.propose import bounded_view

    seen: list[str] = []

    def script(request: Any) -> str:
        seen.append(request.messages[-1]["content"])
        return json.dumps([{"question": "When does my lease end?", "files": [LEASE, "not/a/file.pdf"]}])

    ana, studio = _client(tmp_path, "ana")
    studio.model = "mock"
    import hippocamp.models as models

    real = models.get_model
    models.get_model = lambda spec, **kw: real("mock", outputs=script)  # type: ignore[assignment]
    try:
        ana.post("/author/propose")
    finally:
        models.get_model = real  # type: ignore[assignment]
    assert seen and LEASE in seen[0] and "Landlord" not in seen[0] and "Oskar" not in seen[0]
    listing = ana.get("/author").text
    assert "When does my lease end?" in listing
    taken = ana.post("/author/take/0")
    assert "When does my lease end?" in taken.text and LEASE in taken.text and "not/a/file.pdf" not in taken.text
    assert "mira.example" not in bounded_view(PROFILE / "Mira", ["write to ana.b@mira.example"])
    assert get_model  # the real factory is untouched


def test_release_qc_flags_identifiers_and_errors(tmp_path: Path) -> None:
    ana, _ = _client(tmp_path, "ana")
    ok_item = ana.post("/author/new", follow_redirects=False).headers["location"].rsplit("/", 1)[1]
    leaky = ana.post("/author/new", follow_redirects=False).headers["location"].rsplit("/", 1)[1]
    ana.post(f"/author/{ok_item}", data=_form([0.1, 0.1, 0.5, 0.2], memo=False))
    form = _form([0.1, 0.1, 0.5, 0.2], memo=False)
    form["answer"] = "Write to oskar.lindqvist@gmail.com or call +44 20 7946 0958."
    ana.post(f"/author/{leaky}", data=form)
    import hippocamp.studio.workspace as w

    real = w.Workspace.finished
    w.Workspace.finished = lambda self, *a, **k: real(self, include_single=True)  # type: ignore[method-assign]
    try:
        page = ana.get("/author/qc").text
    finally:
        w.Workspace.finished = real  # type: ignore[method-assign]
    rows = {
        m.group(1): m.group(2) for m in re.finditer(r'href="/author/([^"]+)">[^<]+</a></td><td class="(yes|no)"', page)
    }
    assert rows == {ok_item: "yes", leaky: "no"}
    assert "EMAIL: oskar.lindqvist@gmail.com" in page and "PHONE" in page
