# SPDX-License-Identifier: GPL-2.0-only
"""What a failing run leaves for a person: Stevens plots of a pcap, two traces aligned,
a failure's evidence page, and pytest-html extras.

Its own package because it sits on top of both the namespace library (artifacts) and the
packetdrill engine (the timeline a script run writes); `netns` stays the namespace library.
"""
