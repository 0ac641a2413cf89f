"""Shape-preserving pydantic models: read any spelling, write back the same JSON.

Every file format we read (HippoCamp's release, the paper's spelling, the example in the
release's repository) spells the same record differently. A `Shaped` model remembers the raw
JSON it was validated from. When it is dumped again, every field that did not change is written
back exactly as it was read (same key, same value, same position), changed fields are re-encoded
under the key they were read from, and new fields are added under the key of the record's style.
A model that was never read from JSON dumps in the canonical form of the requested style.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar, Literal, Self

from pydantic import AliasChoices, BaseModel, ConfigDict, PrivateAttr, ValidationInfo, model_validator

Style = Literal["release", "paper"]
STYLES: tuple[Style, ...] = ("release", "paper")

_MISSING = object()
_KEEP_RAW = "hippocamp.keep_raw"
_KEEP = {_KEEP_RAW: True}


class Shaped(BaseModel):
    """Base class of every model that is a file format we read and write."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, arbitrary_types_allowed=False)

    #: Raw keys that a field consumes besides its aliases (e.g. the example's evidence ``page``).
    consumes: ClassVar[dict[str, str]] = {}
    #: Key under which a field is written when it is not in the raw input, per style.
    style_keys: ClassVar[dict[str, dict[str, str]]] = {}

    _raw: Any = PrivateAttr(default=None)
    _snapshot: dict[str, Any] | None = PrivateAttr(default=None)

    @classmethod
    def model_validate(cls, obj: Any, *, context: Any | None = None, **kwargs: Any) -> Self:
        """Validate JSON data and remember it, so that `dump` can give it back unchanged.

        Models built in code (``Evidence(file_path=...)``) have no raw JSON and dump canonically.
        """
        return super().model_validate(obj, context=_KEEP if context is None else context, **kwargs)

    @model_validator(mode="wrap")
    @classmethod
    def _remember_raw(cls, data: Any, handler: Any, info: ValidationInfo) -> Any:
        if isinstance(data, cls):
            return data
        obj = handler(cls.prepare(data))
        if info.context is not None and info.context.get(_KEEP_RAW):
            obj._raw = data
            obj._snapshot = obj._fields_json()
        return obj

    @classmethod
    def prepare(cls, data: Any) -> Any:
        """Turn the raw JSON into the fields' shape before validation; must not mutate ``data``."""
        return data

    # -- introspection -------------------------------------------------------------------------
    def _fields_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", include=set(type(self).model_fields), round_trip=True)

    @classmethod
    def _keys_of(cls, name: str) -> list[str]:
        field = cls.model_fields[name]
        alias = field.validation_alias
        keys: list[str] = []
        if isinstance(alias, AliasChoices):
            keys.extend(str(c) for c in alias.choices if isinstance(c, str))
        elif isinstance(alias, str):
            keys.append(alias)
        keys.append(name)
        keys.extend(k for k, v in cls.consumes.items() if v == name)
        return keys

    @classmethod
    def _field_of_key(cls) -> dict[str, str]:
        mapping: dict[str, str] = {}
        for name in cls.model_fields:
            for key in cls._keys_of(name):
                mapping.setdefault(key, name)
        return mapping

    @property
    def raw(self) -> Any:
        """The JSON this model was read from, or None for a model built in code."""
        return self._raw

    def changed(self) -> bool:
        """True when the model no longer equals what was read (always True for new models)."""
        if self._snapshot is None:
            return True
        return self._fields_json() != self._snapshot or self._extras_changed()

    def _extras_changed(self) -> bool:
        raw = self.raw
        extras = self.__pydantic_extra__ or {}
        if not isinstance(raw, dict):
            return bool(extras)
        return any(raw.get(k, _MISSING) != v for k, v in extras.items())

    # -- dumping ---------------------------------------------------------------------------------
    def encode_field(self, name: str, style: Style, raw_value: Any) -> Any:
        """Encode one field's current value for writing; subclasses override for odd spellings."""
        return encode_value(getattr(self, name), style)

    def key_for(self, name: str, style: Style) -> str:
        return self.style_keys.get(style, {}).get(name) or self._first_alias(name)

    @classmethod
    def _first_alias(cls, name: str) -> str:
        return cls._keys_of(name)[0]

    def dump(self, style: Style | None = None) -> Any:
        """JSON-ready value: the raw input where unchanged, re-encoded where changed."""
        style = style or self.default_style()
        raw = self.raw
        if raw is not None and not self.changed():
            return raw
        if isinstance(raw, dict):
            return self._dump_over(raw, style)
        return {
            self.key_for(name, style): self.encode_field(name, style, None)
            for name in type(self).model_fields
            if getattr(self, name) is not None
        }

    def _dump_over(self, raw: dict[str, Any], style: Style) -> dict[str, Any]:
        """Write over the raw object: its keys in order, changed fields re-encoded, new fields last."""
        now, before = self._fields_json(), self._snapshot or {}
        key_field = self._field_of_key()
        extras = self.__pydantic_extra__ or {}
        out: dict[str, Any] = {}
        emitted: set[str] = set()
        for key, raw_value in raw.items():
            name = key_field.get(key)
            if name is None:  # a key no field reads: kept as an extra (possibly edited)
                if key in extras:
                    out[key] = extras[key]
                continue
            if name in emitted:
                continue
            emitted.add(name)
            if now[name] == before.get(name, _MISSING):
                out[key] = raw_value
            elif getattr(self, name) is not None:
                # under the key it was read from, unless that was a key it only consumes (``page``)
                primary = key if key in self._aliases_only(name) else self.key_for(name, style)
                out[primary] = self.encode_field(name, style, raw.get(primary, raw_value))
        out.update({key: value for key, value in extras.items() if key not in raw})
        for name in type(self).model_fields:
            if name not in emitted and getattr(self, name) is not None and now[name] != before.get(name, _MISSING):
                out[self.key_for(name, style)] = self.encode_field(name, style, None)  # set since reading
        return out

    @classmethod
    def _aliases_only(cls, name: str) -> list[str]:
        return [k for k in cls._keys_of(name) if k not in cls.consumes]

    def default_style(self) -> Style:
        return "release"


def encode_value(value: Any, style: Style) -> Any:
    if isinstance(value, Shaped):
        return value.dump(style)
    if isinstance(value, list):
        return [encode_value(v, style) for v in value]
    if isinstance(value, tuple):
        return [encode_value(v, style) for v in value]
    if isinstance(value, dict):
        return {k: encode_value(v, style) for k, v in value.items()}
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    return value


def dumps_like(value: Any, original: str | None) -> str:
    """Serialize ``value`` as a JSON string in the separators style of ``original`` when known."""
    if original is not None and ": " not in original and ", " not in original and len(original) > 2:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return json.dumps(value, ensure_ascii=False)
