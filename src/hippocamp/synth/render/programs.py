"""The programs the media renderers run (espeak-ng, ffmpeg): found by name, run with a timeout, and
the ffmpeg flags that make their output bit-exact (one thread, no metadata).
"""

from __future__ import annotations

import shutil
import subprocess

__all__ = ["AUDIO_BITRATE", "BITEXACT", "ProgramMissingError", "find_program", "run_program"]

#: bit rate of every encoded sound track
AUDIO_BITRATE = "64k"
#: ffmpeg flags for output that is the same, bit for bit, on every run
BITEXACT = ["-fflags", "+bitexact", "-flags:a", "+bitexact", "-map_metadata", "-1", "-threads", "1"]
_TIMEOUT = 600
_INSTALL = {"espeak-ng": "apt-get install espeak-ng", "ffmpeg": "apt-get install ffmpeg"}


class ProgramMissingError(RuntimeError):
    """A program a renderer needs (espeak-ng, ffmpeg) is not installed."""


def find_program(name: str, purpose: str) -> str:
    exe = shutil.which(name)
    if exe is None:
        raise ProgramMissingError(f"{name} is needed to render {purpose} but is not installed ({_INSTALL[name]})")
    return exe


def run_program(command: list[str], what: str, stdin: bytes | None = None) -> bytes:
    try:
        out = subprocess.run(command, input=stdin, capture_output=True, timeout=_TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{what} took longer than {_TIMEOUT} s") from None
    if out.returncode != 0:
        tail = out.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [f"exit code {out.returncode}"]
        raise RuntimeError(f"{what} failed: {tail[0]}")
    return out.stdout
