#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Stands in for iproute2's ip, bridge and tc while a kernel selftest runs (linked under those
# names into a folder first on PATH, kernels/selftests/run.py): runs the real tool (its path in
# NETREGRESS_KSFT_REAL_<name>) with the same arguments, passes its output and exit status
# through, and when it fails for a reason that is not the kernel's behaviour under test, adds
# one line to the trouble log ($NETREGRESS_KSFT_TROUBLES): a usage this iproute2 does not know
# (too old for the script), or a link type this kernel was built without. The runner pins each
# line on the sub-test it came before (kernels/selftests/output.py).
tool=${0##*/}
real_var=NETREGRESS_KSFT_REAL_$tool
real=${!real_var}
if [ -z "$real" ] || [ -z "$NETREGRESS_KSFT_TROUBLES" ]; then
	echo "netregress: $tool stand-in without NETREGRESS_KSFT_REAL_$tool/_TROUBLES" >&2
	exit 127
fi
# Commands that run on (a monitor) or run another program (netns exec) become the real tool:
# a script stops them by the PID it started, which must then be the tool's own.
for arg in "$@"; do
	case $arg in
	monitor | mon | exec) exec "$real" "$@" ;;
	esac
done
# A help request fails by design, and says nothing about this iproute2's age.
for arg in "$@"; do
	case $arg in
	help) exec "$real" "$@" ;;
	esac
done
# stdout flows through as it comes; stderr is kept to be read, then passed on.
{ err=$("$real" "$@" 2>&1 1>&3 3>&-); rc=$?; } 3>&1
[ -n "$err" ] && printf '%s\n' "$err" >&2
[ $rc -eq 0 ] && exit 0
command="$tool $*"
command=${command:0:160}
usage='Garbage instead of arguments|Command line is not complete|is unknown, try "|What is "|'
usage+='is a garbage|Option ".*" is unknown|^Unknown (qdisc|filter|action|command|option)'
if line=$(grep -m1 -E "$usage" <<<"$err"); then
	printf 'iproute2\t%s\t%s\n' "$command" "$line" >>"$NETREGRESS_KSFT_TROUBLES"
elif line=$(grep -m1 -E 'Unknown device type|Operation not supported' <<<"$err") &&
	[[ " $* " =~ \ l(i|in|ink)?\ (.*\ )?a(d|dd)?\ (.*\ )?type\  ]]; then
	kind=$(sed -E 's/.* type ([^ ]+).*/\1/' <<<" $* ")
	printf 'link-type\t%s\t%s: %s\n' "$command" "$kind" "$line" >>"$NETREGRESS_KSFT_TROUBLES"
elif line=$(grep -m1 -E 'add tunnel .* failed: No such device' <<<"$err") &&
	[[ " $* " == *" mode "* ]]; then
	# `ip tunnel add` asks the mode's fallback device (ip6gre0, tunl0 …), which a kernel
	# without that tunnel type does not have.
	kind=$(sed -E 's/.* mode ([^ ]+).*/\1/' <<<" $* ")
	printf 'link-type\t%s\t%s: %s\n' "$command" "$kind" "$line" >>"$NETREGRESS_KSFT_TROUBLES"
fi
exit $rc
