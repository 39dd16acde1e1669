# SPDX-License-Identifier: GPL-2.0-only
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

This module is also a pytest plugin (listed in ``netregress.plugins``): see
:func:`pytest_runtest_makereport`.
"""

import re
from collections.abc import Generator
from typing import Any

import pytest

from netregress.session import ORACLE_PROVED

PREFIX = "broken-"
# A broken id in a test name: a case's parameter (`[broken-ID]`, `[other-broken-ID]`) or a
# packetdrill script's variant (`ipv4-broken-ID`).
_BROKEN_NAME = re.compile(rf"(?P<before>(?:.*[\[-])?){PREFIX}(?P<id>[^\]]+)(?P<close>\]?)")


def broken(*values: Any, id: str, why: str) -> pytest.ParameterSet:
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


def is_broken(param: pytest.ParameterSet) -> bool:
    """True for a parameter made by :func:`broken` (the id is the convention's handle)."""
    return isinstance(param.id, str) and param.id.startswith(PREFIX)


def split_broken(nodeid: str) -> tuple[str, str] | None:
    """(the node id of the case it proves, the broken id) for a broken variant's node id, None
    for any other test.

    Why from the node id: reports read results after the run (the matrix record, KCIDB), where
    a cell is its node id and its outcome, and the convention's id is what both the case
    parameters (``test_x[broken-off]``, ``test_x[tunl0-broken-off]``) and the packetdrill
    scripts (``s.pkt::ipv4-broken-off``) share.
    """
    head, sep, name = nodeid.rpartition("::")
    found = _BROKEN_NAME.fullmatch(name)
    if found is None:
        return None
    case = found["before"].removesuffix("-")
    case = case.removesuffix("[") if case.endswith("[") else case + found["close"]
    return head + sep + case, found["id"]


def _expected_failure(item: pytest.Item, call: pytest.CallInfo[None]) -> bool:
    """True when the call failed exactly as its unconditional xfail mark says it must (a
    broken variant's AssertionError), so the report becomes an xfail; never under
    ``--runxfail``, where the failure is reported as one."""
    if call.when != "call" or call.excinfo is None or item.config.option.runxfail:
        return False
    mark = item.get_closest_marker("xfail")
    if mark is None or mark.args or "condition" in mark.kwargs:
        return False
    if not mark.kwargs.get("run", True):
        return False
    raises = mark.kwargs.get("raises")
    return raises is not None and call.excinfo.errisinstance(raises)


def _from_the_test_function(
    item: pytest.Item, excinfo: pytest.ExceptionInfo[BaseException]
) -> None:
    """Drop the traceback's frames above the test function (pluggy's, pytest's), as the
    report would: pytest finds that cut by checking every frame's file on disk, a stat each,
    slow on a guest's shared folder."""
    if not isinstance(item, pytest.Function):
        return
    code = item.function.__code__
    for depth, entry in enumerate(excinfo.traceback):
        if entry.frame.code.raw is code:
            excinfo.traceback = excinfo.traceback[depth:]
            return


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """An expected failure's traceback is cut at the test function and shown in one line
    (``--tb=line``), whatever the configured style; a broken variant's report says it failed
    as it must (``ORACLE_PROVED``, which the summary counts; an xfail for another reason, such
    as a packetdrill run whose timing this machine cannot check, is no proof).

    Why: an xfail shows only its reason, nobody reads its traceback, yet pytest formats it
    anyway, parsing the test module's source and checking the file of every frame, for every
    broken variant of every run, which shows in a TCG guest. Any other failure keeps
    the configured style and its full details.
    """
    if call.excinfo is None or not _expected_failure(item, call):
        return (yield)
    _from_the_test_function(item, call.excinfo)
    option = item.config.option
    configured = option.tbstyle
    option.tbstyle = "line"
    try:
        report: pytest.TestReport = yield
    finally:
        option.tbstyle = configured
    if split_broken(item.nodeid) is not None:
        setattr(report, ORACLE_PROVED, True)
    return report
