#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# The inside of a contained selftest run on a host (kernels/selftests/run.py starts it under
# `unshare --net --mount --pid --fork --mount-proc --propagation private`): before the script
# runs, its mount namespace gets a private tmpfs on /run (so the `ip netns add` it does makes
# its namespaces there, nested in ours), a fresh sysfs (its own namespace's devices), /proc/sys
# read-only but for /proc/sys/net (whose knobs are this namespace's own), and the script runs
# without the capabilities to load modules, set the clock, reboot or touch raw I/O.
#   contain.sh FOLDER PROGRAM [ARG...]
set -e
folder=$1
shift
mount -t tmpfs -o mode=0755 netregress-run /run
mkdir -p /run/netns
mount -t sysfs netregress-sys /sys
mount --bind /proc/sys /proc/sys
mount -o remount,bind,ro /proc/sys
mount --bind /proc/sys/net /proc/sys/net
mount -o remount,bind,rw /proc/sys/net
ip link set lo up
cd "$folder"
exec setpriv --bounding-set=-sys_module,-sys_time,-sys_boot,-sys_rawio -- "$@"
