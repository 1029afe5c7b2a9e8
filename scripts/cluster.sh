#!/usr/bin/env bash
# A local chatd cluster anyone can run (issue 11): the topology of
# deploy/compose.yaml as plain processes on loopback, no containers.
#
#   scripts/cluster.sh up           start what is not running, wait until ready, print the URLs
#   scripts/cluster.sh down         stop everything (idempotent)
#   scripts/cluster.sh status       what runs, with pids
#   scripts/cluster.sh start NAME   start one process again (nats1..3, postgres, chatd1..3)
#   scripts/cluster.sh pid NAME     print the pid of one running process
#   scripts/cluster.sh env          print the cluster's settings as shell assignments
#
# Processes: three nats-server (clustered, JetStream, each with its own
# store), one PostgreSQL (initdb on first start; unix socket only, no TCP
# listener), three chatd nodes (--node-id n1..n3, --nats-url listing all
# three servers, --database-url on the socket, --stream-replicas 3, one
# shared JWT secret generated on first start). Everything lives under
# CLUSTER_DIR: pids/, logs/, nats/, chatd/, pg/ and jwt-secret. `down`
# keeps the data; `rm -rf` the dir for a fresh cluster.
#
# Env: CLUSTER_DIR (./cluster-data), CLUSTER_HTTP_PORT (8081: chatd i listens
# on +i-1), CLUSTER_NATS_PORT (14220: client ports +1..+3, cluster routes
# +11..+13, monitoring +21..+23), CHATD_BIN (default: bin/chatd, built with
# `make build`), NATS_SERVER (default: nats-server from PATH, GOPATH/bin or
# GOBIN, installed with `go install` at go.mod's version when missing),
# CHATD_FLAGS (extra flags for every chatd, e.g. "--log-level debug"),
# CLUSTER_DEBUG_PORT (unset: none; chatd i serves Go's profiler on +i).
#
# As root, PostgreSQL runs as the `postgres` user, which must be able to
# traverse to CLUSTER_DIR; when it cannot (a clone in a 0700 home), the
# cluster's pg/ goes under /var/lib/chatd-cluster/<name>/ instead and
# CLUSTER_DIR/pg.path says where.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
. scripts/cluster-pglib.sh

dir=${CLUSTER_DIR:-./cluster-data}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
http_base=${CLUSTER_HTTP_PORT:-8081}
nats_base=${CLUSTER_NATS_PORT:-14220}
nodes=(1 2 3)

nats_urls="nats://127.0.0.1:$((nats_base + 1)),nats://127.0.0.1:$((nats_base + 2)),nats://127.0.0.1:$((nats_base + 3))"
routes="nats://127.0.0.1:$((nats_base + 11)),nats://127.0.0.1:$((nats_base + 12)),nats://127.0.0.1:$((nats_base + 13))"
chatd_urls="http://127.0.0.1:$http_base,http://127.0.0.1:$((http_base + 1)),http://127.0.0.1:$((http_base + 2))"

log() { echo "cluster: $*" >&2; }
die() {
	log "$*"
	exit 1
}

pidfile() { echo "$dir/pids/$1.pid"; }
pid_of() { # the pid of a running process named $1, or nothing
	local p
	[ -f "$(pidfile "$1")" ] || return 1
	p=$(cat "$(pidfile "$1")")
	alive "$p" && echo "$p"
}

# http_code prints the HTTP status of GET http://127.0.0.1:$1$2 (bash's
# /dev/tcp, so that no curl is needed on a bare machine).
http_code() {
	local code=""
	{
		exec 3<>"/dev/tcp/127.0.0.1/$1"
		printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' "$2" >&3
		read -r -t 2 _ code _ <&3 || true
		exec 3>&-
	} 2>/dev/null || return 0
	echo "$code"
}

wait_http() { # $1 port, $2 path, $3 what, $4 pid to watch
	for _ in $(seq 1 600); do
		[ "$(http_code "$1" "$2")" = 200 ] && return 0
		alive "$4" || die "$3 exited; see $dir/logs/$3.log"
		sleep 0.1
	done
	die "$3 not ready after 60 s: http://127.0.0.1:$1$2 (log: $dir/logs/$3.log)"
}

# pg_home is where pg/ (the cluster) and pg-socket/ live: CLUSTER_DIR when
# the postgres user can reach it, else a directory under /var/lib named by
# a hash of CLUSTER_DIR (recorded in pg.path, so every run finds it again).
pg_home() {
	if [ -f "$dir/pg.path" ]; then
		cat "$dir/pg.path"
		return
	fi
	if [ "$(id -u)" -ne 0 ] || runuser -u postgres -- test -x "$dir"; then
		echo "$dir"
		return
	fi
	local alt
	alt="/var/lib/chatd-cluster/$(basename "$dir")-$(echo -n "$dir" | sha256sum | cut -c1-12)"
	mkdir -p "$alt" && chmod 755 /var/lib/chatd-cluster "$alt"
	echo "$alt" >"$dir/pg.path"
	log "the postgres user cannot reach $dir: PostgreSQL's cluster is kept in $alt"
	echo "$alt"
}

nats_bin() {
	local want bin gobin
	gobin=$(go env GOBIN)
	[ -n "$gobin" ] || gobin="$(go env GOPATH)/bin"
	bin=${NATS_SERVER:-$(command -v nats-server || echo "$gobin/nats-server")}
	if [ ! -x "$bin" ]; then
		want=$(cd "$repo" && go list -m -f '{{.Version}}' github.com/nats-io/nats-server/v2)
		log "installing nats-server $want (go install)"
		go install "github.com/nats-io/nats-server/v2@$want" >&2
		bin="$gobin/nats-server"
	fi
	[ -x "$bin" ] || die "no nats-server at $bin"
	echo "$bin"
}

chatd_bin() {
	if [ -n "${CHATD_BIN:-}" ]; then
		echo "$CHATD_BIN"
		return
	fi
	make -s -C "$repo" build >&2
	echo "$repo/bin/chatd"
}

# secret is the cluster's JWT secret, generated once; every node shares it.
secret() {
	if [ ! -s "$dir/jwt-secret" ]; then
		(umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$dir/jwt-secret")
	fi
	cat "$dir/jwt-secret"
}

database_url() {
	echo "host=$(pg_home)/pg-socket port=5432 user=postgres dbname=chatd sslmode=disable"
}

# spawn runs "$@" detached with its output in logs/$name.log and records
# its pid.
spawn() {
	local name=$1
	shift
	mkdir -p "$dir/pids" "$dir/logs"
	echo "--- $(date -u +%FT%TZ) start: $*" >>"$dir/logs/$name.log"
	setsid "$@" >>"$dir/logs/$name.log" 2>&1 </dev/null &
	echo $! >"$(pidfile "$name")"
}

start_nats() { # $1: 1..3; the same store and ports on every start
	local i=$1
	pid_of "nats$i" >/dev/null && return 0
	mkdir -p "$dir/nats/n$i"
	spawn "nats$i" "$NATS_BIN" -n "n$i" -a 127.0.0.1 -p $((nats_base + i)) -m $((nats_base + 20 + i)) \
		-js -sd "$dir/nats/n$i" --cluster_name chatd-cluster \
		--cluster "nats://127.0.0.1:$((nats_base + 10 + i))" --routes "$routes"
}

wait_nats() {
	# /healthz answers 200 once the server's JetStream is up (it needs the
	# other servers for a meta leader).
	wait_http $((nats_base + 20 + $1)) /healthz "nats$1" "$(pid_of "nats$1" || true)"
}

start_postgres() {
	local home bindir pglog
	home=$(pg_home)
	bindir=$(pg_bindir)
	mkdir -p "$dir/pids" "$dir/logs"
	if ! pg_running "$home/pg" >/dev/null; then
		[ -f "$home/pg/PG_VERSION" ] || pg_initdb "$home/pg" || die "initdb $home/pg failed"
		# The server writes its own log, so the file must be where the
		# postgres user can reach: logs/ unless the cluster had to move
		# (then a link to it).
		pglog="$dir/logs/postgres.log"
		if [ "$home" != "$dir" ]; then
			pglog="$home/postgres.log"
			ln -sfn "$pglog" "$dir/logs/postgres.log"
		fi
		pg_start "$home/pg" "$home/pg-socket" "$pglog" || die "postgres did not start; see $pglog"
	fi
	head -1 "$home/pg/postmaster.pid" >"$(pidfile postgres)"
	if ! "$bindir/psql" -h "$home/pg-socket" -U postgres -d postgres -tAc \
		"SELECT 1 FROM pg_database WHERE datname = 'chatd'" | grep -q 1; then
		"$bindir/psql" -h "$home/pg-socket" -U postgres -d postgres -qc "CREATE DATABASE chatd" >/dev/null
	fi
}

start_chatd() { # $1: 1..3
	local i=$1 port
	pid_of "chatd$i" >/dev/null && return 0
	port=$((http_base + i - 1))
	mkdir -p "$dir/chatd/n$i"
	local debug=()
	[ -n "${CLUSTER_DEBUG_PORT:-}" ] && debug=(--debug-listen "127.0.0.1:$((CLUSTER_DEBUG_PORT + i))")
	# CHATD_FLAGS is split on spaces on purpose: extra flags, no quoting.
	# shellcheck disable=SC2086
	CHATD_JWT_SECRET=$(secret) spawn "chatd$i" "$CHATD_BIN" --node-id "n$i" --listen "127.0.0.1:$port" \
		--data-dir "$dir/chatd/n$i" --nats-url "$nats_urls" --database-url "$(database_url)" \
		--stream-replicas 3 --admin-users chatload-admin "${debug[@]}" ${CHATD_FLAGS:-}
}

wait_chatd() { wait_http $((http_base + $1 - 1)) /readyz "chatd$1" "$(pid_of "chatd$1" || true)"; }

stop_one() { # $1 name: SIGTERM, then SIGKILL after 20 s
	local p
	if p=$(pid_of "$1"); then
		kill -TERM "$p" 2>/dev/null || true
		for _ in $(seq 1 200); do
			alive "$p" || break
			sleep 0.1
		done
		if alive "$p"; then
			log "$1 (pid $p) still running 20 s after SIGTERM: SIGKILL"
			kill -KILL "$p" 2>/dev/null || true
		fi
	fi
	rm -f "$(pidfile "$1")"
}

stop_postgres() {
	local home
	home=$(pg_home)
	if pg_running "$home/pg" >/dev/null; then pg_stop "$home/pg"; fi
	rm -f "$(pidfile postgres)"
}

cmd_up() {
	"$repo/scripts/ensure-postgres.sh"
	CHATD_BIN=$(chatd_bin)
	NATS_BIN=$(nats_bin)
	for i in "${nodes[@]}"; do start_nats "$i"; done
	for i in "${nodes[@]}"; do wait_nats "$i"; done
	start_postgres
	# One node first: it creates the stream (replicas 3); the others find it.
	start_chatd 1
	wait_chatd 1
	for i in 2 3; do start_chatd "$i"; done
	for i in 2 3; do wait_chatd "$i"; done
	cat <<EOF
chatd cluster ready (data and logs in $dir):
  chatd   $chatd_urls
  nats    $nats_urls  (monitoring http://127.0.0.1:$((nats_base + 21))..$((nats_base + 23)))
  postgres $(database_url)

token:     CHATD_JWT_SECRET=\$(cat $dir/jwt-secret) ./bin/chatd token alice
load:      CHATD_JWT_SECRET=\$(cat $dir/jwt-secret) ./bin/chatload --url $chatd_urls \\
             --scenario pairs --clients 600 --rate 2000 --duration 60s
backup:    scripts/backup.sh --database-url "$(database_url)" chatd.dump
stop:      make cluster-down   (keeps the data; rm -rf $dir for a fresh cluster)
EOF
}

cmd_down() {
	for i in 3 2 1; do stop_one "chatd$i"; done
	for i in 3 2 1; do stop_one "nats$i"; done
	stop_postgres
	log "stopped"
}

cmd_status() {
	local n p
	for n in nats1 nats2 nats3 postgres chatd1 chatd2 chatd3; do
		if p=$(pid_of "$n"); then echo "$n running (pid $p)"; else echo "$n stopped"; fi
	done
}

cmd_start() {
	case ${1:-} in
	nats[123])
		NATS_BIN=$(nats_bin)
		start_nats "${1#nats}"
		wait_nats "${1#nats}"
		;;
	chatd[123])
		CHATD_BIN=$(chatd_bin)
		start_chatd "${1#chatd}"
		wait_chatd "${1#chatd}"
		;;
	postgres) start_postgres ;;
	*) die "start: want nats1..3, postgres or chatd1..3, got '${1:-}'" ;;
	esac
}

cmd_env() {
	cat <<EOF
CLUSTER_DIR='$dir'
CHATD_URLS='$chatd_urls'
NATS_URLS='$nats_urls'
DATABASE_URL='$(database_url)'
NATS_MONITOR_PORTS='$((nats_base + 21)),$((nats_base + 22)),$((nats_base + 23))'
EOF
}

case ${1:-} in
up) cmd_up ;;
down) cmd_down ;;
status) cmd_status ;;
start) cmd_start "${2:-}" ;;
pid) pid_of "${2:-}" || die "${2:-} is not running" ;;
env) cmd_env ;;
*)
	sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
	;;
esac
