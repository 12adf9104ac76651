"""Kubernetes ``resource.Quantity`` parsing.

The API sends quantities as strings such as ``"250m"``, ``"1.5Gi"`` or ``"1e3"``; YAML written by hand may
also reach us as plain numbers. Grammar (k8s.io/apimachinery/pkg/api/resource): an optional sign, a decimal
number, then at most one suffix: binary SI (Ki Mi Gi Ti Pi Ei), decimal SI (n u m k M G T P E) or a decimal
exponent (e3, E-2). Like ``Quantity.Value()`` and ``Quantity.MilliValue()``, results are integers rounded
up, so a request of ``"0.5"`` bytes counts as one byte and never as zero.
"""

from __future__ import annotations

import functools
import math
import re
from decimal import Decimal
from fractions import Fraction

__all__ = ["QuantityError", "parse_milli", "parse_quantity", "parse_value"]

_QUANTITY = re.compile(
    r"^(?P<number>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$"
)

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL_EXPONENT = {"n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}


class QuantityError(ValueError):
    """A value that is not a Kubernetes quantity; the message quotes the value and the accepted forms."""


def parse_quantity(value: str | float) -> Fraction:
    """Return the exact value of a quantity as a Fraction (``"1.5Gi"`` -> 1610612736)."""
    if isinstance(value, bool):  # bool is an int subclass; True is not a quantity
        raise QuantityError(f"{value!r} is not a quantity (expected e.g. '500m', '2', '1Gi')")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(f"{value!r} is not a finite quantity")
        return Fraction(Decimal(repr(value)))
    if not isinstance(value, str):
        raise QuantityError(f"{value!r} is not a quantity (expected a string such as '500m' or '1Gi')")
    match = _QUANTITY.match(value)
    if match is None:
        raise QuantityError(
            f"{value!r} is not a quantity (expected a number with an optional suffix: "
            "n u m k M G T P E, Ki Mi Gi Ti Pi Ei, or an exponent like 1e3)"
        )
    number = Fraction(Decimal(match["number"]))  # the regex admits only what Decimal parses
    suffix = match["suffix"]
    if not suffix:
        return number
    if suffix in _BINARY:
        return number * _BINARY[suffix]
    exponent = _DECIMAL_EXPONENT[suffix] if suffix in _DECIMAL_EXPONENT else int(suffix[1:])
    return number * Fraction(10) ** exponent


def parse_value(value: str | float) -> int:
    """Quantity as a whole number rounded up, like ``Quantity.Value()`` (memory, storage, extended)."""
    if isinstance(value, str):
        return _value_of_text(value)
    return math.ceil(parse_quantity(value))


def parse_milli(value: str | float) -> int:
    """Quantity in thousandths rounded up, like ``Quantity.MilliValue()`` (cpu: ``"0.5"`` -> 500)."""
    if isinstance(value, str):
        return _milli_of_text(value)
    return math.ceil(parse_quantity(value) * 1000)


# Clusters repeat a handful of quantity strings ("100m", "128Mi") across thousands of pods; caching the
# parse of the text (pure, bounded) makes a relist of 10,000 pods several times cheaper.
@functools.lru_cache(maxsize=4096)
def _value_of_text(text: str) -> int:
    return math.ceil(parse_quantity(text))


@functools.lru_cache(maxsize=4096)
def _milli_of_text(text: str) -> int:
    return math.ceil(parse_quantity(text) * 1000)
