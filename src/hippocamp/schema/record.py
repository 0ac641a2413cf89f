"""The HippoCamp record: one question with its grounded trajectory.

Two spellings are read (REFERENCE.md §1), plus the short form of the release repository's
``benchmark_example.json``:

* **release** (the public annotation JSON): ``QA_type``, ``profiling_type``, ``data_source``,
  ``file_type``, ``file_text``, ``gold_text``, ``evidence_text_joined``, ``agent_cap`` stored as a
  JSON *string* whose perception key is ``evidence_perception``, often ``evidence_locator: []``,
  rationale steps without ``step_id``.
* **paper**: ``agent_cap`` as an object with ``perception``, rationale steps with ``step_id``.
* **example**: evidence items ``{file_path, page, content}``.

Fields are named as in the paper; the spelling read is remembered so that writing gives back the
same JSON (see `hippocamp.schema._shape`).
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import AliasChoices, Field, SerializeAsAny, field_validator

from hippocamp.schema._shape import Shaped, Style, dumps_like
from hippocamp.schema.locators import Locator, parse_locator

__all__ = [
    "QA_TYPES",
    "REASONING_LABELS",
    "RECORD_FORMAT",
    "AgentCap",
    "Evidence",
    "HippoCampRecord",
    "RationaleStep",
]

#: Version of the record format hippocamp reads and writes (the release's, with the paper's names).
RECORD_FORMAT = "hippocamp-record/1"
QA_TYPES = ("factual_retention", "profiling")
REASONING_LABELS = ("basic", "computation", "verification", "summarization")
MODALITIES = ("text", "document", "image", "audio", "video")


def _as_str_list(value: Any) -> Any:
    """``"a"`` -> ``["a"]``; ``"a, b"`` -> ``["a", "b"]``; None -> []; lists unchanged."""
    if value is None:
        return []
    if isinstance(value, str):
        parts = [p.strip() for p in value.split(",")] if "," in value else [value.strip()]
        return [p for p in parts if p]
    return value


class AgentCap(Shaped):
    """Capabilities a question needs: search, evidence perception, reasoning."""

    style_keys: ClassVar[dict[str, dict[str, str]]] = {
        "release": {"perception": "evidence_perception"},
        "paper": {"perception": "perception"},
    }
    search: list[str] = Field(default_factory=list)
    perception: list[str] = Field(
        default_factory=list, validation_alias=AliasChoices("perception", "evidence_perception")
    )
    reasoning: list[str] = Field(default_factory=list)

    @classmethod
    def prepare(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            raise ValueError(f"agent_cap must be an object (or a JSON string of one), got {type(data).__name__}")
        return {
            k: _as_str_list(v) if k in ("search", "perception", "evidence_perception", "reasoning") else v
            for k, v in data.items()
        }

    def default_style(self) -> Style:
        raw = self.raw
        return "paper" if isinstance(raw, dict) and "perception" in raw else "release"

    def labels(self) -> dict[str, list[str]]:
        return {"search": self.search, "perception": self.perception, "reasoning": self.reasoning}


class Evidence(Shaped):
    """One localized piece of support: a file, its modality, an excerpt and where it sits."""

    consumes: ClassVar[dict[str, str]] = {"page": "locators"}
    evidence_id: str | int | None = None
    file_path: str = ""
    modality_type: str | None = Field(default=None, validation_alias=AliasChoices("modality_type", "modality"))
    evidence_text: str | None = Field(default=None, validation_alias=AliasChoices("evidence_text", "content", "text"))
    locators: list[SerializeAsAny[Locator]] = Field(
        default_factory=list, validation_alias=AliasChoices("evidence_locator", "locator", "locators")
    )

    @classmethod
    def prepare(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            raise ValueError(f"an evidence item is an object, got {type(data).__name__}")
        data = dict(data)
        key = next((k for k in ("evidence_locator", "locator", "locators") if k in data), None)
        if key is None and "page" in data:
            key, data["evidence_locator"] = "evidence_locator", [{"unit": "page", "position": data.pop("page")}]
        if key is not None:
            locs = data[key]
            if locs is None:
                locs = []
            elif not isinstance(locs, list):
                locs = [locs]
            data[key] = [parse_locator(x) for x in locs]
        return data

    @field_validator("file_path", mode="before")
    @classmethod
    def _path(cls, v: Any) -> Any:
        if v is None:
            return ""
        if isinstance(v, list) and len(v) == 1 and isinstance(v[0], str):
            return v[0]
        return v

    def encode_field(self, name: str, style: Style, raw_value: Any) -> Any:
        if name == "locators":
            return [loc.dump(style) for loc in self.locators]
        return super().encode_field(name, style, raw_value)

    @property
    def key(self) -> str:
        """The evidence id as text (ids are ints in some files and strings in others)."""
        return "" if self.evidence_id is None else str(self.evidence_id).strip()


class RationaleStep(Shaped):
    """One step of the annotated reasoning, grounded by the evidence ids it cites."""

    step_id: int | str | None = None
    rationale_text: str = Field(default="", validation_alias=AliasChoices("rationale_text", "text", "step"))
    evidence_id: list[str | int] = Field(
        default_factory=list, validation_alias=AliasChoices("evidence_id", "evidence_ids")
    )

    @classmethod
    def prepare(cls, data: Any) -> Any:
        if isinstance(data, str):
            return {"rationale_text": data}
        if not isinstance(data, dict):
            raise ValueError(f"a rationale step is an object, got {type(data).__name__}")
        data = dict(data)
        for key in ("evidence_id", "evidence_ids"):
            if key in data:
                value = data[key]
                data[key] = [] if value is None or value == "" else value if isinstance(value, list) else [value]
        return data

    @property
    def evidence_keys(self) -> list[str]:
        return [str(e).strip() for e in self.evidence_id]


class HippoCampRecord(Shaped):
    """One HippoCamp question with its minimal file set, evidence, rationale and capability labels."""

    format: ClassVar[str] = RECORD_FORMAT
    style_keys: ClassVar[dict[str, dict[str, str]]] = {
        "release": {"qa_type": "QA_type"},
        "paper": {"qa_type": "QA_type"},
    }

    id: str | int
    question: str = ""
    answer: str = ""
    qa_type: str | None = Field(default=None, validation_alias=AliasChoices("QA_type", "qa_type", "task_type"))
    profiling_type: str | None = None
    data_source: str | None = None
    file_path: list[str] = Field(default_factory=list)
    file_number: int | None = None
    file_modality: list[str] = Field(default_factory=list)
    file_type: list[str] = Field(default_factory=list)
    file_text: list[str] | str | None = None
    gold_text: str | list[str] | None = None
    evidence_text_joined: str | None = None
    agent_cap: AgentCap | None = None
    evidence: list[Evidence] = Field(default_factory=list)
    rationale: list[RationaleStep] = Field(default_factory=list)

    @classmethod
    def prepare(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            raise ValueError(f"a record is a JSON object, got {type(data).__name__}")
        data = dict(data)
        for key in ("file_path", "file_modality", "file_type"):
            if isinstance(data.get(key), str):
                data[key] = [data[key]] if key == "file_path" else _as_str_list(data[key])
            elif data.get(key) is None and key in data:
                data[key] = []
        cap = data.get("agent_cap")
        if isinstance(cap, str):
            if not cap.strip():
                data["agent_cap"] = None
            else:
                from hippocamp.schema.io import JsonInputError, loads_json

                try:
                    data["agent_cap"] = AgentCap.model_validate(loads_json(cap, "agent_cap"))
                except JsonInputError as exc:
                    raise ValueError(f"agent_cap is a string but not valid JSON ({exc.message})") from None
        for key in ("evidence", "rationale"):
            if key in data and data[key] is None:
                data[key] = []
        if "file_number" in data and isinstance(data["file_number"], str) and data["file_number"].strip().isdigit():
            data["file_number"] = int(data["file_number"])
        return data

    def default_style(self) -> Style:
        raw = self.raw
        if isinstance(raw, dict):
            cap = raw.get("agent_cap")
            if isinstance(cap, dict):
                return "paper"
            if isinstance(cap, str):
                return "release"
            steps = raw.get("rationale") or []
            if steps and all(isinstance(s, dict) and "step_id" in s for s in steps):
                return "paper"
        return "release"

    @property
    def style(self) -> Style:
        return self.default_style()

    def encode_field(self, name: str, style: Style, raw_value: Any) -> Any:
        if name == "agent_cap" and self.agent_cap is not None:
            value = self.agent_cap.dump(style)
            as_string = isinstance(raw_value, str) if raw_value is not None else style == "release"
            return dumps_like(value, raw_value if isinstance(raw_value, str) else None) if as_string else value
        if name == "rationale" and style == "paper":
            out = []
            for i, step in enumerate(self.rationale, start=1):
                dumped = step.dump(style)
                if isinstance(dumped, dict) and "step_id" not in dumped:
                    dumped = {"step_id": i, **dumped}
                out.append(dumped)
            return out
        return super().encode_field(name, style, raw_value)

    # -- conveniences ----------------------------------------------------------------------------
    @property
    def key(self) -> str:
        return str(self.id)

    def evidence_by_id(self) -> dict[str, Evidence]:
        return {ev.key: ev for ev in self.evidence if ev.key}

    def all_file_paths(self) -> list[str]:
        """Top-level and evidence-level paths, in order, without repeats."""
        seen: dict[str, None] = {}
        for path in [*self.file_path, *(ev.file_path for ev in self.evidence)]:
            if path:
                seen.setdefault(path, None)
        return list(seen)
