#!/usr/bin/env bash
# Failover benchmark (issue 8, item 18): the delivery stream's leader is
# SIGKILLed under load and restarted later; how long do relay and push take
# to resume, and is anything lost?
#
#   scripts/failover-bench.sh [-- chatload flags...]
#
# Starts three real nats-server processes clustered on loopback (JetStream,
# stores under a fresh /tmp dir), two chatd processes (node 1 with the managed
# PostgreSQL, node 2 on the same database; both --nats-url listing all three
# servers, --stream-replicas 3), and chatload with its clients spread over
# both nodes, so that every message crosses the relay and the stream (a
# single node would deliver everything on its fast path and hide the
# failover). KILL_AT seconds into the measured load it SIGKILLs the server
# leading stream CHAT_OUTBOX (asked of /jsz), restarts it DOWN_FOR seconds
# later, and prints chatload's report (lost must be 0) and the failover
# timeline: when the stream had a leader again, and the per-second
# send→delivered p99 around it.
#
# Env: KILL_AT (20), DOWN_FOR (20), NATS_SERVER (nats-server binary; default
# from PATH or $(go env GOPATH)/bin: go install
# github.com/nats-io/nats-server/v2@<the version in go.mod>), BENCH_PORT
# (18190; chatd 2 uses +1), NATS_PORT (24310; client ports +1..+3, cluster
# +11..+13, monitoring +21..+23), KEEP=1 keeps the work dir, OUT=<dir>
# receives chatload's JSON report, its output and the servers' logs.
# Default load: --scenario pairs --clients 600 --rate 2000 --duration 60s
# --warmup 5s; flags after "--" are appended (a repeated flag wins).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/benchlib.sh
. scripts/benchlib.sh
[ "${1:-}" = "--" ] && shift

kill_at=${KILL_AT:-20}
down_for=${DOWN_FOR:-20}
port=${BENCH_PORT:-18190}
nbase=${NATS_PORT:-24310}
secret=failover-bench-secret
find_nats_server

make -s build
echo "machine: $(nproc) cores; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
dir=$(mktemp -d /tmp/chatd-failover.XXXXXX)
chmod 755 "$dir" # the managed PostgreSQL runs as the postgres user
declare -A npid
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	for i in 1 2 3; do
		[ -n "${npid[$i]:-}" ] && kill "${npid[$i]}" 2>/dev/null && wait "${npid[$i]}" 2>/dev/null
	done
	if [ -n "${OUT:-}" ]; then
		mkdir -p "$OUT" && cp "$dir"/*.json "$dir"/*.out "$dir"/*.err "$dir"/*.log "$OUT"/ 2>/dev/null || true
	fi
	if [ "${KEEP:-}" = 1 ]; then echo "kept $dir"; else rm -rf "$dir"; fi
}
trap cleanup EXIT

routes="nats://127.0.0.1:$((nbase + 11)),nats://127.0.0.1:$((nbase + 12)),nats://127.0.0.1:$((nbase + 13))"
nats_urls="nats://127.0.0.1:$((nbase + 1)),nats://127.0.0.1:$((nbase + 2)),nats://127.0.0.1:$((nbase + 3))"
start_nats() { # $1: 1..3; same store and ports on a restart
	"$nats_bin" -n "n$1" -a 127.0.0.1 -p $((nbase + $1)) -m $((nbase + 20 + $1)) -js -sd "$dir/nats$1" \
		--cluster_name chatd-failover --cluster "nats://127.0.0.1:$((nbase + 10 + $1))" --routes "$routes" \
		>>"$dir/nats$1.log" 2>&1 &
	npid[$1]=$!
}
wait_url() { # $1 url, $2 what
	for _ in $(seq 1 300); do
		curl -fs "$1" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	echo "$2 not ready: $1" >&2
	exit 2
}
# stream_leader prints the server name leading CHAT_OUTBOX as server $1 sees it.
stream_leader() {
	curl -fs --max-time 1 "http://127.0.0.1:$((nbase + 20 + $1))/jsz?accounts=true&streams=true" 2>/dev/null |
		jq -r '[.account_details[]?.stream_detail[]? | select(.name == "CHAT_OUTBOX") | .cluster.leader // empty][0] // empty'
}

for i in 1 2 3; do start_nats "$i"; done
for i in 1 2 3; do wait_url "http://127.0.0.1:$((nbase + 20 + i))/healthz" "nats-server n$i"; done

common=(--nats-url "$nats_urls" --stream-replicas 3 --jwt-secret "$secret" --admin-users chatload-admin --log-level warn)
./bin/chatd --node-id n1 --data-dir "$dir/chatd1" --listen "127.0.0.1:$port" "${common[@]}" >"$dir/chatd1.log" 2>&1 &
pids+=($!)
c1=$!
wait_url "http://127.0.0.1:$port/readyz" "chatd 1"
# Node 2 shares node 1's managed PostgreSQL through its Unix socket (the
# managed server listens on no TCP address); postmaster.pid names the port
# (line 4) and the socket directory (line 5). chatd runs as root here, so
# the socket directory's 0700 does not stop it.
pgport=$(sed -n 4p "$dir/chatd1/pg/postmaster.pid")
pgsock=$(sed -n 5p "$dir/chatd1/pg/postmaster.pid")
./bin/chatd --node-id n2 --data-dir "$dir/chatd2" --listen "127.0.0.1:$((port + 1))" \
	--database-url "host=$pgsock port=$pgport user=postgres dbname=chatd sslmode=disable" "${common[@]}" >"$dir/chatd2.log" 2>&1 &
pids+=($!)
wait_url "http://127.0.0.1:$((port + 1))/readyz" "chatd 2"

CHATD_JWT_SECRET=$secret ./bin/chatload --url "http://127.0.0.1:$port,http://127.0.0.1:$((port + 1))" --pid "$c1" \
	--scenario pairs --clients 600 --rate 2000 --duration 60s --warmup 5s \
	--progress 1s --json "$dir/report.json" "$@" >"$dir/chatload.out" 2>"$dir/chatload.err" &
load=$!

# The measured load starts at the first progress line in phase "load";
# the line's t (seconds since chatload's monitor started) maps the script's
# clock onto the report's timeline.
while ! grep -q ' load ' "$dir/chatload.out"; do
	kill -0 "$load" 2>/dev/null || { cat "$dir/chatload.out" "$dir/chatload.err"; exit 2; }
	sleep 0.1
done
t0=$(now)
offset=$(grep -m1 ' load ' "$dir/chatload.out" | awk -v w="$t0" '{sub("s","",$1); printf "%.3f", w - $1}')
sleep "$kill_at"

victim=""
for i in 1 2 3; do
	name=$(stream_leader "$i")
	[ -n "$name" ] && { victim=${name#n}; break; }
done
[ -n "$victim" ] || { echo "no stream leader found" >&2; exit 2; }
kill -KILL "${npid[$victim]}"
wait "${npid[$victim]}" 2>/dev/null || true
killed=$(now)
echo "SIGKILL n$victim (stream leader) at load t=$(minus "$killed" "$t0") s"

# Poll the survivors until one names a new leader.
elected=""
while [ -z "$elected" ] && awk -v d="$(minus "$(now)" "$killed")" -v m="$down_for" 'BEGIN { exit !(d < m) }'; do
	for i in 1 2 3; do
		[ "$i" = "$victim" ] && continue
		name=$(stream_leader "$i")
		if [ -n "$name" ] && [ "$name" != "n$victim" ]; then elected=$(now); break; fi
	done
	[ -z "$elected" ] && sleep 0.05
done
if [ -n "$elected" ]; then
	echo "stream leader again $(minus "$elected" "$killed") s after the kill (seen by polling /jsz)"
else
	echo "no new stream leader within ${down_for} s"
fi
left=$(minus "$down_for" "$(minus "$(now)" "$killed")")
case $left in -*) ;; *) sleep "$left" ;; esac
start_nats "$victim"
echo "n$victim restarted at load t=$(minus "$(now)" "$t0") s"

rc=0
wait "$load" || rc=$?
# The survivors' own logs date the election more exactly than the /jsz poll.
for i in 1 2 3; do
	[ "$i" = "$victim" ] && continue
	grep -h "new stream leader for '\$G > CHAT_OUTBOX'" "$dir/nats$i.log" | cut -d' ' -f2,3
done | while read -r d t; do
	e=$(date -d "${d//\//-} $t" +%s.%N)
	awk -v e="$e" -v k="$killed" 'BEGIN { exit !(e > k) }' && echo "$e"
done | sort -n | head -1 | while read -r e; do
	echo "servers' logs: new stream leader elected $(minus "$e" "$killed") s after the kill"
done || true # no election logged is reported by its absence, not by failing the run
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
cat "$dir/chatload.out" | grep -v '^ *[0-9]*s '
[ -s "$dir/chatload.err" ] && { echo "--- chatload stderr (last 20 lines)"; tail -20 "$dir/chatload.err"; }

# The failover in the report's timeline: per-second delivered rate and
# send→delivered p99 from 2 s before the kill to 10 s after.
kt=$(minus "$killed" "$offset")
echo "--- failover timeline (t: report seconds; kill at $kt)"
jq -r --argjson k "$kt" '.timeline[] | select(.t >= $k - 2 and .t <= $k + 12)
  | "\(.t | floor)s \(.phase) handed out \(.delivered_per_s | floor)/s, p99 send→handed out \(.handed_out_p99_ms | floor) ms, live p99 \(.deliver_p99_ms | floor) ms; outbox pg \(.outbox_postgres) stream backlog \(.stream_backlog)"' "$dir/report.json"
# Live delivery (a msg frame reaching the app first) stops after the kill:
# the first sample without any, and the first one with some again after
# it; the resume is measured from when the stream had a leader again.
if [ -n "$elected" ]; then
	et=$(minus "$elected" "$offset")
	jq -r --argjson k "$kt" --argjson e "$et" '
	  [.timeline[] | select(.t > $k)] as $after
	  | ([$after[] | select(.deliver_p99_ms == 0)][0].t) as $stop
	  | (if $stop == null then null else [$after[] | select(.t > $stop and .deliver_p99_ms > 0)][0].t end) as $resume
	  | if $stop == null then "live delivery never stopped (1 s samples)"
	    elif $resume == null then "live delivery stopped at \($stop | floor) s and did not resume in the run"
	    else "live delivery: none in the sample at \($stop * 10 | floor / 10) s, again at \($resume * 10 | floor / 10) s: \(($resume - $e) * 10 | floor / 10) s after the stream had a leader again (at \($e * 10 | floor / 10) s; samples are ~1 s)" end' "$dir/report.json"
fi
jq -r '.send_to_delivered_live as $d | .send_to_handed_out as $h | "summary: lost \(.lost), duplicates to app \(.duplicates_to_app), accepted \(.accepted_rate | floor)/s, send→handed out (live or history) p50 \($h.p50_ms | floor) p99 \($h.p99_ms | floor) max \($h.max_ms | floor) ms, live only p50 \($d.p50_ms | floor) p99 \($d.p99_ms | floor) max \($d.max_ms | floor) ms, from history \(.delivered_history), reconnects \(.reconnects)"' "$dir/report.json"
exit "$rc"
