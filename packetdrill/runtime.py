# SPDX-License-Identifier: GPL-2.0-only
"""The event loop of one script run (docs/packetdrill-language.md §4.2, §8): timing, injection,
sniffing, syscalls.

It assumes the process already sits in a fresh network namespace (see :mod:`.engine`). All
failures raise :class:`RuntimeFailure` carrying upstream's complete diagnostic text.
"""

import ipaddress
import platform
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from . import protocols as P
from .clock import Clock
from .code import CodeSnapshot, run_code, run_shell, snapshot
from .config import Config
from .conn import Conn, build, learn_syn, map_inbound, map_outbound, record_ts
from .device import Device, Offload
from .dump import dump
from .errors import RuntimeFailure, TimelineDrift
from .matcher import check_ip_checksums, flow, fragment_problem, merge, verify
from .model import (
    CodeEvent,
    CommandEvent,
    Event,
    PacketEvent,
    Script,
    SyscallEvent,
    TcpSpec,
    UdpSpec,
)
from .state import State
from .syscalls import Executor
from .tolerance import EARLY, LATE, event_words
from .wire import ACK, SYN, IcmpHeader, Packet, TcpHeader, UdpHeader, decode, encode

_POLL = 0.02  # how often long waits look at the blocking-call thread for errors
_ND_TYPES = range(130, 144)
_FUTEX_NR = {"x86_64": "202", "aarch64": "98", "riscv64": "98"}.get(platform.machine(), "202")


def secs(usecs: int) -> float:
    return usecs / 1e6


@dataclass
class TimingSeen:
    """What the timing checks found: the worst lateness beyond the base tolerance among
    accepted events and which event that was (its line; what was due when), the first timing
    error's side and how late a late failure was. The caller keeps it, so a failed run still
    reports all of it; a run too late to judge then names its latest event."""

    late_usecs: int = 0
    late_line: int | None = None
    late_event: str = ""
    error: str = ""
    error_late_usecs: int = 0
    engine_behind_usecs: int = 0  # a timing error that rests on our own lag: that lag
    overtaken_usecs: int = 0  # a mismatching packet the kernel sent before our late stimulus


@dataclass
class Timed:
    """An event's times after anchoring (docs/packetdrill-language.md §4.2), in script usec.

    ``earliest`` is ``start`` counted from the instant the previous event began to take effect
    (see :meth:`Runtime.anchor`); only the early edge of the timing check uses it. ``act`` is
    when the engine acts (injects, calls, runs): ``start`` counted from the instant the
    previous event was done in the kernel, between ``earliest`` and ``start``. ``ideal`` is
    ``earliest`` as an engine without lag would have counted it: on the time line of the
    kernel's last packet, with each action of ours since then taken at its script time and
    lasting as long as it really did (:meth:`Runtime.lag_free_done`). An event early against
    ``earliest`` but not against ``ideal`` looks early only by our lag
    (:meth:`Runtime.judge_time`). ``lag_before`` is how much of the engine's own lag
    (:meth:`Runtime.engine_lag`) the expectation already holds: all of it for a time counted
    from "now", none for an absolute one; lag beyond it can only make the event late."""

    start: int
    end: int | None
    base: int
    blocking_end: int | None
    earliest: int
    act: int
    ideal: int
    lag_before: int = 0


@dataclass(frozen=True)
class Injection:
    """An inbound line's packet, ready to write: the script's view (for ``-v``) and its bytes."""

    packet: Packet
    raw: bytes
    offload: Offload | None


class BlockingCall:
    """A system call running on its own thread while the script moves on
    (docs/packetdrill-language.md §6.6)."""

    def __init__(self, runtime: "Runtime", event: Event, timed: Timed, prev: int | None) -> None:
        self.runtime, self.event, self.timed, self.prev = runtime, event, timed, prev
        self.error: RuntimeFailure | None = None
        self.done = threading.Event()
        self.entered = False  # set once the start time has passed and the call is next
        self.started: int | None = None  # script usec the call really began (its thread's)
        self.tid = 0
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        rt = self.runtime
        self.tid = threading.get_native_id()
        try:
            rt.clock.wait_until(self.timed.act)
            rt.check_time(self.event, self.timed, rt.clock.now(), self.prev)
            self.started = rt.clock.now()
            self.entered = True
            rt.execute_syscall(self.event, on_return=self._check_return)
        except RuntimeFailure as err:
            self.error = err
        finally:
            self.done.set()

    def _check_return(self) -> None:
        rt, timed = self.runtime, self.timed
        assert timed.blocking_end is not None
        actual = rt.clock.now()
        gap = timed.blocking_end - timed.start
        due = (timed.blocking_end, timed.blocking_end)
        lag = rt.engine_lag() - timed.lag_before
        if rt.judge_time(self.event, "system call return", due, (due[0], due[0]), actual, gap, lag):
            raise RuntimeFailure(
                f"{rt.script.path}:{self.event.line}: timing error: expected "
                f"system call return at {secs(timed.blocking_end):.6f} sec but "
                f"happened at {secs(actual):.6f} sec; "
                f"{rt.cfg.tolerance.words(gap)}",
                self.event.line,
            )

    def blocked_or_done(self) -> bool:
        """True once the thread sleeps inside the kernel (not on the GIL) or has finished."""
        if self.done.is_set():
            return True
        if not self.entered:
            return False
        try:
            with open(f"/proc/self/task/{self.tid}/stat") as handle:
                state = handle.read().rsplit(")", 1)[1].split()[0]
            with open(f"/proc/self/task/{self.tid}/syscall") as handle:
                number = handle.read().split()[0]
        except (OSError, IndexError):
            return self.done.is_set()
        # A thread in futex() waits for the GIL, not in the script's call.
        return state in ("S", "D") and number not in ("running", _FUTEX_NR)


class Runtime:
    """Runs a parsed script against the kernel through ``device``."""

    def __init__(
        self, script: Script, cfg: Config, device: Device, ephemeral_port: int, seen: TimingSeen
    ) -> None:
        self.script, self.cfg, self.device, self.seen = script, cfg, device, seen
        self.clock = Clock()
        self.state = State(cfg, self.clock, ephemeral_port)
        self.executor = Executor(self.state)
        self.began: int | None = None  # script usec at which the latest event took effect
        self.done: int | None = None  # script usec at which the kernel was done with it
        self.ideal_done: int | None = None  # the same, had the engine never lagged
        self.lag_absorbed = 0  # our lag the kernel's packets carried on (see engine_lag)
        self.lag_pending = 0  # our lag since the kernel's last packet
        self.acted: list[tuple[int, int]] = []  # (ideal, began) of our actions since then
        self.blocking: BlockingCall | None = None
        self.snapshots: list[CodeSnapshot] = []
        self.warnings: list[str] = []
        self.timeline: list[tuple[Event, Timed, int | None]] = []  # for reports (.timeline)

    # --- helpers ------------------------------------------------------------------------
    def fail(self, event: Event, text: str) -> RuntimeFailure:
        return RuntimeFailure(f"{self.script.path}:{event.line}: {text}", event.line)

    def note_drift(self, err: RuntimeFailure) -> None:
        """A failure that is the run's drift is a late timing error (the policy's to judge)."""
        if isinstance(err, TimelineDrift) and not self.seen.error:
            self.seen.error, self.seen.error_late_usecs = LATE, err.drift_usecs

    def check_blocking(self) -> None:
        if self.blocking is not None and self.blocking.done.is_set():
            call, self.blocking = self.blocking, None
            if call.error is not None:
                raise call.error

    def wait(self, usecs: int) -> None:
        """Wait until script time ``usecs``, surfacing blocking-call failures meanwhile."""
        while True:
            self.check_blocking()
            remaining = secs(usecs - self.clock.now())
            if remaining <= _POLL:
                break
            time.sleep(min(_POLL, remaining - _POLL / 2))
        self.clock.wait_until(usecs)

    def wait_for_blocking(self, timeout: float) -> bool:
        """Give an in-flight blocking call up to ``timeout`` s; True if none is left."""
        if self.blocking is None:
            return True
        self.blocking.done.wait(timeout)
        done = self.blocking.done.is_set()
        self.check_blocking()
        return done

    def judge_time(
        self,
        event: Event,
        what: str,
        due: tuple[int, int],
        early_edges: tuple[int, int],
        actual: int,
        gap: int,
        lag: int = 0,
    ) -> str:
        """``early``/``late`` if ``actual`` misses ``earliest``..``due[1]`` under the run's
        tolerance (late slack on the late side only), else ``""``; remembers the worst lateness
        and which event (``what``, due in ``due``) it was.

        ``early_edges`` is (``earliest``, ``ideal``) of :class:`Timed`. When an event is early
        against the first but not against the second, the expectation counted from an action
        of ours that came late (this machine stalled between two lines): a packet the kernel
        had already sent, not caused by that action, then looks early by our lag alone. The
        error stands, and the lag is remembered so the policy reports the run as not
        checkable instead of failed; a faster engine would have judged it, we cannot.

        The late side's twin: ``lag`` is the engine's own lag since the expectation was
        anchored (an injection or a call of ours that came late, after which the kernel's
        answer could only come late too: a blocking call's return, an absolute time). An event
        late against ``due`` but not against ``due`` pushed by that lag is remembered the same
        way; one late even then is the kernel's."""
        earliest, ideal = early_edges
        tolerance = self.cfg.tolerance
        side, late_by = tolerance.judge(earliest, due[1], actual, gap)
        seen = self.seen
        if side:
            if not seen.error:
                seen.error, seen.error_late_usecs = side, late_by
                if side == EARLY and not tolerance.judge(ideal, due[1], actual, gap)[0]:
                    seen.engine_behind_usecs = earliest - ideal
                elif side == LATE and lag > 0:
                    if not tolerance.judge(earliest, due[1] + lag, actual, gap)[0]:
                        seen.engine_behind_usecs = lag
        elif late_by > seen.late_usecs:
            seen.late_usecs, seen.late_line = late_by, event.line
            seen.late_event = event_words(what, *due)
        return side

    def check_time(self, event: Event, timed: Timed, actual: int, prev: int | None) -> str | None:
        """Raise (or, for outbound packets, return) the timing error of an event, if any."""
        if event.time.any_time or prev is None:
            return None
        gap = timed.start - prev
        end = timed.start if timed.end is None else timed.end
        what = event.describe()
        edges = (timed.earliest, timed.ideal)
        lag = self.engine_lag() - timed.lag_before
        if not self.judge_time(event, what, (timed.start, end), edges, actual, gap, lag):
            return None
        if timed.end is not None:
            if event.time.relative:
                text = (
                    f"timing error: expected {what} in relative time range "
                    f"+{secs(timed.start - timed.base):.6f}~+{secs(timed.end - timed.base):.6f}"
                    f" sec but happened at {secs(actual - timed.base):+.6f} sec"
                )
            else:
                text = (
                    f"timing error: expected {what} in time range {secs(timed.start):.6f}~"
                    f"{secs(timed.end):.6f} sec but happened at {secs(actual):.6f} sec"
                )
        else:
            text = (
                f"timing error: expected {what} at {secs(timed.start):.6f} sec but happened "
                f"at {secs(actual):.6f} sec; {self.cfg.tolerance.words(gap)}"
            )
        if event.is_outbound:
            return text
        raise self.fail(event, text)

    # --- the loop ---------------------------------------------------------------------------
    def run(self) -> None:
        events = self.script.events
        if events[0].time.usecs != 0:
            raise self.fail(events[0], "first event should be at time 0")
        prev: Event | None = None
        prev_timed: Timed | None = None
        if self.cfg.verbose and self.cfg.tolerance.late_slack_usecs:
            print(f"netregress: timing tolerance {self.cfg.tolerance.describe()}", flush=True)
        self.clock.restart()
        nominal = 0
        for event in events:
            self.check_blocking()
            timed = self.anchor(event, prev, prev_timed)
            if not event.time.any_time:
                nominal = nominal + event.time.usecs if event.time.relative else event.time.usecs
                self.state.drift = timed.start - nominal
            prev_time = None if prev_timed is None else prev_timed.start
            self.timeline.append((event, timed, prev_time))
            if (
                prev is not None
                and not event.time.relative
                and not event.time.any_time
                and not prev.time.relative
                and not prev.time.any_time
                and prev_time is not None
                and timed.start < prev_time
            ):
                raise self.fail(
                    event,
                    f"time goes backward in script from {prev_time} usec to {timed.start} usec",
                )
            self.dispatch(event, timed, prev_time)
            self.ideal_done = self.lag_free_done(event, timed)
            self.count_lag(event, timed)
            prev, prev_timed = event, timed

    def count_lag(self, event: Event, timed: Timed) -> None:
        """Keep :meth:`engine_lag` after ``event``: an action of ours began ``began - ideal``
        after a lag-free engine would have begun it (the lag since the kernel's last packet,
        all of it: ``ideal`` holds our earlier actions at their script times); a packet of the
        kernel's restarts the lag-free time line, so the lag so far stays in the kernel's times
        from then on."""
        if event.is_outbound:
            self.lag_absorbed += self.lag_pending
            self.lag_pending = 0
            self.acted.clear()
        elif self.began is not None:
            self.lag_pending = max(0, self.began - timed.ideal)
            self.acted.append((timed.ideal, self.began))

    def overtaken_by(self, sent: int) -> int:
        """How late our stimulus was that a kernel packet sent at ``sent`` overtook: one of our
        actions since the kernel's last packet, due (on the lag-free time line) more than the
        base tolerance before ``sent`` but performed after it. The script has the kernel
        receive it first; on this machine the kernel answered without it (0: none did)."""
        margin = self.cfg.tolerance.usecs
        return max(
            (began - ideal for ideal, began in self.acted if ideal + margin < sent < began),
            default=0,
        )

    def engine_lag(self) -> int:
        """How much later than the script, in all, the engine's own lag has made the kernel
        see its stimuli so far: an event counted from the script's start (an absolute time, a
        blocking call's return) can be that much late through no fault of the kernel's.
        Counted generously (a kernel timer's packet does not wait for our lag, yet carries it
        on here): it can only turn a failure into "not checkable", never into a pass."""
        return self.lag_absorbed + self.lag_pending

    def lag_free_done(self, event: Event, timed: Timed) -> int | None:
        """When the kernel would have been done with ``event`` had the engine never lagged.

        A packet the kernel sent is its own instant. An action of ours (injection, call,
        command, code) is counted from its ``ideal`` time and lasts as long as it really did:
        the kernel's share of it is real, and keeping our share too only makes the lag-free
        time line later, never earlier than it could have been."""
        began, done = self.began, self.done
        if event.is_outbound or began is None or done is None:
            return done
        return min(done, timed.ideal + max(0, done - began))

    def anchor(self, event: Event, prev: Event | None, prev_timed: Timed | None) -> Timed:
        t = event.time
        if not (t.relative or t.any_time):
            end = t.end_usecs
            return Timed(t.usecs, end, 0, t.blocking_end, t.usecs, t.usecs, t.usecs)
        if prev is not None and prev.is_inbound and event.is_inbound and prev_timed is not None:
            base = earliest = acted = prev_timed.act
            ideal = min(acted, prev_timed.ideal)
        else:
            base = self.clock.now() if prev is not None else 0
            # Like upstream, a relative time counts from "now", once the previous event is
            # done. On a slow machine "now" trails the instant that event took effect (the
            # kernel answers inside the write() or the system call), and a reply would look
            # early by our own lag; the early edge counts from the instant it began instead.
            earliest = base if self.began is None else min(base, self.began)
            # Upstream's "now" is microseconds after the kernel was done with the previous
            # event; ours also holds our slower bookkeeping (a sniffed packet's decoding and
            # checks, a call's result checks). Acting that much later on every line would
            # stretch the script's timeline, and the kernel's own clock readings (a
            # SCM_TIMESTAMPING value, an RTT) would drift from the script's times by the sum
            # of it. So the engine acts counting from when the kernel was done, while the
            # timing checks keep their edges.
            acted = base if self.done is None else self.done
            ideal = earliest if self.ideal_done is None else min(earliest, self.ideal_done)
        end = (
            None
            if t.end_usecs is None
            else (base + t.end_usecs if t.end_relative or t.relative else t.end_usecs)
        )
        blocking_end = (
            None
            if t.blocking_end is None
            else (base + t.blocking_end if t.relative else t.blocking_end)
        )
        return Timed(
            base + t.usecs,
            end,
            base,
            blocking_end,
            earliest + t.usecs,
            acted + t.usecs,
            ideal + t.usecs,
            self.engine_lag(),
        )

    def dispatch(self, event: Event, timed: Timed, prev: int | None) -> None:
        action = event.action
        self.done = None  # until this event says when the kernel was done with it
        if isinstance(action, PacketEvent) and action.direction == ">":
            self.outbound(event, action, timed, prev)
            return
        if isinstance(action, SyscallEvent) and timed.blocking_end is not None:
            self.start_blocking(event, timed, prev)
            return
        if isinstance(action, SyscallEvent) and self.blocking is not None:
            self.wait_for_blocking(1.0)
        injection: Injection | RuntimeFailure | None = None
        if isinstance(action, PacketEvent):
            try:
                injection = self.prepare_inbound(event, action)
            except RuntimeFailure as err:
                injection = err  # reported once the line's time has come, as before
        if prev is not None:
            self.wait(timed.act)
            self.check_time(event, timed, self.clock.now(), prev)
        self.began = self.clock.now()
        if isinstance(injection, RuntimeFailure):
            raise injection
        if injection is not None:
            self.inbound(event, injection)
            return
        if isinstance(action, SyscallEvent):
            self.execute_syscall(event)
        elif isinstance(action, CommandEvent):
            reason = run_shell(action.command)
            if reason:
                raise self.fail(event, f"error executing `{action.command}` command: {reason}")
        elif isinstance(action, CodeEvent):
            self.collect_code(event, action)
        self.done = self.clock.now()

    def finish(self) -> None:
        """The end of a run, after the cleanup command and the code blocks, as upstream orders
        it: a blocking call still in progress gets a second to return (a command's SIGCHLD
        may have ended it, :func:`.code.run_shell`), and its result is checked."""
        if self.blocking is not None and not self.wait_for_blocking(1.0):
            raise RuntimeFailure(
                f"{self.script.path}:{self.blocking.event.line}: runtime error: "
                "exiting while a blocking system call is in progress",
                self.blocking.event.line,
            )
        self.check_blocking()

    # --- system calls ---------------------------------------------------------------------
    def execute_syscall(self, event: Event, on_return: Callable[[], None] | None = None) -> None:
        action = event.action
        assert isinstance(action, SyscallEvent)
        try:
            self.executor.execute(action, on_return)
        except RuntimeFailure as err:
            self.note_drift(err)
            if err.text.startswith(f"{self.script.path}:"):
                raise
            raise self.fail(event, f"runtime error in {action.name} call: {err.text}") from None

    def start_blocking(self, event: Event, timed: Timed, prev: int | None) -> None:
        action = event.action
        assert isinstance(action, SyscallEvent)
        if self.blocking is not None and not self.wait_for_blocking(1.0):
            raise self.fail(
                event,
                "runtime error in "
                f"{action.name} call: blocking system call while another "
                "blocking system call is already in progress",
            )
        self.began = max(self.clock.now(), timed.act)
        call = BlockingCall(self, event, timed, prev)
        self.blocking = call
        while not call.blocked_or_done():
            time.sleep(0.0002)
        # The call began when its thread got to it: 37 ms after its time in a TCG guest, and
        # the kernel's SYN left inside it. That is our lag (engine_lag) and the instant the
        # next line's early edge counts from.
        if call.started is not None:
            self.began = max(self.began, call.started)
        self.done = self.clock.now()

    # --- code blocks ----------------------------------------------------------------------
    def collect_code(self, event: Event, action: CodeEvent) -> None:
        sut = self.state.sut
        if sut is None:
            raise self.fail(event, "runtime error in code: no socket to use for code")
        if sut.live_fd is None:
            raise self.fail(event, "runtime error in code: can't find getsockopt to get TCP info")
        try:
            self.snapshots.append(snapshot(sut.live_fd, event.line, action.code))
        except RuntimeFailure as err:
            raise self.fail(event, f"runtime error in code: {err.text}") from None

    def run_code_blocks(self) -> None:
        if self.snapshots:
            run_code(self.script.path, self.snapshots, self.cfg.code_command, self.cfg.verbose)

    # --- inbound packets ------------------------------------------------------------------
    def conn_for_inbound(self, action: PacketEvent) -> Conn:
        state, spec = self.state, action.l4
        sut = state.sut
        with state.lock:
            if isinstance(spec, TcpSpec):
                if sut is None or sut.listening or sut.proto != P.IPPROTO_TCP:
                    child = Conn(
                        P.IPPROTO_TCP,
                        local_port=(sut.local_port if sut and sut.listening else 0)
                        or self.cfg.bind_port,
                        remote_port=spec.sport or state.passive_port(),
                        remote_isn=spec.start if "S" in spec.flags else 0,
                    )
                    if sut is not None and sut.listening:
                        sut.children.append(child)
                    state.conns.append(child)
                    state.sut = child
                    return child
                if "S" in spec.flags and "." in spec.flags:
                    sut.remote_isn = spec.start
                return sut
            if sut is None or (
                isinstance(spec, UdpSpec)
                and sut.proto != P.IPPROTO_UDP
                and not (spec.sport or spec.dport)
            ):
                raise RuntimeFailure("no matching socket for script packet")
            self.check_addresses_known(sut)
            if isinstance(spec, UdpSpec) and sut.proto != P.IPPROTO_UDP:
                # Upstream sends it with the socket under test's addresses and the script's
                # ports, without making a UDP socket out of it.
                return Conn(P.IPPROTO_UDP, local_port=spec.dport, remote_port=spec.sport)
            if isinstance(spec, UdpSpec):
                sut.local_port = sut.local_port or self.cfg.bind_port
                sut.remote_port = sut.remote_port or spec.sport or state.ephemeral_port
            return sut

    def check_addresses_known(self, sut: Conn) -> None:
        """Upstream addresses an inbound non-TCP packet with the live addresses it has learned
        for the socket under test, and a UDP or ICMP socket's are learned only from its
        first outbound packet after connect()/sendto() (or given by --is_anyip). Before that
        upstream sends from and to address 0 and the kernel drops the packet; say so instead
        of delivering a packet upstream never would."""
        if sut.proto != P.IPPROTO_TCP and not sut.addresses_known and not self.cfg.is_anyip:
            raise RuntimeFailure(
                "no live addresses for the socket under test yet: an inbound "
                "UDP/ICMP packet needs an outbound packet of the socket first "
                "(connect() or sendto(), then '>'), or --is_anyip"
            )

    def prepare_inbound(self, event: Event, action: PacketEvent) -> Injection:
        """The live packet of an inbound line, made before its time comes: upstream makes it
        in microseconds after the wait, we would inject a few hundred later."""
        try:
            conn = self.conn_for_inbound(action)
        except RuntimeFailure as err:
            raise self.fail(event, f"error handling packet: {err.text}") from None
        packet = build(action, self.cfg, conn, inbound=True)
        try:
            map_inbound(packet, conn, self.cfg)
        except RuntimeFailure as err:
            raise self.fail(event, f"error handling packet: {err.text}") from None
        offload = None
        if self.cfg.mss and isinstance(packet.l4, TcpHeader):
            offload = Offload(self.cfg.mss, packet.inner_ip.version == 6)
        return Injection(packet, encode(packet), offload)

    def inbound(self, event: Event, injection: Injection) -> None:
        packet = injection.packet
        try:
            now = self.device.inject(injection.raw, injection.offload)  # stamped before the write
        except OSError as err:
            raise self.fail(event, f"error writing packet to tun device: {err.strerror}") from None
        self.began = self.clock.to_script(now)
        self.done = self.clock.now()
        if self.cfg.verbose:
            print(
                f"inbound injected packet: {secs(self.clock.to_script(now)):9.6f} {dump(packet)}",
                flush=True,
            )

    # --- outbound packets -------------------------------------------------------------------
    def belongs(self, conn: Conn, packet: Packet, action: PacketEvent) -> bool:
        """Is a sniffed packet the socket under test's (docs/packetdrill-language.md §5.9)? A
        connecting TCP socket learns its local port only from a pure SYN to the remote port while
        its handshake is open (upstream's rule: any other packet there belongs to some other
        socket); UDP from its first datagram."""
        l4, spec = packet.l4, action.l4
        if packet.inner_ip.version != (6 if self.cfg.wire_v6 else 4):
            return False
        if isinstance(spec, TcpSpec) or isinstance(spec, UdpSpec):
            kind = TcpHeader if isinstance(spec, TcpSpec) else UdpHeader
            if not isinstance(l4, kind):
                return False
            if isinstance(l4, TcpHeader):
                learn = bool(
                    l4.flags & SYN
                    and not l4.flags & ACK
                    and not conn.local_isn_known
                    and l4.sport != conn.local_port
                )
            else:
                learn = not conn.local_port
            if conn.connecting and l4.dport == conn.remote_port and learn:
                conn.local_port = l4.sport
            return (l4.sport, l4.dport) == (conn.local_port, conn.remote_port)
        if not isinstance(l4, IcmpHeader):
            return False
        # Upstream matches an outbound ICMP packet only to an ICMP socket (of the packet's
        # ICMP version) sending to the remote address: an ICMP error the kernel sends for a
        # TCP or UDP socket is never the socket under test's packet.
        icmp_proto = P.IPPROTO_ICMPV6 if packet.inner_ip.version == 6 else P.IPPROTO_ICMP
        if (
            conn.proto != icmp_proto
            or packet.inner_ip.dst != ipaddress.ip_address(self.cfg.remote_ip).packed
        ):
            return False
        return not (packet.inner_ip.version == 6 and l4.type in _ND_TYPES)

    def sniff(
        self, event: Event, conn: Conn, action: PacketEvent, timeout: float
    ) -> tuple[float, Packet]:
        deadline = time.monotonic() + timeout
        while True:
            self.check_blocking()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self.fail(event, "error handling packet: Timed out waiting for packet")
            got = self.device.receive(min(_POLL * 5, remaining))
            if got is None:
                continue
            stamp, raw = got
            packet = decode(raw)
            if packet is None or not self.belongs(conn, packet, action):
                deadline = time.monotonic() + timeout
                continue
            conn.addresses_known = True
            if self.cfg.verbose:
                print(
                    f"outbound sniffed packet: {secs(self.clock.to_script(stamp)):9.6f} "
                    f"{dump(packet)}",
                    flush=True,
                )
            return stamp, packet

    def outbound(self, event: Event, action: PacketEvent, timed: Timed, prev: int | None) -> None:
        conn = self.state.sut
        if conn is None:
            raise self.fail(event, "error handling packet: no matching socket for script packet")
        if event.time.any_time:
            timeout = 10.0**9
        else:
            gap = max(timed.start - (prev or 0), (timed.end or 0) - (prev or 0))
            timeout = self.cfg.tolerance.receive_timeout(gap)
        stamp, actual = self.sniff(event, conn, action, timeout)
        self.began = self.clock.to_script(stamp)
        overtaken = self.overtaken_by(self.began)
        try:
            self.check_outbound(event, action, timed, prev, conn, (stamp, actual), timeout)
        except RuntimeFailure:
            # A wrong packet the kernel sent before a stimulus the script gives it first, that
            # we sent late (the kernel's TLP before our ACKs came, in a TCG guest): the policy
            # reports the run as not checkable. Timing errors have rules of their own.
            if overtaken and not self.seen.error:
                self.seen.overtaken_usecs = overtaken
            raise

    def check_outbound(
        self,
        event: Event,
        action: PacketEvent,
        timed: Timed,
        prev: int | None,
        conn: Conn,
        sniffed: tuple[float, Packet],
        timeout: float,
    ) -> None:
        """Gather, learn from and verify the packet :meth:`outbound` sniffed."""
        stamp, actual = sniffed
        expected = build(action, self.cfg, conn, inbound=False)
        spec = action.l4
        if isinstance(spec, TcpSpec):
            stamp, actual = self.gather_tso(event, conn, action, expected, (stamp, actual), timeout)
            live_tcp = actual.l4
            assert isinstance(live_tcp, TcpHeader)
            learn_syn(conn, live_tcp, spec)
        self.done = self.clock.to_script(stamp)
        # Every protocol's payload length is checked, as upstream does: for ICMP it is the
        # quoted packet's size (28 bytes by default, N - 8 for `[raw (N)]`). Upstream prints
        # no packets for it; we show both, as for every other mismatch of a sniffed packet,
        # since the wrong length is seen only beside the packet that had it.
        if len(actual.payload) != len(expected.payload):
            raise self.packet_failure(
                event,
                "error handling packet: live packet payload: expected "
                f"{len(expected.payload)} bytes vs actual {len(actual.payload)} bytes",
                (timed, action, expected),
                (stamp, map_outbound(actual, conn, self.cfg)),
            )
        self.verify_packet(event, action, timed, prev, conn, expected, actual, stamp)

    def gather_tso(
        self,
        event: Event,
        conn: Conn,
        action: PacketEvent,
        expected: Packet,
        first: tuple[float, Packet],
        timeout: float,
    ) -> tuple[float, Packet]:
        """Merge a TSO train into one packet unless ``--strict_segments``
        (docs/packetdrill-language.md §5.8).

        The merged packet carries the kernel timestamp of its *last* piece, as upstream's: a
        train that pacing spreads out is only complete, and so only on time, when its last
        piece has left.
        """
        spec = action.l4
        assert isinstance(spec, TcpSpec)
        stamp, packet = first
        fragments = [packet]
        if self.cfg.strict_segments:
            return first
        while sum(len(f.payload) for f in fragments) < spec.length:
            stamp, fragment = self.sniff(event, conn, action, timeout)
            if flow(fragment) != flow(fragments[-1]):
                fragments = [fragment]  # another flow's packet came first: start over
                continue
            if fragment_problem(fragments[-1], fragment, len(fragments[0].payload)):
                total = sum(len(f.payload) for f in fragments) + len(fragment.payload)
                lines = [
                    f"error handling packet: fragment payload: expected "
                    f"{len(fragments[0].payload)} bytes vs actual {len(fragment.payload)}"
                    f" bytes; total payload: expected {spec.length} bytes vs actual "
                    f"{total} bytes",
                    f"   script packet: {self.script_dump(action, expected)}",
                ]
                lines += [
                    f"actual #{i} packet: {dump(f)}" for i, f in enumerate(fragments + [fragment])
                ]
                raise self.fail(event, "\n".join(lines))
            fragments.append(fragment)
        return stamp, merge(fragments) if len(fragments) > 1 else fragments[0]

    def script_dump(self, action: PacketEvent, expected: Packet) -> str:
        spec = action.l4
        if isinstance(spec, TcpSpec):
            return dump(
                expected,
                show_win=spec.win is not None,
                ace_mode=spec.ace is not None,
                options_known=spec.options is not None,
            )
        return dump(expected)

    def verify_packet(
        self,
        event: Event,
        action: PacketEvent,
        timed: Timed,
        prev: int | None,
        conn: Conn,
        expected: Packet,
        actual: Packet,
        stamp: float,
    ) -> None:
        spec = action.l4
        mapped = actual
        try:
            check_ip_checksums(actual)
            if isinstance(spec, TcpSpec) and isinstance(actual.l4, TcpHeader):
                if conn.ts_first is None:
                    conn.ts_first_drift = self.state.drift
                record_ts(conn, actual.l4, spec)
            mapped = map_outbound(actual, conn, self.cfg)
            drift = self.state.drift - conn.ts_first_drift
            ts_check = (self.cfg.tolerance.base(timed.start), drift)
            verify(expected, mapped, action, self.cfg, ts_check)
            self.check_flowlabel(action, conn, actual)
            actual_time = self.clock.to_script(stamp)
            problem = self.check_time(event, timed, actual_time, prev)
            if problem:
                raise RuntimeFailure(problem)
        except RuntimeFailure as err:
            self.note_drift(err)
            text = (
                f"{'warning' if self.cfg.non_fatal_packet else 'error'} handling packet: {err.text}"
            )
            failure = self.packet_failure(event, text, (timed, action, expected), (stamp, mapped))
            if not self.cfg.non_fatal_packet:
                raise failure from None
            self.warnings.append(failure.text)
            print(failure.text, file=sys.stderr, flush=True)

    def packet_failure(
        self,
        event: Event,
        text: str,
        script: tuple[Timed, PacketEvent, Packet],
        sniffed: tuple[float, Packet],
    ) -> RuntimeFailure:
        """The failure of an outbound line whose packet was sniffed: ``text``, then the
        ``script packet:`` and ``actual packet:`` lines (each with its script time), which the
        failure also carries apart for reports."""
        timed, action, expected = script
        stamp, shown = sniffed
        expected_line = (
            f"script packet: {secs(timed.start):9.6f} {self.script_dump(action, expected)}"
        )
        actual_line = f"actual packet: {secs(self.clock.to_script(stamp)):9.6f} {dump(shown)}"
        return RuntimeFailure(
            f"{self.script.path}:{event.line}: {text}\n{expected_line}\n{actual_line}",
            event.line,
            expected_line,
            actual_line,
        )

    def check_flowlabel(self, action: PacketEvent, conn: Conn, actual: Packet) -> None:
        label = action.ip_info.flowlabel
        if not label or actual.inner_ip.version != 6:
            return
        live = actual.inner_ip.flowlabel
        if not live:
            raise RuntimeFailure("flowlabel unmarked in the live packet")
        if label in conn.flowlabels:
            if conn.flowlabels[label] != live:
                raise RuntimeFailure(
                    "inconsistent flowlabels for this packet: expected: "
                    f"0x{conn.flowlabels[label]:x} vs actual: 0x{live:x}"
                )
        elif live in conn.flowlabels.values():
            raise RuntimeFailure("expected a different flowlabel but got the same")
        conn.flowlabels[label] = live
