"""The sandbox and the emulated HippoCamp terminal, on a small real profile built in tmp_path."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image

from conftest import make_pdf
from hippocamp.envs import Observation, Sandbox, SandboxError, Terminal, tool_schema
from hippocamp.envs.terminal import _lex
from hippocamp.schema.segment import Segment

SPACED = "Docs/Tom & Jerry (2024)/plan one.txt"


@pytest.fixture
def profile(tmp_path: Path) -> Path:
    """Text, a 3-page PDF, a PNG, nested and oddly named folders, a binary file, symlinks in and out."""
    root = tmp_path / "Mira"
    (root / "Docs/Tom & Jerry (2024)").mkdir(parents=True)
    (root / "Фото").mkdir()
    (root / "Pictures").mkdir()
    (root / "notes.txt").write_text("hello world\nDeposit: EUR 2,900\nbye\n", encoding="utf-8")
    (root / "log.txt").write_text("".join(f"line {i}\n" for i in range(1, 51)), encoding="utf-8")
    (root / SPACED).write_text("a|b\nsecond line\n", encoding="utf-8")
    (root / "Фото/кот.md").write_text("# Кот\nМурка спит\n", encoding="utf-8")
    (root / ".hidden").write_text("secret-ish\n", encoding="utf-8")
    (root / "blob.bin").write_bytes(b"\x00\x01\x02 deposit \xff\xfe")
    make_pdf(root / "Docs/contract.pdf", ["Cover page", "Rent: EUR 1,450", "Deposit: EUR 2,900"])
    Image.new("RGB", (4, 3), "red").save(root / "Pictures/photo.png")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("TOP SECRET\n", encoding="utf-8")
    (root / "escape").symlink_to(outside)
    (root / "leak.txt").symlink_to(outside / "secret.txt")
    (root / "Docs/latest.txt").symlink_to("../notes.txt")
    return root


def tree_hash(root: Path) -> str:
    """Names, kinds, modes, mtimes, contents and link targets of everything under root (links not followed)."""
    h = hashlib.sha256()
    for top, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(dirs + files):
            path = Path(top) / name
            st = path.lstat()
            h.update(f"{path.relative_to(root)}|{st.st_mode}|{st.st_mtime_ns}|".encode())
            if path.is_symlink():
                h.update(os.readlink(path).encode())
            elif path.is_file():
                h.update(path.read_bytes())
    return h.hexdigest()


@pytest.fixture
def term(profile: Path) -> Iterator[Terminal]:
    """A terminal over the profile; afterwards the profile must be unchanged."""
    before = tree_hash(profile)
    with Terminal(profile) as t:
        yield t
    assert tree_hash(profile) == before


def run_ok(t: Terminal, command: str) -> str:
    obs = t.run(command)
    assert obs.ok, (command, obs)
    assert obs.error is None and not obs.escaped
    return obs.text


#: each release tool's keys, in the order the release prints them
RELEASE_KEYS = {
    "list_files": ["success", "count", "data", "error"],
    "return_txt": ["success", "data", "error"],
    "return_metadata": ["success", "metadata", "error"],
    "return_img": ["success", "image_path", "image_paths", "image_b64", "image_b64_list", "page_count", "error"],
    "return_ori": ["success", "file_path", "file_b64", "error"],
    "set_flags": ["success", "data", "error"],
    "hhelp": ["success", "data", "error"],
}


def release(t: Terminal, command: str) -> dict:
    obs = t.run(command)
    payload = json.loads(obs.text)
    tool = command.split(";")[-1].split()[0]
    tool = {"txt": "return_txt", "img": "return_img", "ori": "return_ori", "ls_files": "list_files"}.get(tool, tool)
    assert list(payload) == RELEASE_KEYS[tool], command
    assert obs.text == json.dumps(payload, ensure_ascii=False, separators=(",", ":"))  # compact
    assert obs.ok is payload["success"]
    assert (payload["error"] is None) is payload["success"]
    return payload


# -- sandbox -------------------------------------------------------------------------------------------
def test_sandbox_resolves_inside_and_refuses_escapes(profile: Path) -> None:
    sb = Sandbox(profile)
    root = profile.resolve()
    assert sb.resolve("notes.txt") == root / "notes.txt"
    assert sb.resolve("/Docs/../notes.txt") == root / "notes.txt"  # chroot-absolute
    assert sb.resolve("/") == root and sb.resolve("") == root
    assert sb.resolve("Docs/latest.txt") == root / "notes.txt"  # a symlink inside is followed
    assert sb.resolve("missing/file") == root / "missing/file"  # may not exist
    sb.chdir("Docs/Tom & Jerry (2024)")
    assert sb.cwd == "Docs/Tom & Jerry (2024)"
    assert sb.resolve("plan one.txt") == root / SPACED
    assert sb.resolve("../../notes.txt") == root / "notes.txt"
    assert sb.escapes == 0
    for bad, why in [
        ("../../../x", "above the profile root"),
        ("/..", "above the profile root"),
        ("/escape/secret.txt", "symlink pointing outside"),
        ("/leak.txt", "symlink pointing outside"),
        ("a\x00b", "NUL byte"),
    ]:
        with pytest.raises(SandboxError, match=why) as info:
            sb.resolve(bad)
        assert info.value.path == bad and repr(bad) in str(info.value)
    assert sb.escapes == 5
    assert not sb.allows("/..") and sb.allows("/Docs") and sb.escapes == 5  # allows() counts nothing
    with pytest.raises(NotADirectoryError):
        sb.chdir("/notes.txt")
    with pytest.raises(FileNotFoundError):
        sb.chdir("/nope")
    assert sb.rel(root / SPACED) == SPACED and sb.rel(root) == "."
    assert sb.is_escape_link(root / "escape") and not sb.is_escape_link(root / "Docs/latest.txt")


# -- quoting and parsing --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "line",
    [
        "cat 'Docs/Tom & Jerry (2024)/plan one.txt'",
        'grep -n "Deposit: EUR" notes.txt',
        r"cat Docs/Tom\ \&\ Jerry\ \(2024\)/plan\ one.txt",
        """grep "it's" 'say "hi"' a\\'b""",
        "ls   -la\t'Фото'",
        "echo '' \"\" x''y",
    ],
)
def test_lexer_agrees_with_shlex(line: str) -> None:
    assert [w.text for w in _lex(line)] == shlex.split(line)


def test_quoting_names_with_spaces_ampersands_parentheses(term: Terminal) -> None:
    for line in [
        "cat 'Docs/Tom & Jerry (2024)/plan one.txt'",
        'cat "Docs/Tom & Jerry (2024)/plan one.txt"',
        r"cat Docs/Tom\ \&\ Jerry\ \(2024\)/plan\ one.txt",
        "cat Docs/Tom*/plan*",  # globs expand inside the profile
    ]:
        assert run_ok(term, line) == "a|b\nsecond line", line
    assert run_ok(term, "cat Фото/*.md") == "# Кот\nМурка спит"
    obs = term.run("ls '*.txt'")  # a quoted glob stays literal
    assert not obs.ok and "'*.txt'" not in obs.text and "*.txt: No such file" in obs.text
    for bad in ["cat 'notes.txt", 'grep "x notes.txt', "ls |", "&& ls", "ls && ", "; ls"]:
        obs = term.run(bad)
        assert not obs.ok and obs.error and obs.error.startswith("error:"), bad
    assert term.run("") == Observation("", ok=True)
    assert run_ok(term, "ls Docs;") == run_ok(term, "ls Docs")


# -- shell commands ----------------------------------------------------------------------------------------
def test_ls(term: Terminal) -> None:
    assert run_ok(term, "ls").split("\n") == [
        "Docs",
        "Pictures",
        "blob.bin",
        "escape",
        "leak.txt",
        "log.txt",
        "notes.txt",
        "Фото",
    ]
    assert ".hidden" in run_ok(term, "ls -a").split("\n") and ".hidden" in run_ok(term, "ls -A")
    long = run_ok(term, "ls -l")
    assert "escape -> (outside the profile)" in long and "outside/" not in long and str(term.sandbox.root) not in long
    assert run_ok(term, "ls -l Docs").count("latest.txt -> /notes.txt") == 1
    assert any(line.startswith("d") and line.endswith(" Docs") for line in long.split("\n"))
    rec = run_ok(term, "ls -R Docs")
    assert "Docs:\n" in rec and "Docs/Tom & Jerry (2024):\nplan one.txt" in rec
    assert run_ok(term, "ls notes.txt Фото") == "notes.txt\n\nФото:\nкот.md"
    obs = term.run("ls nope")
    assert not obs.ok and obs.error == "ls: nope: No such file or directory"
    assert term.run("ls -Z").error == "ls: invalid option -- 'Z'"


def test_cd_and_pwd(term: Terminal) -> None:
    assert run_ok(term, "pwd") == "/"
    assert run_ok(term, "cd 'Docs/Tom & Jerry (2024)' && pwd") == "/Docs/Tom & Jerry (2024)"
    assert term.cwd == "/Docs/Tom & Jerry (2024)"
    assert run_ok(term, "cat 'plan one.txt' | head -n 1") == "a|b"
    assert run_ok(term, "cd ../..; pwd") == "/"
    assert run_ok(term, "cd /Фото; ls") == "кот.md"
    assert run_ok(term, "cd; pwd") == "/" and run_ok(term, "cd ~/Docs; pwd") == "/Docs"
    assert term.run("cd /notes.txt").error == "cd: /notes.txt: Not a directory"
    assert term.run("cd nope").error == "cd: nope: No such file or directory"
    assert run_ok(term, "pwd") == "/Docs"  # a failed cd leaves the directory alone


def test_find(term: Terminal) -> None:
    assert run_ok(term, "find . -name '*.txt' -type f").split("\n") == [
        "./Docs/Tom & Jerry (2024)/plan one.txt",
        "./log.txt",
        "./notes.txt",
    ]
    assert run_ok(term, "find Docs -maxdepth 1").split("\n") == [
        "Docs",
        "Docs/Tom & Jerry (2024)",
        "Docs/contract.pdf",
        "Docs/latest.txt",
    ]
    assert run_ok(term, "find / -type d").split("\n") == [
        "/",
        "/Docs",
        "/Docs/Tom & Jerry (2024)",
        "/Pictures",
        "/Фото",
    ]
    assert run_ok(term, "find -iname '*.PNG'") == "./Pictures/photo.png"
    assert run_ok(term, "find . -type l").split("\n") == ["./Docs/latest.txt", "./escape", "./leak.txt"]
    assert run_ok(term, "find . -name *.md") == "./Фото/кот.md"  # -name's pattern is not expanded by the shell
    assert "refused" in (term.run("find . -delete").error or "")
    assert term.run("find . -newer x").error == "find: unknown or unsupported predicate `-newer'"


def test_grep(term: Terminal) -> None:
    assert run_ok(term, "grep -n -i deposit notes.txt") == "2:Deposit: EUR 2,900"
    assert run_ok(term, "grep -ri deposit .").split("\n") == [
        "grep: ./blob.bin: binary file matches",
        "./notes.txt:Deposit: EUR 2,900",
    ]
    assert run_ok(term, "grep -rl line") == "Docs/Tom & Jerry (2024)/plan one.txt\nlog.txt"
    assert run_ok(term, "grep -c line log.txt") == "50"
    assert run_ok(term, "grep -v line 'Docs/Tom & Jerry (2024)/plan one.txt'") == "a|b"
    assert run_ok(term, "grep -x 'a|b' -r Docs") == "Docs/Tom & Jerry (2024)/plan one.txt:a|b"  # BRE: '|' literal
    assert run_ok(term, "grep -x 'line' log.txt || echo none") == "none"
    assert run_ok(term, r"grep -x 'line 1\|line 50' log.txt") == "line 1\nline 50"  # BRE: '\|' alternates
    assert run_ok(term, "grep -E '^line (7|8)$' log.txt") == "line 7\nline 8"
    assert run_ok(term, "grep -F '(2024)' -rl Docs") == ""  # names are not content
    assert run_ok(term, "grep -w 'line 5' log.txt") == "line 5"
    assert run_ok(term, "grep -o 'EUR [0-9,]*' notes.txt") == "EUR 2,900"
    assert run_ok(term, "grep '[[:digit:]]\\{2\\}' notes.txt") == "Deposit: EUR 2,900"
    assert run_ok(term, "grep --include='*.md' -r Мурка .") == "./Фото/кот.md:Мурка спит"
    obs = term.run("grep zzz notes.txt")
    assert obs.ok and obs.text == ""  # no match is not an error
    assert term.run("grep Docs Docs").error == "grep: Docs: Is a directory"
    assert "invalid regular expression" in (term.run("grep -E '(' notes.txt").error or "")


def test_head_tail_cat_wc(term: Terminal) -> None:
    assert run_ok(term, "head log.txt") == "\n".join(f"line {i}" for i in range(1, 11))
    assert run_ok(term, "head -n 2 log.txt") == "line 1\nline 2"
    assert run_ok(term, "head -3 log.txt | tail -n 1") == "line 3"
    assert run_ok(term, "tail -n 2 log.txt") == "line 49\nline 50"
    assert run_ok(term, "tail -n +49 log.txt") == "line 49\nline 50"
    assert (
        run_ok(term, "head -n 1 notes.txt Фото/кот.md")
        == "==> notes.txt <==\nhello world\n\n==> Фото/кот.md <==\n# Кот"
    )
    assert run_ok(term, "cat notes.txt 'Docs/Tom & Jerry (2024)/plan one.txt'").split("\n")[-2:] == [
        "a|b",
        "second line",
    ]
    assert run_ok(term, "cat -n notes.txt").split("\n")[1] == "     2\tDeposit: EUR 2,900"
    assert run_ok(term, "wc -l log.txt") == "50 log.txt"
    assert run_ok(term, "wc notes.txt") == " 3  6 35 notes.txt"
    assert run_ok(term, "wc -l notes.txt log.txt").split("\n") == [" 3 notes.txt", "50 log.txt", "53 total"]
    size = len("# Кот\nМурка спит\n".encode())
    assert run_ok(term, "wc -c Фото/кот.md") == f"{size} Фото/кот.md"
    assert term.run("cat Docs").error == "cat: Docs: Is a directory"
    assert term.run("cat").error == "cat: no input: give a file or pipe text into it"


def test_stat_and_file(term: Terminal) -> None:
    out = run_ok(term, "stat notes.txt")
    assert "Size: 35" in out and "regular file" in out and "(0644/-rw-r--r--)" in out.replace("0664", "0644")
    assert "Type: directory" in run_ok(term, "stat Docs")
    described = run_ok(term, "file Docs/contract.pdf Pictures/photo.png notes.txt Фото/кот.md blob.bin Docs")
    assert described.split("\n") == [
        "Docs/contract.pdf: PDF document",
        "Pictures/photo.png: PNG image data, 4 x 3",
        "notes.txt: ASCII text",
        "Фото/кот.md: Markdown text, Unicode text, UTF-8 text",
        "blob.bin: data",
        "Docs: directory",
    ]


def test_pipes_and_sequencing(term: Terminal) -> None:
    assert run_ok(term, "cat log.txt | grep 'line 4' | head -n 3 | wc -l") == "3"
    assert run_ok(term, "ls Docs | grep -c pdf") == "1"
    assert run_ok(term, "grep -h line log.txt | tail -n 1 | cat") == "line 50"
    assert run_ok(term, "ls | sort -r | head -n 1") == "Фото"
    assert run_ok(term, "echo b a b | grep b ; echo done") == "b a b\ndone"
    obs = term.run("ls nope && echo never")
    assert not obs.ok and "never" not in obs.text
    obs = term.run("ls nope || echo fallback")
    assert obs.text.endswith("fallback") and obs.error == "ls: nope: No such file or directory"
    obs = term.run("ls nope 2>/dev/null; pwd")
    assert obs.text == "/" and obs.error  # stderr hidden from the text, still reported


def test_truncation(profile: Path) -> None:
    with Terminal(profile, budget_chars=100) as t:
        full = "".join(f"line {i}\n" for i in range(1, 51)).rstrip("\n")
        obs = t.run("cat log.txt")
        assert obs.truncated and obs.ok
        assert obs.text == full[:100] + f"\n[... truncated {len(full) - 100} chars]"
        assert not t.run("head -n 2 log.txt").truncated


# -- the release's tools ---------------------------------------------------------------------------------
def test_list_files(term: Terminal) -> None:
    every = release(term, "list_files")
    assert every["data"] == sorted(every["data"]) and every["count"] == len(every["data"])
    assert set(every["data"]) == {
        ".hidden",
        "Docs/Tom & Jerry (2024)/plan one.txt",
        "Docs/contract.pdf",
        "Docs/latest.txt",
        "Pictures/photo.png",
        "blob.bin",
        "log.txt",
        "notes.txt",
        "Фото/кот.md",
    }  # the symlinks leaving the profile are not listed
    txt = ["Docs/Tom & Jerry (2024)/plan one.txt", "Docs/latest.txt", "log.txt", "notes.txt"]
    assert release(term, "list_files '**/*.txt'")["data"] == txt  # '**/' spans zero or more folders
    assert release(term, "list_files 'Docs/**'")["data"] == [*txt[:1], "Docs/contract.pdf", txt[1]]
    assert release(term, "list_files *.txt")["count"] == 4  # no '/': names anywhere; not shell-expanded
    assert release(term, "list_files 'Docs/*'")["data"] == ["Docs/contract.pdf", "Docs/latest.txt"]
    assert release(term, "list_files Фото")["data"] == ["Фото/кот.md"]
    run_ok(term, "cd Docs")
    assert release(term, "list_files")["count"] == every["count"]  # always from the profile root


def test_return_txt(term: Terminal) -> None:
    pdf = release(term, "return_txt Docs/contract.pdf")
    data = pdf["data"]
    assert list(data) == ["file_info", "summary", "segments"] and data["summary"] == ""
    info = data["file_info"]
    assert info["file_path"] == "Docs/contract.pdf" and info["file_name"] == "contract.pdf"
    assert info["file_type"] == "pdf" and info["file_modality"] == "document" and info["user"] == "Mira"
    assert isinstance(info["id"], int) and info["id"] >= 1
    assert len(info["creation_date"]) == 19 and info["location"] is None  # YYYY-MM-DD HH:MM:SS
    segments = data["segments"]
    assert [s["page"] for s in segments] == [1, 2, 3]
    assert [s["locator"]["position"]["system_page"] for s in segments] == [1, 2, 3]
    assert segments[2]["content"] == "Deposit: EUR 2,900" and segments[2]["start_time"] is None
    plan = release(term, "cd 'Docs/Tom & Jerry (2024)'; return_txt plan one.txt")  # unquoted spaces: joined
    assert plan["data"]["segments"][0]["content"] == "a|b\nsecond line"
    run_ok(term, "cd /")
    assert release(term, "return_txt /hippocamp/data/notes.txt")["data"]["file_info"]["file_path"] == "notes.txt"
    assert release(term, "txt notes.txt")["success"]  # the release's short name
    missing = release(term, "return_txt nope.txt")
    assert not missing["success"] and missing["error"] == "return_txt: nope.txt: No such file or directory"
    assert missing["data"] is None
    assert "Is a directory" in release(term, "return_txt Docs")["error"]
    assert not release(term, "return_txt")["success"]
    assert "--page" in release(term, "return_txt Docs/contract.pdf --page 2")["error"]  # as the release refuses it
    failed = release(term, "return_txt blob.bin")
    assert not failed["success"] and "blob.bin" in failed["error"]


def test_return_txt_with_given_texts(profile: Path) -> None:
    seen: list[str] = []

    def texts(rel: str) -> list[Segment]:
        seen.append(rel)
        return [Segment(path=rel, modality="text", text="from the store", locator={"unit": "page", "position": 4})]

    with Terminal(profile, texts=texts) as t:
        data = json.loads(t.run("cd Docs; return_txt contract.pdf").text)["data"]
    assert seen == ["Docs/contract.pdf"]
    assert data["segments"] == [
        {"content": "from the store", "start_time": None, "end_time": None, "page": 4,
         "locator": {"unit": "page", "position": 4}}
    ]  # fmt: skip


def test_return_img_ori_metadata(profile: Path) -> None:
    term = Terminal(profile, budget_chars=10_000_000)  # the images' base64 is long
    page = release(term, "return_img Docs/contract.pdf --page 2")
    assert page["image_path"] == "/hippocamp/output/contract_page2.png" and page["image_paths"] == [page["image_path"]]
    assert page["page_count"] == 3 and page["image_b64_list"] == [page["image_b64"]]
    png = base64.b64decode(page["image_b64"])
    assert png.startswith(b"\x89PNG")
    with Image.open(io.BytesIO(png)) as im:
        assert im.size == (1190, 1684)  # 595 x 842 pt at scale 2
    assert term.emitted == [("/hippocamp/output/contract_page2.png", png)]
    again = term.run("return_img Docs/contract.pdf --page=2")
    assert json.loads(again.text)["image_b64"] == page["image_b64"]  # cached
    assert again.data == [{"image_b64": page["image_b64"], "mime": "image/png", "image_path": page["image_path"]}]
    assert term.run("return_img Docs/contract.pdf --page 2 | wc -c").data == []  # piped on: nothing to attach
    every = release(term, "return_img Docs/contract.pdf")  # no --page: every page
    assert every["image_paths"] == [f"/hippocamp/output/contract_page{n}.png" for n in (1, 2, 3)]
    assert len(every["image_b64_list"]) == 3
    out = release(term, "return_img Docs/contract.pdf /hippocamp/output/p2.png --page 2")
    assert out["image_path"] == "/hippocamp/output/p2.png" and out["image_b64"] == page["image_b64"]
    assert "outputs go under" in release(term, "return_img Docs/contract.pdf /etc/p2.png --page 2")["error"]
    assert "out of range" in release(term, "return_img Docs/contract.pdf --page 9")["error"]
    assert "page number" in release(term, "return_img Docs/contract.pdf --page x")["error"]
    photo = release(term, "img Pictures/photo.png")
    assert (
        photo["page_count"] == 1
        and base64.b64decode(photo["image_b64"]) == (term.sandbox.root / "Pictures/photo.png").read_bytes()
    )
    assert "PDF and images only" in release(term, "return_img notes.txt --page 1")["error"]
    ori = release(term, "return_ori 'Docs/Tom & Jerry (2024)/plan one.txt'")
    assert (
        ori["file_path"] == f"/hippocamp/data/{SPACED}" and base64.b64decode(ori["file_b64"]) == b"a|b\nsecond line\n"
    )
    copy = release(term, "return_ori notes.txt /tmp/n.txt")
    assert copy["file_path"] == "/tmp/n.txt" and term.emitted[-1] == (
        "/tmp/n.txt",
        (term.sandbox.root / "notes.txt").read_bytes(),
    )
    meta = release(term, "return_metadata Pictures/photo.png")["metadata"]
    assert list(meta) == ["id", "file_path", "file_type", "file_modality", "creation_date", "modification_date",
                          "latitude", "longitude", "location"]  # fmt: skip
    assert meta["file_path"] == "Pictures/photo.png" and meta["file_modality"] == "image" and meta["file_type"] == "png"
    assert not release(term, "return_metadata nope.png")["success"]
    cache = term._cache
    term.close()
    assert cache is not None and not cache.exists()


def test_set_flags_and_hhelp(term: Terminal) -> None:
    assert release(term, "set_flags 0 1")["data"] == {"return_txt": 0, "return_img": 1}
    off = release(term, "return_txt notes.txt")
    assert not off["success"] and "disabled" in off["error"]
    assert release(term, "return_img Pictures/photo.png")["success"]
    assert release(term, "set_flags 1 0")["data"] == {"return_txt": 1, "return_img": 0}
    assert release(term, "return_txt notes.txt")["success"] and not release(term, "img Pictures/photo.png")["success"]
    assert not release(term, "set_flags yes")["success"]
    text = release(term, "hhelp")["data"]
    assert text.startswith("AVAILABLE COMMANDS:")
    for name in ["return_txt", "return_img", "return_ori", "return_metadata", "list_files"]:
        assert f"  {name} " in text


def test_page_image_callable(profile: Path, tmp_path: Path) -> None:
    calls: list[tuple[str, int]] = []
    rendered = tmp_path / "rendered.png"
    Image.new("RGB", (2, 2), "blue").save(rendered)

    def render(rel: str, page: int) -> Path:
        calls.append((rel, page))
        return rendered

    t = Terminal(profile, page_image=render)
    out = json.loads(t.run("return_img Docs/contract.pdf --page 3").text)
    assert base64.b64decode(out["image_b64"]) == rendered.read_bytes()
    assert calls == [("Docs/contract.pdf", 3)]


# -- escapes and refusals --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "line",
    [
        "cat ../../etc/passwd",
        "cd /..",
        "cd ..",
        "ls escape",
        "cat leak.txt",
        "head -n 1 escape/secret.txt",
        "grep -r SECRET escape",
        "cat ../*/secret.txt",
        "find /../outside",
        "stat /leak.txt",
        "file escape/secret.txt",
        "wc -l ../outside/secret.txt",
        "cat 'notes.txt\x00'",
        "return_txt ../outside/secret.txt",
        "return_ori leak.txt",
        "return_metadata /escape/secret.txt",
        "return_img ../outside/secret.txt --page 1",
    ],
)
def test_every_escape_is_refused_and_counted(term: Terminal, line: str) -> None:
    obs = term.run(line)
    assert obs.escaped and not obs.ok and obs.error and "refused" in obs.error
    assert "SECRET" not in obs.text and "outside/secret" not in obs.text.replace("../outside/secret", "")
    assert term.sandbox.escapes == 1
    assert term.cwd == "/"


def test_escapes_accumulate_and_reset_per_observation(term: Terminal) -> None:
    assert term.run("cat ../a ../b").escaped
    assert term.sandbox.escapes == 2
    assert not term.run("ls").escaped  # the flag is per command line, the counter is not
    assert term.run("ls -l").text.count("->") == 2  # listing a link's name is not following it
    assert term.sandbox.escapes == 2


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("rm notes.txt", "read-only"),
        ("mv notes.txt x.txt", "read-only"),
        ("touch new.txt", "read-only"),
        ("python -c 'print(1)'", "read-only"),
        ("curl http://example.com", "read-only"),
        ("/bin/ls", "read-only"),
        ("sed -i s/a/b/ notes.txt", "read-only"),
        ("ls > listing.txt", "redirection"),
        ("cat notes.txt >> notes.txt", "redirection"),
        ("grep x < notes.txt", "redirection"),
        ("echo $(whoami)", "expansion"),
        ("echo `whoami`", "expansion"),
        ('cat "$HOME/notes.txt"', "expansion"),
        ("ls &", "background"),
        ("(cd Docs; ls)", "subshells"),
        ("HOME=/ ls", "environment"),
        ("find . -exec cat {} +", "read-only"),
        ("uniq notes.txt out.txt", "read-only"),
        ("frobnicate", "command not found"),
    ],
)
def test_refused_commands(term: Terminal, line: str, why: str) -> None:
    obs = term.run(line)
    assert not obs.ok and obs.error and why in obs.error and why in obs.text
    # writing and the network are attempts to leave the bounds: refused and counted
    attempt = line.split()[0] in ("rm", "mv", "touch", "curl", "sed") or ">" in line
    assert obs.escaped is attempt and term.sandbox.escapes == int(attempt), (line, term.attempts)


def test_tool_schema() -> None:
    schema = tool_schema()
    fn = schema["function"]
    assert schema["type"] == "function" and fn["name"] == "terminal"
    assert fn["parameters"] == {
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": fn["parameters"]["properties"]["command"]["description"]}
        },
        "required": ["command"],
    }
    for name in ["list_files", "return_txt", "return_img", "return_ori", "return_metadata", "grep", "find", "cd"]:
        assert name in fn["description"]
    json.dumps(schema)
