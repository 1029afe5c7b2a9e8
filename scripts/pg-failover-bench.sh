#!/usr/bin/env bash
# PostgreSQL failover benchmark: three chatd nodes on a three-server NATS
# cluster (stream replicas 3) in front of a PostgreSQL primary and a
# synchronous streaming standby; the primary is SIGKILLed under load and the
# standby promoted. Is anything lost, and how soon are sends accepted again?
#
#   scripts/pg-failover-bench.sh [-- chatload flags...]
#
# Everything runs as real processes on loopback, on ports found free at
# start, under a fresh /tmp dir: the primary (initdb) and its standby
# (pg_basebackup -R, made synchronous through synchronous_standby_names),
# three nats-server, three chatd (--database-url is the multi-host URL with
# target_session_attrs=read-write, so every node follows whichever server
# accepts writes) and chatload with its clients spread over the three nodes.
# KILL_AT seconds into the measured load it SIGKILLs the primary's
# postmaster and backends; PROMOTE_AT seconds in it runs pg_ctl promote on
# the standby. It prints chatload's report (lost must be 0, refusals by
# code), the time from the promotion to the first accepted send (the first
# history row committed on the new primary, by its commit timestamp: the
# servers run with track_commit_timestamp, and a sender is answered right
# after its commit), when each node connected to the new primary, and what
# each node shows of the failover (/readyz, chatd_postgres_timeline, its
# log lines).
#
# Env: KILL_AT (30), PROMOTE_AT (35), NATS_SERVER (nats-server binary;
# default from PATH or $(go env GOPATH)/bin: go install
# github.com/nats-io/nats-server/v2@<the version in go.mod>), KEEP=1 keeps
# the work dir, OUT=<dir> receives chatload's JSON report, its output and
# the servers' logs. Default load: --scenario pairs --clients 600 --rate 1000
# --duration 90s --warmup 5s; flags after "--" are appended (a repeated flag
# wins).
# free_port sets its variables by name (printf -v), which shellcheck cannot see.
# shellcheck disable=SC2154
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/cluster-pglib.sh
. scripts/cluster-pglib.sh
# shellcheck source=scripts/benchlib.sh
. scripts/benchlib.sh
[ "${1:-}" = "--" ] && shift

kill_at=${KILL_AT:-30}
promote_at=${PROMOTE_AT:-35}
secret=pg-failover-bench-secret
find_nats_server
bindir=$(pg_bindir)

make -s build
echo "machine: $(nproc) cores; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
dir=$(mktemp -d /tmp/chatd-pgfailover.XXXXXX)
chmod 755 "$dir" # the PostgreSQL servers run as the postgres user
declare -A npid
pids=() # chatd and chatload
cleanup() {
	local rc=$?
	set +e # a server that already exited must not stop the cleanup
	for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	for i in 1 2 3; do
		[ -n "${npid[$i]:-}" ] && kill "${npid[$i]}" 2>/dev/null && wait "${npid[$i]}" 2>/dev/null
	done
	for s in primary standby; do
		[ -f "$dir/$s/postmaster.pid" ] && as_pg "$bindir/pg_ctl" stop -m immediate -D "$dir/$s" >/dev/null 2>&1
	done
	if [ -n "${OUT:-}" ]; then
		mkdir -p "$OUT" && cp "$dir"/*.json "$dir"/*.out "$dir"/*.err "$dir"/*.log "$OUT"/ 2>/dev/null || true
	fi
	if [ "${KEEP:-}" = 1 ]; then echo "kept $dir"; else rm -rf "$dir"; fi
	exit "$rc"
}
trap cleanup EXIT

# free_port sets variable $1 to a loopback TCP port nothing listens on and
# this run has not taken yet, below the kernel's ephemeral range so that no
# outgoing connection takes it before its server binds (another process
# could still listen on it first: a race a benchmark accepts).
taken=" "
ephemeral=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range)
free_port() {
	local p
	while :; do
		p=$((10000 + RANDOM % (ephemeral - 10000)))
		[[ $taken == *" $p "* ]] && continue
		[ -n "$(ss -Hltn "sport = :$p")" ] && continue
		taken+="$p "
		printf -v "$1" %s "$p"
		return
	done
}
wait_url() { # $1 url, $2 what
	for _ in $(seq 1 300); do
		curl -fs "$1" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	echo "$2 not ready: $1" >&2
	exit 2
}
psql_on() { # $1 port, $2 database, then psql arguments
	local port=$1 db=$2
	shift 2
	"$bindir/psql" -X -q -h 127.0.0.1 -p "$port" -U postgres -d "$db" -At "$@"
}

# PostgreSQL: a primary and a synchronous standby, trust on loopback only.
free_port pg1
free_port pg2
pg_start_tcp() { # $1 name (also the standby's application_name), $2 port
	as_pg "$bindir/pg_ctl" start -w -t 60 -D "$dir/$1" -l "$dir/$1.log" \
		-o "-c listen_addresses=127.0.0.1 -c port=$2 -c unix_socket_directories= -c cluster_name=$1 -c max_connections=300 -c track_commit_timestamp=on -c wal_sender_timeout=5s -c wal_receiver_status_interval=1s" \
		>/dev/null
}
mkdir -m 700 "$dir/primary" "$dir/standby"
touch "$dir/primary.log" "$dir/standby.log"
if [ "$(id -u)" -eq 0 ]; then chown postgres: "$dir/primary" "$dir/standby" "$dir/primary.log" "$dir/standby.log"; fi
as_pg "$bindir/initdb" --pgdata="$dir/primary" --username=postgres --encoding=UTF8 --locale=C --auth=trust --no-sync >"$dir/initdb.out" 2>&1
pg_start_tcp primary "$pg1"
psql_on "$pg1" postgres -c "CREATE DATABASE chatd"
as_pg "$bindir/pg_basebackup" -D "$dir/standby" -R -X stream -c fast --no-sync -d "host=127.0.0.1 port=$pg1 user=postgres"
pg_start_tcp standby "$pg2"
psql_on "$pg1" postgres -c "ALTER SYSTEM SET synchronous_standby_names = 'standby'" -c "SELECT pg_reload_conf()" >/dev/null
for _ in $(seq 1 300); do
	[ "$(psql_on "$pg1" postgres -c "SELECT sync_state FROM pg_stat_replication WHERE application_name = 'standby' AND state = 'streaming'")" = sync ] && break
	sleep 0.1
done
[ "$(psql_on "$pg1" postgres -c "SELECT sync_state FROM pg_stat_replication WHERE application_name = 'standby'")" = sync ] ||
	{ echo "the standby never became synchronous" >&2; exit 2; }
dburl="postgres://postgres@127.0.0.1:$pg1,127.0.0.1:$pg2/chatd?sslmode=disable&target_session_attrs=read-write"
echo "postgres: primary 127.0.0.1:$pg1, synchronous standby 127.0.0.1:$pg2"

# NATS: three servers clustered on loopback.
for i in 1 2 3; do
	free_port "nc$i"
	free_port "nr$i"
	free_port "nm$i"
done
routes="nats://127.0.0.1:$nr1,nats://127.0.0.1:$nr2,nats://127.0.0.1:$nr3"
nats_urls="nats://127.0.0.1:$nc1,nats://127.0.0.1:$nc2,nats://127.0.0.1:$nc3"
for i in 1 2 3; do
	c=nc$i r=nr$i m=nm$i
	"$nats_bin" -n "n$i" -a 127.0.0.1 -p "${!c}" -m "${!m}" -js -sd "$dir/nats$i" \
		--cluster_name chatd-pgfailover --cluster "nats://127.0.0.1:${!r}" --routes "$routes" \
		>>"$dir/nats$i.log" 2>&1 &
	npid[$i]=$!
done
for i in 1 2 3; do m=nm$i; wait_url "http://127.0.0.1:${!m}/healthz" "nats-server n$i"; done

# chatd: three nodes on the multi-host URL.
common=(--database-url "$dburl" --nats-url "$nats_urls" --stream-replicas 3 --jwt-secret "$secret"
	--admin-users chatload-admin --log-level warn)
urls=()
for i in 1 2 3; do
	free_port "hp$i"
	h=hp$i
	./bin/chatd --node-id "n$i" --data-dir "$dir/chatd$i" --listen "127.0.0.1:${!h}" "${common[@]}" >"$dir/chatd$i.log" 2>&1 &
	pids+=($!)
	[ "$i" = 1 ] && c1=$!
	urls+=("http://127.0.0.1:${!h}")
done
for u in "${urls[@]}"; do wait_url "$u/readyz" "chatd $u"; done

token() { CHATD_JWT_SECRET=$secret ./bin/chatd token "$1"; }

CHATD_JWT_SECRET=$secret ./bin/chatload --url "$(IFS=,; echo "${urls[*]}")" --pid "$c1" \
	--scenario pairs --clients 600 --rate 1000 --duration 90s --warmup 5s \
	--progress 1s --json "$dir/report.json" "$@" >"$dir/chatload.out" 2>"$dir/chatload.err" &
load=$!
pids+=("$load")

# The measured load starts at the first progress line in phase "load";
# the line's t maps the script's clock onto the report's timeline.
while ! grep -qs ' load ' "$dir/chatload.out"; do
	kill -0 "$load" 2>/dev/null || { cat "$dir/chatload.out" "$dir/chatload.err"; exit 2; }
	sleep 0.1
done
t0=$(now)
offset=$(grep -m1 ' load ' "$dir/chatload.out" | awk -v w="$t0" '{sub("s","",$1); printf "%.3f", w - $1}')
sleep "$kill_at"

# SIGKILL the primary's postmaster and its backends at once, as if its
# machine died (backends lead their own process groups: list them first).
pm=$(head -1 "$dir/primary/postmaster.pid")
kids=$(ps -o pid= --ppid "$pm" | tr '\n' ' ')
# shellcheck disable=SC2086 # kids is a list of pids
kill -KILL "$pm" $kids
killed=$(now)
echo "SIGKILL primary (postmaster $pm and $(echo $kids | wc -w) children) at load t=$(minus "$killed" "$t0") s"
left=$(minus "$promote_at" "$(minus "$(now)" "$t0")")
case $left in -*) ;; *) sleep "$left" ;; esac
promote=$(now)
as_pg "$bindir/pg_ctl" promote -w -t 60 -D "$dir/standby" >/dev/null
promoted=$(now)
echo "pg_ctl promote at load t=$(minus "$promote" "$t0") s ($(minus "$promote" "$killed") s after the kill); it returned $(minus "$promoted" "$promote") s later"

rc=0
wait "$load" || rc=$?
echo "chatload exited $rc"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
grep -v '^ *[0-9]*s ' "$dir/chatload.out"
[ -s "$dir/chatload.err" ] && { echo "--- chatload stderr (last 20 lines)"; tail -20 "$dir/chatload.err"; }

# chatload's sends around the failover, per second of its timeline.
kt=$(minus "$killed" "$offset")
pt=$(minus "$promote" "$offset")
echo "--- chatload timeline (t: report seconds; kill at $kt, promote at $pt)"
jq -r --argjson k "$kt" --argjson p "$pt" '.timeline[] | select(.t >= $k - 2 and .t <= $p + 5)
  | "\(.t | floor)s accepted \(.accepted_per_s | floor)/s, refused (cumulative) \(.rejects), handed out \(.delivered_per_s | floor)/s, p99 send→accepted \(.accept_p99_ms | floor) ms; outbox pg \(.outbox_postgres)"' "$dir/report.json"
jq -r --argjson p "$pt" '[.timeline[] | select(.t > $p and .accepted_per_s > 0)][0].t as $a
  | if $a == null then "chatload: no accepted send after the promotion"
    else "chatload: first 1 s sample with accepted sends after the promotion ends \(($a - $p) * 100 | floor / 100) s after it" end' "$dir/report.json"

first=$(psql_on "$pg2" chatd -c "SELECT extract(epoch FROM min(ts)) FROM (SELECT pg_xact_commit_timestamp(xmin) AS ts FROM history) h WHERE ts > to_timestamp($promote)")
echo "first send accepted after the promotion: committed $(minus "$first" "$promote") s after pg_ctl promote was run ($(minus "$first" "$promoted") s after it returned)"

echo "--- what each node shows of the failover"
admin=$(token chatload-admin)
for i in 1 2 3; do
	u=${urls[$((i - 1))]}
	ready=$(curl -s "$u/readyz")
	at=$(jq -r '.postgres.last_failover.at // empty' <<<"$ready")
	tl=$(curl -fs "$u/metrics" | awk '$1 == "chatd_postgres_timeline" {print $2}')
	echo "n$i: /readyz $ready"
	echo "    on the new primary $( [ -n "$at" ] && minus "$(date -d "$at" +%s.%N)" "$promote") s after pg_ctl promote; chatd_postgres_timeline $tl;" \
		"log: $(grep -c 'postgres failover:' "$dir/chatd$i.log" || true) line 'postgres failover:', $(grep -c 'level=WARN' "$dir/chatd$i.log" || true) WARN lines in all"
done
curl -fs -H "Authorization: Bearer $admin" "${urls[0]}/api/admin/outbox" | jq -r '"outbox after the run: \(.postgres_outbox_depth) rows in PostgreSQL"'
jq -r '.send_to_delivered_live as $d | .send_to_handed_out as $h | "summary: lost \(.lost), duplicates to app \(.duplicates_to_app), accepted \(.accepted_rate | floor)/s, refused \(.rejects), outcome unknown \(.unknown_outcome), send→handed out p50 \($h.p50_ms | floor) p99 \($h.p99_ms | floor) max \($h.max_ms | floor) ms, from history \(.delivered_history), reconnects \(.reconnects)"' "$dir/report.json"
exit "$rc"
