"""The one exception type the kernel matrix raises for bad input or a broken environment.

Entry points catch it and print its message without a traceback: every message must say what
went wrong and what the user can do about it.
"""


class KernelsError(Exception):
    """A problem the user can fix (bad name, missing tool, broken image, no network…)."""
