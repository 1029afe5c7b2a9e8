#!/usr/bin/env bash
# Backs up chatd's PostgreSQL database with pg_dump (custom format, one
# consistent snapshot; chatd may keep serving). See docs/backup.md.
#
#   scripts/backup.sh --data-dir DIR FILE       chatd's managed PostgreSQL of data dir DIR
#   scripts/backup.sh --database-url DSN FILE   any PostgreSQL: the local cluster's, an external one
#
# With --data-dir, a running chatd's server is dumped over its unix socket
# (found in the cluster's postmaster.pid); when chatd is stopped, a
# temporary server is started on the cluster for the dump and stopped
# after (do not start chatd on DIR meanwhile). FILE is written whole or not
# at all (FILE.partial, renamed at the end), readable by its owner only.
# Restore with scripts/restore.sh.
set -euo pipefail
# The dump is the whole history of every chat: nothing this script creates
# may be readable by other users, whatever the caller's umask.
umask 077
. "$(dirname "$0")/cluster-pglib.sh"

[ $# -eq 3 ] || usage
mode=$1 src=$2 out=$3
bindir=$(pg_bindir)
tmpdir=""
started=""
cleanup() {
	if [ -n "$started" ]; then pg_stop "$started"; fi
	if [ -n "$tmpdir" ]; then rm -rf "$tmpdir"; fi
	rm -f "$out.partial"
}
trap cleanup EXIT

case $mode in
--database-url) dsn=$src ;;
--data-dir)
	pgdir=$(managed_pg_dir "$src")
	[ -f "$pgdir/PG_VERSION" ] || { echo "backup: no PostgreSQL cluster in $pgdir (is $src a chatd data dir?)" >&2; exit 1; }
	if run=$(pg_running "$pgdir"); then
		read -r port sock <<<"$run"
	else
		tmpdir=$(mktemp -d /tmp/chatd-backup.XXXXXX)
		chmod 755 "$tmpdir"
		pg_start "$pgdir" "$tmpdir/socket" "$tmpdir/postgres.log"
		started=$pgdir
		port=5432 sock=$tmpdir/socket
	fi
	dsn="host=$sock port=$port user=postgres dbname=chatd sslmode=disable"
	;;
*) usage ;;
esac

# A FILE.partial left from before keeps its mode when pg_dump reopens it;
# removing it first makes pg_dump create it under the umask above.
rm -f "$out.partial"
"$bindir/pg_dump" --format=custom --file="$out.partial" --dbname="$dsn"
chmod 600 "$out.partial"
mv "$out.partial" "$out"
echo "backup: $out ($(du -h "$out" | cut -f1)), from $( [ "$mode" = --data-dir ] && echo "data dir $src" || echo "$src")" >&2
