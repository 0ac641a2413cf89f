"""A real shell for the HippoCamp terminal: bash in a bubblewrap jail, the release's tools on its ``PATH``.

Why bubblewrap: it is an ordinary Debian package (``bubblewrap``), needs no daemon and no root (it
uses unprivileged user namespaces), and builds exactly the jail a terminal agent needs from mount
and namespace options; Docker needs a daemon, and firejail or nsjail bring far more policy than this.

The jail of one episode (`JailTerminal`), started once and used for every command line:

- **file system**: the one profile read-only at ``/hippocamp/data`` (the release's path; commands
  start there and ``cd`` stays inside it); ``/usr`` read-only without ``/usr/local``, the
  ``/bin``/``/lib`` links, ``/etc/alternatives`` and a three-line ``/etc/passwd``; a private ``/proc``
  and a minimal ``/dev``; ``/tmp`` and ``/hippocamp/output`` private, writable and size-capped
  (tmpfs); the tools at ``/hippocamp/api`` read-only. Nothing else of the host: no home, no other
  profile, no store, no gold file. A file of the profile with hard links outside it is masked by an
  empty file; a symlink out points at the jail's own tree, where the host is not.
- **namespaces**: user, PID, network (only a loopback nobody listens on), IPC, UTS and cgroup;
  all capabilities dropped; a new session (no terminal injection); the jail dies with hippocamp.
- **environment**: cleared; ``PATH``, ``HOME=/tmp``, ``LANG`` and the release's ``HIPPOCAMP_*`` only,
  so no secret of the host is in any process of the jail.
- **limits** (`JailLimits`): per command wall time, output bytes; per process CPU seconds, address
  space, file size and open files (rlimits); processes by a ``pids`` cgroup when one can be made,
  else by ``RLIMIT_NPROC`` when hippocamp does not run as root (root is exempt from it), else only
  by the wall time (`JailTerminal.describe` says which, for the run's manifest).

Inside, ``/hippocamp/api/supervisor.py`` (the jail's python3) runs each command line with bash and
kills every process of it when it ends, times out or prints too much. The tools are one script
(``jail_files/tool.py``) that asks the tool broker, a thread of this process serving a Unix socket,
which answers with the emulated terminal's `ReleaseTools` over the profile and the store: the same
JSON the emulated terminal prints, byte for byte.

Every command line is checked by `hippocamp.envs.escapes` and by what happened (a limit hit, a refusal
from the kernel); an attempt is counted in ``sandbox.escapes`` and flagged on the observation. A
supervisor that dies (``kill -9 -1``) or stops answering is replaced by a fresh jail (``/tmp`` is
lost, and the observation says so).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from functools import lru_cache
from importlib.resources import files as package_files
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from hippocamp.envs.base import Observation
from hippocamp.envs.bounded import shown
from hippocamp.envs.escapes import contained_by, escape_attempts
from hippocamp.envs.release_tools import ALIASES, DATA_DIR, HELP, PageImageFn, TextsFn, images_of
from hippocamp.envs.sandbox import Sandbox

__all__ = ["JailError", "JailLimits", "JailTerminal", "jail_support"]

_API = "/hippocamp/api"
_PYTHON = "/usr/bin/python3"
#: the jail's user, as the release's image names it
_USER = "hippocamp_user"
_UID = 1000


class JailError(RuntimeError):
    """A jail could not be made or stopped working; says why."""


@dataclass(frozen=True)
class JailLimits:
    """What one command line may use in the jail."""

    #: wall-clock seconds of one command line
    timeout: float = 30.0
    #: CPU seconds of one process
    cpu_seconds: int = 20
    #: address space of one process
    memory_bytes: int = 2 * 1024**3
    #: the largest file a process may write
    file_bytes: int = 64 * 1024**2
    #: size of ``/tmp`` and of ``/hippocamp/output`` each
    tmp_bytes: int = 256 * 1024**2
    #: processes of the jail at once
    processes: int = 128
    #: open files of one process
    open_files: int = 256
    #: bytes of output kept from one command line (the command is stopped past it)
    output_bytes: int = 4 * 1024**2


@lru_cache(maxsize=1)
def jail_support() -> str | None:
    """None when a jail can be made here, else why not (no bwrap, no user namespaces, no python3)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bubblewrap (bwrap) is not installed (Debian: apt-get install bubblewrap)"
    if not Path(_PYTHON).is_file():
        return f"{_PYTHON} is missing (the jail's tools run on the system python3; apt-get install python3)"
    probe = [bwrap, *_system_mounts(), "--unshare-all", "--die-with-parent", "/bin/true"]
    try:
        done = subprocess.run(probe, capture_output=True, timeout=20, env={}, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap could not run: {exc}"
    if done.returncode != 0:
        why = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return f"bwrap cannot make a jail here: {why[-1] if why else f'exit {done.returncode}'}"
    return None


def _system_mounts() -> list[str]:
    """The minimal read-only system: /usr (without /usr/local) and the merged-/usr links."""
    args = ["--ro-bind", "/usr", "/usr", "--tmpfs", "/usr/local"]
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        top = Path("/") / name
        if top.is_symlink():
            args += ["--symlink", os.readlink(top), f"/{name}"]
        elif top.is_dir():
            args += ["--ro-bind", str(top), f"/{name}"]
    if Path("/etc/alternatives").is_dir():
        args += ["--ro-bind", "/etc/alternatives", "/etc/alternatives"]
    return args


class _Cgroups:
    """A ``pids`` (and ``memory``) cgroup for one jail, when this machine lets us make one."""

    def __init__(self, name: str, limits: JailLimits) -> None:
        self.dirs: list[Path] = []
        self.procs: list[Path] = []
        self.kinds: list[str] = []
        for controller, file, value in (
            ("pids", "pids.max", str(limits.processes)),
            ("memory", "memory.limit_in_bytes", str(limits.memory_bytes * 2)),
        ):
            folder = self._make(controller, name)
            if folder is None:
                continue
            try:
                (folder / file).write_text(value)
            except OSError:
                folder.rmdir()
                continue
            self.dirs.append(folder)
            self.procs.append(folder / "cgroup.procs")
            self.kinds.append(controller)

    @staticmethod
    def _make(controller: str, name: str) -> Path | None:
        base = Path("/sys/fs/cgroup") / controller
        if not base.is_dir():
            return None
        own = ""
        try:
            for line in Path("/proc/self/cgroup").read_text().splitlines():
                _id, kinds, path = line.split(":", 2)
                if controller in kinds.split(","):
                    own = path.lstrip("/")
        except (OSError, ValueError):
            return None
        folder = base / own / name
        try:
            folder.mkdir()
        except OSError:
            return None
        return folder

    def close(self) -> None:
        for folder in self.dirs:
            for _ in range(20):
                try:
                    folder.rmdir()
                    break
                except OSError:  # its processes are still exiting
                    time.sleep(0.05)


class _Broker:
    """The release tools outside the jail: one Unix socket, one request per connection, answered by an
    emulated `Terminal` over the same profile and store."""

    def __init__(self, path: Path, terminal: Any, timeout: float) -> None:
        self.terminal = terminal
        self.timeout = timeout
        self.lock = threading.Lock()
        self.calls = 0
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(str(path))
        os.chmod(path, 0o777)
        self.server.listen(16)
        self.thread = threading.Thread(target=self._serve, name="hippocamp-jail-broker", daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return  # closed
            with conn:
                try:
                    conn.settimeout(self.timeout)
                    reply = self._answer(self._request(conn))
                except Exception as exc:  # a bad request: that client's problem only
                    reply = (1, [], json.dumps({"success": False, "error": str(exc)}))
                with contextlib.suppress(OSError):
                    conn.sendall(_encode(*reply))

    @staticmethod
    def _request(conn: socket.socket) -> list[str]:
        chunks, size = [], 0
        while True:
            data = conn.recv(65536)
            if not data:
                break
            size += len(data)
            if size > 1024 * 1024:
                raise ValueError("the request is over 1 MiB")
            chunks.append(data)
        parts = [os.fsdecode(p) for p in b"".join(chunks).split(b"\0")]
        if len(parts) < 2:
            raise ValueError("a request is the working directory, the tool and its arguments")
        return parts

    def _answer(self, parts: list[str]) -> tuple[int, list[tuple[str, bytes]], str]:
        cwd, argv = parts[0], parts[1:]
        if argv[0] not in HELP and argv[0] not in ALIASES:
            raise ValueError(f"{argv[0]}: not a release tool")
        with self.lock:
            self.calls += 1
            term = self.terminal
            rel = PurePosixPath(cwd).relative_to(DATA_DIR).as_posix() if cwd.startswith(DATA_DIR) else "."
            try:
                term.sandbox.chdir("/" + rel if rel != "." else "/")
            except (OSError, ValueError):
                term.sandbox.chdir("/")
            obs = term.run(shlex.join(argv))
            return (0 if obs.ok else 1), list(term.emitted), obs.text

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.server.shutdown(socket.SHUT_RDWR)
        self.server.close()


class JailTerminal:
    """A real bash over one profile in a bubblewrap jail (see the module); `run` one command line at a
    time, like the emulated `Terminal`. Raises `JailError` when no jail can be made here."""

    backend: Literal["jail"] = "jail"

    def __init__(
        self,
        root: Path | str,
        *,
        texts: TextsFn | None = None,
        page_image: PageImageFn | None = None,
        budget_chars: int = 8000,
        limits: JailLimits | None = None,
        hard_links: Literal["inside", "any"] = "inside",
        user: str | None = None,
        image_bytes: bool = True,
    ) -> None:
        why = jail_support()
        if why is not None:
            raise JailError(why)
        from hippocamp.envs.terminal import Terminal

        self.sandbox = Sandbox(root, mount=DATA_DIR)
        self.root = self.sandbox.root
        self.budget_chars = budget_chars
        self.limits = limits or JailLimits()
        self.hard_links = hard_links
        self.deadline: float | None = None
        self.cwd = DATA_DIR
        #: (command line, why it counted) for every attempt refused or contained
        self.attempts: list[tuple[str, list[str]]] = []
        #: how many times the jail had to be replaced
        self.restarts = 0
        #: seconds the jail took to start
        self.startup_seconds = 0.0
        self._tools = Terminal(
            self.root, texts=texts, page_image=page_image, budget_chars=self.limits.output_bytes,
            hard_links=hard_links, user=user, image_bytes=True,
        )  # fmt: skip
        self._image_bytes = image_bytes
        self._dir = Path(tempfile.mkdtemp(prefix="hippocamp-jail-"))
        self._api = self._dir / "api"
        self._masked = self._outside_links() if hard_links == "inside" else []
        self._links_out = self._symlinks_out()
        self._write_api()
        self._broker = _Broker(self._api / "broker.sock", self._tools, self.limits.timeout)
        self._cgroups: _Cgroups | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._closed = False
        try:
            self._start()
        except BaseException:
            self.close()
            raise

    # -- setting up --------------------------------------------------------------------------------
    def _write_api(self) -> None:
        bin_dir = self._api / "bin"
        bin_dir.mkdir(parents=True)
        source = package_files("hippocamp.envs") / "jail_files"
        (self._api / "supervisor.py").write_text((source / "supervisor.py").read_text(encoding="utf-8"))
        tool = self._api / "tool.py"
        tool.write_text(f"#!{_PYTHON} -IS\n" + (source / "tool.py").read_text(encoding="utf-8"))
        tool.chmod(0o755)
        for name in [*HELP, *ALIASES]:
            (bin_dir / name).symlink_to("../tool.py")
        nproc = None
        if os.geteuid() != 0:  # RLIMIT_NPROC counts every process of this user: allow ours on top
            nproc = _processes_of(os.geteuid()) + self.limits.processes
        limits = {**asdict(self.limits), "nproc": nproc}
        (self._api / "limits.json").write_text(json.dumps(limits))
        etc = self._dir / "etc"
        etc.mkdir()
        (etc / "passwd").write_text(f"root:x:0:0::/:/bin/false\n{_USER}:x:{_UID}:{_UID}::/tmp:/bin/bash\n"
                                    "nobody:x:65534:65534::/:/bin/false\n")  # fmt: skip
        (etc / "group").write_text(f"root:x:0:\n{_USER}:x:{_UID}:\nnogroup:x:65534:\n")
        (etc / "hostname").write_text("hippocamp\n")
        for path in [self._dir, self._api, bin_dir, etc]:
            path.chmod(0o755)

    def _outside_links(self) -> list[str]:
        """Profile files whose inode has links outside the profile (masked in the jail)."""
        counts: dict[int, int] = {}
        files: list[tuple[str, int, int]] = []
        for top, _dirs, names in self.sandbox.walk(self.root):
            for name in names:
                path = top / name
                try:
                    st = path.lstat()
                except OSError:
                    continue
                if path.is_symlink() or not st.st_nlink > 1 or not path.is_file():
                    continue
                counts[st.st_ino] = counts.get(st.st_ino, 0) + 1
                files.append((path.relative_to(self.root).as_posix(), st.st_ino, st.st_nlink))
        return [rel for rel, ino, links in files if counts[ino] < links]

    def _symlinks_out(self) -> list[str]:
        """Profile symlinks whose target leaves the profile (dangling in the jail, where the host is not)."""
        out = []
        for top, dirs, names in self.sandbox.walk(self.root):
            for name in [*dirs, *names]:
                path = top / name
                if self.sandbox.is_escape_link(path):
                    out.append(path.relative_to(self.root).as_posix())
        return out

    def _names_a_way_out(self, command: str) -> list[str]:
        """Reasons when a command names a masked hard link or a symlink out of the profile."""
        reasons = []
        for rel, why in [*((r, "a file hard-linked from outside (masked)") for r in self._masked),
                         *((r, "a symlink out of the profile") for r in self._links_out)]:  # fmt: skip
            name = PurePosixPath(rel).name
            if rel in command or re.search(rf"(^|[\s/'\"]){re.escape(name)}($|[\s/'\";|&)])", command):
                reasons.append(f"names {why}: {rel}")
        return reasons

    def _args(self) -> list[str]:
        lim = self.limits
        args = [
            shutil.which("bwrap") or "bwrap",
            *_system_mounts(),
            "--ro-bind", str(self._dir / "etc/passwd"), "/etc/passwd",
            "--ro-bind", str(self._dir / "etc/group"), "/etc/group",
            "--ro-bind", str(self._dir / "etc/hostname"), "/etc/hostname",
            "--proc", "/proc",
            "--dev", "/dev",
            "--size", str(lim.tmp_bytes), "--tmpfs", "/tmp",
            "--dir", "/hippocamp",
            "--ro-bind", str(self.root), DATA_DIR,
            "--size", str(lim.tmp_bytes), "--tmpfs", "/hippocamp/output",
            "--ro-bind", str(self._api), _API,
        ]  # fmt: skip
        for rel in self._masked:
            args += ["--ro-bind", "/dev/null", f"{DATA_DIR}/{rel}"]
        args += [
            "--unshare-all", "--uid", str(_UID), "--gid", str(_UID), "--hostname", "hippocamp",
            "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--chdir", DATA_DIR, "--clearenv",
            "--setenv", "PATH", f"{_API}/bin:/usr/bin:/bin",
            "--setenv", "HOME", "/tmp",
            "--setenv", "USER", _USER,
            "--setenv", "LANG", "C.UTF-8",
            "--setenv", "HIPPOCAMP_DATA_DIR", DATA_DIR,
            "--setenv", "HIPPOCAMP_OUTPUT_DIR", "/hippocamp/output",
            "--setenv", "PYTHONDONTWRITEBYTECODE", "1",
            _PYTHON, "-I", f"{_API}/supervisor.py",
        ]  # fmt: skip
        return args

    def _start(self) -> None:
        began = time.perf_counter()
        if self._cgroups is not None:
            self._cgroups.close()
        self._cgroups = _Cgroups(f"hippocamp-jail-{os.getpid()}-{id(self):x}-{self.restarts}", self.limits)
        enter = " ".join(f'echo $$ > "{p}" &&' for p in self._cgroups.procs)
        wrapper = ["/bin/sh", "-c", f'{enter} exec "$@"', "hippocamp-jail", *self._args()]
        self._proc = subprocess.Popen(
            wrapper, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={},
            start_new_session=True,
        )  # fmt: skip
        line = self._readline(20.0)
        if line is None or not line.get("ready"):
            err = self._stderr()
            self._kill()
            raise JailError(f"the jail did not start: {err or 'no answer from its supervisor'}")
        self.cwd = DATA_DIR
        self.startup_seconds = time.perf_counter() - began

    def _readline(self, seconds: float) -> dict[str, Any] | None:
        """One JSON line from the supervisor within ``seconds``, or None (it died or hangs)."""
        proc = self._proc
        if proc is None or proc.stdout is None:
            return None
        import selectors

        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            if not sel.select(timeout=max(0.0, seconds)):
                return None
        raw = proc.stdout.readline()
        if not raw:
            return None
        try:
            value = json.loads(raw)
        except ValueError:
            return None
        return value if isinstance(value, dict) else None

    def _stderr(self) -> str:
        proc = self._proc
        if proc is None or proc.stderr is None or proc.poll() is None:
            return ""
        return proc.stderr.read(4000).decode("utf-8", "replace").strip()

    def _kill(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, 9)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()

    # -- running -----------------------------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        """What contains this jail, for the run's manifest."""
        cgroups = self._cgroups.kinds if self._cgroups is not None else []
        if "pids" in cgroups:
            processes = f"pids cgroup (max {self.limits.processes})"
        elif os.geteuid() != 0:
            processes = f"RLIMIT_NPROC (this user's processes + {self.limits.processes})"
        else:
            processes = "wall time only (root: RLIMIT_NPROC does not apply and no pids cgroup could be made)"
        return {"backend": "jail", "engine": "bubblewrap", "limits": asdict(self.limits), "processes": processes,
                "cgroups": cgroups, "masked_hard_links": len(self._masked)}  # fmt: skip

    def run(self, command: str, *, timeout: float | None = None) -> Observation:
        """Run one command line in the jail and return what the agent sees; it stops after
        `JailLimits.timeout` seconds (or ``timeout``, or what is left before `deadline`)."""
        if self._closed:
            raise JailError("this jail is closed")
        seconds = self.limits.timeout
        if timeout is not None:
            seconds = min(seconds, timeout)
        if self.deadline is not None:
            seconds = min(seconds, self.deadline - time.monotonic())
        seconds = max(seconds, 0.05)
        notes: list[str] = []
        if self._proc is None or self._proc.poll() is not None:
            notes.append(self._restart("the jail had stopped"))
        request = {"cmd": command, "cwd": self.cwd, "timeout": seconds, "max_output": self.limits.output_bytes}
        reply = None
        try:
            assert self._proc is not None and self._proc.stdin is not None
            self._proc.stdin.write(json.dumps(request).encode("utf-8") + b"\n")
            self._proc.stdin.flush()
            reply = self._readline(seconds + 10.0)
        except (OSError, ValueError):
            reply = None
        if reply is None:
            notes.append(self._restart("the jail stopped answering during this command"))
            reply = {"output": "", "exit": 137, "signal": "SIGKILL", "cwd": DATA_DIR, "timed_out": False,
                     "truncated": False, "total": 0}  # fmt: skip
        before, self.cwd = self.cwd, str(reply.get("cwd") or DATA_DIR)
        return self._observation(command, reply, seconds, notes, before)

    def _restart(self, why: str) -> str:
        self._kill()
        self.restarts += 1
        self._start()
        return f"[{why}: a fresh jail was started; /tmp and /hippocamp/output are empty again]"

    def _observation(
        self, command: str, reply: dict[str, Any], seconds: float, notes: list[str], cwd: str
    ) -> Observation:
        output = str(reply.get("output", ""))
        images = images_of(output) if "return_img" in command or "img " in command else []
        if images and not self._image_bytes:
            output = _without_bytes(output)
        status = int(reply.get("exit", 1))
        if reply.get("timed_out"):
            notes.append(f"[stopped: the command line ran past its {seconds:.0f} s limit]")
        if reply.get("truncated"):
            notes.append(f"[stopped: the output went past {self.limits.output_bytes} bytes]")
        if reply.get("signal") and not reply.get("timed_out") and not reply.get("truncated"):
            notes.append(f"[killed by {reply['signal']}: a limit of the jail (CPU time, memory or file size)]")
        text = output[:-1] if output.endswith("\n") else output
        length = len(text)
        truncated = length > self.budget_chars
        if truncated:
            text = text[: self.budget_chars] + f"\n[... truncated {length - self.budget_chars} chars]"
        if notes:
            text = (text + "\n" if text else "") + "\n".join(notes)
        reasons = escape_attempts(command, cwd) + self._names_a_way_out(command) + contained_by(reply, output)
        if reasons:
            self.sandbox.escapes += 1
            self.attempts.append((command, reasons))
        failed = status != 0 or bool(notes)
        error = None
        if failed:
            error = "\n".join(notes) if notes else f"exit status {status}"
        return Observation(
            text=shown(text),
            ok=not failed,
            error=shown(error) if error else None,
            truncated=truncated or bool(reply.get("truncated")),
            escaped=bool(reasons),
            data=images,
        )

    # -- the end -----------------------------------------------------------------------------------
    def close(self) -> None:
        """Stop the jail, the broker and the emulated tools, and remove the jail's folder."""
        if self._closed:
            return
        self._closed = True
        self._kill()
        if self._cgroups is not None:
            self._cgroups.close()
        broker = getattr(self, "_broker", None)
        if broker is not None:
            broker.close()
        self._tools.close()
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> JailTerminal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # interpreter shutdown: nothing more to do
            self.close()


def _encode(status: int, files: list[tuple[str, bytes]], stdout: str) -> bytes:
    """The broker's reply (see ``jail_files/tool.py``): status and file count, the files, the output."""
    out = [f"{status} {len(files)}\n".encode()]
    for path, data in files:
        name = os.fsencode(path)
        out += [f"{len(name)} {len(data)}\n".encode(), name, data]
    out.append(stdout.encode("utf-8", "surrogateescape"))
    return b"".join(out)


def _processes_of(uid: int) -> int:
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    count += 1
            except OSError:
                continue
    return count


def _without_bytes(output: str) -> str:
    """A ``return_img`` answer without its base64 (for a model that does not take images)."""
    try:
        payload = json.loads(output)
    except ValueError:
        return output
    if isinstance(payload, dict):
        payload["image_b64"] = None
        payload["image_b64_list"] = []
        return json.dumps(payload, ensure_ascii=False, separators=(",", ":")) + "\n"
    return output
