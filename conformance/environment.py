# SPDX-License-Identifier: GPL-2.0-only
"""The facts about the machine that decide many verdicts, recorded with every result.

Why: the same script passes on one kernel and fails on another for reasons that are not the
engine's — upstream's ``defaults.sh`` switches to cubic, which a fresh namespace may not be
allowed to use; timer-based expectations depend on HZ; ``tcp_ecn``'s accepted range grew over
releases. Comparing two JSONs from different machines without these is guesswork.

Namespace-local values are read (and write-probed) inside a fresh anonymous namespace, by
running this module in a child under ``unshare --net``: nothing is ever written outside it.
"""

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

_IPV4 = Path("/proc/sys/net/ipv4")
# The TCP knobs upstream's defaults.sh sets (so a script's baseline is visible) and a few more
# that change timings or option negotiation.
SYSCTLS = (
    "tcp_congestion_control",
    "tcp_allowed_congestion_control",
    "tcp_ecn",
    "tcp_ecn_option",
    "tcp_rmem",
    "tcp_wmem",
    "tcp_timestamps",
    "tcp_sack",
    "tcp_dsack",
    "tcp_frto",
    "tcp_syn_retries",
    "tcp_synack_retries",
    "tcp_reordering",
    "tcp_slow_start_after_idle",
    "tcp_early_retrans",
    "tcp_recovery",
    "tcp_tso_win_divisor",
    "tcp_pacing_ss_ratio",
    "tcp_pacing_ca_ratio",
    "tcp_notsent_lowat",
    "tcp_fastopen",
    "tcp_syncookies",
    "tcp_min_tso_segs",
    "tcp_autocorking",
    "tcp_mtu_probing",
    "tcp_comp_sack_nr",
    "tcp_rto_min_us",
)
_ECN_PROBE = range(0, 8)


def _read(path: Path) -> str | None:
    try:
        return " ".join(path.read_text().split())
    except OSError:
        return None


def _writable(path: Path, value: str) -> bool:
    try:
        path.write_text(value)
        return True
    except OSError:
        return False


def in_namespace() -> dict[str, Any]:
    """Run inside the fresh namespace: defaults, then which congestion controls and tcp_ecn
    values a script may set (each write is tried; the namespace is thrown away after)."""
    defaults = {name: _read(_IPV4 / name) for name in SYSCTLS}
    available = (_read(_IPV4 / "tcp_available_congestion_control") or "").split()
    settable = [cc for cc in available if _writable(_IPV4 / "tcp_congestion_control", cc)]
    ecn = [value for value in _ECN_PROBE if _writable(_IPV4 / "tcp_ecn", str(value))]
    return {
        "sysctl_defaults": defaults,
        "congestion_control_settable": settable,
        "tcp_ecn_accepted": ecn,
    }


def config_hz(*candidates: Path) -> int | None:
    """CONFIG_HZ from the first readable kernel config: ``candidates``, /proc/config.gz, or
    /boot/config-<release>; None if there is none."""
    release = os.uname().release
    for path in (*candidates, Path("/proc/config.gz"), Path(f"/boot/config-{release}")):
        try:
            raw = path.read_bytes()
        except OSError:
            continue
        text = (gzip.decompress(raw) if path.suffix == ".gz" else raw).decode(errors="replace")
        for line in text.splitlines():
            if line.startswith("CONFIG_HZ="):
                return int(line.partition("=")[2])
    return None


def probe() -> dict[str, Any]:
    """Everything above, plus the kernel and machine; never raises (a failed probe says so)."""
    facts: dict[str, Any] = {
        "kernel_release": os.uname().release,
        "config_hz": config_hz(),
        "cpus": os.cpu_count(),
        "congestion_control_available": (
            _read(_IPV4 / "tcp_available_congestion_control") or ""
        ).split(),
        "default_qdisc": _read(Path("/proc/sys/net/core/default_qdisc")),
        "in_vm": os.environ.get("NETREGRESS_KERNEL") or None,
        "emulated": os.environ.get("NETREGRESS_EMULATED") or None,
    }
    done = subprocess.run(
        ["unshare", "--net", "--", sys.executable, "-m", __name__],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    try:
        facts["fresh_namespace"] = json.loads(done.stdout)
    except ValueError:
        facts["fresh_namespace"] = {"error": done.stderr.strip() or "probe failed"}
    return facts


def describe(facts: dict[str, Any]) -> list[str]:
    """Short lines for the report header."""
    ns = facts.get("fresh_namespace", {})
    defaults = ns.get("sysctl_defaults", {})
    lines = [
        f"kernel {facts.get('kernel_release')}, HZ {facts.get('config_hz') or 'unknown'}, "
        f"{facts.get('cpus')} CPUs" + (f", VM {facts['in_vm']}" if facts.get("in_vm") else "")
    ]
    if "error" in ns:
        return lines + [f"fresh-namespace probe failed: {ns['error']}"]
    lines.append(
        f"fresh namespace: congestion control {defaults.get('tcp_congestion_control')}"
        f", settable {' '.join(ns.get('congestion_control_settable', [])) or 'none'}"
        f" (kernel has {' '.join(facts.get('congestion_control_available', []))});"
        f" tcp_ecn {defaults.get('tcp_ecn')} (accepts "
        f"{','.join(str(v) for v in ns.get('tcp_ecn_accepted', []))})"
    )
    return lines


if __name__ == "__main__":
    json.dump(in_namespace(), sys.stdout)
