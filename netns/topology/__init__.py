# SPDX-License-Identifier: GPL-2.0-only
"""Declarative topologies: describe (model), build (builder), and the shipped shapes."""

from . import shapes
from .builder import Network, build
from .model import (
    Bridge,
    Dummy,
    Existing,
    Fdb,
    Gre,
    Iface,
    Ipip,
    Neigh,
    Route,
    Topology,
    Veth,
    Vxlan,
)

__all__ = [
    "Bridge",
    "Dummy",
    "Existing",
    "Fdb",
    "Gre",
    "Iface",
    "Ipip",
    "Neigh",
    "Network",
    "Route",
    "Topology",
    "Veth",
    "Vxlan",
    "build",
    "shapes",
]
