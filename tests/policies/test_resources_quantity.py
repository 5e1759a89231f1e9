"""Exact quantities (policies.quantity) and Volcano-style resource vectors (policies.resources)."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from policies.errors import InvalidQuantity
from policies.quantity import Quantity, canonical, parse_quantity
from policies.resources import (
    TOLERANCE,
    Missing,
    ResourceVector,
    share,
    sum_vectors,
    to_internal,
    to_quantity_text,
)

BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
DECIMAL = {"n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "": Fraction(1),
           "k": Fraction(10**3), "M": Fraction(10**6), "G": Fraction(10**9), "T": Fraction(10**12),
           "P": Fraction(10**15), "E": Fraction(10**18)}

# --------------------------------------------------------------------------- parsing


@pytest.mark.parametrize("suffix", sorted(BINARY))
def test_every_binary_suffix(suffix: str) -> None:
    q = Quantity.parse(f"3{suffix}")
    assert q.value == 3 * BINARY[suffix]
    assert q.format == "BinarySI"


@pytest.mark.parametrize("suffix", sorted(DECIMAL))
def test_every_decimal_suffix(suffix: str) -> None:
    q = Quantity.parse(f"7{suffix}")
    assert q.value == 7 * DECIMAL[suffix]
    assert q.format == "DecimalSI"


@pytest.mark.parametrize(("text", "value"), [
    ("1e3", 1000), ("1E3", 1000), ("2.5e2", 250), ("1e-3", Fraction(1, 1000)), ("5E+2", 500), ("3e0", 3),
])
def test_decimal_exponents(text: str, value: Fraction) -> None:
    q = Quantity.parse(text)
    assert q.value == value and q.format == "DecimalExponent"


def test_capital_e_alone_is_exa_not_an_exponent() -> None:
    assert Quantity.parse("2E").value == 2 * 10**18


@pytest.mark.parametrize(("text", "value"), [
    ("0.1", Fraction(1, 10)), (".5", Fraction(1, 2)), ("5.", 5), ("+1", 1), ("-1.5Gi", -3 * 2**29),
    ("0.3", Fraction(3, 10)), ("1.1", Fraction(11, 10)),
])
def test_decimal_numbers_are_exact(text: str, value: Fraction) -> None:
    assert Quantity.parse(text).value == value


def test_no_float_drift_when_adding_tenths() -> None:
    total = sum((Quantity.parse("0.1").value for _ in range(10)), Fraction(0))
    assert total == 1


@pytest.mark.parametrize(("given_", "value"), [(4, 4), (0.5, Fraction(1, 2)), (0.1, Fraction(1, 10)), (1e-05, Fraction(1, 100000))])
def test_yaml_numbers_are_read_by_their_shortest_text(given_: float, value: Fraction) -> None:
    assert Quantity.parse(given_).value == value


@pytest.mark.parametrize(("text", "value"), [
    ("1e-10", Fraction(1, 10**9)), ("0.0000000001", Fraction(1, 10**9)), ("1.5n", Fraction(2, 10**9)),
    ("-1e-10", Fraction(-1, 10**9)),
])
def test_finer_than_nano_rounds_away_from_zero(text: str, value: Fraction) -> None:
    assert Quantity.parse(text).value == value


@pytest.mark.parametrize("text", ["", "abc", "1.5.0", "64 cores", "1Kb", "1KiB", "Gi", "1e", "--1", "1 Gi",
                                  "1ki", "1m1", "0x10", "1_000"])
def test_invalid_text_errors_name_the_text(text: str) -> None:
    with pytest.raises(InvalidQuantity) as info:
        Quantity.parse(text)
    assert repr(text) in str(info.value)
    assert info.value.text == text


@pytest.mark.parametrize("value", [True, None, [1], float("nan"), float("inf")])
def test_non_quantities_are_rejected(value: object) -> None:
    with pytest.raises(InvalidQuantity):
        Quantity.parse(value)  # type: ignore[arg-type]


def test_invalid_quantity_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        parse_quantity("x")


# --------------------------------------------------------------------------- canonical printing


@pytest.mark.parametrize(("text", "expected"), [
    ("1000m", "1"), ("1500m", "1500m"), ("0.5", "500m"), ("1000", "1k"), ("1024", "1024"), ("1500000", "1500k"),
    ("1024Mi", "1Gi"), ("1.5Gi", "1536Mi"), ("1536Mi", "1536Mi"), ("512", "512"), ("1023Ki", "1023Ki"),
    ("0.5Ki", "512"), ("0.1Ki", "102400m"), ("1024Ei", "1024Ei"), ("-1Ki", "-1Ki"),
    ("1e3", "1e3"), ("1.5e3", "1500"), ("12e6", "12e6"), ("1e-3", "1e-3"), ("1e21", "1e21"),
    ("0", "0"), ("0Mi", "0"), ("0e3", "0"), ("1E", "1E"), ("1000E", "1000E"), ("100n", "100n"),
    ("0.0001m", "100n"), ("-0.5m", "-500u"),
])
def test_canonical_text(text: str, expected: str) -> None:
    assert canonical(text) == expected
    assert str(Quantity.parse(text)) == expected


@given(
    mantissa=st.integers(min_value=-(10**12), max_value=10**12),
    decimals=st.integers(min_value=0, max_value=4),
    suffix=st.sampled_from([*BINARY, *DECIMAL, "e3", "e-2", "E6", "e0"]),
)
def test_round_trip_through_canonical_text(mantissa: int, decimals: int, suffix: str) -> None:
    digits = str(abs(mantissa)).rjust(decimals + 1, "0")
    number = digits if decimals == 0 else f"{digits[:-decimals]}.{digits[-decimals:]}"
    text = ("-" if mantissa < 0 else "") + number + suffix
    parsed = Quantity.parse(text)
    # the value is what the text says, up to rounding to whole nano-units away from zero
    if suffix in BINARY:
        scale = Fraction(BINARY[suffix])
    elif suffix in DECIMAL:
        scale = DECIMAL[suffix]
    else:
        scale = Fraction(10) ** int(suffix[1:])
    exact = Fraction(mantissa, 10**decimals) * scale
    assert abs(parsed.value - exact) < Fraction(1, 10**9)
    # canonical text parses back to the same value and is a fixed point
    again = Quantity.parse(parsed.canonical())
    assert again.value == parsed.value
    assert again.canonical() == parsed.canonical()


@given(st.integers(min_value=0, max_value=2**70))
def test_integer_bytes_round_trip_in_binary_form(n: int) -> None:
    q = Quantity.parse(f"{n}Ki")
    assert Quantity.parse(q.canonical()).value == n * 1024


def test_milli_and_int_values_round_up() -> None:
    assert Quantity.parse("1.0001m").milli_value() == 2
    assert Quantity.parse("100m").milli_value() == 100
    assert Quantity.parse("1.5").int_value() == 2
    assert Quantity.parse("1Gi").int_value() == 2**30


# --------------------------------------------------------------------------- units


@pytest.mark.parametrize(("name", "text", "internal"), [
    ("cpu", "500m", 500), ("cpu", "2", 2000), ("memory", "1Gi", 2**30), ("memory", "1.5", 2), ("pods", "110", 110),
    ("nvidia.com/gpu", "1", 1000), ("nvidia.com/gpumem", 10, 10000), ("ephemeral-storage", "1Ki", 1024000),
    ("hugepages-2Mi", "2Mi", 2 * 2**20 * 1000),
])
def test_internal_units_follow_volcano(name: str, text: str, internal: float) -> None:
    assert to_internal(name, text) == internal


@pytest.mark.parametrize(("name", "value", "text"), [
    ("cpu", 1500, "1500m"), ("cpu", 2000, "2"), ("memory", 2**30, "1Gi"), ("pods", 110, "110"),
    ("nvidia.com/gpu", 8000, "8"),
])
def test_quantity_text_inverts_internal(name: str, value: float, text: str) -> None:
    assert to_quantity_text(name, value) == text
    assert to_internal(name, text) == value


def test_from_resource_list_skips_quota_counters_and_round_trips() -> None:
    v = ResourceVector.from_resource_list({"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": 2, "count/pods": "10"})
    assert dict(v) == {"cpu": 4000, "memory": 8 * 2**30, "nvidia.com/gpu": 2000}
    assert v.to_resource_list() == {"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": "2"}


def test_invalid_quantity_in_a_resource_list_is_reported() -> None:
    with pytest.raises(InvalidQuantity, match="'4 GPUs'"):
        ResourceVector.from_resource_list({"nvidia.com/gpu": "4 GPUs"})


# --------------------------------------------------------------------------- arithmetic


def rv(**values: float) -> ResourceVector:
    return ResourceVector({k.replace("_", "/"): v for k, v in values.items()})


GPU = "nvidia/gpu"  # rv() spelling of a scalar name


def test_add_sub_scale_are_per_dimension_and_immutable() -> None:
    a, b = rv(cpu=1000, memory=10), rv(cpu=500, nvidia_gpu=2000)
    assert dict(a + b) == {"cpu": 1500, "memory": 10, GPU: 2000}
    assert dict(a - b) == {"cpu": 500, "memory": 10, GPU: -2000}
    assert dict(a.scale(2)) == {"cpu": 2000, "memory": 20}
    assert dict(a) == {"cpu": 1000, "memory": 10}
    assert dict((a - b).clamp_zero()) == {"cpu": 500, "memory": 10, GPU: 0}


def test_max_min_and_exceeded_part() -> None:
    a, b = rv(cpu=1000, nvidia_gpu=1000), rv(cpu=2000, memory=5)
    assert dict(a.max_with(b)) == {"cpu": 2000, "memory": 5, GPU: 1000}
    assert dict(a.exceeded_part(b)) == {"cpu": 0, GPU: 1000}
    assert sum_vectors([a, b, a]) == rv(cpu=4000, memory=5, nvidia_gpu=2000)


def test_min_with_missing_zero_versus_infinity() -> None:
    left, right = rv(cpu=1000, nvidia_gpu=4000), rv(memory=1)
    # the scalar absent on the right: zero versus unlimited; cpu absent always reads as 0
    assert dict(left.min_with(right, Missing.ZERO)) == {"cpu": 0, GPU: 0}
    assert dict(left.min_with(right, Missing.INFINITY)) == {"cpu": 0, GPU: 4000}
    assert dict(left.min_with(rv(cpu=500, nvidia_gpu=8000))) == {"cpu": 500, GPU: 4000}


def test_missing_scalar_reads_zero_or_infinite_in_less_equal() -> None:
    request, capacity = rv(cpu=1000, nvidia_gpu=1000), rv(cpu=4000)
    assert not request.less_equal(capacity, Missing.ZERO)
    assert request.less_equal(capacity, Missing.INFINITY)
    # Infinity: the right having a scalar the left lacks makes it false (Volcano's rule)
    assert not rv(cpu=1000).less_equal(rv(cpu=4000, nvidia_gpu=1), Missing.INFINITY)
    assert rv(cpu=1000).less_equal(rv(cpu=4000, nvidia_gpu=1), Missing.ZERO)


def test_less_equal_is_tolerant_by_one_tenth() -> None:
    assert rv(cpu=1000.05).less_equal(rv(cpu=1000))
    assert not rv(cpu=1000 + TOLERANCE * 2).less_equal(rv(cpu=1000))
    assert rv(cpu=1, memory=0.09).fits_in(rv(cpu=1))


def test_cpu_and_memory_are_always_compared() -> None:
    assert not rv(memory=10).less_equal(rv(), Missing.INFINITY)


def test_insufficient_names_what_does_not_fit() -> None:
    request = rv(cpu=4000, memory=10, nvidia_gpu=2000, pods=1)
    assert request.insufficient(rv(cpu=8000, memory=5, pods=0)) == ["memory", GPU, "pods"]
    assert request.insufficient(request) == []


def test_less_equal_in_requested_is_strict_and_ignores_unrequested_and_pods() -> None:
    used = rv(cpu=1000.05, memory=100, pods=200)
    assert not used.less_equal_in_requested(rv(cpu=1000, memory=0, pods=0), rv(cpu=1))
    assert used.less_equal_in_requested(rv(cpu=1001), rv(cpu=1, pods=1))


def test_tolerant_equal_and_exact_equal() -> None:
    assert rv(cpu=1000).tolerant_equal(rv(cpu=1000.05, memory=0.01))
    assert rv(cpu=1000) != rv(cpu=1000.05)
    assert rv(cpu=1000, memory=0) == rv(cpu=1000)
    assert hash(rv(cpu=1000, memory=0)) == hash(rv(cpu=1000))


def test_is_empty_ignores_pods_and_tiny_amounts() -> None:
    assert rv(pods=1).is_empty()
    assert rv(cpu=0.05, nvidia_gpu=0.09, pods=3).is_empty()
    assert not rv(nvidia_gpu=1000, pods=1).is_empty()
    assert rv().is_empty()


def test_names_include_pods_and_skip_tiny() -> None:
    assert rv(cpu=1000, memory=0.01, pods=1).names() == ["cpu", "pods"]


def test_share_edge_cases() -> None:
    assert share(5, 10) == 0.5
    assert share(0, 0) == 0.0
    assert share(1, 0) == 1.0


def test_dominant_share_matches_the_seed_drf_example() -> None:
    total = ResourceVector.from_resource_list({"cpu": "100", "nvidia.com/gpu": "32"})
    job_a = ResourceVector.from_resource_list({"cpu": "4", "nvidia.com/gpu": "8"})
    job_b = ResourceVector.from_resource_list({"cpu": "20", "nvidia.com/gpu": "2"})
    assert job_a.dominant_share(total) == ("nvidia.com/gpu", pytest.approx(0.25))
    assert job_b.dominant_share(total) == ("cpu", pytest.approx(0.20))


def test_dominant_share_counts_only_resources_of_the_total() -> None:
    # Volcano iterates the total's resource names: a resource the cluster lacks does not count
    total = rv(cpu=10000)
    assert rv(cpu=1000, nvidia_gpu=1000).dominant_share(total) == ("cpu", pytest.approx(0.1))
    assert rv().dominant_share(total) == ("", 0.0)


@pytest.mark.parametrize("text", ["12x", "1e1001", "", "--1", "1 Gi"])
def test_a_bad_quantity_fails_every_time_it_is_read(text: str) -> None:
    # texts are parsed once and remembered: an error must not be remembered as a value
    for _ in range(2):
        with pytest.raises(InvalidQuantity):
            Quantity.parse(text)
        with pytest.raises(ValueError):
            to_internal("cpu", text)


@pytest.mark.parametrize("value", ["500m", "1Gi", "8", 4, 0.5])
def test_remembered_quantities_equal_fresh_parses(value: object) -> None:
    fresh = Quantity._parse(value)  # type: ignore[arg-type]
    assert Quantity.parse(value) == Quantity.parse(value) == fresh  # type: ignore[arg-type]
    assert to_internal("memory", value) == to_internal("memory", value)  # type: ignore[arg-type]
    with pytest.raises(InvalidQuantity):
        Quantity.parse(True)  # a boolean is no quantity, even after 1 was read
