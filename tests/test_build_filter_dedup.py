"""The build pipeline's artifact filter (`build.artifacts`) and duplicate finder (`build.dedup`).

The filter runs over a planted tree of OS and tool artifacts among a person's files, some of them named to
tempt a careless rule (``notes.tmp.md``, a ``Build/`` folder of photos, a ``travel-journal``). The duplicate
finder runs over generated documents (copies, edited copies, versions, unrelated texts) and over pictures
drawn with Pillow, and its near-text groups are checked against a brute-force Jaccard over all pairs.
"""

from __future__ import annotations

import hashlib
import random
import re
from pathlib import Path

import pytest
from PIL import Image, ImageDraw

from hippocamp.build import artifacts, dedup
from hippocamp.build.artifacts import RULES, classify, filter_tree
from hippocamp.build.dedup import KEEP_POLICIES, Candidate, find_duplicates, parse_name

SQLITE_HEAD = b"SQLite format 3\x00" + bytes(16)
APPLEDOUBLE_HEAD = b"\x00\x05\x16\x07\x00\x02\x00\x00Mac OS X        "
WAL_HEAD = b"\x37\x7f\x06\x82\x00\x2d\xe2\x18"

# path -> (size, head, the rule that must exclude it)
ARTIFACTS: dict[str, tuple[int, bytes, str]] = {
    ".DS_Store": (6148, b"\x00\x00\x00\x01Bud1", "macos-ds-store"),
    "Photos/THUMBS.DB": (20480, b"\xd0\xcf\x11\xe0", "thumbnail-database"),
    "Backup/thumbcache_idx.db": (1024, b"IMMM", "thumbnail-database"),
    "Photos/iPod Photo Cache/F01/T1.ithmb": (9000, b"", "thumbnail-database"),
    "Docs/desktop.ini": (282, b"[.ShellClassInfo]", "folder-settings"),
    "Docs/~$port.docx": (162, b"\x05Alice", "office-owner-file"),
    "Docs/.~lock.budget.odt#": (90, b",Alice,host", "libreoffice-lock"),
    "Docs/draft.TMP": (4096, b"", "temp-file"),
    "Docs/.letter.md.swp": (12288, b"b0VIM 9.0", "editor-swap"),
    "Docs/.letter.md.swo": (12288, b"b0VIM 9.0", "editor-swap"),
    "Docs/report.docx~": (5000, b"PK\x03\x04", "editor-swap"),
    "Docs/.#notes.org": (30, b"", "editor-swap"),
    "Music/.localized": (0, b"", "macos-folder-marker"),
    "Pictures/Icon\r": (0, b"", "macos-folder-marker"),
    "Photos/._IMG_0001.jpg": (4096, APPLEDOUBLE_HEAD, "macos-appledouble"),
    "Docs/.contract.pdf.icloud": (160, b"bplist00", "icloud-placeholder"),
    "Archive/__MACOSX/Trip/._beach.jpg": (4096, APPLEDOUBLE_HEAD, "macos-system-data"),
    ".Spotlight-V100/Store-V2/store.db": (8192, b"", "macos-system-data"),
    ".fseventsd/0000000001": (100, b"", "macos-system-data"),
    ".TemporaryItems/folders.501/x": (10, b"", "macos-system-data"),
    ".Trashes/501/old.pdf": (9000, b"%PDF-1.7", "recycle-bin"),
    ".Trash/old photo.jpg": (9000, b"\xff\xd8\xff", "recycle-bin"),
    "$RECYCLE.BIN/S-1-5-21/$RABC123.docx": (9000, b"PK\x03\x04", "recycle-bin"),
    "pagefile.sys": (1 << 30, b"", "windows-system-data"),
    "AppData/Roaming/Zoom/data.bin": (500, b"", "windows-appdata"),
    "lost+found/#12345": (700, b"", "fs-recovery"),
    ".cache/thumbnails/normal/abc.png": (900, b"\x89PNG", "cache-folder"),
    "Docs/.thumbnails/large/x.png": (900, b"\x89PNG", "thumbnail-folder"),
    "Pictures/Photos Library.photoslibrary/resources/derivatives/1/ab.jpeg": (900, b"", "photo-library-cache"),
    "Dropbox/.dropbox.cache/2024/blob": (900, b"", "sync-metadata"),
    "Code/tool/.git/HEAD": (23, b"ref: refs/heads/main", "vcs-metadata"),
    "Code/tool/__pycache__/util.cpython-311.pyc": (800, b"\xa7\x0d\x0d\x0a", "python-cache"),
    "Code/tool/old.pyc": (800, b"\xa7\x0d\x0d\x0a", "python-cache"),
    "Code/web/node_modules/left-pad/index.js": (300, b"module.exports", "package-folder"),
    "Code/tool/.venv/lib/python3.11/site-packages/x.py": (30, b"", "package-folder"),
    "Code/tool/.idea/workspace.xml": (3000, b"<?xml", "editor-metadata"),
    "Code/tool/.vscode/settings.json": (30, b"{}", "editor-metadata"),
    "Code/tool/build/lib/tool/cli.py": (400, b"import sys", "project-build-output"),
    "Code/web/dist/bundle.js": (90000, b"(()=>{", "project-build-output"),
    "Downloads/setup.exe.crdownload": (50000, b"MZ", "partial-download"),
    "Downloads/movie.mkv.part": (50000, b"\x1aE\xdf\xa3", "partial-download"),
    "Desktop/Word.lnk": (1500, b"L\x00\x00\x00", "windows-shortcut"),
    "Code/tool/app.lock": (0, b"", "empty-lock-file"),
    "Finance/budget.sqlite-wal": (32000, WAL_HEAD, "sqlite-sidecar"),
    "Finance/budget.sqlite-shm": (32768, b"\x18\xe2\x2d\x00", "sqlite-sidecar"),
    "Mail/Outbox-journal": (0, b"", "sqlite-sidecar"),
}

# a person's files, several named to look like artifacts
USER_FILES: dict[str, tuple[int, bytes]] = {
    "Docs/notes.tmp.md": (300, b"# Notes"),
    "Docs/build_plan.docx": (9000, b"PK\x03\x04"),
    "Docs/report.docx": (5000, b"PK\x03\x04"),
    "Docs/._ideas.txt": (40, b"my ideas for the garden"),  # starts with ._ but is not AppleDouble
    "Docs/dist/summary.pdf": (9000, b"%PDF-1.7"),  # a "dist" folder outside any code project
    "Docs/cache-notes.md": (100, b"cache"),
    "Docs/temp readings.csv": (100, b"date,temp"),
    "Build/IMG_0001.jpg": (90000, b"\xff\xd8\xff"),  # a photos folder called Build
    "Photos/build/beach.jpg": (90000, b"\xff\xd8\xff"),  # lower-case build, but no project beside it
    "Photos/IMG_0001.jpg": (90000, b"\xff\xd8\xff"),
    "Pictures/Photos Library.photoslibrary/originals/1/ab.heic": (90000, b""),
    "Crafts/Recycled/bottle lamp.jpg": (90000, b"\xff\xd8\xff"),
    "Pharmacy/CVS/receipt.pdf": (9000, b"%PDF-1.7"),
    "Work/Caches/list.xlsx": (9000, b"PK\x03\x04"),
    "Finance/budget.sqlite": (65536, SQLITE_HEAD),
    "Finance/ledger.db": (65536, SQLITE_HEAD),
    "Notes/travel-journal": (500, b"Day 1: Lisbon"),
    "Notes/lock": (20, b"the lock code is"),  # lock-named, not empty
    "Bookmarks/Hippocamp paper.url": (60, b"[InternetShortcut]"),
    "Bookmarks/Recipe.webloc": (200, b"<?xml"),
    "Code/tool/pyproject.toml": (400, b"[project]"),
    "Code/tool/poetry.lock": (3000, b"# This file"),
    "Code/tool/README.md": (400, b"# tool"),
    "Code/tool/src/tool/cli.py": (400, b"import sys"),
    "Code/web/package.json": (200, b"{"),
    "Code/web/package-lock.json": (20000, b"{"),
    "Code/web/src/app.js": (200, b"import"),
    "Music/Album/01 Track.mp3": (4_000_000, b"ID3"),
    "Mail/inbox.mbox": (40000, b"From "),
    "Videos/trip.mp4": (9_000_000, b"\x00\x00\x00\x18ftyp"),
}


def _tree() -> list[tuple[str, int, bytes]]:
    entries = [(p, size, head) for p, (size, head, _) in ARTIFACTS.items()]
    entries += [(p, size, head) for p, (size, head) in USER_FILES.items()]
    random.Random(7).shuffle(entries)
    return entries


# --- the artifact filter -------------------------------------------------------------------------------------


def test_planted_tree_precision_and_recall() -> None:
    kept, excluded = filter_tree(_tree())
    found = {path for path, _ in excluded}
    true_positive = found & set(ARTIFACTS)
    assert len(true_positive) / len(found) == 1.0, sorted(found - set(ARTIFACTS))  # precision
    assert len(true_positive) / len(ARTIFACTS) == 1.0, sorted(set(ARTIFACTS) - found)  # recall
    assert kept == sorted(USER_FILES)
    assert [p for p, _ in excluded] == sorted(ARTIFACTS)


def test_each_exclusion_names_its_rule() -> None:
    _, excluded = filter_tree(_tree())
    wrong = {path: v.rule.id for path, v in excluded if v.rule.id != ARTIFACTS[path][2]}
    assert wrong == {}
    verdicts = dict(excluded)
    assert verdicts["Code/web/dist/bundle.js"].matched == "Code/web/dist/"
    assert verdicts["Code/tool/.git/HEAD"].matched == "Code/tool/.git/"
    assert verdicts["Photos/THUMBS.DB"].matched == "THUMBS.DB"
    assert all(v.rule in RULES for v in verdicts.values())


def test_every_rule_is_exercised_and_described() -> None:
    ids = [rule.id for rule in RULES]
    assert len(ids) == len(set(ids))
    assert {rule for _, _, rule in ARTIFACTS.values()} == set(ids)
    for rule in RULES:
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", rule.id)
        assert rule.description.endswith(".") and rule.description[0].isupper()
    assert isinstance(artifacts.RULESET_VERSION, str) and artifacts.RULESET_VERSION


def test_build_folder_needs_a_project_beside_it() -> None:
    assert classify("proj/build/out.o", size=10) is None
    verdict = classify("proj/build/out.o", size=10, siblings=frozenset({"build", "setup.py"}))
    assert verdict is not None and verdict.rule.id == "project-build-output" and verdict.matched == "proj/build/"
    # tools write it lower-case; a "Build" folder is the person's even inside a project
    assert classify("proj/Build/a.jpg", size=10, siblings=frozenset({"Build", "Makefile"})) is None
    kept, excluded = filter_tree([("Photos/build/a.jpg", 9, b""), ("Photos/a.jpg", 9, b"")])
    assert excluded == [] and kept == ["Photos/a.jpg", "Photos/build/a.jpg"]


def test_case_folding_follows_the_file_system() -> None:
    for name in ("THUMBS.DB", "thumbs.db", "Thumbs.db"):
        assert classify(f"Photos/{name}", size=9) is not None
    assert classify(".ds_store", size=9) is not None
    assert classify("$Recycle.Bin/x.docx", size=9) is not None
    assert classify("RECYCLER/x.docx", size=9) is not None
    assert classify("Recycler/x.docx", size=9) is None  # Windows writes RECYCLER in capitals


def test_appledouble_and_sqlite_use_the_first_bytes() -> None:
    assert classify("._a.jpg", size=4096, head=APPLEDOUBLE_HEAD) is not None
    assert classify("._a.jpg", size=4096) is not None  # first bytes unknown: the name decides
    assert classify("._a.txt", size=30, head=b"a note") is None
    assert classify("History-journal", size=512, head=bytes.fromhex("d9d505f920a163d7")) is not None
    assert classify("travel-journal", size=512, head=b"Day 1") is None
    assert classify("Finance/budget.sqlite", size=4096, head=SQLITE_HEAD) is None


def test_bad_paths_are_refused() -> None:
    for bad in ("/etc/passwd", "../x", "a//b", "", "a/./b"):
        with pytest.raises(ValueError, match="relative POSIX path"):
            classify(bad, size=1)
    with pytest.raises(ValueError, match="listed twice"):
        filter_tree([("a.txt", 1, b""), ("a.txt", 1, b"")])


# --- names ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "family", "label", "copy"),
    [
        ("Docs/report.docx", "report", (), False),
        ("report_v2.docx", "report", ("v2",), False),
        ("report_v3_final.docx", "report", ("final", "v3"), False),
        ("report final.docx", "report", ("final",), False),
        ("report (draft).docx", "report", ("draft",), False),
        ("report 2024-03-01.docx", "report", ("2024-3-1",), False),
        ("report_20240301.docx", "report", ("2024-3-1",), False),
        ("report rev B.docx", "report", ("revb",), False),
        ("Report V2.1.pdf", "report", ("v2.1",), False),
        ("report (1).docx", "report", (), True),
        ("report copy.docx", "report", (), True),
        ("report copy 2.docx", "report", (), True),
        ("Copy of report.docx", "report", (), True),
        ("report - Copy.docx", "report", (), True),
        ("report - Copy (2).docx", "report", (), True),
        ("report_v2 (1).docx", "report", ("v2",), True),
        ("Budget_plan_FINAL.xlsx", "budget plan", ("final",), False),
        ("IMG_0042.jpg", "img 0042", (), False),  # a bare number is not a version
        ("report 2.docx", "report 2", (), False),
        ("final.docx", "final", (), False),  # a marker alone is the stem
    ],
)
def test_name_grammar(name: str, family: str, label: tuple[str, ...], copy: bool) -> None:
    parts = parse_name(name)
    assert (parts.family, parts.label, parts.copy) == (family, label, copy)


# --- text duplicates -----------------------------------------------------------------------------------------

VOCAB = ["".join(random.Random(i).choice("abcdefghijklmnopqrstuvwxyz") for _ in range(3 + i % 6)) for i in range(600)]


def _text(seed: int, words: int = 300) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(VOCAB) for _ in range(words))


def _edit(text: str, edits: int, seed: int) -> str:
    rng = random.Random(seed)
    words = text.split()
    for n, i in enumerate(rng.sample(range(len(words)), edits)):
        words[i] = f"edit{seed}x{n}"
    return " ".join(words)


def _doc(path: str, text: str, mtime: float, size: int | None = None) -> Candidate:
    data = text.encode()
    return Candidate(path, len(data) if size is None else size, mtime, hashlib.sha256(data).hexdigest(), text=text)


def _library() -> list[Candidate]:
    report = _text(1)
    budget = _text(2, 400)
    minutes = _text(3, 400)
    return [
        _doc("Docs/report.docx", report, 100),
        _doc("Backup/report (1).docx", report, 300),  # same bytes
        _doc("Docs/Copy of report.docx", _edit(report, 1, 11), 50),  # edited copy
        _doc("Plans/Budget plan v1.docx", budget, 100),
        _doc("Plans/Budget plan v2.docx", _edit(budget, 1, 21), 200),
        _doc("Plans/Budget plan final.docx", _edit(budget, 2, 22), 300),
        _doc("Plans/Budget plan v2 copy.docx", _edit(_edit(budget, 1, 21), 1, 23), 150),
        _doc("Notes/minutes.txt", minutes, 100),
        _doc("Notes/minutes - Copy.txt", _edit(minutes, 2, 31), 120),
        _doc("Notes/unrelated.txt", _text(4), 100),
        _doc("Notes/other.txt", _text(5), 100),
        _doc("Notes/short a.txt", "the cat sat on the mat", 100),
        _doc("Notes/short b.txt", "the cat sat on the mat again", 100),
    ]


def test_copies_edited_copies_and_versions() -> None:
    result = find_duplicates(_library())
    by_keep = {(g.kind, g.keep): g for g in result.groups}
    assert set(by_keep) == {
        ("exact", "Backup/report (1).docx"),
        ("near-text", "Backup/report (1).docx"),
        ("near-text", "Plans/Budget plan v2.docx"),
        ("near-text", "Notes/minutes - Copy.txt"),
    }
    assert by_keep["exact", "Backup/report (1).docx"].drop == ("Docs/report.docx",)
    assert by_keep["exact", "Backup/report (1).docx"].similarity == 1.0
    assert by_keep["exact", "Backup/report (1).docx"].reason.startswith("same bytes as Backup/report (1).docx")
    assert by_keep["near-text", "Backup/report (1).docx"].drop == ("Docs/Copy of report.docx",)
    assert by_keep["near-text", "Plans/Budget plan v2.docx"].drop == ("Plans/Budget plan v2 copy.docx",)
    assert by_keep["near-text", "Notes/minutes - Copy.txt"].drop == ("Notes/minutes.txt",)
    for group in result.groups:
        if group.kind == "near-text":
            assert 0.9 <= group.similarity < 1.0
    assert result.versions == (
        dedup.Versions(
            "Budget plan",
            ("Plans/Budget plan final.docx", "Plans/Budget plan v1.docx", "Plans/Budget plan v2.docx"),
        ),
    )
    assert result.dropped() == {
        "Docs/report.docx",
        "Docs/Copy of report.docx",
        "Plans/Budget plan v2 copy.docx",
        "Notes/minutes.txt",
    }


def test_versions_are_never_near_duplicates_but_same_bytes_are() -> None:
    text = _text(9)
    files = [
        _doc("report_v2.docx", _edit(text, 1, 1), 1),
        _doc("report_v3_final.docx", _edit(text, 1, 2), 2),
        _doc("report (draft).docx", _edit(text, 1, 3), 3),
        _doc("report 2024-03-01.docx", _edit(text, 1, 4), 4),
        _doc("report rev B.docx", text, 5),
        _doc("report final.docx", text, 6),  # same bytes as rev B: one file, whatever the names say
    ]
    result = find_duplicates(files)
    assert [(g.kind, g.keep, g.drop) for g in result.groups] == [("exact", "report final.docx", ("report rev B.docx",))]
    assert len(result.versions) == 1 and result.versions[0].stem == "report"
    assert set(result.versions[0].members) == {f.path for f in files} - {"report rev B.docx"}


def test_short_texts_are_not_compared() -> None:
    text = _text(5, 25)
    assert 50 < len(text) < 200
    files = [_doc("a.txt", text, 1), _doc("b.txt", _edit(text, 1, 1), 2)]
    assert find_duplicates(files).groups == ()
    assert [g.kind for g in find_duplicates(files, min_text_chars=50, text_threshold=0.5).groups] == ["near-text"]


def _shingle_set(text: str) -> set[tuple[str, ...]]:
    words = re.findall(r"\w+", text.casefold())
    return {tuple(words[i : i + 5]) for i in range(len(words) - 4)}


def test_near_text_matches_a_brute_force_jaccard() -> None:
    """Every pair of documents, exact Jaccard of word 5-shingles, grouped as the finder groups them."""
    files = []
    for base in range(6):
        text = _text(100 + base, 400)
        files.append(_doc(f"d{base}/base.txt", text, 0))
        for k, edits in enumerate((1, 3, 5, 6, 7, 8, 10, 15, 30)):
            files.append(_doc(f"d{base}/variant{k}.txt", _edit(text, edits, 1000 * base + k), 0))
    sets = {f.path: _shingle_set(f.text or "") for f in files}
    order = sorted(files, key=lambda f: (len(f.path), f.path))
    taken: set[str] = set()
    expected = {}
    for keep in order:
        if keep.path in taken:
            continue
        taken.add(keep.path)
        drops = {}
        for other in order:
            if other.path not in taken:
                a, b = sets[keep.path], sets[other.path]
                similarity = len(a & b) / len(a | b)
                if similarity >= 0.9:
                    drops[other.path] = similarity
        if drops:
            taken.update(drops)
            expected[keep.path] = (tuple(sorted(drops)), min(drops.values()))
    result = find_duplicates(files, policy="shortest-path")
    got = {g.keep: (g.drop, g.similarity) for g in result.groups}
    assert got.keys() == expected.keys()
    for keep, (drop, similarity) in expected.items():
        assert got[keep][0] == drop
        assert got[keep][1] == pytest.approx(similarity, abs=1e-12)
    assert 0 < sum(len(d) for d, _ in expected.values()) < len(files) - 6  # both sides of the threshold


# --- keep policies and determinism ---------------------------------------------------------------------------


def test_keep_policies() -> None:
    data = _text(42)
    same = [
        _doc("Archive/2019/deep/notes.txt", data, 300),
        _doc("notes copy.txt", data, 100),
        _doc("Docs/notes.txt", data, 100),
    ]
    keeps = {policy: find_duplicates(same, policy=policy).groups[0].keep for policy in KEEP_POLICIES}
    # all the same size: "largest" ties, and a name without a copy marker wins, then the smaller path
    assert keeps == {
        "latest": "Archive/2019/deep/notes.txt",
        "largest": "Archive/2019/deep/notes.txt",
        "shortest-path": "Docs/notes.txt",  # as short as "notes copy.txt", and not a copy
    }
    near = [_doc("a/long/path/plan.txt", data, 1, size=10), _doc("plan2.txt", _edit(data, 1, 1), 2, size=20)]
    assert find_duplicates(near, policy="largest").groups[0].keep == "plan2.txt"
    assert find_duplicates(near, policy="latest").groups[0].keep == "plan2.txt"
    assert find_duplicates(near, policy="shortest-path").groups[0].keep == "plan2.txt"
    near[1] = _doc("plan2.txt", _edit(data, 1, 1), 0.5, size=5)
    assert find_duplicates(near, policy="largest").groups[0].keep == "a/long/path/plan.txt"
    assert find_duplicates(near, policy="latest").groups[0].keep == "a/long/path/plan.txt"
    with pytest.raises(ValueError, match="latest, largest, shortest-path"):
        find_duplicates(same, policy="newest")


def test_deterministic_and_each_file_dropped_once() -> None:
    files = _library()
    first = find_duplicates(files)
    for seed in range(3):
        shuffled = list(files)
        random.Random(seed).shuffle(shuffled)
        assert find_duplicates(shuffled) == first
    drops = [path for group in first.groups for path in group.drop]
    assert len(drops) == len(set(drops))
    kinds = ["exact", "near-text", "near-image"]
    assert list(first.groups) == sorted(first.groups, key=lambda g: (kinds.index(g.kind), g.keep))


def test_bad_arguments() -> None:
    doc = _doc("a.txt", "x", 1)
    with pytest.raises(ValueError, match="listed twice"):
        find_duplicates([doc, doc])
    with pytest.raises(ValueError, match="image_bits"):
        find_duplicates([doc], image_bits=60)
    with pytest.raises(ValueError, match="image_max_distance"):
        find_duplicates([doc], image_max_distance=64)
    with pytest.raises(ValueError, match="text_threshold"):
        find_duplicates([doc], text_threshold=0)


# --- image duplicates ----------------------------------------------------------------------------------------


def _scene(seed: int, path: Path, size: tuple[int, int] = (480, 360)) -> Image.Image:
    rng = random.Random(seed)
    img = Image.new("RGB", size, tuple(rng.randrange(256) for _ in range(3)))
    draw = ImageDraw.Draw(img)
    for _ in range(12):
        x, y = rng.randrange(size[0]), rng.randrange(size[1])
        box = (x, y, x + rng.randrange(20, 200), y + rng.randrange(20, 200))
        colour = tuple(rng.randrange(256) for _ in range(3))
        (draw.ellipse if rng.random() < 0.5 else draw.rectangle)(box, fill=colour)
    img.save(path)
    return img


def _picture(root: Path, rel: str, mtime: float) -> Candidate:
    data = (root / rel).read_bytes()
    return Candidate(rel, len(data), mtime, hashlib.sha256(data).hexdigest(), image=root / rel)


def test_resized_jpeg_copy_is_a_near_image_duplicate(tmp_path: Path) -> None:
    (tmp_path / "Photos").mkdir()
    scene = _scene(1, tmp_path / "Photos/beach.png")
    scene.resize((240, 180)).save(tmp_path / "Photos/beach small.jpg", quality=60)
    _scene(2, tmp_path / "Photos/garden.png")
    scene.resize((240, 180)).save(tmp_path / "Photos/beach edited.jpg", quality=75)  # a version: kept
    (tmp_path / "Photos/broken.jpg").write_bytes(b"\xff\xd8\xff not really a jpeg")
    Image.new("RGB", (64, 64), (200, 30, 30)).save(tmp_path / "Photos/red.png")
    Image.new("RGB", (64, 64), (30, 30, 200)).save(tmp_path / "Photos/blue.png")
    rels = ["beach.png", "beach small.jpg", "garden.png", "beach edited.jpg", "broken.jpg", "red.png", "blue.png"]
    files = [_picture(tmp_path, f"Photos/{r}", mtime) for mtime, r in enumerate(rels)]
    files.append(Candidate("Photos/gone.png", 10, 9.0, "0" * 64, image=tmp_path / "Photos/gone.png"))
    result = find_duplicates(files, policy="shortest-path")
    assert [(g.kind, g.keep, g.drop) for g in result.groups] == [
        ("near-image", "Photos/beach.png", ("Photos/beach small.jpg",))
    ]
    group = result.groups[0]
    assert group.similarity >= 1 - 4 / 64
    assert "Photos/beach.png" in group.reason
    skipped = ["Photos/blue.png", "Photos/broken.jpg", "Photos/gone.png", "Photos/red.png"]
    assert [path for path, _ in result.skipped] == skipped
    assert "too flat" in dict(result.skipped)["Photos/red.png"]
    assert [v.members for v in result.versions] == [("Photos/beach edited.jpg", "Photos/beach.png")]


def test_image_hash_separates_different_scenes(tmp_path: Path) -> None:
    hashes = []
    for seed in range(8):
        _scene(seed, tmp_path / f"{seed}.png")
        hashes.append(dedup.image_hash(tmp_path / f"{seed}.png"))
        Image.open(tmp_path / f"{seed}.png").resize((240, 180)).save(tmp_path / f"{seed}.jpg", quality=60)
        assert (hashes[-1] ^ dedup.image_hash(tmp_path / f"{seed}.jpg")).bit_count() <= 4
    distances = [(a ^ b).bit_count() for i, a in enumerate(hashes) for b in hashes[i + 1 :]]
    assert min(distances) > 8


def _receipt(path: Path, lines: list[str], paper: tuple[int, int, int] = (250, 248, 240)) -> None:
    img = Image.new("RGB", (360, 520), paper)
    draw = ImageDraw.Draw(img)
    draw.rectangle((20, 20, 340, 60), fill=(40, 40, 40))
    for i, line in enumerate(lines):
        draw.text((30, 90 + 26 * i), line, fill=(20, 20, 20))
    img.save(path, quality=90)


def test_receipts_of_one_shop_are_not_near_duplicates_but_a_rescan_is(tmp_path: Path) -> None:
    """A pHash alone puts two receipts of one layout a few bits apart; the colour-thumbnail check keeps them
    apart, and still joins a resized, re-encoded copy."""
    (tmp_path / "R").mkdir()
    _receipt(tmp_path / "R/a.jpg", [f"Item {i}   {i * 3}.50" for i in range(1, 12)] + ["TOTAL  211.50"])
    _receipt(tmp_path / "R/b.jpg", [f"Thing {i}   {i * 7}.10" for i in range(1, 9)] + ["TOTAL  99.80"])
    with Image.open(tmp_path / "R/a.jpg") as im:
        im.resize((270, 390)).save(tmp_path / "R/a scan.jpg", quality=55)
    files = [_picture(tmp_path, f"R/{r}", m) for m, r in enumerate(["a.jpg", "b.jpg", "a scan.jpg"])]
    hashes = [dedup.image_hash(tmp_path / f.path) for f in files]
    assert (hashes[0] ^ hashes[1]).bit_count() <= 12  # the hash alone barely tells them apart
    result = find_duplicates(files, policy="shortest-path", image_max_distance=12)
    assert [(g.keep, g.drop) for g in result.groups] == [("R/a.jpg", ("R/a scan.jpg",))]
