"""File formats: versioned pydantic models that read and write the formats hippocamp uses."""

from hippocamp.schema.io import RecordsFile, RecordsFileError, dump_records, read_records, write_records
from hippocamp.schema.locators import (
    CellRange,
    InvalidLocator,
    ItemLocator,
    LineLocator,
    Locator,
    PageLocator,
    RegionLocator,
    SlideLocator,
    TimeRange,
    UnknownLocator,
    format_timestamp,
    parse_locator,
    parse_timestamp,
)
from hippocamp.schema.problems import Problem, ValidationReport
from hippocamp.schema.record import RECORD_FORMAT, AgentCap, Evidence, HippoCampRecord, RationaleStep

__all__ = [
    "RECORD_FORMAT",
    "AgentCap",
    "CellRange",
    "Evidence",
    "HippoCampRecord",
    "InvalidLocator",
    "ItemLocator",
    "LineLocator",
    "Locator",
    "PageLocator",
    "Problem",
    "RationaleStep",
    "RecordsFile",
    "RecordsFileError",
    "RegionLocator",
    "SlideLocator",
    "TimeRange",
    "UnknownLocator",
    "ValidationReport",
    "dump_records",
    "format_timestamp",
    "parse_locator",
    "parse_timestamp",
    "read_records",
    "write_records",
]
