# SPDX-License-Identifier: GPL-2.0-only
# Sourced by every scripts/* entry point (after it sets $repo): what makes each behave like a
# command. -h/--help prints the usage and exits 0 before the script does anything else.
#
# Why here and first: a command asked for help must not install packages (scripts/setup runs
# apt-get as root, and refuses a normal user before any help), create the virtualenv, build,
# lint or start a benchmark; argparse inside Python answers only once the script gets there.
# Only a -h/--help before the first `--` counts: the words after it are pytest's or a test's.

# True when one of the words in $1 (space-separated) comes before the first `--` of the rest.
asks_for() {
  local wanted=" $1 " arg
  shift
  for arg in "$@"; do
    [ "$arg" = "--" ] && return 1
    [[ "$wanted" == *" $arg "* ]] && return 0
  done
  return 1
}

# The running script's header comment (from line 2 up to the first line that is not one):
# the usage written for people, and the help wherever no virtualenv can answer. The licence
# line is for tools, not part of the usage.
header() {
  awk 'NR == 1 || /^# SPDX-License-Identifier:/ { next }
       /^#/ { sub(/^# ?/, ""); print; next } { exit }' "$0"
}

# A shell-only script: on -h/--help, its header comment.
help_from_header() {
  if asks_for "-h --help" "$@"; then
    header
    exit 0
  fi
}

# A Python-backed script: on -h/--help, argparse's own help of module $1, given the words up to
# the help option (so `scripts/matrix ci --help` is the subcommand's); the header comment when
# there is no virtualenv yet. PYTHONPATH: the help of this checkout's code, whichever checkout
# the virtualenv was installed from.
help_from_module() {
  local module=$1 words=() arg
  shift
  asks_for "-h --help" "$@" || return 0
  if [ ! -x "$repo/.venv/bin/python" ]; then
    header
    exit 0
  fi
  for arg in "$@"; do
    words+=("$arg")
    case "$arg" in -h | --help) break ;; esac
  done
  PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}" exec "$repo/.venv/bin/python" -m "$module" \
    "${words[@]}"
}

# The suite runs ip, bridge, sysctl and tc, which live in the sbin directories a normal user's
# PATH often lacks (scripts/netregress, scripts/soak).
sbin_on_path() {
  export PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"
}
