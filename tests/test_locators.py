from __future__ import annotations

import pytest

from hippocamp.schema.locators import (
    CellRange,
    InvalidLocator,
    LineLocator,
    PageLocator,
    RegionLocator,
    SlideLocator,
    TimeRange,
    UnknownLocator,
    cell_bounds,
    format_timestamp,
    parse_locator,
    parse_timestamp,
)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("00:01:02", 62.0),
        ("00:01:02.500", 62.5),
        ("01:02:03.25", 3723.25),
        ("1:02", 62.0),
        ("01:02.5", 62.5),
        ("00:00:01,200", 1.2),
        ("62.5", 62.5),
        ("62.5s", 62.5),
        (62, 62.0),
        (0, 0.0),
    ],
)
def test_parse_timestamp(text, seconds):
    assert parse_timestamp(text) == pytest.approx(seconds)


@pytest.mark.parametrize("bad", ["", "abc", "1:75", "-3", "00:61:00", True, None, [1], "nan"])
def test_parse_timestamp_rejects(bad):
    with pytest.raises(ValueError):
        parse_timestamp(bad)


def test_format_timestamp():
    assert format_timestamp(62) == "00:01:02"
    assert format_timestamp(3723.25) == "01:02:03.250"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"unit": "page", "position": {"system_page": 3, "printed_page": "iii"}}, (3, None, "iii")),
        ({"unit": "page", "position": 4}, (4, None, None)),
        ({"unit": "page", "position": "p. 7"}, (7, None, None)),
        ({"unit": "pages", "position": "3-5"}, (3, 5, None)),
        ({"unit": "page", "position": {"start": 2, "end": 4}}, (2, 4, None)),
        ({"unit": "printed_page", "position": "A-4"}, (None, None, "A-4")),
        ({"system_page": 2}, (2, None, None)),
    ],
)
def test_page_locators(raw, expected):
    loc = parse_locator(raw)
    assert isinstance(loc, PageLocator)
    assert (loc.system_page, loc.system_page_end, loc.printed_page) == expected
    assert loc.dump() == raw  # read then written: the same JSON


def test_time_range_shapes():
    a = parse_locator({"unit": "timestamp", "position": {"start": "00:01:02", "end": "00:01:10.5"}})
    b = parse_locator({"unit": "time_range", "position": "01:02-01:10.5"})
    c = parse_locator({"unit": "seconds", "position": [62, 70.5]})
    for loc in (a, b, c):
        assert isinstance(loc, TimeRange)
        assert (loc.start, loc.end) == (62.0, 70.5)
    instant = parse_locator({"unit": "timestamp", "position": "00:00:07"})
    assert isinstance(instant, TimeRange) and instant.end is None and instant.stop == 7.0


def test_region_cells_slide_line():
    region = parse_locator({"unit": "table", "position": {"page": 2, "bbox": [0.1, 0.2, 0.5, 0.6], "label": "Table 3"}})
    assert isinstance(region, RegionLocator)
    assert region.page == 2 and region.box_units == "norm" and region.label == "Table 3"
    xywh = parse_locator({"unit": "bbox", "position": {"x": 10, "y": 20, "w": 30, "h": 40}})
    assert isinstance(xywh, RegionLocator) and xywh.box == (10, 20, 40, 60) and xywh.box_units is None

    cells = parse_locator({"unit": "cells", "position": "'Q3 Sales'!B2:D10"})
    assert isinstance(cells, CellRange) and cells.sheet == "Q3 Sales" and cells.bounds() == (2, 2, 4, 10)
    assert parse_locator({"unit": "range", "position": {"sheet": "S", "range": "C7"}}).bounds() == (3, 7, 3, 7)

    slide = parse_locator({"unit": "slide", "position": "4-5"})
    assert isinstance(slide, SlideLocator) and (slide.slide, slide.slide_end) == (4, 5)

    line = parse_locator({"unit": "lines", "position": "12-15"})
    assert isinstance(line, LineLocator) and (line.line, line.line_end) == (12, 15)
    msg = parse_locator({"unit": "message", "position": "D1:3"})
    assert isinstance(msg, LineLocator) and msg.message_id == "D1:3" and msg.line is None


def test_cell_bounds():
    assert cell_bounds("A1") == (1, 1, 1, 1)
    assert cell_bounds("$B$2:AA10") == (2, 2, 27, 10)
    assert cell_bounds("D5:B2") == (2, 2, 4, 5)
    assert cell_bounds("A:C") == (1, 0, 3, 0)
    for bad in ("", "1A", "A1:", "A0", "ABCD1"):
        with pytest.raises(ValueError):
            cell_bounds(bad)


def test_unknown_units_are_kept_verbatim():
    raw = {"unit": "paragraph_hash", "position": {"h": "ab12"}}
    loc = parse_locator(raw)
    assert isinstance(loc, UnknownLocator)
    assert loc.unit == "paragraph_hash" and loc.value == {"h": "ab12"}
    assert loc.dump() == raw


@pytest.mark.parametrize(
    "raw",
    [
        {"unit": "page", "position": "abc"},
        {"unit": "page", "position": 0},
        {"unit": "page", "position": "5-3"},
        {"unit": "timestamp", "position": {"end": "00:00:03"}},
        {"unit": "timestamp", "position": "xx-yy"},
        {"unit": "cells", "position": "Sheet1!not-a-range"},
        {"unit": "region", "position": {"bbox": [5, 5, 1, 1]}},
        {"unit": "slide", "position": 0},
    ],
)
def test_malformed_known_units_are_kept_with_a_reason(raw):
    loc = parse_locator(raw)
    assert isinstance(loc, InvalidLocator)
    assert loc.error
    assert loc.dump() == raw


def test_changed_locator_is_written_canonically():
    loc = parse_locator({"unit": "page", "position": 4})
    assert isinstance(loc, PageLocator)
    loc.printed_page = "iv"
    assert loc.dump() == {"unit": "page", "position": {"system_page": 4, "printed_page": "iv"}}
    new = TimeRange(start=1.5, end=3)
    assert new.dump() == {"unit": "timestamp", "position": {"start": "00:00:01.500", "end": "00:00:03"}}
