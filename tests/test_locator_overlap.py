"""`overlaps`: when two locators point at the same content."""

from __future__ import annotations

import pytest

from hippocamp.schema.locators import overlaps, parse_locator


def loc(unit: str, position: object) -> object:
    return parse_locator({"unit": unit, "position": position})


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (("page", 3), ("page", {"system_page": 3, "printed_page": "1"}), True),
        (("page", 3), ("page", 4), False),
        (("slide", 2), ("slide", 2), True),
        (("cells", "Oct!A2:B5"), ("cells", "Oct!A1:C30"), True),
        (("cells", "Oct!A2:B5"), ("cells", "Sep!A1:C30"), False),
        (("cells", "Oct!A2:B5"), ("cells", "Oct!A6:B9"), False),
        (("line", "4-7"), ("line", "7-9"), True),
        (("line", "4-7"), ("line", "8-9"), False),
        (("line", "4-7"), ("paragraph", "4-7"), False),
        (("region", {"bbox": [0, 0, 10, 10], "box_units": "px"}), ("region", {"bbox": [5, 5, 20, 20]}), True),
        (("region", {"bbox": [0, 0, 10, 10], "box_units": "px"}), ("region", {"bbox": [11, 0, 20, 10]}), False),
        (("timestamp", {"start": 1.0, "end": 3.0}), ("timestamp", {"start": 2.5, "end": 9}), True),
        (("timestamp", {"start": 1.0, "end": 3.0}), ("timestamp", {"start": 3.5, "end": 9}), False),
        (("page", 1), ("slide", 1), False),
    ],
)
def test_overlaps(a: tuple[str, object], b: tuple[str, object], expected: bool) -> None:
    assert overlaps(loc(*a), loc(*b)) is expected
    assert overlaps(loc(*b), loc(*a)) is expected


def test_time_slack() -> None:
    a, b = loc("timestamp", {"start": 1.0, "end": 3.0}), loc("timestamp", {"start": 3.5, "end": 9})
    assert overlaps(a, b, slack=1.0)
