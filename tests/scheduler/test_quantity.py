"""Kubernetes quantities: every suffix, exponents, rounding up like Quantity.Value()/MilliValue()."""

from __future__ import annotations

from fractions import Fraction

import pytest

from scheduler.quantity import QuantityError, parse_milli, parse_quantity, parse_value


@pytest.mark.parametrize(
    ("text", "exact"),
    [
        ("0", Fraction(0)),
        ("1", Fraction(1)),
        ("250m", Fraction(1, 4)),
        ("100n", Fraction(1, 10_000_000)),
        ("5u", Fraction(5, 1_000_000)),
        ("2k", Fraction(2000)),
        ("3M", Fraction(3 * 10**6)),
        ("1G", Fraction(10**9)),
        ("1T", Fraction(10**12)),
        ("1P", Fraction(10**15)),
        ("1E", Fraction(10**18)),
        ("1Ki", Fraction(1024)),
        ("64Mi", Fraction(64 * 2**20)),
        ("1.5Gi", Fraction(3 * 2**29)),
        ("2Ti", Fraction(2 * 2**40)),
        ("1Pi", Fraction(2**50)),
        ("1Ei", Fraction(2**60)),
        ("1e3", Fraction(1000)),
        ("1E3", Fraction(1000)),
        ("12e-1", Fraction(6, 5)),
        ("1.5e+2", Fraction(150)),
        (".5", Fraction(1, 2)),
        ("5.", Fraction(5)),
        ("+7", Fraction(7)),
        (2, Fraction(2)),
        (0.5, Fraction(1, 2)),
    ],
)
def test_parse_quantity_exact(text, exact):
    assert parse_quantity(text) == exact


@pytest.mark.parametrize(
    ("text", "milli", "value"),
    [
        ("250m", 250, 1),  # Value() rounds up: a quarter core is never "0 cores"
        ("0.5", 500, 1),
        ("1", 1000, 1),
        ("100n", 1, 1),  # MilliValue() rounds up too
        ("1.5Gi", 1610612736000, 1610612736),
        ("1e3", 1_000_000, 1000),
        ("0", 0, 0),
    ],
)
def test_milli_and_value_round_up(text, milli, value):
    assert parse_milli(text) == milli
    assert parse_value(text) == value


@pytest.mark.parametrize(
    "bad",
    ["", "abc", "1.2.3", "1Kb", "1ki", "1 Gi", " 1", "1e", "--1", "1m1", "Gi", "1GiB", True, None, [1], float("nan")],
)
def test_malformed_quantity_names_the_value(bad):
    with pytest.raises(QuantityError) as err:
        parse_quantity(bad)
    assert repr(bad) in str(err.value)
