# SPDX-License-Identifier: GPL-2.0-only
"""The minimal initramfs launcher's guest side: busybox, an init script, the early modules.

Why not virtme-ng's init: its udev and tmpfiles cost +3–5 s per TCG boot (docs/vm-boot.md §5).
This init only mounts the host root (virtiofs, read-only) under a tmpfs overlay, mounts the
per-run output share, runs the command the host wrote there, records its exit status and
powers off. Modules needed before the host root is reachable (virtiofs, overlay on 5.10/6.1)
travel in a second, per-kernel cpio appended to the shared base archive.
"""

import gzip
import hashlib
import lzma
import subprocess
from pathlib import Path

from kernels.acquire.kernel import BootableKernel
from kernels.errors import KernelsError
from kernels.paths import cache_dir, locked
from kernels.vm.cpio import Entry, archive, directory
from kernels.vm.phases import FILE as PHASES_FILE
from kernels.vm.phases import UPTIME, shell_stamp

BUSYBOX = Path("/bin/busybox")
ROOT_TAG = "nr-root"
OUT_TAG = "nr-out"
GUEST_OUT = "/run/netregress-out"  # where the output share appears inside the guest
BOOT_MODULES = ("virtio_pci", "virtiofs", "overlay")
# Host files a guest reads by name lookups (users, groups, hosts, services): frozen at boot.
FROZEN_ETC = ("passwd", "group", "nsswitch.conf", "hosts", "services", "protocols")

INIT = f"""#!/bin/busybox sh
# netregress guest init: host / (virtiofs, ro) + tmpfs overlay, run {GUEST_OUT}/guest.sh, off.
# /tmp stays the (overlaid) host /tmp: a checkout under /tmp must stay visible to the guest.
/bin/busybox --install -s /bin
export PATH=/bin
die() {{ echo "netregress-init: $*"; sync; reboot -f; }}
mount -t proc proc /proc
t_init={UPTIME}
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
for module in $(cat /modules/order); do
  insmod "/modules/$module" || echo "netregress-init: insmod $module failed"
done
mkdir -p /host /rw /newroot /out
mount -t virtiofs {OUT_TAG} /out || die "cannot mount the output share"
{shell_stamp("kernel-booted", f"/out/{PHASES_FILE}", "$t_init")}
mount -t virtiofs -o ro {ROOT_TAG} /host || die "cannot mount the host root over virtiofs"
mount -t tmpfs -o mode=0755 tmpfs /rw && mkdir /rw/upper /rw/work
mount -t overlay overlay -o lowerdir=/host,upperdir=/rw/upper,workdir=/rw/work /newroot \\
  || die "cannot mount the overlay on the host root"
# The guest's own copy of the host's identity files, taken now: the host root is read live,
# and a useradd on the host mid-run (it rewrites /etc/passwd) made tcpdump's `-Z tcpdump` fail.
for f in {" ".join(FROZEN_ETC)}; do
  [ -f "/newroot/etc/$f" ] && cp -p "/newroot/etc/$f" "/newroot/etc/.nr-$f" \
    && mv "/newroot/etc/.nr-$f" "/newroot/etc/$f"
done
mount -t proc proc /newroot/proc
mount -t sysfs sysfs /newroot/sys
mount -t cgroup2 cgroup2 /newroot/sys/fs/cgroup 2>/dev/null
mount -t devtmpfs devtmpfs /newroot/dev
mkdir -p /newroot/dev/pts /newroot/dev/shm
mount -t devpts -o newinstance,ptmxmode=0666 devpts /newroot/dev/pts
mount -t tmpfs tmpfs /newroot/dev/shm
mount -t tmpfs -o mode=0755 tmpfs /newroot/run
mkdir -p /newroot{GUEST_OUT}
mount --move /out /newroot{GUEST_OUT}
. /newroot{GUEST_OUT}/boot.env
mkdir -p "/newroot/lib/modules/$NR_RELEASE"
mount --bind "/host$NR_MODULES" "/newroot/lib/modules/$NR_RELEASE"
hostname netregress-guest
# The kernel runs modprobe for autoloading (request_module) in pid 1's root, this initramfs:
# send it into the host root, where the kernel's modules are.
echo /bin/nr-modprobe > /proc/sys/kernel/modprobe
chroot /newroot /bin/sh {GUEST_OUT}/guest.sh
echo $? > /newroot{GUEST_OUT}/exit-status
{shell_stamp("exited", f"/newroot{GUEST_OUT}/{PHASES_FILE}")}
sync
reboot -f
"""

MODPROBE = '#!/bin/busybox sh\nexec /bin/busybox chroot /newroot /sbin/modprobe "$@"\n'


def _base() -> bytes:
    """busybox + init: the same for every kernel."""
    if not BUSYBOX.is_file():
        raise KernelsError(f"{BUSYBOX} is missing: run scripts/setup --vm")
    entries = [directory(d) for d in ("bin", "dev", "proc", "sys", "modules")]
    entries += [
        Entry("bin/busybox", 0o755, BUSYBOX.read_bytes()),
        Entry("bin/nr-modprobe", 0o755, MODPROBE.encode()),
        Entry("init", 0o755, INIT.encode()),
    ]
    return archive(entries)


def _module_bytes(path: Path) -> bytes:
    """A module's ELF bytes: busybox insmod cannot read compressed modules."""
    data = path.read_bytes()
    if path.suffix == ".xz":
        return lzma.decompress(data)
    if path.suffix == ".gz":
        return gzip.decompress(data)
    if path.suffix == ".zst":
        proc = subprocess.run(["zstd", "-dc", str(path)], capture_output=True, check=False)
        if proc.returncode != 0:
            raise KernelsError(f"cannot decompress {path}: {proc.stderr.decode().strip()}")
        return proc.stdout
    return data


def boot_modules(kernel: BootableKernel) -> list[Path]:
    """The module files (dependencies first) the init must insmod; built-ins need none."""
    assert kernel.modules is not None
    base = kernel.modules.parent.parent.parent  # <base>/lib/modules/<release>
    found: list[Path] = []
    for module in BOOT_MODULES:
        proc = subprocess.run(
            ["modprobe", "-d", str(base), "-S", kernel.release, "--show-depends", module],
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            raise KernelsError(
                f"kernel {kernel.name}: has no {module} support ({proc.stderr.strip()}); "
                f"the VM needs {', '.join(BOOT_MODULES)} (built in or as modules)"
            )
        for line in proc.stdout.splitlines():
            words = line.split()
            if words[:1] == ["insmod"] and Path(words[1]) not in found:
                found.append(Path(words[1]))
    return found


def initramfs_for(kernel: BootableKernel) -> Path:
    """The cached initrd for `kernel`: base archive + its boot modules, built on first use."""
    modules = boot_modules(kernel)
    names = [path.name.split(".ko")[0] + ".ko" for path in modules]
    entries = [
        Entry(f"modules/{name}", 0o644, _module_bytes(path))
        for name, path in zip(names, modules, strict=True)
    ]
    order = "".join(f"{name}\n" for name in names)
    extra = archive([*entries, Entry("modules/order", 0o644, order.encode())])
    data = _base() + extra
    digest = hashlib.sha256(data).hexdigest()[:16]
    path = cache_dir("initramfs") / f"{kernel.release}-{digest}.cpio"
    with locked(path.with_name(path.name + ".lock")):
        if not path.is_file():
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_bytes(data)
            tmp.replace(path)
    return path
