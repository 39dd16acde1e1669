# SPDX-License-Identifier: GPL-2.0-only
"""netregress's library: namespaces, links, topologies, captures and counters for tests.

The names a case needs most are re-exported here (``from netns import Namespace, cmd``); the
rest are imported from their modules. The packetdrill engine lives in its own top-level
package and imports nothing from here in the engine process, so this needs no lazy loading.
"""

from netns.commands import CmdResult, cmd
from netns.errors import CmdError, FeatureMissing, NotPrivileged
from netns.links import Link
from netns.namespace import Namespace
from netregress.errors import MissingTool, NetregressError
from netregress.process import Process
from netregress.programs import require_tool

__all__ = [
    "CmdError",
    "CmdResult",
    "FeatureMissing",
    "Link",
    "MissingTool",
    "Namespace",
    "NetregressError",
    "NotPrivileged",
    "Process",
    "cmd",
    "require_tool",
]
