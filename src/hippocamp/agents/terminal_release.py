"""``terminal-release``: the HippoCamp release's own terminal-agent loop (its ``agent/chatgpt.py``), run
over the environment's terminal (the bubblewrap jail, where the release's python3/jq/heredoc commands
run as in its Docker image, or the emulated terminal), with its prompt configuration as the argument.

``terminal-release`` is config0 (``return_txt`` and ``return_img`` on), ``terminal-release:N`` or
``terminal-release:configN`` picks config1 (neither), config2 (``return_img`` only) or config3
(``return_txt`` only); a ``:vision`` suffix (``terminal-release:2:vision``, or ``vision=True``) attaches
rendered images to the model's messages, for models that take images (hippocamp's models do not say
whether they do, so it is off unless asked).

The loop, as the release runs it:

- The system prompt is the release's body with the command interfaces of the configuration's tools
  (the wording is ours, `prompts/terminal_release*.md`); the terminal's flags are set to the
  configuration first (``set_flags T I``), and the first user message is ``Question: ...``.
- A step sends one user message and reads one reply (1,024 tokens at most, temperature 0). A reply
  must hold ``<tool>{"name":"terminal","arguments":{"command":...}}</tool>`` or a non-empty
  ``<answer>...</answer>`` (`parse_response`); one that does not is answered with a short format
  correction and asked again, twice at most, within the same step (retries are not steps). When the
  retries run out, the step ends without a command and the next step opens with a longer correction.
- A command is normalised (`normalize_command`: an unquoted path with spaces quoted) and then refused
  without running, with a correction as the next message, when it is ``set_flags``, breaks the
  command policy (`command_policy`) or calls a tool the configuration turns off. A refusal is a step.
- Otherwise it runs; a ``grep`` that finds nothing shows ``(no matches)``; the output is cut to its
  first 12,000 characters (`cap_output`) and sent as ``This is output of terminal: <output>`` (no exit
  code), with a notice after four such empty searches for the same pattern in a row. For a vision
  model a ``return_img`` (or ``return_ori`` of an image) whose JSON carries base64 images sends them
  as OpenAI ``image_url`` data-URL parts after that text, two at most (`image_parts`).
- The episode ends at an answer or after the budget's ``max_steps`` (20 by default, the release's
  ``--max-steps``) without one.

Files: the answer's touched files are the release's ``agent_file_list``: the files of the ``return_*``
commands that ran, sorted, then the file-like arguments of every command the model sent (refused ones
too, as the release logs them), each once (`hippocamp.agents.filelists`); the cited files are those
``return_*`` files that exist. Budgets and failures as for every agent: a model error or an exhausted
budget ends the episode with its trace, each command runs off the event loop under the episode's wall
clock, and escape attempts are counted. Base64 payloads never reach the trace: they are replaced there
by markers like ``<image 12 KB>``.
"""

from __future__ import annotations

import ast
import asyncio
import base64
import binascii
import json
import os
import re
import shlex
import time
import warnings
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, ClassVar, Literal

from hippocamp.agents._cite import model_failure
from hippocamp.agents.base import Answer, Budget, BudgetExceeded, EvidenceItem, Meter, Task, load_prompt
from hippocamp.agents.filelists import release_agent_file_list, returned_files
from hippocamp.registry import register

__all__ = [
    "CONFIGS",
    "Action",
    "FormatError",
    "ReleaseSettings",
    "TerminalReleaseAgent",
    "cap_output",
    "command_policy",
    "image_parts",
    "normalize_command",
    "parse_response",
    "scrub_base64",
    "system_prompt",
]

#: the release's prompt configurations: (return_txt enabled, return_img enabled)
CONFIGS: dict[str, tuple[bool, bool]] = {
    "config0": (True, True),
    "config1": (False, False),
    "config2": (False, True),
    "config3": (True, False),
}
#: the command interfaces of the system prompt, in the release's order; the toggled ones by flag
_TOOL_BLOCKS: tuple[tuple[str, Literal["txt", "img"] | None], ...] = (
    ("return_metadata", None),
    ("return_img", "img"),
    ("return_ori", None),
    ("return_txt", "txt"),
    ("list_files", None),
    ("hhelp", None),
)
#: what the terminal may print for one command: room for rendered images, which are cut to 12,000
#: characters only after their base64 has been read (text output is cut to the same 12,000)
_RAW_OUTPUT_CHARS = 64 * 1024 * 1024

#: where the release mounts the files (the emulated terminal takes paths under it too)
_DATA_DIR = "/hippocamp/data/"
#: the observation's framing, exactly as the release's prompt tells the model
OUTPUT_PREFIX = "This is output of terminal: "
TRUNCATED = "\n...[truncated]"
NO_MATCHES = "(no matches)"

# the corrections the loop sends (the release's content, our wording)
RETRY_FORMAT = (
    "FORMAT ERROR. Reply with the strict tags only, for example:\n"
    '<think>...</think><tool>{"name":"terminal","arguments":{"command":"list_files"}}</tool>'
)
FINAL_FORMAT = (
    "FORMAT ERROR. Your reply must be exactly:\n"
    "<think>...</think> and then either\n"
    '<tool>{"name":"terminal","arguments":{"command":"..."}}</tool>\n'
    "or\n"
    "<answer>...</answer>\n"
    "and nothing else."
)
NO_SET_FLAGS = (
    "set_flags cannot be used here; the tools on offer are chosen by the prompt configuration "
    "(config0, config1, config2 or config3)."
)
DISABLED = "{tool} is turned off in this prompt configuration; it is available only in a configuration that enables it."
GREP_NOTICE = (
    "\nNotice: grep found nothing for the same pattern several times in a row. Stop retrying it: narrow the "
    "candidate files by their names and paths, try variants of the pattern (case-insensitive, other spacing "
    "or punctuation), or read one likely file with return_txt before searching many."
)
POLICY_LIST_FILES = (
    "list_files prints JSON, not one path per line: do not pipe its raw output into head, grep, xargs or "
    "while. Take the paths out of `.data` first (python or jq), then go through them."
)
POLICY_BLOB = (
    "Do not grep terminal JSON or text pasted into echo or a subshell. Search the source instead, e.g. "
    'return_txt "<file_path>" | grep -iE "<pattern>".'
)
POLICY_QUOTING = (
    "The command's shell syntax or quoting looks invalid{detail}. Balance the quotes; for text full of "
    "quotes use cat <<'EOF' ... EOF."
)
POLICY_TXT_PAGE = (
    'return_txt takes no --page. Run return_txt "<file_path>", or return_img "<file_path>" --page N for one page.'
)
POLICY_TXT_ARGS = 'return_txt takes exactly one argument: return_txt "<file_path>".'
POLICY_METADATA_ARGS = 'return_metadata takes exactly one argument: return_metadata "<file_path>".'
POLICY_GREP_PDF = 'Do not grep PDF files directly: run return_txt "<file_path>" and search the text it returns.'

#: image types the release attaches, by file suffix (others are sent as PNG)
IMAGE_MIME = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".bmp": "image/bmp",
    ".webp": "image/webp",
}


@dataclass(frozen=True)
class ReleaseSettings:
    """The release loop's figures (its command-line defaults)."""

    #: ``--max-output-chars``: characters of a command's output the model is shown (the head)
    max_output_chars: int = 12_000
    #: ``--max-completion-tokens``
    max_completion_tokens: int = 1024
    #: ``--format-retries``: corrections per step before the step is given up
    format_retries: int = 2
    #: ``--temperature``
    temperature: float = 0.0
    #: ``--max-mm-items``: images attached to one message
    max_media_items: int = 2
    #: ``--max-mm-b64-chars``: a larger base64 payload is not attached
    max_media_b64_chars: int = 150_000_000
    #: empty greps for one pattern in a row before the notice
    grep_notice_after: int = 4


# -- replies --------------------------------------------------------------------------------------------
class FormatError(ValueError):
    """A reply the release would refuse as a format violation."""


@dataclass(frozen=True)
class Action:
    """What a reply asks for: a terminal ``command`` or the final ``answer``."""

    kind: Literal["terminal", "answer"]
    value: str


def _block(text: str, tag: str) -> tuple[int, str] | None:
    """(position, content) of the first ``<tag>`` block (any case); an unclosed block runs to the end of
    the reply (the release means to stop at the next tag, but its pattern for that never matches)."""
    opening = re.search(rf"<{tag}>", text, re.IGNORECASE)
    if opening is None:
        return None
    closing = re.compile(rf"</{tag}>", re.IGNORECASE).search(text, opening.end())
    return opening.start(), text[opening.end() : closing.start() if closing else len(text)]


def first_json_object(text: str) -> str:
    """The first balanced ``{...}`` of ``text`` (braces inside JSON strings ignored), or ``""``."""
    start = text.find("{")
    if start < 0:
        return ""
    depth, in_string, escaped = 0, False, False
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch == '"':
            in_string = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return text[start : i + 1]
    return ""


def _loads(text: str) -> dict[str, Any] | None:
    """A JSON object, or a Python dict literal (single quotes, True/None) as the release also accepts;
    ``\\|`` is read as ``|``. None when neither reads as a non-empty mapping."""
    if not text:
        return None
    text = text.replace("\\|", "|")
    try:
        value = json.loads(text)
    except ValueError:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", SyntaxWarning)
                value = ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return None
    return value if isinstance(value, dict) and value else None


def _terminal(command: Any) -> Action:
    if not command:
        raise FormatError("the tool call has no command")
    if not isinstance(command, str):
        raise FormatError("the command is not a string")
    return Action("terminal", command)


def parse_response(text: str) -> Action:
    """The action of one reply, or `FormatError`: a ``<tool>`` block's JSON (``name`` must be
    ``terminal`` when given; ``arguments`` or ``args``; a top-level ``command`` also counts), else a
    non-empty ``<answer>`` block, else a bare JSON object with ``command`` (or name ``terminal`` and
    ``arguments.command``). With both blocks the one opened first wins. The release's relaxed fallback
    (commands picked from loose lines) never takes effect (its line pattern does not compile), so
    nothing else is read."""
    tool_at, tool = _block(text, "tool") or (-1, "")
    answer_at, answer = _block(text, "answer") or (-1, "")
    has_tool, has_answer = bool(tool.strip()), bool(answer.strip())
    if has_tool and has_answer:  # the block opened first wins
        has_tool, has_answer = tool_at < answer_at, answer_at < tool_at
    if has_tool:
        obj = _loads(first_json_object(tool))
        if obj is None:
            raise FormatError("the tool JSON is missing or invalid")
        args = obj.get("arguments") or obj.get("args") or {}
        name = obj.get("name") or obj.get("tool") or ""
        if name and name != "terminal":
            raise FormatError('the tool JSON must name "terminal" and give arguments.command')
        try:
            missing = "command" not in args  # a string is searched, as the release does
        except TypeError:
            raise FormatError("the tool arguments are not an object") from None
        if missing and "command" in obj:
            args = {"command": obj["command"]}
        if not isinstance(args, dict):
            raise FormatError("the tool arguments are not an object")
        return _terminal(args.get("command", ""))
    if has_answer:
        return Action("answer", answer.strip())
    obj = _loads(first_json_object(text))
    if obj is not None:
        if "command" in obj:
            return _terminal(obj["command"])
        if obj.get("name") == "terminal" and isinstance(obj.get("arguments"), dict):
            return _terminal(obj["arguments"].get("command", ""))
    raise FormatError("no tool call or answer found")


# -- commands -------------------------------------------------------------------------------------------
#: a pipe, redirection or chaining operator not escaped by a backslash (quotes are not looked at)
_COMPOSITION = re.compile(r"(?<!\\)(?:\|\||&&|\|&|[|;<>])")
#: programs that may parse list_files' JSON in a pipeline
_JSON_PARSERS = re.compile(r"\b(?:jq|python|python3|node|ruby|perl)\b")
_PASTED_OUTPUT = ("this is output of terminal", '"success"', "'success'", '"segments"', "'segments'",
                  '"file_info"', "'file_info'")  # fmt: skip


def has_composition(command: str) -> bool:
    """Whether a command line pipes, redirects or chains (the release then leaves its words alone)."""
    return bool(_COMPOSITION.search(command.strip()))


def _quoted_path(path: str) -> bool:
    return " " in path or "&" in path


def normalize_command(command: str) -> str:
    """The command as the release runs it: stripped, and for a plain ``return_txt``/``return_metadata``/
    ``list_files``/``return_ori``/``return_img`` line without quotes, a path holding spaces or ``&``
    wrapped in double quotes (``return_img`` keeps a ``--page N`` after it)."""
    cmd = command.strip()
    if not cmd or has_composition(cmd) or '"' in cmd or "'" in cmd:
        return cmd
    try:
        words = shlex.split(cmd)
    except ValueError:
        return cmd
    if len(words) < 2:
        return cmd
    head, rest = words[0], words[1:]
    if head in ("return_txt", "return_metadata", "list_files"):
        path = " ".join(rest)
        return f'{head} "{path}"' if _quoted_path(path) else cmd
    if head == "return_ori":
        return f'{head} "{rest[0]}"' if len(rest) == 1 and _quoted_path(rest[0]) else cmd
    if head == "return_img":
        if "--page" not in words:
            path = " ".join(rest)
            return f'{head} "{path}"' if _quoted_path(path) else cmd
        page_at = words.index("--page")
        path = " ".join(words[1:page_at])
        if page_at > 1 and _quoted_path(path):
            return f'{head} "{path}" ' + " ".join(words[page_at:])
    return cmd


def _pipes_list_files(command: str) -> bool:
    cmd = command.strip()
    return "list_files" in cmd and "|" in cmd and not _JSON_PARSERS.search(cmd)


def _greps_pasted_output(command: str) -> bool:
    cmd = command.strip()
    low = cmd.lower()
    if "grep" not in low:
        return False
    long_paste = len(cmd) > 1200 and ("echo " in low or "<<<" in cmd or "$(" in cmd)
    pasted = any(marker in low for marker in _PASTED_OUTPUT) or re.search(r"\$\(\s*echo\b", cmd, re.IGNORECASE)
    return bool(long_paste and pasted)


def _grep_operands(words: list[str]) -> list[str]:
    """The operands after the pattern of a ``grep [options] PATTERN [FILE...]`` line, as the release
    reads it (``-e``/``-f`` take a value; the first other non-option word is the pattern)."""
    i = 1
    while i < len(words):
        word = words[i]
        if word == "--":
            i += 1
            break
        if word in ("-e", "--regexp", "-f", "--file"):
            i += 2
        elif word.startswith("-"):
            i += 1
        else:
            break
    return words[i + 1 :] if i < len(words) else []


def _greps_pdf(words: list[str]) -> bool:
    if not words or os.path.basename(words[0]).lower() != "grep":
        return False
    return any(
        not w.startswith("-") and (w.lower().endswith(".pdf") or "*.pdf" in w.lower()) for w in _grep_operands(words)
    )


def command_policy(command: str) -> str:
    """The correction the release sends instead of running a command, or ``""`` when it may run: raw
    ``list_files`` output piped on (unless python/jq/node/ruby/perl parses it), grep over pasted
    terminal output, unbalanced quoting, ``return_txt --page``, ``return_txt``/``return_metadata``
    without exactly one argument (plain lines), and a ``grep`` line naming a PDF."""
    if _pipes_list_files(command):
        return POLICY_LIST_FILES
    if _greps_pasted_output(command):
        return POLICY_BLOB
    composed = has_composition(command)
    try:
        words = shlex.split(command)
    except ValueError as exc:
        detail = str(exc).strip()
        return POLICY_QUOTING.format(detail=f" ({detail})" if detail else "")
    if not words:
        return ""
    head = os.path.basename(words[0]).lower()
    if head in ("return_txt", "txt") and "--page" in words[1:]:
        return POLICY_TXT_PAGE
    if not composed and head in ("return_txt", "txt") and len(words) != 2:
        return POLICY_TXT_ARGS
    if not composed and head == "return_metadata" and len(words) != 2:
        return POLICY_METADATA_ARGS
    if _greps_pdf(words):
        return POLICY_GREP_PDF
    return ""


def _disabled_tool(command: str, txt: bool, img: bool) -> str | None:
    """The tool a command line starts with when the configuration turns it off (aliases included)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if not words:
        return None
    if not txt and words[0] in ("return_txt", "txt"):
        return "return_txt"
    if not img and words[0] in ("return_img", "img"):
        return "return_img"
    return None


def grep_pattern(command: str) -> str:
    """The first pattern of the first ``grep`` of a command line (the release's no-match streak key)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return ""
    for at, word in enumerate(words):
        if os.path.basename(word).lower() != "grep":
            continue
        i = at + 1
        while i < len(words):
            option = words[i]
            if option == "--":
                i += 1
                break
            if option in ("-e", "--regexp"):
                return words[i + 1] if i + 1 < len(words) else ""
            if option in ("-f", "--file"):
                i += 2
            elif option.startswith("-"):
                i += 1
            else:
                return option
        return words[i] if i < len(words) else ""
    return ""


def cap_output(text: str, limit: int) -> str:
    """The head of a command's output, ``limit`` characters, marked when cut (the release keeps no tail)."""
    return text if len(text) <= limit else text[:limit] + TRUNCATED


# -- images ---------------------------------------------------------------------------------------------
def _json_object(raw: str) -> dict[str, Any] | None:
    text = raw.strip()
    if not text:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        snippet = first_json_object(text)
        try:
            value = json.loads(snippet) if snippet else None
        except ValueError:
            return None
    return value if isinstance(value, dict) else None


def _decoded_size(payload: str) -> int | None:
    try:
        return len(base64.b64decode(payload, validate=False))
    except (binascii.Error, ValueError):
        return None


def _kb(size: int) -> int:
    return max(1, round(size / 1024))


def image_parts(
    command: str, raw: str, text: str, settings: ReleaseSettings, carried: list[dict[str, Any]] | None = None
) -> tuple[list[dict[str, Any]], list[str]]:
    """The multimodal message for a successful ``return_img`` (or ``img``) or ``return_ori`` (``ori``)
    whose output is JSON: ``text`` as a text part, then each base64 image (``image_b64_list``, else
    ``image_b64``; typed by the suffix of the matching ``image_paths`` entry, PNG when none) as an
    ``image_url`` data URL, at most ``max_media_items``; for ``return_ori`` the ``file_b64`` when
    ``file_path`` is an image. Payloads that do not decode or are too long are skipped. When ``raw`` is
    no JSON object (the terminal cut a very long answer), a ``return_img``'s images are taken from
    ``carried``, what the terminal says the command rendered (``{"image_b64", "mime"}`` each). Returns
    the parts and a marker per image (``<image 12 KB>``); no parts when there is no image."""
    try:
        words = shlex.split(command)
    except ValueError:
        return [], []
    head = os.path.basename(words[0]).lower() if words else ""
    if head not in ("return_img", "img", "return_ori", "ori"):
        return [], []
    obj = _json_object(raw)
    candidates: list[tuple[Any, str]] = []  # (payload, mime type)
    if head in ("return_img", "img"):
        if obj is None:
            candidates = [(c.get("image_b64"), str(c.get("mime") or "image/png")) for c in carried or []]
        elif obj.get("success"):
            payloads = obj.get("image_b64_list") or ([obj["image_b64"]] if obj.get("image_b64") else [])
            paths = obj.get("image_paths") or []
            paths = paths if isinstance(paths, list) else []
            for i, payload in enumerate(payloads if isinstance(payloads, list) else []):
                suffix = PurePosixPath(str(paths[i] if i < len(paths) else "")).suffix.lower() or ".png"
                candidates.append((payload, IMAGE_MIME.get(suffix, "image/png")))
    elif obj is not None and obj.get("success"):
        suffix = PurePosixPath(str(obj.get("file_path") or "")).suffix.lower()
        if suffix in IMAGE_MIME:
            candidates.append((obj.get("file_b64"), IMAGE_MIME[suffix]))
    images: list[tuple[str, str, int]] = []  # (payload, mime type, decoded bytes)
    for payload, mime in candidates:
        if not isinstance(payload, str) or not payload or len(payload) > settings.max_media_b64_chars:
            continue
        size = _decoded_size(payload)
        if size is None:
            continue
        images.append((payload, mime, size))
        if len(images) >= settings.max_media_items:
            break
    if not images:
        return [], []
    parts: list[dict[str, Any]] = [{"type": "text", "text": text}]
    parts += [{"type": "image_url", "image_url": {"url": f"data:{mime};base64,{data}"}} for data, mime, _ in images]
    return parts, [f"<image {_kb(size)} KB>" for _, _, size in images]


_B64_VALUE = re.compile(r'("(image_b64|file_b64)"\s*:\s*")([A-Za-z0-9+/=\\]+)')
_B64_LIST = re.compile(r'("image_b64_list"\s*:\s*\[)([^\]]*)')
_B64_ITEM = re.compile(r'"([A-Za-z0-9+/=\\]+)')


def scrub_base64(text: str) -> str:
    """``text`` with the base64 of ``image_b64``, ``image_b64_list`` and ``file_b64`` values replaced by
    markers (``<image 12 KB>``, ``<file 3 KB>``: the size of the base64 text replaced), so that no
    payload reaches a trace or an episode file; the rest is kept as it is."""

    def value(m: re.Match[str]) -> str:
        kind = "file" if m.group(2) == "file_b64" else "image"
        return f"{m.group(1)}<{kind} {_kb(len(m.group(3)))} KB>"

    def listed(m: re.Match[str]) -> str:
        return m.group(1) + _B64_ITEM.sub(lambda i: f'"<image {_kb(len(i.group(1)))} KB>', m.group(2))

    return _B64_LIST.sub(listed, _B64_VALUE.sub(value, text))


# -- the prompt -----------------------------------------------------------------------------------------
def _config_name(value: str) -> str:
    key = value.strip().lower()
    key = f"config{key}" if key.isdigit() else key
    if key not in CONFIGS:
        raise ValueError(f"unknown prompt configuration {value!r}: use 0, 1, 2, 3 or config0 to config3")
    return key


def system_prompt(config: str = "config0") -> str:
    """The system prompt of a configuration: the body with the interfaces of its tools only."""
    txt, img = CONFIGS[_config_name(config)]
    enabled = {"txt": txt, "img": img}
    blocks = [load_prompt("terminal_release_tools.md").strip()]
    blocks += [load_prompt(f"terminal_release_tool_{name}.md").strip() for name, flag in _TOOL_BLOCKS
               if flag is None or enabled[flag]]  # fmt: skip
    return load_prompt("terminal_release.md", tools="\n\n".join(blocks)).strip()


# -- the agent ------------------------------------------------------------------------------------------
@dataclass
class _Episode:
    """What one episode keeps besides the trace."""

    #: the files of the return_* commands that ran (the release's ``files_touched``)
    returned: set[str] = field(default_factory=set)
    #: every command the model sent after normalisation, run or refused (the release's step log)
    commands: list[str] = field(default_factory=list)
    last_grep: str = ""
    grep_streak: int = 0


@register("agent", "terminal-release")
class TerminalReleaseAgent:
    """The release's terminal-agent loop; ``config`` is ``0``-``3`` or ``config0``-``config3`` (default
    config0), optionally followed by ``:vision`` to attach images for a vision model."""

    name: ClassVar[str] = "terminal-release"
    #: the release scores its terminal agents by the files their commands touched
    file_list: ClassVar[str] = "touched"

    def __init__(self, config: str = "", *, vision: bool = False, settings: ReleaseSettings | None = None):
        words = [w for w in config.split(":") if w.strip()]
        if any(w.strip().lower() == "vision" for w in words):
            vision = True
            words = [w for w in words if w.strip().lower() != "vision"]
        if len(words) > 1:
            raise ValueError(f"one prompt configuration at most, got {config!r}")
        self.config = _config_name(words[0] if words else "config0")
        self.vision = vision
        self.settings = settings or ReleaseSettings()

    async def solve(self, task: Task, env: Any, model: Any, budget: Budget) -> Answer:
        meter = Meter(budget)
        terminal = env.terminal(budget_chars=_RAW_OUTPUT_CHARS)
        left = meter.remaining_seconds()
        if left is not None:  # no command runs past the episode's wall clock
            terminal.deadline = time.monotonic() + left
        messages: list[dict[str, Any]] = [{"role": "system", "content": system_prompt(self.config)}]
        episode = _Episode()
        try:
            answer = await self._loop(meter, model, terminal, messages, episode, f"Question: {task.prompt}")
        finally:
            terminal.close()
        answer.touched = release_agent_file_list(sorted(episode.returned), [{"command": c} for c in episode.commands])
        answer.escapes = terminal.sandbox.escapes
        return answer

    async def _loop(self, meter: Meter, model: Any, terminal: Any, messages: list[dict[str, Any]],
                    episode: _Episode, first: str) -> Answer:  # fmt: skip
        pending: str | list[dict[str, Any]] = first
        try:
            txt, img = CONFIGS[self.config]
            flags = f"set_flags {int(txt)} {int(img)}"
            await asyncio.to_thread(terminal.run, flags)  # the release forces the configuration's flags first
            meter.note(f"prompt configuration {self.config}: {flags}")
            while True:
                action = await self._ask(meter, model, messages, pending)
                if action is None:
                    pending = FINAL_FORMAT
                elif action.kind == "answer":
                    cited = _existing(terminal, sorted(episode.returned))
                    return meter.answer(action.value, files=cited, evidence=[EvidenceItem(file_path=f) for f in cited])
                else:
                    pending = await self._act(meter, terminal, episode, action.value)
        except BudgetExceeded as exc:
            return meter.answer("", stop=exc.reason, error=str(exc))
        except Exception as exc:  # a model failure ends the episode, the trace is kept
            return model_failure(meter, exc)

    async def _ask(self, meter: Meter, model: Any, messages: list[dict[str, Any]],
                   content: str | list[dict[str, Any]]) -> Action | None:  # fmt: skip
        """One step's exchange: the message, then a format correction per unreadable reply while retries
        last (the history keeps every message and reply). None when the retries ran out."""
        settings = self.settings
        for attempt in range(settings.format_retries + 1):
            user = {"role": "user", "content": content}
            gen = await meter.generate(
                model,
                [*messages, user],
                count_step=attempt == 0,
                max_tokens=settings.max_completion_tokens,
                temperature=settings.temperature,
            )
            messages += [user, {"role": "assistant", "content": gen.text}]
            try:
                return parse_response(gen.text)
            except FormatError as exc:
                last = attempt >= settings.format_retries
                correction = FINAL_FORMAT if last else RETRY_FORMAT
                meter.observe("protocol", {"error": f"format: {exc}", "attempt": attempt + 1}, correction)
                if last:
                    return None
                content = correction
        return None

    async def _act(self, meter: Meter, terminal: Any, episode: _Episode, sent: str) -> str | list[dict[str, Any]]:
        """Run one command (or refuse it) and return the next message."""
        settings = self.settings
        raw_command = sent.strip()
        command = normalize_command(raw_command)
        arguments: dict[str, Any] = {"command": command}
        if raw_command != command:
            arguments["command_raw"] = raw_command
        episode.commands.append(command)
        txt, img = CONFIGS[self.config]
        refusal: tuple[str, str, str] | None = None  # (why, what the model is told, the logged output)
        if command.startswith("set_flags"):
            refusal = ("set_flags_not_allowed", NO_SET_FLAGS, "ERROR: set_flags is not allowed")
        elif policy := command_policy(command):
            refusal = ("command_policy_blocked", policy, f"ERROR: {policy}")
        elif tool := _disabled_tool(command, txt, img):
            refusal = (f"{tool}_disabled", DISABLED.format(tool=tool), f"ERROR: {tool} is disabled by config")
        if refusal is not None:
            why, correction, logged = refusal
            meter.observe("terminal", {**arguments, "blocked": why}, logged)
            return correction
        episode.returned.update(returned_files(command))
        began = time.perf_counter()
        obs = await asyncio.to_thread(terminal.run, command)  # off the loop: the runner's timeout can fire
        seconds = time.perf_counter() - began
        raw = obs.text
        # grep's "no match" (status 1 with nothing printed): the terminal reports no status, so an empty,
        # error-free output of a line with grep stands for it
        no_match = "grep" in command and obs.ok and not raw.strip()
        if no_match:
            raw = NO_MATCHES
        shown = cap_output(raw, settings.max_output_chars)
        if no_match:
            pattern = grep_pattern(command) or "__grep__"
            episode.grep_streak = episode.grep_streak + 1 if pattern == episode.last_grep else 1
            episode.last_grep = pattern
        else:
            episode.grep_streak, episode.last_grep = 0, ""
        notice = GREP_NOTICE if no_match and episode.grep_streak >= settings.grep_notice_after else ""
        text = f"{OUTPUT_PREFIX}{shown}{notice}"
        carried = [d for d in obs.data if isinstance(d, dict) and d.get("image_b64")] if obs.truncated else []
        parts, markers = image_parts(command, raw, text, settings, carried) if self.vision else ([], [])
        meter.observe("terminal", arguments, scrub_base64(shown), seconds)
        if notice:
            meter.note(notice.strip())
        if markers:
            meter.note("attached to the next message: " + ", ".join(markers))
        return parts or text


def _existing(terminal: Any, paths: list[str]) -> list[str]:
    """The given paths that are files of the profile (profile-relative, in order, once each)."""
    out: list[str] = []
    for path in paths:
        rel = path.strip()
        rel = rel[len(_DATA_DIR) :] if rel.startswith(_DATA_DIR) else rel
        rel = rel.lstrip("/")
        try:
            if rel and terminal.sandbox.allows(rel) and terminal.sandbox.resolve(rel).is_file() and rel not in out:
                out.append(rel)
        except (OSError, ValueError):  # a name too long, a NUL byte: not a file of the profile
            continue
    return out
