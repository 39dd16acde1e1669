# SPDX-License-Identifier: GPL-2.0-only
"""One builtin-engine run of one script, from file to :class:`RunResult`.

This is where the process leaves the caller's network namespace: ``load → unshare → tun0 →
init command → events → cleanup → code blocks → pcap``. Parse errors are reported before the
namespace is even created, so a bad script never touches the kernel.
"""

import os
import sys
import time

from netregress.spans import span, take

from .code import kill_helpers, run_shell
from .config import Config
from .device import TunDevice
from .errors import PacketdrillError, RuntimeFailure
from .loader import CliOptions, load_script
from .model import Script
from .netenv import (
    check_remote_is_remote,
    enter_fresh_netns,
    open_tun,
    realtime_priority,
    reserve_ephemeral_port,
)
from .result import RunResult
from .runtime import Runtime, TimingSeen
from .sniffer import write_pcap
from .timeline import write_timeline
from .tolerance import Tolerance


def run_script(path: str, cli_options: CliOptions) -> RunResult:
    """Parse and run ``path``; never raises for script or kernel problems. The result carries
    where the run's time went (``phases``), for the guest profile ``scripts/bench-vm`` shows."""
    result = _run_script(path, cli_options)
    result.phases = take()
    return result


def _run_script(path: str, cli_options: CliOptions) -> RunResult:
    started = time.monotonic()
    seen = TimingSeen()
    tolerance = Tolerance()  # until the script and the command line have given theirs
    try:
        with span("parse"):
            script, cfg = load_script(path, cli_options)
        tolerance = cfg.tolerance
        if cfg.unsupported:
            raise RuntimeFailure(f"{path}: {cfg.unsupported}")
        if not cfg.dry_run:
            _execute(script, cfg, seen)
    except PacketdrillError as err:
        return RunResult(
            path,
            False,
            err.text,
            err.line,
            getattr(err, "expected", ""),
            getattr(err, "actual", ""),
            exit_status=1,
            duration=time.monotonic() - started,
            pcap=_pcap_of(cli_options),
            late_usecs=seen.late_usecs,
            late_line=seen.late_line,
            late_event=seen.late_event,
            timing_error=seen.error,
            late_error_usecs=seen.error_late_usecs,
            engine_behind_usecs=seen.engine_behind_usecs,
            overtaken_usecs=seen.overtaken_usecs,
            tolerance=tolerance,
        )
    except Exception:  # an engine bug must still end as a clear failed result
        import traceback  # the error path only: keeps it out of every engine start-up

        return RunResult(
            path,
            False,
            f"{path}: internal engine error (please report):\n{traceback.format_exc()}",
            exit_status=1,
            duration=time.monotonic() - started,
            pcap=_pcap_of(cli_options),
            tolerance=tolerance,
        )
    return RunResult(
        path,
        True,
        duration=time.monotonic() - started,
        pcap=_pcap_of(cli_options),
        late_usecs=seen.late_usecs,
        late_line=seen.late_line,
        late_event=seen.late_event,
        tolerance=tolerance,
    )


def _pcap_of(cli_options: CliOptions) -> str:
    return next((value or "" for name, value in cli_options if name == "pcap"), "")


def _execute(script: Script, cfg: Config, seen: TimingSeen) -> None:
    with span("netns"):
        enter_fresh_netns()
        realtime_priority()
    with span("init-scripts"):
        for command in cfg.init_scripts:
            reason = run_shell(command)
            if reason:
                raise RuntimeFailure(
                    f"{script.path}: error executing init script '{command}': {reason}"
                )
    with span("tun"):
        tun_fd = open_tun(cfg)
        check_remote_is_remote(cfg)
        port_sock, port = reserve_ephemeral_port(cfg)
        device = TunDevice(tun_fd)
        runtime = Runtime(script, cfg, device, port, seen)
    init_ok = False
    try:
        if script.init_command is not None:
            with span("init-command"):
                reason = run_shell(script.init_command)
            if reason:
                raise RuntimeFailure(f"{script.path}: error executing init command: {reason}")
            init_ok = True
        try:
            with span("script"):
                runtime.run()
        except RuntimeFailure:
            if init_ok and script.cleanup_command is not None:
                run_shell(script.cleanup_command)
            raise
        with span("after-script"):
            if init_ok and script.cleanup_command is not None:
                reason = run_shell(script.cleanup_command)
                if reason:
                    raise RuntimeFailure(
                        f"{script.path}: error executing cleanup command: {reason}"
                    )
            runtime.check_blocking()
            runtime.run_code_blocks()
            runtime.finish()
    finally:
        with span("teardown"):
            sys.stdout.flush()
            kill_helpers()
            _teardown(runtime, cfg)
            port_sock.close()
            device.close()


def _teardown(runtime: Runtime, cfg: Config) -> None:
    """Close the script's fds and write the pcap (every injected and sniffed packet)."""
    runtime.device.flush()
    for entry in list(runtime.state.fds.values()):
        try:
            os.close(entry.live)
        except OSError:
            pass
    if cfg.pcap:
        write_pcap(cfg.pcap, runtime.device.packets())
        write_timeline(cfg.pcap, runtime.script.path, runtime.clock.start, runtime.timeline, cfg)
