"""Parsing and formatting of sizes, rates and durations."""

import pytest

from innet.exceptions import UnitError
from innet.units import (
    format_duration,
    format_rate,
    format_size,
    parse_duration,
    parse_rate,
    parse_size,
    parse_size_range,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("64MB", 64_000_000),
        ("1.5GB", 1_500_000_000),
        ("1.5 GB", 1_500_000_000),
        ("800 kB", 800_000),
        ("800KB", 800_000),
        ("512B", 512),
        ("2TB", 2 * 10**12),
        ("4 GiB", 4 * 2**30),
        ("1.5KiB", 1536),
        ("1MiB", 2**20),
        ("1 TiB", 2**40),
    ],
)
def test_parse_size_accepts_si_and_binary_units(text: str, expected: int) -> None:
    assert parse_size(text) == expected


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("64", "has no unit"),
        ("64 mb", "unknown size unit 'mb'"),
        ("64kb", "unknown size unit 'kb'"),
        ("64 Mbps", "unknown size unit 'Mbps'"),
        ("0MB", "must be positive"),
        ("-1MB", "must be positive"),
        ("1.5 B", "whole number of bytes"),
        ("MB", "not a size"),
        ("", "not a size"),
    ],
)
def test_parse_size_rejects_with_reason_and_units(text: str, reason: str) -> None:
    with pytest.raises(UnitError) as caught:
        parse_size(text)
    message = str(caught.value)
    assert reason in message
    assert repr(text) in message
    if "unit" in reason:
        assert "KiB" in message and "GB" in message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("10Gbps", 10e9),
        ("10 Gb/s", 10e9),
        ("10Gbit/s", 10e9),
        ("10gbit", 10e9),
        ("10Gbit", 10e9),
        ("100Mbit", 100e6),
        ("800kbit", 800e3),
        ("1.5 Mbps", 1.5e6),
        ("1Tbps", 1e12),
        ("100 bps", 100.0),
        ("64 Kbps", 64e3),
    ],
)
def test_parse_rate_accepts_bit_rates(text: str, expected: float) -> None:
    assert parse_rate(text) == pytest.approx(expected)


def test_parse_rate_rejects_gbs_naming_the_unit_and_the_accepted_ones() -> None:
    with pytest.raises(UnitError) as caught:
        parse_rate("10 Gbs")
    message = str(caught.value)
    assert "'Gbs'" in message
    assert "'10 Gbs'" in message
    for unit in ("Gbps", "Gb/s", "Gbit/s", "gbit"):
        assert unit in message


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("10mbps", "unknown rate unit 'mbps'"),  # bytes per second in tc: ambiguous
        ("10 GB", "unknown rate unit 'GB'"),
        ("10", "has no unit"),
        ("0Gbps", "must be positive"),
        ("-5 Mbit", "must be positive"),
    ],
)
def test_parse_rate_rejects(text: str, reason: str) -> None:
    with pytest.raises(UnitError, match=reason):
        parse_rate(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("35ms", 0.035),
        ("2.5 s", 2.5),
        ("850us", 850e-6),
        ("850 µs", 850e-6),
        ("850μs", 850e-6),
        ("10ns", 10e-9),
    ],
)
def test_parse_duration(text: str, expected: float) -> None:
    assert parse_duration(text) == pytest.approx(expected)


def test_parse_duration_zero_only_when_allowed() -> None:
    with pytest.raises(UnitError, match="must be positive"):
        parse_duration("0ms")
    assert parse_duration("0ms", allow_zero=True) == 0.0
    with pytest.raises(UnitError, match="must not be negative"):
        parse_duration("-1ms", allow_zero=True)


@pytest.mark.parametrize(("text", "reason"), [("35", "has no unit"), ("3 min", "'min'")])
def test_parse_duration_rejects(text: str, reason: str) -> None:
    with pytest.raises(UnitError, match=reason) as caught:
        parse_duration(text)
    assert "ms" in str(caught.value) and "µs" in str(caught.value)


def test_parse_size_range() -> None:
    assert parse_size_range("1MB..8GB") == (10**6, 8 * 10**9)
    assert parse_size_range("1 KiB .. 2 KiB") == (1024, 2048)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("8GB..1MB", "below the high end"),
        ("1MB..1MB", "below the high end"),
        ("1MB-8GB", "LOW..HIGH"),
        ("1MB..8GB..9GB", "LOW..HIGH"),
        ("1MB..8", "has no unit"),
    ],
)
def test_parse_size_range_rejects(text: str, reason: str) -> None:
    with pytest.raises(UnitError, match=reason):
        parse_size_range(text)


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (64e6, "64 MB"),
        (1.5e9, "1.5 GB"),
        (800e3, "800 kB"),
        (512, "512 B"),
        (1_234_567, "1.23 MB"),
        (999_999, "1 MB"),
        (125e6, "125 MB"),
        (0, "0 B"),
        (float("inf"), "inf B"),
    ],
)
def test_format_size(n: float, text: str) -> None:
    assert format_size(n) == text


@pytest.mark.parametrize(
    ("bps", "text"), [(10e9, "10 Gb/s"), (2.5e6, "2.5 Mb/s"), (100e9, "100 Gb/s"), (999, "999 b/s")]
)
def test_format_rate(bps: float, text: str) -> None:
    assert format_rate(bps) == text


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0.035, "35.0 ms"),
        (2.41, "2.41 s"),
        (850e-6, "850 µs"),
        (0.0009996, "1.00 ms"),
        (12e-9, "12.0 ns"),
        (0.1234, "123 ms"),
        (0, "0 s"),
        (float("inf"), "inf s"),
    ],
)
def test_format_duration(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


@pytest.mark.parametrize("n", [64e6, 1.5e9, 800e3, 4096])
def test_formatted_sizes_parse_back(n: float) -> None:
    assert parse_size(format_size(n).replace(" ", "")) == pytest.approx(n, rel=5e-3)
