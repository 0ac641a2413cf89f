"""``external``: any outside agent behind a command or an HTTP endpoint.

The agent receives one JSON object, on stdin (command) or as a POST body (HTTP)::

    {"task": {"id": ..., "question": ..., "instructions": ..., "profile": ...}, "profile_root": "/abs/path",
     "budget": {"max_steps": ..., "max_tokens": ..., "max_seconds": ..., ...}}

and answers with one JSON object (stdout, or the response body)::

    {"answer": "...", "files": ["profile/relative.pdf"], "evidence": [{"file_path": ..., "locator": ...,
     "text": ...}], "usage": {"input_tokens": 0, "output_tokens": 0, "cost_usd": null}, "trace": [...]}

Only ``answer`` is required. Cited paths are made profile-relative; a path outside the profile is
dropped and counted as an escape. The answer may also carry the other two file lists of
`hippocamp.agents.filelists`, kept as given (strings, each once, paths not normalised, as the release
keeps them): ``"touched"`` and ``"retrieved"``; or, for an agent that logs the release's way,
``"agent_file_list"`` (the release's final list, taken as touched) or ``"files_touched"`` and
``"steps"`` (a release trajectory log: touched by the release's rule).

A crash, a non-zero exit, a timeout (the budget's wall clock) or output that is not that JSON ends the
episode with ``stop="error"`` or ``"timeout"`` and the reason. The agent is named
``external:cmd:COMMAND`` or ``external:http://HOST/PATH`` (see ``make_agent``).
"""

from __future__ import annotations

import asyncio
import json
import shlex
import time
from pathlib import Path
from typing import Any, ClassVar

from hippocamp.agents.base import Answer, Budget, EvidenceItem, Meter, Step, Task
from hippocamp.agents.filelists import release_agent_file_list
from hippocamp.models.types import Usage
from hippocamp.registry import register

__all__ = ["ExternalAgent", "given_file_lists"]


@register("agent", "external")
class ExternalAgent:
    """An agent outside hippocamp: a command (``external:cmd:...``) or an HTTP endpoint answering each task."""

    name: ClassVar[str] = "external"
    #: an outside agent's own citations; what it touched or retrieved is kept when its answer says
    file_list: ClassVar[str] = "cited"

    def __init__(self, target: str = "", *, timeout: float | None = None):
        target = target.strip()
        if target.startswith(("http://", "https://")):
            self.url: str | None = target
            self.command: list[str] | None = None
        elif target.startswith("cmd:") or target:
            self.url = None
            self.command = shlex.split(target.removeprefix("cmd:"))
            if not self.command:
                raise ValueError("external agent: empty command")
        else:
            raise ValueError("external agent needs a target: external:cmd:COMMAND or external:http://HOST/PATH")
        self.timeout = timeout

    async def solve(self, task: Task, env: Any, model: Any, budget: Budget) -> Answer:
        meter = Meter(budget)
        payload = {
            "task": {
                "id": task.id,
                "question": task.question,
                "instructions": task.instructions,
                "profile": task.profile,
                **task.meta,
            },
            "profile_root": str(Path(env.root).resolve()),
            "budget": budget.as_dict(),
        }
        limit = self.timeout or budget.max_seconds
        began = time.perf_counter()
        try:
            raw = await asyncio.wait_for(self._call(payload), timeout=limit)
        except TimeoutError:
            return meter.answer("", stop="timeout", error=f"the external agent took longer than {limit:g} s")
        except ExternalError as exc:
            return meter.answer("", stop="error", error=str(exc))
        meter.model_seconds = time.perf_counter() - began
        return self._answer(raw, env, meter)

    async def _call(self, payload: dict[str, Any]) -> str:
        data = json.dumps(payload, ensure_ascii=False).encode()
        if self.command is not None:
            try:
                proc = await asyncio.create_subprocess_exec(
                    *self.command,
                    stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.PIPE,
                )
            except OSError as exc:
                raise ExternalError(f"cannot start {self.command[0]!r}: {exc.strerror or exc}") from None
            try:
                out, err = await proc.communicate(data)
            except asyncio.CancelledError:
                proc.kill()
                await proc.wait()
                raise
            if proc.returncode != 0:
                tail = err.decode(errors="replace").strip()[-400:]
                raise ExternalError(f"{self.command[0]!r} exited with {proc.returncode}: {tail}")
            return out.decode(errors="replace")
        assert self.url is not None
        return await asyncio.to_thread(_post, self.url, data)

    def _answer(self, raw: str, env: Any, meter: Meter) -> Answer:
        try:
            data = json.loads(raw)
        except ValueError as exc:
            return meter.answer(
                "", stop="error", error=f"the external agent's output is not JSON ({exc}): {raw[:200]!r}"
            )
        if not isinstance(data, dict) or not isinstance(data.get("answer"), str):
            return meter.answer("", stop="error", error='the external agent must answer {"answer": "...", ...}')
        escapes = 0
        files: list[str] = []
        for path in data.get("files") or []:
            rel = _inside(env, str(path))
            if rel is None:
                escapes += 1
            elif rel not in files:
                files.append(rel)
        evidence: list[EvidenceItem] = []
        for item in data.get("evidence") or []:
            if not isinstance(item, dict) or "file_path" not in item:
                continue
            rel = _inside(env, str(item["file_path"]))
            if rel is None:
                escapes += 1
                continue
            locator = item.get("locator") if isinstance(item.get("locator"), dict) else None
            evidence.append(EvidenceItem(file_path=rel, locator=locator, text=str(item.get("text", ""))))
        usage = data.get("usage")
        if isinstance(usage, dict):
            meter.usage = Usage.model_validate({k: usage[k] for k in Usage.model_fields if k in usage})
        for step in data.get("trace") or []:
            if isinstance(step, dict):
                meter.trace.append(Step(index=len(meter.trace), kind="note", thought=json.dumps(step)[:2000]))
        answer = meter.answer(data["answer"], files=files, evidence=evidence)
        answer.escapes = escapes
        answer.touched, answer.retrieved = given_file_lists(data)
        return answer


def _strings(value: Any) -> list[str]:
    return list(dict.fromkeys(str(v) for v in value if isinstance(v, str) and v)) if isinstance(value, list) else []


def given_file_lists(data: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(touched, retrieved) as an outside agent's answer gives them: ``touched``, else the release's
    ``agent_file_list``, else the release's rule over ``files_touched`` and ``steps``; ``retrieved``.
    Missing lists are empty."""
    if isinstance(data.get("touched"), list):
        touched = _strings(data["touched"])
    elif isinstance(data.get("agent_file_list"), list):
        touched = _strings(data["agent_file_list"])
    elif "files_touched" in data or "steps" in data:
        touched = release_agent_file_list(data.get("files_touched"), data.get("steps"))
    else:
        touched = []
    return touched, _strings(data.get("retrieved"))


class ExternalError(Exception):
    """The external agent could not be run or answered badly."""


def _post(url: str, data: bytes) -> str:
    """POST JSON with the standard library (no HTTP client dependency); errors become ExternalError."""
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(request) as response:
            return response.read().decode("utf-8", errors="replace")
    except urllib.error.HTTPError as exc:
        body = exc.read().decode("utf-8", errors="replace")[:300]
        raise ExternalError(f"{url} answered HTTP {exc.code}: {body}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise ExternalError(f"{url}: {getattr(exc, 'reason', exc)}") from None


def _inside(env: Any, path: str) -> str | None:
    """``path`` (relative, or absolute under the profile root) as a profile-relative path, else None."""
    root = Path(env.root).resolve()
    candidate = Path(path)
    absolute = candidate if candidate.is_absolute() and str(candidate).startswith(str(root)) else root / path
    try:
        resolved = absolute.resolve()
        return resolved.relative_to(root).as_posix()
    except (ValueError, OSError):
        return None
