# SPDX-License-Identifier: GPL-2.0-only
"""Booting one kernel under QEMU and running a command in it: the acceleration probe, the
initramfs, virtiofs shares, the console scan, child processes.
"""
