# SPDX-License-Identifier: GPL-2.0-only
"""Every netregress pytest plugin behind one name: ``-p netregress.plugins``.

It lives in the base package because it names plugins of every package above it (as strings
only, so importing it costs nothing).

The plugins are opt-in, not ``pytest11`` entry points, so installing netregress changes no
other project's pytest session. This checkout's root conftest.py loads this module, and so do
the project's own commands for paths outside the checkout (they export ``PYTEST_PLUGINS``).

Each plugin also works named alone (``-p netns.pytest_plugin``): they share facts and hooks
through :mod:`netregress.session`, not imports of each other. The one exception is the kernel
corpus plugin, whose items are the packetdrill plugin's: it comes after that plugin, which it
imports and names as a dependency, because pytest can rewrite the asserts only of a plugin it
imports itself.
"""

pytest_plugins = [
    "netns.pytest_plugin",
    "netns.variants",
    "packetdrill.pytest_plugin",
    "evidence.report_html",
    "kernels.corpus.pytest_plugin",
    "kernels.selftests.pytest_plugin",
    "kernels.pytest_plugin",
]
