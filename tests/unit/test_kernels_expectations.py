"""Expectations: which test is a known failure on which kernel, and why."""

import pytest

from kernels.errors import KernelsError
from kernels.expectations import (
    VersionRange, expected_failure, load_expectations, parse_expectations,
)  # fmt: skip

ENTRIES = """
[[expect]]
test = "tests/cases/test_tcp.py::test_wqueue*"
versions = ">=5.10, <6.6"
reason = "TCPWqueueTooBig: fixed in b617158dc096"
link = "https://git.kernel.org/linus/b617158dc096"

[[expect]]
test = "tests/cases/test_gre.py::*"
kernels = ["bullseye-5.10"]
reason = "gre in a netns needs fb_tunnels_only_for_init_net on 5.10"
"""


@pytest.mark.parametrize("version, inside", [
    ((5, 10, 223), True), ((6, 1, 176), True), ((6, 5, 99), True), ((6, 6), False),
    ((6, 6, 1), False), ((5, 9, 300), False), ((7, 2, 13), False),
])  # fmt: skip
def test_version_range_compares_on_the_bound_precision(
    version: tuple[int, ...], inside: bool
) -> None:
    assert (version in VersionRange.parse(">=5.10, <6.6")) is inside


def test_matching_by_pattern_version_and_name() -> None:
    entries = parse_expectations(ENTRIES)
    hit = expected_failure(entries, "tests/cases/test_tcp.py::test_wqueue_limit", "x", (6, 1, 176))
    assert hit is not None and hit.why == (
        "TCPWqueueTooBig: fixed in b617158dc096 (https://git.kernel.org/linus/b617158dc096)")
    assert expected_failure(entries, "tests/cases/test_tcp.py::test_wqueue_limit", "x",
                            (6, 12, 107)) is None
    assert expected_failure(entries, "tests/cases/test_tcp.py::test_other", "x", (6, 1)) is None
    assert expected_failure(entries, "tests/cases/test_gre.py::test_a", "bullseye-5.10",
                            (5, 10, 223)) is not None
    assert expected_failure(entries, "tests/cases/test_gre.py::test_a", "bookworm-6.1",
                            (5, 10, 223)) is None


@pytest.mark.parametrize("text, message", [
    ("[[expect]]\ntest = 'a'\nreason = 'b'", "needs 'versions' and/or 'kernels'"),
    ("[[expect]]\ntest = 'a'\nversions = '<6'", "needs 'test'"),
    ("[[expect]]\ntest = 'a'\nreason = 'b'\nversions = 'about 6'", "bad version range"),
    ("[[expect]]\ntest = 'a'\nreason = 'b'\nkernels = 'sid'", "must be a list"),
    ("[[expect]]\ntest = 'a'\nreason = 'b'\nkernel = ['sid']", "unknown key(s) kernel"),
], ids=["no-scope", "no-reason", "bad-range", "kernels-type", "typo"])  # fmt: skip
def test_bad_expectations_are_clear_errors(text: str, message: str) -> None:
    with pytest.raises(KernelsError) as info:
        parse_expectations(text, "exp.toml")
    assert message in str(info.value) and "exp.toml" in str(info.value)


def test_shipped_expectations_parse_and_carry_reasons() -> None:
    entries = load_expectations()
    assert entries and all(entry.reason and (entry.versions or entry.kernels) for entry in entries)
