# SPDX-License-Identifier: GPL-2.0-only
"""Errors the command line turns into a message and an exit status, never a traceback."""

from netregress.errors import NetregressError


class UsageProblem(NetregressError):
    """An argument that parses but cannot be used (missing binary, bad --jobs …): status 2."""


class GuestProblem(NetregressError):
    """The --kernel guest could not run the corpus to the end (boot, crash, timeout): status 3."""
