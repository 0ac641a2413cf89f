"""Structured output: a pydantic model or JSON schema in, a validated object out.

Backends with constrained decoding get the schema; the others are told to answer with JSON only.
Either way the text is parsed here (code fences and chatter around one JSON object are tolerated)
and validated; the client repairs once and then raises `ModelOutputError` with the raw text.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ValidationError

from hippocamp.models.base import ResponseFormat

__all__ = ["OutputFormat", "extract_json", "instruction_for"]

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.S)
_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
    "null": (type(None),),
}


class OutputFormat:
    """A response format resolved to a JSON schema and a validator."""

    def __init__(self, fmt: ResponseFormat):
        self.model: type[BaseModel] | None = None
        if isinstance(fmt, type) and issubclass(fmt, BaseModel):
            self.model = fmt
            self.schema: dict[str, Any] = fmt.model_json_schema()
        elif isinstance(fmt, dict):
            self.schema = fmt
        elif fmt == "json":
            self.schema = {"type": "object"}
        else:
            raise ValueError(f"response_format must be a pydantic model, a JSON schema or 'json', got {fmt!r}")

    @property
    def name(self) -> str:
        return self.model.__name__ if self.model else str(self.schema.get("title", "response"))

    def parse(self, text: str) -> Any:
        """The validated object; raises ValueError saying what is wrong."""
        data = extract_json(text)
        if self.model is not None:
            try:
                return self.model.model_validate(data)
            except ValidationError as exc:
                details = "; ".join(f"{'.'.join(map(str, e['loc'])) or '(root)'}: {e['msg']}" for e in exc.errors())
                raise ValueError(f"does not match {self.name}: {details}") from None
        problems = check_schema(data, self.schema)
        if problems:
            raise ValueError("does not match the schema: " + "; ".join(problems))
        return data


def extract_json(text: str) -> Any:
    """The JSON value in a reply: the whole text, a fenced block, or the first balanced {...}/[...]."""
    candidates = [text.strip()]
    candidates += [m.group(1).strip() for m in _FENCE.finditer(text)]
    start = next((i for i, ch in enumerate(text) if ch in "{["), None)
    if start is not None:
        candidates.append(_balanced(text, start))
    last_error = "no JSON found"
    for candidate in candidates:
        if not candidate:
            continue
        try:
            return json.loads(candidate)
        except json.JSONDecodeError as exc:
            last_error = f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
    raise ValueError(last_error)


def _balanced(text: str, start: int) -> str:
    """The shortest prefix of ``text[start:]`` whose brackets balance (strings respected)."""
    depth, in_string, escape = 0, False, False
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return text[start : i + 1]
    return text[start:]


def check_schema(data: Any, schema: dict[str, Any], path: str = "") -> list[str]:
    """A small JSON-schema check (type, required, properties, items, enum): what a JSON schema
    given as a dict can be held to without a schema library."""
    where = path or "(root)"
    problems: list[str] = []
    expected = schema.get("type")
    if isinstance(expected, str) and expected in _JSON_TYPES:
        ok = isinstance(data, _JSON_TYPES[expected]) and not (
            expected in ("integer", "number") and isinstance(data, bool)
        )
        if not ok:
            return [f"{where}: expected {expected}, got {type(data).__name__}"]
    if "enum" in schema and data not in schema["enum"]:
        problems.append(f"{where}: {data!r} is not one of {schema['enum']}")
    if isinstance(data, dict):
        for key in schema.get("required", []):
            if key not in data:
                problems.append(f"{where}: missing required key {key!r}")
        for key, sub in schema.get("properties", {}).items():
            if key in data and isinstance(sub, dict):
                problems += check_schema(data[key], sub, f"{path}.{key}" if path else key)
    if isinstance(data, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(data):
            problems += check_schema(item, schema["items"], f"{path}[{i}]")
    return problems


def instruction_for(fmt: OutputFormat) -> str:
    """The system instruction for backends that cannot constrain decoding."""
    return (
        "Reply with only one JSON object, no prose and no code fences. It must follow this JSON schema:\n"
        + json.dumps(fmt.schema, ensure_ascii=False)
    )
