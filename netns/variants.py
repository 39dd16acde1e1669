"""The broken-variant convention: every case proves, on every run, that its oracle can fail.

A case's oracle is one test function. Its parametrization holds the good configuration(s)
and at least one *broken* configuration made with :func:`broken`: the same function, the same
assertions, under a configuration where the asserted property must not hold. The broken
parameter is a strict xfail that only an ``AssertionError`` satisfies, so

- the day the broken variant passes (the oracle went blind, or the "broken" configuration
  no longer breaks anything) the run goes red (XPASS strict);
- a broken variant that dies of something else (a setup error, a missing tool) is an error,
  not a proof.

The test function must not branch its assertions on the variant: the configuration is the
only thing a parameter may change. ``tests/unit/test_case_oracles.py`` checks that every case
module has such a variant.
"""

from typing import Any

import pytest
from _pytest.mark.structures import ParameterSet

PREFIX = "broken-"


def broken(*values: Any, id: str, why: str) -> ParameterSet:  # noqa: A002 (pytest's name)
    """The broken configuration of a case as a pytest parameter (id ``broken-<id>``).

    *why* says why the oracle must fail here; it is the xfail reason shown in reports.
    """
    if not why.strip():
        raise ValueError("a broken variant needs the reason its oracle must fail")
    return pytest.param(
        *values,
        id=PREFIX + id,
        marks=pytest.mark.xfail(strict=True, raises=AssertionError, reason=why),
    )


def is_broken(param: ParameterSet) -> bool:
    """True for a parameter made by :func:`broken` (the id is the convention's handle)."""
    return isinstance(param.id, str) and param.id.startswith(PREFIX)
