# SPDX-License-Identifier: GPL-2.0-only
"""The GitHub shard job's own `run:` steps on a fresh Debian 12 root filesystem.

Why a root filesystem and not this machine: the job runs in a clean `debian:12` container,
where nothing this machine has (Rust, the virtualenv, QEMU 10, a kernel cache) exists; only a
system made from nothing shows that the job installs all it needs. mmdebstrap makes a minbase
Debian 12 (the container image's package set) with the image's apt sources; the checkout is
the HEAD commit exported into the job's working directory; each `run:` step is taken from the
generated workflow, never retyped, and runs as GitHub runs it in a container: as root, with
`bash --noprofile --norc -eo pipefail`, in a private mount namespace chrooted into the root
filesystem (/proc, /sys and /dev mounted, as Docker does for a privileged container). The
`uses:` steps stand for: checkout (the export), caches (cold: a first run; or the virtiofsd
cache warm, with a binary given), upload (skipped).
"""

import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from kernels.errors import KernelsError
from kernels.paths import REPO_ROOT
from netregress import process

SUITE = "bookworm"
MIRROR = "http://deb.debian.org/debian"
SECURITY = "http://deb.debian.org/debian-security"
# The debian:12 image's apt sources, in its own file and format (scripts/setup-vm reads it).
_SOURCES = f"""\
Types: deb
URIs: {MIRROR}
Suites: {SUITE} {SUITE}-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: {SECURITY}
Suites: {SUITE}-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
"""
# The step that runs the tests (kernels.matrix.ci_workflow): --setup-only stops before it.
TEST_STEP = "Run the shard"
WORKDIR = "/__w/netregress/netregress"
HOME = "/github/home"
_ENV = {"HOME": HOME, "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "CI": "true", "GITHUB_ACTIONS": "true", "LANG": "C.UTF-8"}  # fmt: skip
# Where the machine's own certificate bundle goes when its HTTPS needs one (below).
HOST_CA = "/etc/ssl/host-ca.crt"
_CA_VARIABLES = ("SSL_CERT_FILE", "PIP_CERT", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
                 "CARGO_HTTP_CAINFO")  # fmt: skip
# Inside the mount namespace: the mounts, then the chroot (arguments: root, step script). The
# root is bind-mounted on itself first, so that it is a mount point as a container's root is:
# virtiofsd's sandbox pivots into the shared directory, and pivot_root refuses a root that is
# a mere chroot directory (QEMU then finds virtiofsd's socket dead: "Connection refused").
_ENTER = """\
mount --bind "$1" "$1"
mount -t proc proc "$1/proc"
mount -t sysfs sysfs "$1/sys"
mount --rbind /dev "$1/dev"
exec chroot "$1" /usr/bin/env -i "${@:3}" bash --noprofile --norc -eo pipefail -c "$2"
"""


@dataclass
class Step:
    name: str
    seconds: float
    exit_status: int


def run_steps(workflow: str, job: str, matrix: dict[str, str]) -> list[tuple[str, str]]:
    """(name, script) of the job's `run:` steps, with `${{ matrix.X }}` filled in."""
    steps = yaml.safe_load(workflow)["jobs"][job]["steps"]
    out: list[tuple[str, str]] = []
    for step in steps:
        if "run" not in step:
            continue
        script = str(step["run"])
        for key, value in matrix.items():
            script = script.replace(f"${{{{ matrix.{key} }}}}", value)
        if "${{" in script:
            raise KernelsError(f"step {step.get('name')!r}: an expression is left: {script}")
        out.append((str(step.get("name", script)), script))
    return out


def make_root(root: Path, virtiofsd: Path | None = None) -> None:
    """A minbase Debian 12, shaped like the debian:12 image, with the checkout in WORKDIR;
    `virtiofsd`, when given, is put where the workflow's virtiofsd cache restores it (a run
    with that cache warm: a binary built on Debian 12, e.g. by an earlier run)."""
    if shutil.which("mmdebstrap") is None:
        raise KernelsError("mmdebstrap is missing: apt-get install mmdebstrap")
    if root.exists():
        shutil.rmtree(root)
    mirrors = [
        f"deb {MIRROR} {SUITE} {SUITE}-updates main",
        f"deb {SECURITY} {SUITE}-security main",
    ]
    process.run(["mmdebstrap", "--variant=minbase", "--mode=root", "--quiet", SUITE,
                 str(root), *mirrors]).check_returncode()  # fmt: skip
    apt = root / "etc/apt"
    (apt / "sources.list").unlink(missing_ok=True)
    (apt / "sources.list.d/debian.sources").write_text(_SOURCES)
    shutil.copy("/etc/resolv.conf", root / "etc/resolv.conf")
    bundle = os.environ.get("SSL_CERT_FILE")
    if bundle and Path(bundle).is_file():
        # A machine whose HTTPS goes through an intercepting proxy names its certificate bundle
        # in SSL_CERT_FILE: the steps get it as a runner gets its own network (pip, cargo and
        # curl trust it through _ENV), outside /etc/ssl/certs, which a step may rebuild.
        (root / HOST_CA.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(bundle, root / HOST_CA.lstrip("/"))
    (root / HOME.lstrip("/")).mkdir(parents=True)
    work = root / WORKDIR.lstrip("/")
    work.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(REPO_ROOT), "archive", "HEAD"], check=True,
                             capture_output=True).stdout  # fmt: skip
    subprocess.run(["tar", "-x", "-C", str(work)], input=archive, check=True)
    if virtiofsd is not None:
        cached = root / HOME.lstrip("/") / ".cargo/bin/virtiofsd"
        cached.parent.mkdir(parents=True)
        shutil.copy2(virtiofsd, cached)


def run_in_root(root: Path, script: str, log: Path) -> int:
    """One step in the root filesystem (a private mount namespace, gone when it ends)."""
    variables = dict(_ENV)
    if (root / HOST_CA.lstrip("/")).is_file():
        variables.update(dict.fromkeys(_CA_VARIABLES, HOST_CA))
    env = [f"{key}={value}" for key, value in variables.items()]
    argv = ["unshare", "--mount", "--propagation", "private", "--", "bash", "-ec", _ENTER,
            "enter", str(root), f"cd {WORKDIR}\n{script}", *env]  # fmt: skip
    with log.open("a") as sink:
        sink.write(f"\n=== {script}\n")
        sink.flush()
        return process.run(argv, stdout=sink, stderr=subprocess.STDOUT,
                           stdin=subprocess.DEVNULL).returncode  # fmt: skip


def mounts_under(root: Path) -> list[str]:
    """Mount points left under `root` (none: the namespaces took theirs with them)."""
    prefix = str(root.resolve()) + "/"
    with open("/proc/self/mounts") as mounts:
        return [line.split()[1] for line in mounts if line.split()[1].startswith(prefix)]


def run(
    workflow: str,
    job: str,
    matrix: dict[str, str],
    root: Path,
    log: Path,
    stop_before: str | None = None,
    virtiofsd: Path | None = None,
) -> list[Step]:
    """Make the root filesystem, then run the job's steps until one fails (or `stop_before`)."""
    if os.geteuid() != 0:
        raise KernelsError("a clean root filesystem needs root (mmdebstrap, chroot): use sudo")
    steps = run_steps(workflow, job, matrix)
    started = time.monotonic()
    make_root(root, virtiofsd)
    done = [Step("make the root filesystem (mmdebstrap, checkout)", time.monotonic() - started, 0)]
    for name, script in steps:
        if name == stop_before:
            break
        started = time.monotonic()
        status = run_in_root(root, script, log)
        done.append(Step(name, time.monotonic() - started, status))
        if status != 0:
            break
    return done
