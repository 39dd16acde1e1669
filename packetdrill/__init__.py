# SPDX-License-Identifier: GPL-2.0-only
"""A clean-room, packetdrill-compatible engine, and an adapter for an upstream binary.

Runs unmodified packetdrill scripts (the language as we implement it:
``docs/packetdrill-language.md``), each in its own fresh network namespace with a ``tun0``
device. Data flows one way, one module per step:

    lexer → parser (+ loader, config) → model
      → engine: netenv (namespace, tun0) → runtime (clock, conn, wire, matcher, syscalls,
        code; packets through device: tun0 + sniffer) → result
    cli / backend (builtin or upstream) / pytest_plugin / bench
    engine_process: a run's own process, started as programs/main.py (the command line)
      or forked per run by programs/forkserver.py (a runner's warm server)

Entry points: ``python -m packetdrill`` and ``netregress-packetdrill`` (upstream's
command line plus ``--packetdrill=builtin|auto|PATH``, ``--tolerance_late_usecs``,
``--pcap`` and ``--result_json``), and the pytest plugin collecting ``*.pkt`` files.

This ``__init__`` stays empty on purpose: the engine process starts with nothing but the
standard library loaded (it is a package of its own, not part of the ``netns`` library, for
the same reason).
"""
