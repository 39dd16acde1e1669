# SPDX-License-Identifier: GPL-2.0-only
"""Command line compatible with upstream packetdrill's (docs/packetdrill-language.md §9): same
options, exit codes and diagnostics, plus ``--packetdrill=builtin|auto|PATH`` to pick the backend.
"""

import sys

from .backend import Backend, choose_backend
from .config import OPTIONS
from .errors import UsageError
from .loader import CliOptions

USAGE = """usage: packetdrill
\t[-v|--verbose]
\t[--ip_version=[ipv4,ipv4-mapped-ipv6,ipv6]]
\t[--bind_port=bind_port]
\t[--connect_port=connect_port]
\t[--local_ip=local_ip]
\t[--remote_ip=remote_ip]
\t[--gateway_ip=gateway_ip]
\t[--netmask_ip=netmask_ip]
\t[--init_scripts=<comma separated filenames>]
\t[--speed=<speed in Mbps>]
\t[--mss=<MSS in bytes>]
\t[--mtu=<MTU in bytes>]
\t[--tolerance_usecs=tolerance_usecs]
\t[--tolerance_percent=tolerance_percent]
\t[--tcp_ts_tick_usecs=<microseconds per TCP TS val tick>]
\t[--tcp_ts_ecr_scaled]
\t[--strict_segments]
\t[--non_fatal=<comma separated types: packet,syscall>]
\t[--dry_run]
\t[--send_omit_free]
\t[--is_anyip]
\t[--code_command=<python command>]
\t[--define=<variable>=<value>] [-D <variable>=<value>]
netregress extensions:
\t[--packetdrill=builtin|auto|PATH]   backend (default builtin; env PACKETDRILL)
\t[--tolerance_late_usecs=N]   accept events up to N us later than the base tolerance
\t                             (late side only; the early side is never widened)
\t[--pcap=PATH]   write a pcap of the run (builtin engine)
\t[--result_json=PATH]   write the structured result as JSON
\tscript_path ...
"""


def parse_argv(argv: list[str]) -> tuple[CliOptions, list[str], str | None]:
    """Split argv into (options, script paths, backend choice), getopt_long style."""
    options: CliOptions = []
    scripts: list[str] = []
    backend: str | None = None
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if arg in ("-v", "--verbose"):
            options.append(("verbose", None))
        elif arg.startswith("-D"):
            value = arg[2:]
            if not value:
                if i >= len(argv):
                    raise UsageError("option requires an argument -- 'D'")
                value, i = argv[i], i + 1
            options.append(("define", value))
        elif arg.startswith("--"):
            name, sep, value = arg[2:].partition("=")
            if name == "packetdrill":
                if not sep:
                    if i >= len(argv):
                        raise UsageError("option '--packetdrill' requires an argument")
                    value, i = argv[i], i + 1
                backend = value
                continue
            kind = OPTIONS.get(name)
            if kind is None:
                raise UsageError(f"unrecognized option '--{name}'")
            if kind == "required" and not sep:
                if i >= len(argv):
                    raise UsageError(f"option '--{name}' requires an argument")
                value, sep, i = argv[i], "=", i + 1
            if kind == "none" and sep:
                raise UsageError(f"option '--{name}' doesn't allow an argument")
            options.append((name, value if sep else None))
        elif arg.startswith("-") and arg != "-":
            raise UsageError(f"invalid option -- '{arg[1:]}'")
        else:
            scripts.append(arg)
    return options, scripts, backend


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        options, scripts, backend_name = parse_argv(argv)
        if not scripts:
            raise UsageError("error: missing script path")
        backend = choose_backend(backend_name)
    except UsageError as err:
        print(f"{err.text}\n{USAGE}", file=sys.stderr, end="")
        return 1
    try:
        return _run_all(backend, scripts, options)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def _run_all(backend: Backend, scripts: list[str], options: CliOptions) -> int:
    """Run the scripts in order; the first failure ends the run (upstream's behaviour)."""
    for path in scripts:
        result = backend.run(path, options)
        json_path = next((v for n, v in options if n == "result_json"), None)
        if json_path:
            with open(json_path, "w") as out:
                out.write(result.to_json())
        if backend.name != "builtin":
            sys.stdout.write(result.stdout)
            sys.stderr.write(result.stderr)
        elif result.message:
            print(result.message, file=sys.stderr, flush=True)
        if not result.passed:
            return 1
    return 0
