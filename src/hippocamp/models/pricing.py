"""Prices per million tokens, to turn usage into cost. Users extend the table with a JSON file
(``$HIPPOCAMP_PRICES`` or ``~/.config/hippocamp/prices.json``) mapping a model name, or a prefix
ending in ``*``, to ``{"input": USD per 1M, "output": USD per 1M}``. Local and mock models cost 0;
a hosted model with no price has cost None (unknown), never 0."""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path

from hippocamp.paths import config_dir

__all__ = ["PriceError", "cost_usd", "price_table"]

#: USD per 1M tokens (input, output) of some hosted models, as published by their providers
BUILTIN_PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "o4-mini": (1.10, 4.40),
}


class PriceError(ValueError):
    """A price file that cannot be read."""


@lru_cache(maxsize=8)
def _load(path: str) -> dict[str, tuple[float, float]]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise PriceError(f"{path}: cannot read the price table: {exc}") from None
    out = {}
    for name, entry in data.items():
        try:
            out[name] = (float(entry["input"]), float(entry["output"]))
        except (KeyError, TypeError, ValueError):
            raise PriceError(f"{path}: entry {name!r} needs numbers 'input' and 'output' (USD per 1M tokens)") from None
    return out


def price_table() -> dict[str, tuple[float, float]]:
    table = dict(BUILTIN_PRICES)
    path = os.environ.get("HIPPOCAMP_PRICES") or str(config_dir() / "prices.json")
    if Path(path).is_file():
        table.update(_load(path))
    return table


def cost_usd(provider: str, name: str, input_tokens: int, output_tokens: int) -> float | None:
    """Cost of one call; 0 for local and mock models, None when a hosted model has no known price."""
    if provider in ("local", "mock"):
        return 0.0
    table = price_table()
    price = table.get(name)
    if price is None:
        prefixes = [k for k in table if k.endswith("*") and name.startswith(k[:-1])]
        price = table[max(prefixes, key=len)] if prefixes else None
    if price is None:
        return None
    return (input_tokens * price[0] + output_tokens * price[1]) / 1_000_000
