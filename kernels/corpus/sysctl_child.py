# SPDX-License-Identifier: GPL-2.0-only
"""The child of the knob probe (kernels/corpus/needs.py): run by path inside a network
namespace of its own, it tries each ``knob=value`` write and prints each errno name as JSON.

Why a program of its own: a write into a fresh namespace's /proc/sys is the kernel's own
answer to "do you take this value", and the namespace keeps the try from changing anything.
"""

import errno
import json
import sys


def answers(settings: list[str]) -> dict[str, str]:
    """Each setting with "" (taken) or the errno name of the write's failure."""
    found = {}
    for given in settings:
        knob, _, value = given.partition("=")
        try:
            with open("/proc/sys/" + knob, "w") as handle:
                handle.write(value)
            found[given] = ""
        except OSError as exc:
            found[given] = errno.errorcode.get(exc.errno or 0, str(exc.errno))
    return found


if __name__ == "__main__":
    print(json.dumps(answers(sys.argv[1:])))
