# SPDX-License-Identifier: GPL-2.0-only
"""The programs an engine process starts as, run by path with ``python -S``
(:mod:`packetdrill.engine_process`): ``main.py`` is the command line in a process of its own,
``forkserver.py`` a runner's server that imports the engine once and forks a child per run.

Why by path and not ``-m``: with ``-S`` there is no site-packages, so the folder holding the
package may be on no path at all; each program puts it first (in place of its own folder, which
Python put there) before it imports the package.
"""
