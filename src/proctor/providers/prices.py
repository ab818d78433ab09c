"""Price table: USD per million input / output tokens, per `provider/model`.

proctor.toml `[prices."provider/model"] input = 2.0  output = 8.0` overrides the defaults
below (keys may be globs: `[prices."ollama/*"] input = 0  output = 0`). A model without a
price has cost None, never 0: an unknown cost must not look like a free one.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from proctor.config import ProctorConfig

T = TypeVar("T")

# List prices published by the vendors, as of 2025-10 (standard tier, no caching or batch
# discounts). Check the vendors' pricing pages before quoting costs; override in proctor.toml.
PRICES_AS_OF = "2025-10"
DEFAULT_PRICES: dict[str, tuple[float, float]] = {
    "openai/gpt-5": (1.25, 10.00),
    "openai/gpt-5-mini": (0.25, 2.00),
    "openai/gpt-5-nano": (0.05, 0.40),
    "openai/gpt-4.1": (2.00, 8.00),
    "openai/gpt-4.1-mini": (0.40, 1.60),
    "openai/gpt-4.1-nano": (0.10, 0.40),
    "openai/gpt-4o": (2.50, 10.00),
    "openai/gpt-4o-mini": (0.15, 0.60),
    "openai/o3": (2.00, 8.00),
    "openai/o4-mini": (1.10, 4.40),
    "anthropic/claude-opus-4-1": (15.00, 75.00),
    "anthropic/claude-opus-4": (15.00, 75.00),
    "anthropic/claude-sonnet-4-5": (3.00, 15.00),
    "anthropic/claude-sonnet-4": (3.00, 15.00),
    "anthropic/claude-haiku-4-5": (1.00, 5.00),
    "anthropic/claude-3-5-haiku": (0.80, 4.00),
    "mock/*": (0.0, 0.0),  # scripted models really are free
}

# "claude-sonnet-4-5-20250929", "gpt-4o-2024-08-06", "claude-3-5-haiku-latest" price as their base name.
_SNAPSHOT = re.compile(r"-(\d{8}|\d{4}-\d{2}-\d{2}|latest)$")


_GLOB = frozenset("*?[")  # a key holding any of these is a pattern


def _lookup(table: Mapping[str, T], model: str) -> T | None:
    if model in table:
        return table[model]
    for pattern, value in table.items():
        if not _GLOB.isdisjoint(pattern) and fnmatch.fnmatchcase(model, pattern):
            return value
    return None


def price_of(model: str, config: ProctorConfig | None = None) -> tuple[float, float] | None:
    """(input, output) USD per million tokens, or None when unknown."""
    names = (model, _SNAPSHOT.sub("", model))
    for name in names:  # configuration first, whatever the defaults say
        entry = _lookup(config.prices, name) if config is not None else None
        if entry is not None:
            return entry.input, entry.output
    for name in names:
        found = _lookup(DEFAULT_PRICES, name)
        if found is not None:
            return found
    return None


def cost_usd(price: tuple[float, float] | None, tokens_in: int, tokens_out: int) -> float | None:
    if price is None:
        return None
    return (tokens_in * price[0] + tokens_out * price[1]) / 1_000_000
