"""``python -m netns.packetdrill``: see :mod:`netns.packetdrill.cli`."""

import sys

from .cli import main

sys.exit(main())
