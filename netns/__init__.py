"""netregress's library: namespaces, links, topologies, captures and counters for tests.

Names are imported lazily (PEP 562): ``import netns.packetdrill`` or ``netns.process`` must not
pay for pyroute2 and scapy, which the packetdrill engine never uses.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "CmdResult": "commands", "cmd": "commands", "Process": "process", "require_tool": "process",
    "CmdError": "errors", "FeatureMissing": "errors", "MissingTool": "errors",
    "NetregressError": "errors", "NotPrivileged": "errors",
    "Link": "links", "Namespace": "namespace",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'netns' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)
