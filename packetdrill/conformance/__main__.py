# SPDX-License-Identifier: GPL-2.0-only
"""``python -m packetdrill.conformance``: see :mod:`.cli`."""

import sys

from .cli import main

sys.exit(main())
