"""Exact Kubernetes resource quantities.

A quantity is ``<signed decimal number><suffix>`` where the suffix is a binary SI suffix
(``Ki`` .. ``Ei``), a decimal SI suffix (``n u m "" k M G T P E``) or a decimal exponent
(``e3``, ``E-2``). Values are held as :class:`fractions.Fraction`, so nothing drifts the way
floats do. Like the Kubernetes API machinery, values finer than one nano-unit are rounded
up to the next nano-unit, and the canonical form keeps the *format family* the user wrote.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from fractions import Fraction
from math import ceil
from typing import Any, Callable, Literal, TypeVar, Union, cast

from policies.errors import InvalidQuantity

Format = Literal["BinarySI", "DecimalSI", "DecimalExponent"]

_BINARY: dict[str, int] = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL: dict[str, int] = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_SUFFIX_BY_EXP = {exp: s for s, exp in _DECIMAL.items()}
_BINARY_SUFFIX_BY_EXP = {exp: s for s, exp in _BINARY.items()}

_NUMBER = r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
_PATTERN = re.compile(rf"^({_NUMBER})(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$")
_NANO = Fraction(1, 10**9)
#: The largest magnitude a quantity may have: Kubernetes' Quantity is bounded by 2^63-1 (its int64
#: Value()); larger ones would overflow int64 arithmetic and float conversion (``1e309``).
MAX_QUANTITY = 2**63 - 1
#: The largest decimal exponent parsed (``1e1000000000`` would take the parser minutes to expand); any
#: exponent near it already gives a value beyond MAX_QUANTITY or below one nano-unit.
MAX_QUANTITY_EXPONENT = 1000

QuantityLike = Union[str, int, float, "Quantity"]


@dataclass(frozen=True, slots=True)
class Quantity:
    """An exact quantity and the format family it was written in."""

    value: Fraction
    format: Format = "DecimalSI"

    # ---------------------------------------------------------------- construction
    @classmethod
    def parse(cls, text: QuantityLike) -> "Quantity":
        if cls is Quantity:
            return _parse_text(text)  # texts remembered (remembered_for)
        return cls._parse(text)

    @classmethod
    def _parse(cls, text: QuantityLike) -> "Quantity":
        if isinstance(text, Quantity):
            return text
        if isinstance(text, bool):
            raise InvalidQuantity(text, "a boolean is not a quantity")
        if isinstance(text, int):
            return cls(Fraction(text), "DecimalSI")
        if isinstance(text, float):
            if text != text or text in (float("inf"), float("-inf")):
                raise InvalidQuantity(text, "not a finite number")
            # YAML gives floats for `0.5`; take the shortest decimal text, not the binary float.
            return cls.parse(repr(text))
        if not isinstance(text, str):
            raise InvalidQuantity(text, f"expected a string or number, got {type(text).__name__}")
        stripped = text.strip()
        match = _PATTERN.match(stripped)
        if not match:
            raise InvalidQuantity(text)
        number, suffix = match.group(1), match.group(2) or ""
        mantissa = Fraction(number)
        fmt: Format
        if suffix in _BINARY:
            value = mantissa * (1 << _BINARY[suffix])
            fmt = "BinarySI"
        elif suffix[:1] in ("e", "E") and suffix not in _DECIMAL:
            exponent = int(suffix[1:])
            if abs(exponent) > MAX_QUANTITY_EXPONENT:
                raise InvalidQuantity(text, f"exponent {exponent} is beyond MAX_QUANTITY_EXPONENT "
                                            f"(±{MAX_QUANTITY_EXPONENT})")
            value = mantissa * Fraction(10) ** exponent
            fmt = "DecimalExponent"
        else:
            value = mantissa * Fraction(10) ** _DECIMAL[suffix]
            fmt = "DecimalSI"
        return cls(_round_up_to_nano(value), fmt)

    # ---------------------------------------------------------------- views
    def milli_value(self) -> int:
        """Value in thousandths, rounded up (how cpu and extended resources are counted)."""
        return ceil(self.value * 1000)

    def int_value(self) -> int:
        """Value rounded up to a whole unit (how memory bytes and pods are counted)."""
        return ceil(self.value)

    def is_zero(self) -> bool:
        return self.value == 0

    def __float__(self) -> float:
        return float(self.value)

    def __str__(self) -> str:
        return self.canonical()

    # ---------------------------------------------------------------- canonical printing
    def canonical(self) -> str:
        """The canonical text, as the Kubernetes API machinery prints it."""
        value = self.value
        if value == 0:
            return "0"
        fmt = self.format
        if fmt == "BinarySI" and (abs(value) < 1024 or value.denominator != 1):
            fmt = "DecimalSI"
        if fmt == "BinarySI":
            number = value.numerator
            exp = 0
            while exp < 60 and number % 1024 == 0:
                number //= 1024
                exp += 10
            return f"{number}{_BINARY_SUFFIX_BY_EXP.get(exp, '')}"
        mantissa, exp = _decimal_mantissa(value, max_exp=None if fmt == "DecimalExponent" else 18)
        if fmt == "DecimalExponent":
            return f"{mantissa}e{exp}" if exp else f"{mantissa}"
        return f"{mantissa}{_DECIMAL_SUFFIX_BY_EXP[exp]}"


#: Distinct values a remembered conversion keeps (:func:`remembered_for`).
PARSE_CACHE_SIZE = 4096

_Fn = TypeVar("_Fn", bound=Callable[..., Any])


def remembered_for(kind: type, maxsize: int = PARSE_CACHE_SIZE) -> Callable[[_Fn], _Fn]:
    """Remember a pure conversion's results (``lru_cache``) for calls whose last argument is
    exactly of ``kind``: manifests and sessions repeat a few request texts and unit values
    endlessly, and each costs tens of microseconds of Fraction arithmetic. Other calls go straight
    through: ``True`` is not taken for the ``1`` it hashes like, and unhashable input still gets
    the function's own error. An exception is never remembered, so a bad value fails every time."""
    def decorate(fn: _Fn) -> _Fn:
        cached = functools.lru_cache(maxsize=maxsize)(fn)

        @functools.wraps(fn)
        def call(*args: Any) -> Any:
            return cached(*args) if type(args[-1]) is kind else fn(*args)
        return cast(_Fn, call)
    return decorate


@remembered_for(str)
def _parse_text(text: QuantityLike) -> Quantity:
    """:meth:`Quantity.parse`, texts parsed once (the result is immutable)."""
    return Quantity._parse(text)


def _round_up_to_nano(value: Fraction) -> Fraction:
    """Round away from zero to whole nano-units, as the API machinery does (``-1e-10`` -> ``-1n``)."""
    if (value / _NANO).denominator == 1:
        return value
    nanos = ceil(abs(value) / _NANO)
    return Fraction(nanos if value > 0 else -nanos) * _NANO


def _decimal_mantissa(value: Fraction, max_exp: int | None = 18) -> tuple[int, int]:
    """Integer mantissa and an exponent that is a multiple of 3, from -9 up to ``max_exp``.

    SI suffixes stop at ``E`` (10^18); decimal exponents (``1e21``) have no upper bound.
    """
    exp = -9
    mantissa = value * 10**9
    assert mantissa.denominator == 1, "values are rounded to nano units on parse"
    number = mantissa.numerator
    while (max_exp is None or exp < max_exp) and number % 1000 == 0:
        number //= 1000
        exp += 3
    return number, exp


def parse_quantity(text: QuantityLike) -> Quantity:
    """Parse a quantity; :class:`InvalidQuantity` names the text when it is not one."""
    return Quantity.parse(text)


def canonical(text: QuantityLike) -> str:
    """Canonical text for a quantity (``"1000m"`` -> ``"1"``, ``"1024Mi"`` -> ``"1Gi"``)."""
    return Quantity.parse(text).canonical()


def from_fraction(value: Fraction, fmt: Format = "DecimalSI") -> Quantity:
    return Quantity(_round_up_to_nano(value), fmt)
