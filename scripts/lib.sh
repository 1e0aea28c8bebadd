# shellcheck shell=bash
# Helpers shared by the bash scripts of scripts/ and bench/: source it, do not run it.
#   . scripts/lib.sh                   (a script that has done cd "$(dirname "$0")/..")
#   . "$(dirname "$0")/lib.sh"         (a script of scripts/ that keeps the caller's directory)
# The release tarball ships it beside reaper-job, which sources it; a script a host runs on its
# own, outside the checkout (scripts/patroni-on-role-change), must not source it.

# Named as the Makefile and the docs name the script (scripts/dist, bench/in-cluster), so a
# message says which of several scripts run by one make target gave up.
case $0 in
*/*) _lib_dir=${0%/*}; SCRIPT_NAME=${_lib_dir##*/}/${0##*/}; unset _lib_dir ;;
*) SCRIPT_NAME=$0 ;;
esac

die() { echo "$SCRIPT_NAME: $*" >&2; exit 1; }

# -X: no ~/.psqlrc may change the output or the transaction mode a script relies on;
# ON_ERROR_STOP: a failing statement of a -f file or a heredoc fails the script.
sql() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }

# PostgreSQL refuses to run as root: as root, the server's programs run as postgres.
as_server() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
