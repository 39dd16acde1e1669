"""Errors the command line turns into a message and an exit status, never a traceback."""


class UsageProblem(Exception):
    """An argument that parses but cannot be used (missing binary, bad --jobs …): status 2."""


class GuestProblem(Exception):
    """The --kernel guest could not run the corpus to the end (boot, crash, timeout): status 3."""
