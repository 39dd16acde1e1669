# SPDX-License-Identifier: GPL-2.0-only
"""``python -m conformance``: see :mod:`.cli`."""

import sys

from .cli import main

sys.exit(main())
