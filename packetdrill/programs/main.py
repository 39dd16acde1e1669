# SPDX-License-Identifier: GPL-2.0-only
"""``python -S .../packetdrill/programs/main.py ARGS``: the engine's command line (upstream's,
:mod:`packetdrill.cli`) in a process of its own
(:func:`packetdrill.engine_process.engine_command`)."""

import sys

sys.path[0] = sys.path[0].rsplit("/", 2)[0]  # this folder's place: the package's folder

from packetdrill.cli import main  # noqa: E402  (importable from the line above on)

if __name__ == "__main__":
    sys.exit(main())
