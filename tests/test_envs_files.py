"""FilesEnv: the four file tools over an indexed synthetic profile."""

from __future__ import annotations

import json

from hippocamp.envs.files import FilesEnv, parse_locator_text


def test_schemas_are_openai_functions(env: FilesEnv) -> None:
    names = [t["function"]["name"] for t in env.tools]
    assert names == ["list_files", "search", "read", "metadata"]
    for tool in env.tools:
        assert tool["type"] == "function" and tool["function"]["parameters"]["type"] == "object"


def test_list_files_with_glob(env: FilesEnv) -> None:
    everything = env.call("list_files", {})
    assert everything.ok and len(everything.data) >= 50
    pdfs = env.call("list_files", {"glob": "*.pdf"})
    assert pdfs.data and all(d["path"].endswith(".pdf") for d in pdfs.data)
    mail = env.call("list_files", {"glob": "Mail/**"})
    assert mail.data and all(d["path"].startswith("Mail/") for d in mail.data)
    assert len(mail.data) < len(everything.data)


def test_search_returns_citable_hits(env: FilesEnv) -> None:
    obs = env.call("search", {"query": "monthly rent lease", "k": 3})
    assert obs.ok and 1 <= len(obs.data) <= 3
    top = obs.data[0]
    assert top["path"].startswith("Documents/Housing/Lease") and top["locator"]["unit"] == "page"
    assert "Monthly rent" in obs.text
    only_mail = env.call("search", {"query": "dinner", "file_type": "eml"})
    assert only_mail.data and all(d["path"].endswith(".eml") for d in only_mail.data)
    assert not env.call("search", {"query": "  "}).ok
    # filters that exclude everything are relaxed, and the observation says so
    relaxed = env.call("search", {"query": "monthly rent", "file_type": "pdf", "after": "2099-01-01"})
    assert relaxed.data and relaxed.text.startswith("(no results with file_type=pdf, after=2099-01-01;")


def test_read_whole_file_and_parts(env: FilesEnv) -> None:
    lease = next(d["path"] for d in env.call("list_files", {"glob": "Documents/Housing/*"}).data)
    whole = env.call("read", {"path": lease})
    assert len(whole.data) == 3
    page2 = env.call("read", {"path": lease, "locator": "page 2"})
    assert len(page2.data) == 1 and "Monthly rent" in page2.text
    assert page2.data[0]["locator"]["position"]["system_page"] == 2
    budget = next(d["path"] for d in env.call("list_files", {"glob": "*.xlsx"}).data if "Budget" in d["path"])
    assert env.call("read", {"path": budget, "locator": "A1:B3"}).data
    assert not env.call("read", {"path": lease, "locator": "the good part"}).ok
    assert not env.call("read", {"path": "Documents/nope.pdf"}).ok


def test_metadata_and_escapes(env: FilesEnv) -> None:
    photo = next(d["path"] for d in env.call("list_files", {"glob": "Pictures/Receipts/*"}).data)
    meta = json.loads(env.call("metadata", {"path": photo}).text)
    assert meta["modality"] == "image" and meta["type"] == "jpg" and meta["size"] > 0
    for bad in ("../../etc/passwd", "/../secret", "Documents/../../x"):
        obs = env.call("read", {"path": bad})
        assert not obs.ok and "refused" in obs.text
    assert env.escapes == 3
    assert not env.call("rm", {"path": photo}).ok
    assert not env.call("read", {"file": photo}).ok  # wrong argument name
    assert "bad arguments" in env.call("search", {"query": "rent", "k": "ten"}).text


def test_locator_text_forms() -> None:
    assert parse_locator_text("page 3").dump() == {"unit": "page", "position": 3}
    assert parse_locator_text("slides 2-3").dump()["unit"] == "slide"
    assert parse_locator_text("00:01:10-00:01:30").start == 70.0
    assert parse_locator_text("October!A2:B5").sheet == "October"
    assert parse_locator_text("lines 4-9").line_end == 9
    assert parse_locator_text("whatever") is None


def test_terminal_reads_the_store(env: FilesEnv) -> None:
    term = env.terminal()
    out = term.run("list_files '*.pdf'")
    assert out.ok and json.loads(out.text)["count"] >= 2
    lease = next(p for p in json.loads(out.text)["data"] if "Lease" in p)
    txt = json.loads(term.run(f'return_txt "{lease}"').text)
    assert txt["success"] and any("Monthly rent" in item["content"] for item in txt["data"]["segments"])


def test_errors_never_show_the_host_path(env: FilesEnv) -> None:
    host = str(env.sandbox.root)
    for tool, args in [("read", {"path": "a" * 300}), ("metadata", {"path": "/" + "a" * 300}),
                       ("read", {"path": "a" * 300 + "/x.pdf", "locator": "page 1"})]:  # fmt: skip
        obs = env.call(tool, args)
        assert not obs.ok and obs.error and "File name too long" in obs.error, (tool, obs)
        assert host not in obs.text and host not in obs.error
        assert "a" * 300 in obs.error  # the path as the agent gave it


def test_the_terminal_keeps_the_hard_link_rule(env: FilesEnv) -> None:
    assert env.terminal().hard_links == "inside"
    trusting = FilesEnv(env.root, env.store, hard_links="any")
    assert trusting.terminal(budget_chars=10).hard_links == "any"
    assert trusting.terminal(hard_links="inside").hard_links == "inside"
