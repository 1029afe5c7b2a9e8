#!/usr/bin/env bash
# Restores a backup made by scripts/backup.sh. See docs/backup.md.
#
#   scripts/restore.sh --data-dir DIR FILE       into a fresh chatd data dir: a new managed cluster
#   scripts/restore.sh --database-url DSN FILE   into an existing, empty database
#
# With --data-dir, DIR must hold no PostgreSQL cluster yet (a fresh data
# dir, or one whose pg/ was moved away): the cluster is created with the
# settings chatd uses, the dump is loaded into its chatd database, the
# server is stopped, and `chatd --data-dir DIR` then starts on the restored
# history. The JetStream store is not in the backup: chatd makes a new one
# and relays what the outbox still holds. Copy DIR's jwt-secret (or set
# --jwt-secret) so that issued tokens stay valid.
set -euo pipefail
. "$(dirname "$0")/cluster-pglib.sh"

[ $# -eq 3 ] || usage
mode=$1 dst=$2 in=$3
[ -r "$in" ] || { echo "restore: cannot read $in" >&2; exit 1; }
bindir=$(pg_bindir)
started=""
cleanup() { if [ -n "$started" ]; then pg_stop "$started"; fi; }
trap cleanup EXIT

case $mode in
--database-url) dsn=$dst ;;
--data-dir)
	# The server user must traverse the data dir to reach pg/ inside it.
	mkdir -p "$dst"
	chmod 755 "$dst"
	pgdir=$(managed_pg_dir "$dst" new)
	if [ -f "$pgdir/PG_VERSION" ]; then
		echo "restore: $pgdir already holds a PostgreSQL cluster; restore into a fresh data dir" >&2
		exit 1
	fi
	pg_initdb "$pgdir"
	sock=$(dirname "$pgdir")/restore-socket
	pg_start "$pgdir" "$sock" "$(dirname "$pgdir")/restore.log"
	started=$pgdir
	"$bindir/psql" -h "$sock" -U postgres -d postgres -qc "CREATE DATABASE chatd" >/dev/null
	dsn="host=$sock port=5432 user=postgres dbname=chatd sslmode=disable"
	;;
*) usage ;;
esac

# --no-owner/--no-privileges: the objects belong to whoever restores (chatd
# connects as that user); --exit-on-error: a partial restore is a failure.
"$bindir/pg_restore" --no-owner --no-privileges --exit-on-error --dbname="$dsn" "$in"
if [ -n "$started" ]; then
	pg_stop "$started"
	started=""
	rm -rf "$sock" "$(dirname "$pgdir")/restore.log"
fi
echo "restore: $in loaded into $( [ "$mode" = --data-dir ] && echo "$pgdir (start chatd with --data-dir $dst)" || echo "$dst")" >&2
