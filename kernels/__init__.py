# SPDX-License-Identifier: GPL-2.0-only
"""The kernel matrix: describe kernels, fetch them, boot each in a VM, run the suite, report.

Data flows one way: catalog (matrix.toml) → fetch (cache) → launcher (QEMU + virtiofs) →
guest pytest → results (JUnit + console) → matrix report.
"""
