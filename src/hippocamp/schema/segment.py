"""`Segment`: one located piece of a file's content, what perception produces and the store holds.

A segment names its file by profile-relative POSIX path, its modality, its text, and where in the
file it sits (a typed locator: a page, a cell range, a slide, seconds of audio, an event). Content
nested in a container (an attachment of a mail in a mailbox) says how to get there in ``within``,
outermost first, e.g. ``[{"unit": "email", "position": {"index": 3}}, {"unit": "attachment",
"position": {"id": "report.pdf"}}]`` with ``locator`` the page inside the attachment.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_serializer, field_validator

from hippocamp.schema.locators import Locator, parse_locator

__all__ = ["SEGMENT_VERSION", "FileInfo", "Segment"]

SEGMENT_VERSION = "1"


class FileInfo(BaseModel):
    """What is known of a file without reading it: size, type (extension), times."""

    model_config = ConfigDict(frozen=True)

    size: int
    type: str
    created: datetime | None = None
    modified: datetime | None = None


class Segment(BaseModel):
    """One located piece of evidence."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    path: str
    modality: str
    text: str
    locator: Locator | None = None
    within: list[Locator] = Field(default_factory=list)
    #: reader-specific facts: EXIF fields, mail headers, event attendees, OCR confidence, ...
    meta: dict[str, Any] = Field(default_factory=dict)
    #: 0-based order of the segment in its file
    ordinal: int = 0

    @field_validator("locator", mode="before")
    @classmethod
    def _locator(cls, v: Any) -> Any:
        return None if v is None else parse_locator(v)

    @field_validator("within", mode="before")
    @classmethod
    def _within(cls, v: Any) -> Any:
        return [parse_locator(x) for x in (v or [])]

    @field_serializer("locator")
    def _dump_locator(self, v: Locator | None) -> Any:
        return None if v is None else v.dump()

    @field_serializer("within")
    def _dump_within(self, v: list[Locator]) -> Any:
        return [x.dump() for x in v]

    @classmethod
    def trusted(
        cls,
        path: str,
        modality: str,
        text: str,
        locator: Locator | None,
        within: list[Locator],
        meta: dict[str, Any],
    ) -> Segment:
        """A segment from values already of the fields' types (what readers make through
        `ReadContext.segment`): the same model as ``Segment(...)`` with these arguments, without
        running validation (about three times cheaper, on the hot path of perception). Anything else
        (a locator as JSON, a text that is not a ``str``) goes through validation as usual. ``within``
        and ``meta`` are kept, not copied: pass fresh ones; ``meta``'s keys must be ``str`` (keyword
        arguments, as in `ReadContext.segment`)."""
        if (
            _TRUSTED_OK
            and type(path) is str
            and type(modality) is str
            and type(text) is str
            and (locator is None or isinstance(locator, Locator))
            and type(within) is list
            and (not within or all(isinstance(w, Locator) for w in within))
            and type(meta) is dict
        ):
            seg = _new(cls)
            _set(seg, "__dict__", {"path": path, "modality": modality, "text": text, "locator": locator,
                                   "within": within, "meta": meta, "ordinal": 0})  # fmt: skip
            _set(seg, "__pydantic_fields_set__", set(_TRUSTED_FIELDS))
            _set(seg, "__pydantic_extra__", None)
            _set(seg, "__pydantic_private__", None)
            return seg
        return cls(path=path, modality=modality, text=text, locator=locator, within=within, meta=meta)

    def where(self) -> str:
        """A short human-readable location: ``report.pdf p.3``, ``budget.xlsx October!B2:D9``."""
        parts = [self.path]
        parts += [_short(loc) for loc in self.within]
        if self.locator is not None:
            parts.append(_short(self.locator))
        return " › ".join(parts)


_new = object.__new__
_set = object.__setattr__
_TRUSTED_FIELDS = ("path", "modality", "text", "locator", "within", "meta")
#: the fast path fills exactly what pydantic's own construction fills; a private attribute, a
#: post-init hook or extra fields would need more, so then every segment is validated instead
_TRUSTED_OK = (
    not Segment.__private_attributes__
    and Segment.__pydantic_post_init__ is None
    and Segment.model_config.get("extra") in (None, "ignore")
    and tuple(Segment.model_fields) == (*_TRUSTED_FIELDS, "ordinal")
)


def _short(loc: Locator) -> str:
    pos = loc.position()
    text = ", ".join(f"{k}={v}" for k, v in pos.items()) if isinstance(pos, dict) else str(pos)
    return f"{loc.unit or loc.canonical_unit} {text}"
