# shellcheck shell=bash
# Shell functions shared by scripts/cluster.sh, backup.sh and restore.sh for
# the PostgreSQL clusters they run or read: chatd's managed one (a data dir's
# pg/) and the local cluster's. Sourced, not run.

# alive: pid $1 exists and is not a zombie (an orphan's zombie may linger
# where PID 1 does not reap).
alive() {
	local st
	[ -n "$1" ] && [ -r "/proc/$1/stat" ] || return 1
	st=$(sed 's/.*) //' "/proc/$1/stat" | cut -d' ' -f1)
	[ "$st" != Z ] && [ "$st" != X ]
}

# as_pg runs a command as the postgres user when we are root (PostgreSQL
# refuses to run as root), else as ourselves.
as_pg() {
	if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# pg_bindir prints the newest installed PostgreSQL server bin dir, found as
# chatd finds it (pg_config, then /usr/lib/postgresql/*/bin).
pg_bindir() {
	local d
	if command -v pg_config >/dev/null 2>&1; then
		d=$(pg_config --bindir 2>/dev/null || true)
		[ -x "$d/initdb" ] && { echo "$d"; return; }
	fi
	for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
		[ -x "$d/initdb" ] && { echo "$d"; return; }
	done
	echo "no PostgreSQL server binaries (run scripts/ensure-postgres.sh)" >&2
	return 1
}

# pg_running prints "port socketdir" of the server running on cluster dir
# $1 (from its postmaster.pid), or fails when none runs.
pg_running() {
	local pidf="$1/postmaster.pid"
	[ -f "$pidf" ] && alive "$(head -1 "$pidf")" || return 1
	echo "$(sed -n 4p "$pidf") $(sed -n 5p "$pidf")"
}

# pg_initdb makes a cluster in $1 with the settings of chatd's managed
# PostgreSQL (embedded/postgres_cluster.go): superuser postgres, UTF8, C
# locale, trust on the unix socket only (the server opens no TCP port and
# its socket directory is private), TCP rejected. It initializes beside $1
# and renames into place, so an interrupted run leaves no half-made cluster.
pg_initdb() {
	local dir=$1 tmp="$1.initdb" bindir
	bindir=$(pg_bindir)
	rm -rf "$tmp"
	mkdir -p "$(dirname "$dir")"
	mkdir -m 700 "$tmp"
	if [ "$(id -u)" -eq 0 ]; then chown postgres: "$tmp"; fi
	as_pg "$bindir/initdb" --pgdata="$tmp" --username=postgres --encoding=UTF8 --locale=C \
		--auth-local=trust --auth-host=reject >"$tmp.log" 2>&1 || {
		cat "$tmp.log" >&2
		rm -rf "$tmp" "$tmp.log"
		return 1
	}
	rm -f "$tmp.log"
	[ -d "$dir" ] && rmdir "$dir" # only an empty one: rename replaces nothing else
	mv "$tmp" "$dir"
}

# pg_start starts a server on cluster dir $1 with its socket in dir $2
# (created private to the server's user), no TCP listener, its log in $3;
# it returns once the server accepts connections.
pg_start() {
	local dir=$1 sock=$2 logf=$3
	mkdir -p "$sock"
	touch "$logf"
	if [ "$(id -u)" -eq 0 ]; then chown postgres: "$sock" "$logf"; fi
	chmod 700 "$sock"
	as_pg "$(pg_bindir)/pg_ctl" start -w -t 60 -D "$dir" -l "$logf" \
		-o "-c listen_addresses= -c port=5432 -c unix_socket_directories=$sock -c unix_socket_permissions=0700 -c max_connections=200" \
		>/dev/null || {
		tail -20 "$logf" >&2
		return 1
	}
}

# pg_stop stops the server on cluster dir $1 (fast: open sessions end).
pg_stop() {
	as_pg "$(pg_bindir)/pg_ctl" stop -w -t 60 -m fast -D "$1" >/dev/null
}

# managed_pg_dir prints where chatd keeps the managed cluster of data dir
# $1: <data-dir>/pg, or, when chatd runs as root and the postgres user
# could not reach the data dir, the cluster <data-dir>/pg.location names,
# else /var/lib/chatd/<name>-<hash>/pg (the rule of
# embedded/postgres_place.go, placeCluster). With $2 = new, it prints where
# a new cluster would go.
managed_pg_dir() {
	local req parent base sum alt noted
	req="$1/pg"
	parent=$(realpath -m "$1")
	base=$(basename "$parent" | sed 's/[^A-Za-z0-9._-]\{1,\}/_/g' | cut -c1-32)
	sum=$(printf '%s' "$parent/pg" | sha256sum | cut -c1-12)
	alt="/var/lib/chatd/$base-$sum/pg"
	noted=$(cat "$req.location" 2>/dev/null || true)
	if [ "$(id -u)" -ne 0 ] || [ -f "$req/PG_VERSION" ]; then
		echo "$req"
	elif [ -n "$noted" ] && [ -f "$noted/PG_VERSION" ]; then
		echo "$noted"
	elif [ -f "$alt/PG_VERSION" ]; then
		echo "$alt"
	elif [ "${2:-}" = new ] && ! runuser -u postgres -- test -x "$parent" 2>/dev/null; then
		echo "$alt"
	else
		echo "$req"
	fi
}

# usage prints the calling script's header comment (its lines 2 up to the
# `set -euo` line) as its help, and exits 2.
usage() {
	sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
}
