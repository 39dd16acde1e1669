"""netregress's library: namespaces, links, topologies, captures and counters for tests.

The names a case needs most are re-exported here (``from netns import Namespace, cmd``); the
rest are imported from their modules. The packetdrill engine lives in its own top-level
package and imports nothing from here in the engine process, so this needs no lazy loading.
"""

from netns.commands import CmdResult, cmd, require_tool, spawn
from netns.errors import CmdError, FeatureMissing, MissingTool, NetregressError, NotPrivileged
from netns.links import Link
from netns.namespace import Namespace

__all__ = ["CmdError", "CmdResult", "FeatureMissing", "Link", "MissingTool", "Namespace",
           "NetregressError", "NotPrivileged", "cmd", "require_tool", "spawn"]
