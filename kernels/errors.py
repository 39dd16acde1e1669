# SPDX-License-Identifier: GPL-2.0-only
"""The one exception type the kernel matrix raises for bad input or a broken environment.

A :class:`netregress.errors.NetregressError`, so every entry point prints it the same way
(:func:`netregress.errors.run_cli`): its message without a traceback. Every message must say what
went wrong and what the user can do about it.
"""

from netregress.errors import NetregressError


class KernelsError(NetregressError):
    """A problem the user can fix (bad name, missing tool, broken image, no network…)."""
