"""Statistics against published values (and the exact fractions they come from)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from proctor.stats import Z95, fisher_exact, holm, hypergeom_pmf, newcombe_diff, quantile, wilson


@pytest.mark.parametrize(("passed", "n", "lo", "hi"), [
    (81, 263, 0.2553, 0.3662),  # Newcombe (1998a), Table I
    (15, 148, 0.0624, 0.1605),
    (0, 20, 0.0, 0.1611),
    (1, 29, 0.0061, 0.1718),
])
def test_wilson_matches_newcombe_1998(passed, n, lo, hi):
    got = wilson(passed, n)
    assert got == pytest.approx((lo, hi), abs=5e-5)


def test_wilson_edges():
    assert wilson(0, 0) == (0.0, 1.0)
    lo, hi = wilson(10, 10)
    assert hi == 1.0 and lo == pytest.approx(10 / (10 + Z95**2))  # closed form at n/n
    assert wilson(0, 10)[0] == 0.0


@pytest.mark.parametrize(("table", "p"), [
    ((3, 1, 1, 3), Fraction(34, 70)),  # Fisher's lady tasting tea: 0.4857
    ((10, 0, 2, 8), Fraction(132, 184756)),  # by hand: (C(12,10) + C(12,2)) / C(20,10)
    ((8, 2, 1, 5), Fraction(280, 8008)),  # by hand: (84 + 189 + 7) / C(16,10) = 0.03497
    ((5, 0, 1, 4), Fraction(12, 252)),  # 5/5 vs 1/5: just under 0.05
    ((5, 0, 0, 5), Fraction(2, 252)),
])
def test_fisher_exact_hand_computed(table, p):
    assert fisher_exact(*table) == pytest.approx(float(p), rel=1e-12)


@pytest.mark.parametrize(("table", "p"), [
    ((2, 10, 15, 3), 0.0005367),  # R: fisher.test(Convictions)
    ((1, 9, 11, 3), 0.002759),  # the textbook dieting example (Wikipedia)
])
def test_fisher_exact_published(table, p):
    assert fisher_exact(*table) == pytest.approx(p, abs=5e-7)


def test_fisher_exact_symmetries_and_edges():
    t = (7, 3, 2, 9)
    p = fisher_exact(*t)
    assert fisher_exact(3, 7, 9, 2) == pytest.approx(p)  # columns swapped
    assert fisher_exact(2, 9, 7, 3) == pytest.approx(p)  # rows swapped
    assert fisher_exact(7, 2, 3, 9) == pytest.approx(p)  # transposed
    assert fisher_exact(0, 0, 0, 0) == 1.0
    assert fisher_exact(5, 0, 5, 0) == 1.0  # nobody failed: no evidence
    assert fisher_exact(4, 4, 4, 4) == 1.0
    with pytest.raises(ValueError):
        fisher_exact(-1, 0, 0, 0)


def test_hypergeom_pmf_sums_to_one():
    total = sum(hypergeom_pmf(k, 20, 12, 10) for k in range(0, 11))
    assert total == 1
    assert hypergeom_pmf(10, 20, 12, 10) == Fraction(66, 184756)
    assert hypergeom_pmf(1, 20, 12, 10) == 0  # needs at least 2 successes in the draw


def test_newcombe_difference_interval():
    # Newcombe (1998b) Table II, example (a): 56/70 vs 48/80, method 10: 0.0524 to 0.3339.
    assert newcombe_diff(48, 80, 56, 70) == pytest.approx((0.0524, 0.3339), abs=5e-5)
    lo, hi = newcombe_diff(10, 10, 0, 10)
    assert -1.0 <= lo < hi < 0


def test_holm():
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([]) == []
    assert holm([0.9, 0.8]) == pytest.approx([1.0, 1.0])


def test_quantile():
    assert quantile([], 0.5) is None
    assert quantile([3, 1, 2], 0.5) == 2
    assert quantile([0, 10], 0.9) == pytest.approx(9)
