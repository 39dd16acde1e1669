# SPDX-License-Identifier: GPL-2.0-only
"""``python -m packetdrill``: see :mod:`packetdrill.cli`."""

import sys

from .cli import main

sys.exit(main())
