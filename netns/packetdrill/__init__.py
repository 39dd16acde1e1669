"""A clean-room, packetdrill-compatible engine, and an adapter for an upstream binary.

Runs unmodified packetdrill scripts (the language reference is
``shared/docs/packetdrill-language.md`` beside the repository), each in its own fresh network
namespace with a ``tun0`` device. Data flows one way, one module per step:

    lexer → parser (+ loader, config) → model
      → engine: netenv (namespace, tun0) → runtime (clock, conn, wire, matcher, syscalls,
        code, sniffer) → result
    cli / backend (builtin or upstream) / pytest_plugin / bench

Entry points: ``python -m netns.packetdrill`` and ``netregress-packetdrill`` (upstream's
command line plus ``--packetdrill=builtin|auto|PATH``, ``--tolerance_late_usecs``,
``--pcap`` and ``--result_json``), and the pytest plugin collecting ``*.pkt`` files.

This ``__init__`` (like ``netns/__init__``, which is lazy) stays empty on purpose: the
engine process starts with nothing but the standard library loaded.
"""
