"""Honest statistics for small samples: Wilson intervals for pass rates."""

from __future__ import annotations

import math

Z95 = 1.959963984540054


def wilson(passed: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion; (0, 1) when there are no trials.

    Unlike the normal approximation it stays inside [0, 1] and is not degenerate at 0/n or n/n,
    which is where agent pass rates usually live."""
    if n <= 0:
        return (0.0, 1.0)
    p = passed / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))
