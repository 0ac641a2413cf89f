"""The fact bank's names as they were when the bank was Python code: the data now lives in
``synth/personas/data/facts.json``, read and validated by `hippocamp.synth.personas.banks` on first access to a name."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hippocamp.synth.personas.banks import FactBank, FactSpec, Request, fact_bank

__all__ = ["BANK", "CATEGORY_ASK", "DESK_GROUPS", "THEME", "WORKING_GROUPS_SHIFT", "FactSpec", "Request"]

if TYPE_CHECKING:
    BANK: tuple[FactSpec, ...]
    THEME: dict[str, str]
    CATEGORY_ASK: dict[str, str]
    WORKING_GROUPS_SHIFT: tuple[str, ...]
    DESK_GROUPS: tuple[str, ...]

_NAMES = {
    "BANK": lambda b: b.facts,
    "THEME": lambda b: b.theme,
    "CATEGORY_ASK": lambda b: b.category_ask,
    "WORKING_GROUPS_SHIFT": lambda b: b.occupation_groups["shift_work"],
    "DESK_GROUPS": lambda b: b.occupation_groups["desk_work"],
}


def __getattr__(name: str) -> Any:
    if name not in _NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    bank: FactBank = fact_bank()
    value = globals()[name] = _NAMES[name](bank)
    return value
