# SPDX-License-Identifier: GPL-2.0-only
"""The base every part of netregress stands on: run ids and resource names (naming), the
process core (process: children that die with us, a dead run's leftovers), the programs they
run (programs), entering a network namespace (netns_entry), scheduling priority (priority) and
the one error root (errors).

Why a package of its own: the namespace library (``netns``), the packetdrill engine and the
kernel matrix all need these, and the engine must not pay for importing ``netns`` (pyroute2,
scapy) in every engine process. Nothing here imports anything but the standard library.
"""
