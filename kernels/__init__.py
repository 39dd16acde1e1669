# SPDX-License-Identifier: GPL-2.0-only
"""The kernel matrix: describe kernels, fetch them, boot each in a VM, run the suite, report.

Data flows one way: catalog (matrix.toml) → fetch or build (cache) → launcher (QEMU +
virtiofs) → guest pytest → results (pytest-reportlog's report log plus a started-tests log,
read back as pytest reports: matrix/reportlog.py; the console only for crashes) → matrix
report (terminal, Markdown, JSON, HTML, JUnit, KTAP written on the host).
"""
