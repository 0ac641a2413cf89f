"""The jail's supervisor: runs inside the bubblewrap jail with the system's python3 (standard library only).

It reads one JSON request per line on stdin (``{"cmd", "cwd", "timeout", "max_output"}``), runs the
command line with bash under the jail's per-process limits, and answers one JSON line on stdout:
``{"output", "exit", "signal", "cwd", "timed_out", "truncated", "total"}``. Output (stdout and stderr
together, as a terminal shows them) is read up to ``max_output`` bytes; past it, or past the timeout,
every process of the jail but this one is killed. After every command the stragglers a command left
behind (``sleep 100 &``) are killed too, so nothing runs between commands.

The limits come from ``/hippocamp/api/limits.json``. This file is hippocamp's own code; it is copied
into the jail and never imported by hippocamp.
"""

import contextlib
import json
import os
import resource
import select
import signal
import subprocess
import sys
import time

DATA = "/hippocamp/data"
with open("/hippocamp/api/limits.json", encoding="utf-8") as _file:
    LIMITS = json.load(_file)

#: bash runs the command line in the last working directory; `cd` stays inside the profile (as the
#: release's shell does) and the working directory is reported on fd $HC_FD when the line ends
RUNNER = r"""
cd() {
  builtin cd "$@" || return
  case "$PWD/" in
    /hippocamp/data/*) ;;
    *) builtin cd /hippocamp/data; echo "cd: restricted to /hippocamp/data" >&2; return 1 ;;
  esac
}
builtin cd -- "$HC_CWD" 2>/dev/null || builtin cd /hippocamp/data
__hc_fd=$HC_FD __hc_cmd=$HC_CMD
unset HC_FD HC_CMD HC_CWD OLDPWD
trap 'pwd >&"$__hc_fd"' EXIT
eval "$__hc_cmd"
"""


def _limit() -> None:
    for name, value in (
        ("RLIMIT_CPU", LIMITS["cpu_seconds"]),
        ("RLIMIT_AS", LIMITS["memory_bytes"]),
        ("RLIMIT_FSIZE", LIMITS["file_bytes"]),
        ("RLIMIT_NOFILE", LIMITS["open_files"]),
        ("RLIMIT_CORE", 0),
        ("RLIMIT_NPROC", LIMITS.get("nproc")),
    ):
        if value is not None:
            resource.setrlimit(getattr(resource, name), (value, value))


def _kill_others() -> None:
    """Every process of the jail but init and this one: the command, its children, stragglers."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(-1, signal.SIGKILL)


def _run(req: dict) -> dict:
    cmd, cwd = str(req["cmd"]), str(req.get("cwd") or DATA)
    timeout, cap = float(req["timeout"]), int(req["max_output"])
    out_r, out_w = os.pipe()
    cwd_r, cwd_w = os.pipe()
    env = dict(os.environ, HC_CMD=cmd, HC_CWD=cwd, HC_FD=str(cwd_w))
    began = time.monotonic()
    try:
        proc = subprocess.Popen(
            ["/bin/bash", "--noprofile", "--norc", "-c", RUNNER],
            stdin=subprocess.DEVNULL,
            stdout=out_w,
            stderr=out_w,
            pass_fds=(cwd_w,),
            preexec_fn=_limit,
            env=env,
            start_new_session=True,
        )
    except OSError as exc:
        for fd in (out_r, out_w, cwd_r, cwd_w):
            os.close(fd)
        return {
            "output": f"cannot start bash: {exc}\n",
            "exit": 126,
            "signal": None,
            "cwd": cwd,
            "timed_out": False,
            "truncated": False,
            "total": 0,
        }
    os.close(out_w)
    os.close(cwd_w)
    chunks, kept, total = [], 0, 0
    timed_out = truncated = False
    while True:
        left = timeout - (time.monotonic() - began)
        if left <= 0:
            timed_out = True
            break
        ready, _, _ = select.select([out_r], [], [], min(left, 0.5))
        if not ready:
            continue
        data = os.read(out_r, 65536)
        if not data:
            break
        total += len(data)
        if kept < cap:
            part = data[: cap - kept]
            chunks.append(part)
            kept += len(part)
        if total > cap:
            truncated = True
            break
    if timed_out or truncated:
        _kill_others()
    try:
        status = proc.wait(timeout=max(0.1, timeout - (time.monotonic() - began)))
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_others()
        status = proc.wait()
    _kill_others()  # what the command left running in the background
    os.close(out_r)
    where = cwd
    ready, _, _ = select.select([cwd_r], [], [], 0)
    if ready:
        text = os.read(cwd_r, 4096).decode("utf-8", "replace").strip().splitlines()
        if text and (text[-1] == DATA or text[-1].startswith(DATA + "/")):
            where = text[-1]
    os.close(cwd_r)
    sig = None
    if status < 0:
        sig = signal.Signals(-status).name
        status = 128 - status
    return {
        "output": b"".join(chunks).decode("utf-8", "replace"),
        "exit": status,
        "signal": sig,
        "cwd": where,
        "timed_out": timed_out,
        "truncated": truncated,
        "total": total,
    }


def main() -> None:
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.stdout.write(json.dumps({"ready": True}) + "\n")
    sys.stdout.flush()
    for line in sys.stdin:
        try:
            reply = _run(json.loads(line))
        except Exception as exc:  # a broken request or a failure here: answered, never a dead jail
            reply = {
                "output": f"jail supervisor: {type(exc).__name__}: {exc}\n",
                "exit": 125,
                "signal": None,
                "cwd": DATA,
                "timed_out": False,
                "truncated": False,
                "total": 0,
            }
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
