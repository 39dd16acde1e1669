# SPDX-License-Identifier: GPL-2.0-only
# Stand-in for kselftest's ktap_helpers.sh while the kernel's ksft_runner.sh is probed
# (kernels/corpus/runner.py): each verdict function the runner calls is written down.
KSFT_PASS=0
KSFT_FAIL=1
KSFT_XFAIL=2
KSFT_XPASS=3
KSFT_SKIP=4
# One line per note: a message's own line breaks become spaces (echo of the unquoted words).
_netregress_note() { printf '%s\t%s\n' "$1" "$(echo $2)" >> "$NETREGRESS_KSFT_LOG"; }
ktap_print_header() { :; }
ktap_print_msg() { :; }
ktap_set_plan() { :; }
ktap_finished() { :; }
ktap_print_totals() { :; }
ktap_test_pass() { _netregress_note pass "$1"; }
ktap_test_fail() { _netregress_note fail "$1"; }
ktap_test_xfail() { _netregress_note xfail "$1"; }
ktap_test_skip() { _netregress_note skip "$1"; }
ktap_test_result() { _netregress_note fail "$1"; }
ktap_skip_all() { _netregress_note skip-all "$*"; }
ktap_exit_fail_msg() { _netregress_note error "$*"; }
