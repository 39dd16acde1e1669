"""netregress's library: namespaces, links, topologies, captures and counters for tests."""

from .cmd import CmdResult, cmd, require_tool, spawn
from .errors import CmdError, FeatureMissing, MissingTool, NetregressError, NotPrivileged
from .links import Link
from .namespace import Namespace

__all__ = ["CmdError", "CmdResult", "FeatureMissing", "Link", "MissingTool", "Namespace",
           "NetregressError", "NotPrivileged", "cmd", "require_tool", "spawn"]
