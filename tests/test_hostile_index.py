"""Hostile files never stop an index: the wall around readers, bounded formats, names of any bytes.

Every file here is made by the test. Each test has its own time limit, so a regression shows as a
failure, not a hang.
"""

from __future__ import annotations

import mmap
import os
import threading
import time
import zipfile
from pathlib import Path

import pytest

from conftest import make_pdf
from hippocamp.perceive.base import PerceiveOptions
from hippocamp.perceive.run import perceive_file
from hippocamp.perceive.wall import ReaderPool, ReadLimits
from hippocamp.store import IndexOptions, Searcher, Store, index_profile

pytestmark = pytest.mark.hostile

FAST = IndexOptions(embed=False, workers=2, perceive=PerceiveOptions(ocr=False, asr=False))


def _index(root: Path, tmp: Path, options: IndexOptions = FAST):  # type: ignore[no-untyped-def]
    store = Store(tmp / "store.sqlite", root)
    return store, index_profile(root, store, options)


# -- the wall ------------------------------------------------------------------------------------
def hostile_read(root: Path, rel: str, options: PerceiveOptions):  # type: ignore[no-untyped-def]
    """A read function for the workers that misbehaves by file name (module level: workers import it)."""
    name = Path(rel).name
    if name.startswith("hang"):
        time.sleep(3600)
    if name.startswith("alloc"):  # heap: stopped by the worker's memory limit (MemoryError)
        hoard = []
        while True:
            hoard.append(bytearray(16 * 2**20))
    if name.startswith("mmap"):  # shared memory the heap limit does not count: stopped by the watchdog
        hoard = []
        while True:
            m = mmap.mmap(-1, 16 * 2**20)
            m.write(b"x" * len(m))
            hoard.append(m)
            time.sleep(0.01)
    if name.startswith("abort"):
        os.abort()
    return perceive_file(root, rel, options)


@pytest.fixture
def mixed(tmp_path: Path) -> Path:
    root = tmp_path / "profile"
    root.mkdir()
    for name in ("hang.txt", "alloc.txt", "mmap.txt", "abort.txt", "a.txt", "b.txt", "c.txt"):
        (root / name).write_text(f"the file {name} mentions a heron\n")
    return root


@pytest.mark.timeout(60)
def test_a_hang_a_blow_up_and_a_crash_cost_only_their_own_file(mixed: Path) -> None:
    limits = ReadLimits(seconds=3, seconds_per_mb=0, memory_mb=256)
    # one task holds every file: a worker killed on one file hands the rest to a fresh worker
    task = [(p.name, p.stat().st_size) for p in sorted(mixed.iterdir())]
    began = time.monotonic()
    with ReaderPool(mixed, PerceiveOptions(), limits, workers=2, read=hostile_read) as pool:
        results = {r.path: r for r in pool.read([task])}
    took = time.monotonic() - began
    assert set(results) == {name for name, _ in task}  # one result per file, each once
    for good in ("a.txt", "b.txt", "c.txt"):
        assert results[good].status == "ok" and "heron" in results[good].segments[0].text
    assert results["hang.txt"].status == "failed"
    assert results["hang.txt"].reason == "time limit: still reading after 3 s"
    assert results["alloc.txt"].reason == "out of memory while reading (limit 256 MB)"
    assert results["mmap.txt"].reason == "memory limit: the reader used more than 256 MB"
    assert results["abort.txt"].reason == "reader process died (killed by SIGABRT)"
    assert took < 30  # the hang costs its 3 s, not an hour


@pytest.mark.timeout(60)
def test_a_file_that_hit_a_limit_is_recorded_and_not_read_again_unless_asked(mixed: Path, tmp_path: Path) -> None:
    for name in ("alloc.txt", "mmap.txt", "abort.txt"):
        (mixed / name).unlink()
    options = IndexOptions(embed=False, workers=1, limits=ReadLimits(seconds=2, seconds_per_mb=0))
    store = Store(tmp_path / "s.sqlite", mixed)
    # the hanging reader is a real reader here: a plug-in registered for .hang files
    (mixed / "hang.txt").rename(mixed / "stuck.slow")
    from hippocamp import registry

    registry.register("reader", "test-slow")(SlowReader)
    try:
        began = time.monotonic()
        report = index_profile(mixed, store, options)
        assert time.monotonic() - began < 25
        assert dict(report.failed) == {"stuck.slow": "time limit: still reading after 2 s"}
        assert store.files()["stuck.slow"].status == "failed"
        assert report.added == 4
        began = time.monotonic()
        again = index_profile(mixed, store, options)  # unchanged: not read again, the reason kept
        assert time.monotonic() - began < 1.5
        assert again.unchanged == 4 and dict(again.failed) == {"stuck.slow": "time limit: still reading after 2 s"}
        retried = index_profile(
            mixed, store, IndexOptions(embed=False, workers=1, retry_failed=True, limits=options.limits)
        )
        assert retried.updated == 1 and dict(retried.failed)["stuck.slow"].startswith("time limit")
    finally:
        registry._registry["reader"].pop("test-slow", None)
        from hippocamp.perceive import run

        run._by_ext = None


class SlowReader:
    """A plug-in reader that never finishes (module level, so workers can be sent it)."""

    name = "test-slow"
    extensions = ("slow",)
    parts = ()

    def read(self, path, ctx):  # type: ignore[no-untyped-def]
        time.sleep(3600)


# -- formats that used to stop or stall a run ----------------------------------------------------
@pytest.mark.timeout(60)
def test_a_name_that_is_not_utf8_is_stored_losslessly_and_the_rest_is_indexed(tmp_path: Path) -> None:
    root = tmp_path / "profile"
    root.mkdir()
    bad = os.fsdecode(b"bad\xff\xfe.txt")
    (root / bad).write_text("the otter invoice is due friday\n")
    (root / "good.txt").write_text("the heron newsletter arrived\n")
    (root / os.fsdecode(b"dir\xe9")).mkdir()
    (root / os.fsdecode(b"dir\xe9") / "inner.txt").write_text("a kingfisher note\n")
    store, report = _index(root, tmp_path)
    files = store.files()
    assert report.failed == []
    assert set(files) == {"bad\\xff\\xfe.txt", "good.txt", "dir\\xe9/inner.txt"}
    assert store.real_name("bad\\xff\\xfe.txt") == bad  # the exact bytes are kept
    assert os.fsencode(store.real_name("dir\\xe9/inner.txt")) == b"dir\xe9/inner.txt"
    searcher = Searcher(store)
    assert searcher.search("heron", k=3, mode="fts")[0].path == "good.txt"
    assert searcher.search("otter invoice", k=3, mode="fts")[0].path == "bad\\xff\\xfe.txt"
    again = index_profile(root, store, FAST)  # the escaped names match the walk: nothing read again
    assert again.unchanged == 3 and again.added == again.updated == again.removed == 0


@pytest.mark.timeout(60)
def test_text_with_lone_surrogates_is_stored_escaped_not_lost(tmp_path: Path) -> None:
    from hippocamp.perceive.run import FileResult
    from hippocamp.schema.segment import Segment

    store = Store(tmp_path / "s.sqlite", tmp_path)
    broken = FileResult(
        "notes.txt",
        None,
        "document",
        "ok",
        segments=[Segment(path="notes.txt", modality="document", text="caf\udce9 receipt")],
    )
    fine = FileResult(
        "fine.txt", None, "document", "ok", segments=[Segment(path="fine.txt", modality="document", text="a heron")]
    )
    store.put_files([(broken, 1, 10, "sig"), (fine, 1, 10, "sig")])
    assert store.segments_of("notes.txt")[0].text == "caf\\udce9 receipt"
    assert store.segments_of("fine.txt")[0].text == "a heron"


def _ics(rule: str) -> str:
    return (
        "BEGIN:VCALENDAR\nVERSION:2.0\nPRODID:-//t//t//EN\nBEGIN:VEVENT\nUID:bomb\nDTSTAMP:20240801T000000Z\n"
        f"SUMMARY:Ping\nDTSTART:20240101T091500Z\nDTEND:20240101T091501Z\nRRULE:{rule}\nEND:VEVENT\nEND:VCALENDAR\n"
    )


@pytest.mark.timeout(60)
@pytest.mark.parametrize("rule", ["FREQ=SECONDLY", "FREQ=MINUTELY"])
def test_a_calendar_that_repeats_every_second_is_bounded(tmp_path: Path, rule: str) -> None:
    root = tmp_path / "profile"
    root.mkdir()
    (root / "bomb.ics").write_text(_ics(rule))
    assert len(_ics(rule)) < 430  # the 427-byte file
    (root / "good.txt").write_text("the heron newsletter\n")
    began = time.monotonic()
    store, _ = _index(root, tmp_path)
    assert time.monotonic() - began < 20  # minutes and GBs before
    row = store.files()["bomb.ics"]
    assert row.status == "partial" and row.segments == 200
    assert "more than 200 occurrences" in row.notes[0]
    assert store.files()["good.txt"].status == "ok"


def xlsx_bomb(path: Path, unpacked: int = 629_000_000) -> Path:
    """A real XLSX whose one sheet unpacks to ``unpacked`` bytes from under 2 MB."""
    ns = "http://schemas.openxmlformats.org"
    parts = {
        "[Content_Types].xml": f'<Types xmlns="{ns}/package/2006/content-types"><Default Extension="rels" '
        f'ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" '
        'ContentType="application/xml"/><Override PartName="/xl/workbook.xml" ContentType="application/'
        'vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/><Override PartName="/xl/worksheets/'
        'sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/></Types>',
        "_rels/.rels": f'<Relationships xmlns="{ns}/package/2006/relationships"><Relationship Id="rId1" '
        f'Type="{ns}/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>',
        "xl/workbook.xml": f'<workbook xmlns="{ns}/spreadsheetml/2006/main" xmlns:r="{ns}/officeDocument/2006/'
        'relationships"><sheets><sheet name="S" sheetId="1" r:id="rId1"/></sheets></workbook>',
        "xl/_rels/workbook.xml.rels": f'<Relationships xmlns="{ns}/package/2006/relationships"><Relationship '
        f'Id="rId1" Type="{ns}/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/>'
        "</Relationships>",
    }
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, text in parts.items():
            zf.writestr(name, text)
        with zf.open("xl/worksheets/sheet1.xml", "w", force_zip64=True) as fh:
            fh.write(f'<worksheet xmlns="{ns}/spreadsheetml/2006/main"><sheetData>'.encode())
            chunk = b'<row><c t="inlineStr"><is><t>spam</t></is></c></row>' * 20000
            written = 0
            while written < unpacked:
                fh.write(chunk)
                written += len(chunk)
            fh.write(b"</sheetData></worksheet>")
    return path


@pytest.mark.timeout(90)
def test_a_zip_bomb_workbook_is_refused_from_its_declared_sizes(tmp_path: Path) -> None:
    root = tmp_path / "profile"
    root.mkdir()
    bomb = xlsx_bomb(root / "budget.xlsx")
    assert bomb.stat().st_size < 2_000_000
    (root / "good.txt").write_text("the heron newsletter\n")
    began = time.monotonic()
    store, report = _index(root, tmp_path)
    assert time.monotonic() - began < 20  # over 100 s and 1.5 GB before
    reason = dict(report.failed)["budget.xlsx"]
    assert reason.startswith("not read: XLSX member 'xl/worksheets/sheet1.xml' unpacks")
    assert store.files()["good.txt"].status == "ok"


@pytest.mark.timeout(60)
def test_a_symlink_loop_fails_alone(tmp_path: Path) -> None:
    root = tmp_path / "profile"
    root.mkdir()
    for i in range(6):
        (root / f"note{i}.txt").write_text(f"heron note {i}\n")
    os.symlink("loop-b.txt", root / "loop-a.txt")
    os.symlink("loop-a.txt", root / "loop-b.txt")
    os.symlink("self.txt", root / "self.txt")
    store, report = _index(root, tmp_path, IndexOptions(embed=False, workers=1))  # all in one task
    failed = dict(report.failed)
    assert set(failed) == {"loop-a.txt", "loop-b.txt", "self.txt"}
    assert all("symlink loop" in why or "Too many levels" in why for why in failed.values()), failed
    assert all(store.files()[f"note{i}.txt"].status == "ok" for i in range(6))


@pytest.mark.timeout(60)
def test_a_mail_with_a_thousand_nested_attachments_is_read_as_far_as_it_can_be(tmp_path: Path) -> None:
    inner = "From: a@example.org\nTo: b@example.org\nSubject: level 0\n\nthe innermost heron\n"
    for i in range(1, 1001):
        b = f"b{i}"
        inner = (
            f"From: a@example.org\nTo: b@example.org\nSubject: level {i}\nMIME-Version: 1.0\n"
            f'Content-Type: multipart/mixed; boundary="{b}"\n\n--{b}\nContent-Type: text/plain\n\nbody {i}\n'
            f'--{b}\nContent-Type: message/rfc822\nContent-Disposition: attachment; filename="m{i}.eml"\n\n'
            f"{inner}\n--{b}--\n"
        )
    root = tmp_path / "profile"
    root.mkdir()
    (root / "nested.eml").write_text(inner)
    store, _ = _index(root, tmp_path)
    row = store.files()["nested.eml"]
    assert row.status == "partial", row.reason
    assert "nested too deep" in row.notes[0]
    text = " ".join(s.text for s in store.segments_of("nested.eml"))
    assert "Subject: level 1000" in text or "level 1000" in text
    assert "innermost heron" in text  # nothing is lost: the raw body is searchable


@pytest.mark.timeout(60)
def test_special_files_are_never_opened(tmp_path: Path) -> None:
    root = tmp_path / "profile"
    root.mkdir()
    os.mkfifo(root / "pipe.txt")
    (root / "good.txt").write_text("heron\n")
    store, report = _index(root, tmp_path)
    assert "FIFO" in dict(report.failed)["pipe.txt"]
    assert store.files()["good.txt"].status == "ok"


@pytest.mark.timeout(60)
def test_a_tree_a_thousand_levels_deep_is_walked(tmp_path: Path) -> None:
    root = tmp_path / "profile"
    root.mkdir()
    deep = str(root)
    for _ in range(1100):  # one level at a time: Path.mkdir(parents=True) recurses
        deep += "/d"
        os.mkdir(deep)
    deep = Path(deep)
    (deep / "bottom.txt").write_text("the heron at the bottom\n")
    (root / "top.txt").write_text("top\n")
    try:
        store, report = _index(root, tmp_path)
        assert report.failed == []
        assert store.files()["d/" * 1100 + "bottom.txt"].status == "ok"
    finally:  # removed level by level: shutil.rmtree (pytest's clean-up) recurses and fails on it
        (deep / "bottom.txt").unlink()
        while deep != root:
            deep.rmdir()
            deep = deep.parent


# -- a whole profile of hostile files ------------------------------------------------------------
def _tree_rss_mb() -> float:
    """Resident memory of this process and every process below it (MB)."""
    me = os.getpid()
    parents: dict[int, int] = {}
    rss: dict[int, int] = {}
    page = os.sysconf("SC_PAGE_SIZE")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
            parents[int(entry)] = int(fields[1])
            rss[int(entry)] = int(fields[21]) * page
        except (OSError, IndexError, ValueError):
            continue
    total = 0
    for pid in rss:
        p, hops = pid, 0
        while p not in (0, 1) and p != me and hops < 64:
            p, hops = parents.get(p, 0), hops + 1
        if p == me:
            total += rss[pid]
    return total / 2**20


def hostile_profile(root: Path) -> list[str]:
    """30 hostile files of every kind (and three good ones); returns the good files' names."""
    from conftest import make_wav

    root.mkdir()
    d = root / "Documents"
    d.mkdir()
    (d / "budget.xlsx").write_bytes(xlsx_bomb(root.parent / "bomb.xlsx").read_bytes())
    (d / "small-bomb.docx").write_bytes(b"")  # replaced below
    with zipfile.ZipFile(d / "small-bomb.docx", "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("[Content_Types].xml", "<Types/>")
        zf.writestr("word/document.xml", b"<w:document>" + b"A" * 300_000_000 + b"</w:document>")
    (d / "deck.pptx").write_bytes(b"PK\x03\x04 not really a zip")
    (d / "truncated.pdf").write_bytes(make_pdf(root.parent / "t.pdf", ["a page"]).read_bytes()[:300])
    (d / "garbage.pdf").write_bytes(os.urandom(4096))
    (d / "empty.docx").write_bytes(b"")
    (d / "legacy.doc").write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + os.urandom(2000))
    (d / "old.xls").write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 5000)
    (d / os.fsdecode(b"bad\xff\xfe.txt")).write_text("an otter invoice\n")
    (d / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (d / "huge-line.csv").write_text("a," * 2_000_000 + "\n")
    (d / "page.html").write_text("<div>" * 50_000 + "deep heron" + "</div>" * 50_000)
    (d / "binary.txt").write_bytes(os.urandom(100_000))
    (d / "notes.rtf").write_text("{\\rtf1" + "{" * 20_000 + "deep" + "}" * 20_000 + "}")
    m = root / "Mail"
    m.mkdir()
    inner = "From: a@example.org\nSubject: level 0\n\nbody\n"
    for i in range(1, 1001):
        inner = (
            f'From: a@example.org\nSubject: {i}\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="b{i}"\n\n'
            f"--b{i}\nContent-Type: message/rfc822\n\n{inner}\n--b{i}--\n"
        )
    (m / "nested.eml").write_text(inner)
    (m / "headers-only.eml").write_text("Subject: " + "x" * 1_000_000 + "\n\n")
    (m / "box.mbox").write_text("no From line here at all\n")
    c = root / "Calendar"
    c.mkdir()
    (c / "seconds.ics").write_text(_ics("FREQ=SECONDLY"))
    (c / "minutes.ics").write_text(_ics("FREQ=MINUTELY"))
    (c / "broken.ics").write_text("BEGIN:VCALENDAR\nBEGIN:VEVENT\nDTSTART:garbage\n")
    p = root / "Photos"
    p.mkdir()
    from PIL import Image

    Image.new("L", (12_000, 12_000), 255).save(p / "huge.png")  # 144 megapixels, a few hundred KB
    (p / "fake.jpg").write_bytes(b"\xff\xd8\xff\xe0" + os.urandom(3000))
    (p / "truncated.png").write_bytes((p / "huge.png").read_bytes()[:200])
    a = root / "Audio"
    a.mkdir()
    (a / "noise.wav").write_bytes(b"RIFF\xff\xff\xff\xffWAVEfmt " + os.urandom(500))
    (a / "fake.mp3").write_bytes(b"ID3" + os.urandom(3000))
    (a / "clip.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42" + os.urandom(3000))
    os.mkfifo(root / "pipe.txt")
    os.symlink("loop-b", root / "loop-a")
    os.symlink("loop-a", root / "loop-b")
    os.symlink("/etc/passwd", root / "passwd.txt")
    good = ["Documents/heron.txt", "Mail/good.eml", "Audio/tone.wav"]
    (root / good[0]).write_text("the grey heron nests by the canal\n")
    (root / good[1]).write_text("From: ann@example.org\nTo: me@example.org\nSubject: heron walk\n\nSunday at 9.\n")
    make_wav(root / good[2], 1.0)
    return good


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_profile_of_30_hostile_files_indexes_in_under_2_minutes_under_2_gb(tmp_path: Path) -> None:
    """The issue's bar, with the default limits and every reader on (OCR and speech where installed)."""
    root = tmp_path / "profile"
    good = hostile_profile(root)
    peak = [0.0]
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], _tree_rss_mb())
            time.sleep(0.1)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    began = time.monotonic()
    try:
        store = Store(tmp_path / "s.sqlite", root)
        report = index_profile(root, store, IndexOptions(embed=False, workers=2))
    finally:
        done.set()
        watcher.join()
    took = time.monotonic() - began
    files = store.files()
    assert report.scanned >= 33
    hostile = [p for p in files if p not in good]
    assert len(hostile) >= 30
    for path in good:
        assert files[path].status in ("ok", "partial"), (path, files[path].reason)
    assert "heron" in " ".join(s.text for s in store.segments_of("Documents/heron.txt"))
    for path in hostile:  # every hostile file is recorded; the ones that failed say why
        assert files[path].status in ("ok", "partial", "metadata", "failed", "skipped")
        if files[path].status in ("failed", "skipped"):
            assert files[path].reason, path
    assert files["passwd.txt"].status == "skipped"  # a link out of the profile is never read
    assert took < 120, took
    assert peak[0] < 2048, peak[0]
    print(f"\n30 hostile files: {took:.1f} s, peak {peak[0]:.0f} MB, failed {len(report.failed)}")


@pytest.mark.timeout(30)
def test_pages_and_events_are_read_up_to_their_caps(tmp_path: Path) -> None:
    make_pdf(tmp_path / "long.pdf", [f"page {i} heron" for i in range(1, 6)])
    events = "".join(
        f"BEGIN:VEVENT\nUID:e{i}\nDTSTAMP:20240801T000000Z\nSUMMARY:Walk {i}\nDTSTART:2024010{i}T091500Z\nEND:VEVENT\n"
        for i in range(1, 6)
    )
    (tmp_path / "many.ics").write_text(f"BEGIN:VCALENDAR\nVERSION:2.0\nPRODID:-//t//t//EN\n{events}END:VCALENDAR\n")
    options = PerceiveOptions(max_pages=2, max_events=3)
    pdf = perceive_file(tmp_path, "long.pdf", options)
    assert [s.locator.system_page for s in pdf.segments] == [1, 2]  # type: ignore[union-attr]
    assert pdf.status == "partial" and pdf.notes == ["5 pages: the first 2 read (max_pages)"]
    ics = perceive_file(tmp_path, "many.ics", options)
    assert len(ics.segments) == 3 and ics.notes == ["more than 3 events: the rest not read (max_events)"]


@pytest.mark.timeout(120)
def test_a_run_over_a_profile_with_a_bad_name_goes_on(tmp_path: Path) -> None:
    """`hippocamp run` stopped on a name that is not UTF-8 (the store could not write it)."""
    import json
    import shutil

    from click.testing import CliRunner

    from hippocamp.cli import main
    from hippocamp.examples import example_profile

    profile = tmp_path / "Mira"
    shutil.copytree(example_profile(), profile)
    tree = next(p for p in profile.iterdir() if p.is_dir())
    (tree / os.fsdecode(b"bad\xff\xfe.txt")).write_text("an otter invoice\n")
    os.mkfifo(tree / "pipe.txt")
    out = tmp_path / "run"
    args = ["run", "--suite", str(profile), "--agent", "rag", "--model", "mock", "--out", str(out), "--limit", "2"]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    episodes = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert len(episodes) == 2
    (out / "episodes.jsonl").read_bytes().decode("utf-8")  # valid UTF-8 throughout
