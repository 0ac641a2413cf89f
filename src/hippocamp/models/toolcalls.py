"""Tool calling for models without native support: a JSON-action protocol.

The tools are described in a system message; the model calls one by answering with only
``{"tool": NAME, "arguments": {...}}`` (several: ``{"tool_calls": [...]}``) and otherwise answers in
plain text. Earlier tool calls and results in the conversation are rendered as text so that any
chat template can show them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from hippocamp.models.structured import extract_json
from hippocamp.models.types import Message, ToolCall

__all__ = ["parse_tool_calls", "render_messages", "tools_instruction", "with_system"]


def _spec(tool: dict[str, Any]) -> dict[str, Any]:
    return tool.get("function", tool)


def tools_instruction(tools: Sequence[dict[str, Any]]) -> str:
    lines = [
        "You can call tools. To call one, reply with only a JSON object:",
        '{"tool": "<tool name>", "arguments": {<arguments>}}',
        "and nothing else; the result will be given to you. When you do not need a tool, answer in plain text.",
        "Tools:",
    ]
    for tool in tools:
        spec = _spec(tool)
        params = json.dumps(spec.get("parameters", {}), ensure_ascii=False)
        lines.append(f"- {spec['name']}: {spec.get('description', '').strip()} Arguments (JSON schema): {params}")
    return "\n".join(lines)


def parse_tool_calls(text: str, tools: Sequence[dict[str, Any]], call_prefix: str = "call") -> list[ToolCall]:
    """Tool calls written in the JSON-action protocol; [] when the text is a plain answer."""
    stripped = text.strip()
    if "{" not in stripped:
        return []
    try:
        data = extract_json(stripped)
    except ValueError:
        return []
    names = {_spec(t)["name"] for t in tools}
    items = data.get("tool_calls") if isinstance(data, dict) and "tool_calls" in data else [data]
    if not isinstance(items, list):
        return []
    calls = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        name = item.get("tool", item.get("name"))
        args = item.get("arguments", item.get("args", {}))
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except json.JSONDecodeError:
                args = {"input": args}
        if name in names and isinstance(args, dict):
            calls.append(ToolCall(id=f"{call_prefix}_{i}", name=name, arguments=args))
    return calls


def render_messages(messages: Sequence[Message]) -> list[Message]:
    """Messages with tool calls and tool results turned into plain text turns."""
    out: list[Message] = []
    for m in messages:
        role = m.get("role")
        if role == "assistant" and m.get("tool_calls"):
            calls = []
            for c in m["tool_calls"]:
                fn = c.get("function", c)
                args = fn.get("arguments", {})
                calls.append({"tool": fn.get("name"), "arguments": json.loads(args) if isinstance(args, str) else args})
            text = json.dumps(calls[0] if len(calls) == 1 else {"tool_calls": calls}, ensure_ascii=False)
            out.append({"role": "assistant", "content": ((m.get("content") or "") + "\n" + text).strip()})
        elif role == "tool":
            name = m.get("name") or m.get("tool_call_id", "tool")
            out.append({"role": "user", "content": f"Result of {name}:\n{m.get('content', '')}"})
        else:
            out.append({k: v for k, v in m.items() if k in ("role", "content")})
    return _merge_same_role(out)


def _merge_same_role(messages: list[Message]) -> list[Message]:
    """Chat templates often reject two user turns in a row: join neighbours of the same role."""
    merged: list[Message] = []
    for m in messages:
        if merged and merged[-1]["role"] == m["role"] and m["role"] in ("user", "system"):
            merged[-1] = {"role": m["role"], "content": f"{merged[-1]['content']}\n\n{m['content']}"}
        else:
            merged.append(dict(m))
    return merged


def with_system(messages: list[Message], instruction: str) -> list[Message]:
    """Add an instruction to the system message (or start with one); ``messages`` is not changed."""
    if messages and messages[0].get("role") == "system":
        first = dict(messages[0])
        first["content"] = f"{first.get('content') or ''}\n\n{instruction}".strip()
        return [first, *messages[1:]]
    return [{"role": "system", "content": instruction}, *messages]
