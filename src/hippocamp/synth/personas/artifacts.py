"""A persona set's artifacts on disk: each written whole (a temporary file, then a rename), read back
validated, and None when missing or unreadable (the pipeline then makes that stage again)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

__all__ = ["dump", "jsonl", "load", "load_jsonl", "write"]

M = TypeVar("M", bound=BaseModel)


def write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8", newline="")
    os.replace(tmp, path)


def dump(model: BaseModel) -> str:
    return model.model_dump_json(indent=2) + "\n"


def jsonl(models: list[Any]) -> str:
    return "".join(m.model_dump_json() + "\n" for m in models)


def load(path: Path, cls: type[M]) -> M | None:
    try:
        return cls.model_validate_json(path.read_bytes())
    except (OSError, ValidationError, ValueError):
        return None


def load_jsonl(path: Path, cls: type[M]) -> list[M] | None:
    try:
        lines = path.read_bytes().splitlines()
        return [cls.model_validate_json(x) for x in lines if x.strip()]
    except (OSError, ValidationError, ValueError):
        return None
