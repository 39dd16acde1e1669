# SPDX-License-Identifier: GPL-2.0-only
"""``scripts/bench-packetdrill``: how precisely and how cheaply the builtin engine runs.

Prints figures; it asserts nothing (speed is measured here, never in tests).
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from netregress.errors import run_cli

from .engine_process import engine_command

_EVENTS = 200
_PERIOD = 0.005
_REPLY_DELAY = 0.002
_LINE = re.compile(r"^(inbound injected|outbound sniffed) packet:\s+(\d+\.\d+) ")


def timing_script() -> str:
    """Absolute-time UDP ping-pong: inbound at i*5 ms, our reply written 2 ms later."""
    lines = [
        "0 socket(..., SOCK_DGRAM, IPPROTO_UDP) = 3",
        "+0 bind(3, ..., ...) = 0",
        "+0 connect(3, ..., ...) = 0",
        # packetdrill learns the socket's live addresses from its first datagram
        "+0 write(3, ..., 10) = 10",
        "+0 > udp (10)",
    ]
    for i in range(1, _EVENTS + 1):
        t = i * _PERIOD
        lines += [
            f"{t:.3f} < udp (10)",
            f"{t + _REPLY_DELAY:.3f} write(3, ..., 10) = 10",
            f"{t + _REPLY_DELAY:.3f} > udp (10)",
        ]
    return "\n".join(lines) + "\n"


def percentiles(errors: list[float]) -> str:
    values = sorted(abs(e) * 1e6 for e in errors)
    p99 = values[max(0, int(len(values) * 0.99) - 1)]
    return (
        f"p50 {statistics.median(values):7.1f} us   p99 {p99:7.1f} us   "
        f"max {values[-1]:7.1f} us   (n={len(values)})"
    )


def bench_timing(folder: Path) -> None:
    path = folder / "timing.pkt"
    path.write_text(timing_script())
    done = subprocess.run(
        engine_command() + ["-v", "--connect_port=9", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        print(f"timing run failed:\n{done.stderr}")
        return
    injected: list[float] = []
    sniffed: list[float] = []
    for line in done.stdout.splitlines():
        match = _LINE.match(line)
        if match:
            (injected if match.group(1).startswith("inbound") else sniffed).append(
                float(match.group(2))
            )
    expected_in = [i * _PERIOD for i in range(1, _EVENTS + 1)]
    expected_out = [0.0] + [t + _REPLY_DELAY for t in expected_in]  # the first datagram at 0
    print("timing error against script time:")
    # strict=False: a packet the run lost shortens the measured list, not the expected one.
    late_in = [a - b for a, b in zip(injected, expected_in, strict=False)]
    late_out = [a - b for a, b in zip(sniffed, expected_out, strict=False)]
    print(f"  injected packets: {percentiles(late_in)}")
    print(f"  sniffed packets:  {percentiles(late_out)}")


def bench_overhead(folder: Path, runs: int = 20) -> None:
    path = folder / "trivial.pkt"
    path.write_text("0 socket(..., SOCK_STREAM, IPPROTO_TCP) = 3\n")
    ready, walls = [], []
    for _ in range(runs):
        started = time.time()
        done = subprocess.run(
            engine_command() + ["-v", str(path)], check=True, capture_output=True, text=True
        )
        walls.append(time.time() - started)
        # `-v` prints the absolute time the first call returned: namespace and tun0 were ready.
        ready.append(float(done.stdout.split("socket syscall: ")[1].split()[0]) - started)
    print("per-script overhead, trivial script (median / min):")
    print(
        f"  process start -> netns + tun0 ready, first event run: "
        f"{statistics.median(ready) * 1e3:4.0f} / {min(ready) * 1e3:4.0f} ms"
    )
    print(
        f"  process start -> exit:                                "
        f"{statistics.median(walls) * 1e3:4.0f} / {min(walls) * 1e3:4.0f} ms"
    )
    for label, code in (
        ("python -c pass", "pass"),
        ("import scapy.all", "import scapy.all"),
        ("import scapy.layers.inet", "import scapy.layers.inet"),
    ):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        print(f"  reference: {label:26} {(time.perf_counter() - started) * 1e3:.0f} ms")


def bench_corpus(repo: Path) -> None:
    for label, extra in (("serial", []), ("pytest -n 2", ["-n", "2"])):
        started = time.perf_counter()
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                "tests/packetdrill",
                *extra,
            ],
            cwd=repo,
            capture_output=True,
            text=True,
            check=False,
        )
        summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "?"
        print(f"corpus wall time, {label:11}: {time.perf_counter() - started:6.1f} s ({summary})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="scripts/bench-packetdrill",
        description="Benchmark the builtin packetdrill engine: timing error against script "
        "time, per-script overhead, and the .pkt corpus's wall time (serial and -n 2). "
        "Figures, not assertions: run it on an idle machine.",
    )
    parser.add_argument("--quick", action="store_true", help="skip the corpus runs")
    args = parser.parse_args(argv)
    return run_cli("bench-packetdrill", lambda: bench(args.quick))


def bench(quick: bool) -> int:
    """Print the figures: timing, overhead, and (unless `quick`) the corpus runs."""
    repo = Path(__file__).resolve().parents[1]
    print(f"machine: {os.cpu_count()} cpus, load average {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory(prefix="bench-packetdrill-") as tmp:
        bench_timing(Path(tmp))
        bench_overhead(Path(tmp))
    if not quick:
        bench_corpus(repo)
    return 0


if __name__ == "__main__":
    sys.exit(main())
