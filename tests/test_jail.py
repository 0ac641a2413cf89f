"""The real shell: bash in a bubblewrap jail over one profile, with the release's tools on its PATH.

The release's prompts pipe ``list_files`` into grep and jq, run ``python3 -c`` over ``return_txt``
output and write heredocs; these run here and answer exactly what the emulated terminal's tools
answer. Limits stop what runs too long, prints too much or takes too much memory, and the jail goes
on. Skipped where a jail cannot be made, unless ``HIPPOCAMP_REQUIRE_JAIL=1`` (``.ci/run`` sets it).
"""

from __future__ import annotations

import base64
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image

from conftest import make_pdf
from hippocamp.envs import FilesEnv, JailLimits, JailTerminal, Terminal, jail_support, terminal_backend
from hippocamp.store import IndexOptions, Store, index_profile


def _require_jail() -> None:
    why = jail_support()
    if why is None:
        return
    if os.environ.get("HIPPOCAMP_REQUIRE_JAIL") == "1":
        pytest.fail(f"HIPPOCAMP_REQUIRE_JAIL=1 but no jail can be made here: {why}")
    pytest.skip(f"no jail here: {why}")


@pytest.fixture
def profile(tmp_path: Path) -> Path:
    root = tmp_path / "Mira"
    (root / "Docs/Tom & Jerry (2024)").mkdir(parents=True)
    (root / "Pictures").mkdir()
    (root / "notes.txt").write_text("hello world\nDeposit: EUR 2,900\nbye\n", encoding="utf-8")
    (root / "Docs/Tom & Jerry (2024)/plan one.txt").write_text("Dinner at Luca's on Friday\n", encoding="utf-8")
    make_pdf(root / "Docs/contract.pdf", ["Cover page", "Rent: EUR 1,450", "Deposit: EUR 2,900"])
    Image.new("RGB", (4, 3), "red").save(root / "Pictures/photo.png")
    return root


@pytest.fixture
def indexed(profile: Path, tmp_path: Path) -> Iterator[tuple[Path, Store]]:
    store = Store(tmp_path / "store.sqlite", root=profile)
    index_profile(profile, store, IndexOptions(embed=False, workers=1))
    yield profile, store
    store.close()


@pytest.fixture
def jail(indexed: tuple[Path, Store]) -> Iterator[JailTerminal]:
    _require_jail()
    root, store = indexed
    with JailTerminal(root, texts=store.segments_of, budget_chars=2_000_000, limits=JailLimits(timeout=5)) as j:
        yield j


@pytest.fixture
def emulated(indexed: tuple[Path, Store]) -> Iterator[Terminal]:
    root, store = indexed
    with Terminal(root, texts=store.segments_of, budget_chars=2_000_000) as t:
        yield t


def ok(j: JailTerminal, command: str) -> str:
    obs = j.run(command)
    assert obs.ok and obs.error is None, (command, obs)
    return obs.text


# -- the release's tools answer as the emulated terminal's do ------------------------------------------------------
@pytest.mark.parametrize(
    "command",
    [
        "list_files",
        "list_files '*.pdf'",
        "return_txt Docs/contract.pdf",
        "return_txt 'Docs/Tom & Jerry (2024)/plan one.txt'",
        "return_txt /hippocamp/data/notes.txt",
        "return_metadata notes.txt",
        "return_img Docs/contract.pdf --page 2",
        "return_ori notes.txt",
        "return_txt nope.txt",
        "return_txt Docs/contract.pdf --page 2",
        "hhelp",
        "txt notes.txt",
    ],
)
def test_tools_answer_what_the_emulated_terminal_answers(jail: JailTerminal, emulated: Terminal, command: str) -> None:
    mine, theirs = jail.run(command), emulated.run(command)
    assert mine.text == theirs.text, command
    assert mine.ok is theirs.ok
    json.loads(mine.text)  # one JSON object, whole


def test_release_prompt_commands_run(jail: JailTerminal) -> None:
    # one JSON line: grep matches all of it (why the release's prompt says to parse .data first)
    assert ok(jail, "list_files | grep -ic pdf") == "1"
    assert ok(jail, "list_files | grep -o '[^\"]*[.]pdf'") == "Docs/contract.pdf"
    assert ok(jail, "list_files | jq -r '.data[]' | grep -i notes") == "notes.txt"
    assert ok(jail, "list_files '*.txt' | jq '.count'") == "2"
    program = "import json,sys; d=json.load(sys.stdin); print(d['data']['segments'][2]['content'])"
    third = ok(jail, f'return_txt Docs/contract.pdf | python3 -c "{program}"')
    assert third == "Deposit: EUR 2,900"
    assert ok(jail, "return_metadata notes.txt | jq -r '.metadata.file_type + \" \" + .metadata.file_modality'") == (
        "txt text"
    )
    script = "cat <<'EOF' > /tmp/pages.py\nimport json, sys\nd = json.load(sys.stdin)\n" \
             "print(len(d['data']['segments']), d['data']['file_info']['file_name'])\nEOF\n" \
             "return_txt Docs/contract.pdf | python3 /tmp/pages.py"  # fmt: skip
    assert ok(jail, script) == "3 contract.pdf"
    assert ok(jail, "python3 /tmp/pages.py < /dev/null 2>&1 | tail -1").startswith("json.decoder.JSONDecodeError")
    assert ok(jail, "grep -c EUR notes.txt; sed -n 2p notes.txt; awk 'NR==1 {print $2}' notes.txt") == (
        "1\nDeposit: EUR 2,900\nworld"
    )
    assert ok(jail, "cd 'Docs/Tom & Jerry (2024)' && cat 'plan one.txt'") == "Dinner at Luca's on Friday"


def test_outputs_land_where_the_tools_say(jail: JailTerminal) -> None:
    page = json.loads(ok(jail, 'return_img Docs/contract.pdf "/hippocamp/output/p2.png" --page 2'))
    assert page["image_path"] == "/hippocamp/output/p2.png" and page["page_count"] == 3
    assert ok(jail, "python3 -c \"import sys; d=open('/hippocamp/output/p2.png','rb').read(); print(d[:4])\"") == (
        "b'\\x89PNG'"
    )
    listing = ok(jail, "ls -1 /hippocamp/output")
    assert listing == "p2.png"
    ori = json.loads(ok(jail, "return_ori notes.txt /tmp/copy.txt"))
    assert ori["file_path"] == "/tmp/copy.txt" and base64.b64decode(ori["file_b64"]).startswith(b"hello")
    assert ok(jail, "cat /tmp/copy.txt | head -1") == "hello world"
    # the images of a return_img at the end of the line ride along for the agent
    obs = jail.run("return_img Pictures/photo.png")
    assert len(obs.data) == 1 and obs.data[0]["mime"] == "image/png"
    assert obs.data[0]["image_b64"] == json.loads(obs.text)["image_b64"]


def test_working_directory_and_cd(jail: JailTerminal) -> None:
    assert ok(jail, "pwd") == "/hippocamp/data"
    ok(jail, "cd Docs")
    assert ok(jail, "pwd; ls") == "/hippocamp/data/Docs\nTom & Jerry (2024)\ncontract.pdf"
    assert json.loads(ok(jail, "return_txt contract.pdf"))["data"]["file_info"]["file_path"] == "Docs/contract.pdf"
    obs = jail.run("cd /etc")
    assert not obs.ok and "restricted to /hippocamp/data" in obs.text
    assert ok(jail, "pwd") == "/hippocamp/data"
    assert ok(jail, "id -un") == "hippocamp_user"


def test_flags_persist_across_commands(jail: JailTerminal) -> None:
    assert json.loads(ok(jail, "set_flags 0 1"))["data"] == {"return_txt": 0, "return_img": 1}
    off = json.loads(jail.run("return_txt notes.txt").text)
    assert off["success"] is False and "disabled" in off["error"]


# -- limits ----------------------------------------------------------------------------------------------------------
def test_limits_stop_commands_and_the_jail_goes_on(indexed: tuple[Path, Store]) -> None:
    _require_jail()
    root, store = indexed
    limits = JailLimits(timeout=2, cpu_seconds=1, memory_bytes=256 * 1024**2, file_bytes=1024**2,
                        tmp_bytes=4 * 1024**2, output_bytes=100_000)  # fmt: skip
    with JailTerminal(root, texts=store.segments_of, limits=limits, budget_chars=500) as j:
        began = time.monotonic()
        slow = j.run("sleep 30")
        assert time.monotonic() - began < 10 and not slow.ok and "limit" in slow.text
        flood = j.run("yes")
        assert not flood.ok and flood.truncated and "output went past" in flood.text
        assert len(flood.text) < 1000  # the agent's cap on top
        spin = j.run("python3 -c 'while True: pass'")
        assert not spin.ok  # SIGXCPU after one CPU second, or the wall time
        memory = j.run("python3 -c 'x = bytearray(1024**3)'")
        assert not memory.ok and "MemoryError" in memory.text
        big = j.run("head -c 5000000 /dev/zero > /tmp/big; ls -l /tmp/big | awk '{print $5}'")
        assert "File size limit exceeded" in big.text or "1048576" in big.text
        assert ok(j, "echo still here") == "still here"
        assert j.sandbox.escapes >= 4  # each stop counted


def test_a_killed_supervisor_is_replaced(indexed: tuple[Path, Store]) -> None:
    _require_jail()
    root, store = indexed
    with JailTerminal(root, texts=store.segments_of, limits=JailLimits(timeout=3)) as j:
        ok(j, "echo keep > /tmp/x")
        obs = j.run("kill -9 -1")
        assert obs.escaped
        after = j.run("cat /tmp/x 2>&1; echo alive")
        assert after.text.endswith("alive") and j.restarts == 1
        assert "fresh jail" in obs.text + after.text


def test_secrets_and_the_host_stay_outside(indexed: tuple[Path, Store], monkeypatch: pytest.MonkeyPatch) -> None:
    _require_jail()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")
    root, store = indexed
    with JailTerminal(root, texts=store.segments_of) as j:
        seen = j.run("env; cat /proc/1/environ /proc/self/environ 2>&1; ls /; ls /hippocamp").text
        assert "sk-test" not in seen and "OPENAI" not in seen
        assert ok(j, "ls /hippocamp") == "api\ndata\noutput"
        assert str(root) not in seen
        assert j.describe()["backend"] == "jail"


def test_files_env_opens_the_backend_it_is_told(indexed: tuple[Path, Store]) -> None:
    root, store = indexed
    env = FilesEnv(root, store, terminal="emulated")
    with env.terminal() as t:
        assert t.backend == "emulated"
    assert terminal_backend("emulated") == "emulated"
    with pytest.raises(ValueError, match="choose auto, jail or emulated"):
        terminal_backend("docker")
    if jail_support() is not None:
        assert terminal_backend("auto") == "emulated"
        with pytest.raises(ValueError, match="terminal backend 'jail'"):
            terminal_backend("jail")
        return
    with FilesEnv(root, store, terminal="auto").terminal() as t:
        assert t.backend == "jail"
        assert json.loads(t.run("return_txt notes.txt").text)["data"]["segments"][0]["content"].startswith("hello")
    with env.terminal(backend="jail") as t:
        assert t.backend == "jail"
