#!/usr/bin/env bash
# Kills under load on the running local cluster (`make cluster`): chatload
# over the three nodes; KILL_AT seconds into the measured load the
# nats-server leading stream CHAT_OUTBOX (asked of /jsz) is SIGKILLed, a
# second later chatd node 3; DOWN_FOR seconds later both are restarted
# with scripts/cluster.sh start. Prints chatload's report (exit 1 on any
# loss) and the timeline of the kills.
#
#   scripts/cluster-faults.sh [-- chatload flags...]
#
# Env: KILL_AT (20), DOWN_FOR (10), CLUSTER_DIR etc. as for cluster.sh,
# OUT=<dir> receives chatload's JSON report and output. Default load:
# --scenario pairs --clients 600 --rate 2000 --duration 60s --warmup 5s
# (flags after "--" are appended; a repeated flag wins). Needs curl and jq.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "${1:-}" = "--" ] && shift
kill_at=${KILL_AT:-20}
down_for=${DOWN_FOR:-10}
eval "$(scripts/cluster.sh env)"
IFS=, read -r -a mon <<<"$NATS_MONITOR_PORTS"
work=$(mktemp -d /tmp/chatd-cluster-faults.XXXXXX)
trap 'rm -rf "$work"' EXIT

# stream_leader prints the server leading CHAT_OUTBOX as a server sees it.
stream_leader() {
	local p
	for p in "${mon[@]}"; do
		curl -fs --max-time 1 "http://127.0.0.1:$p/jsz?accounts=true&streams=true" 2>/dev/null |
			jq -r '[.account_details[]?.stream_detail[]? | select(.name == "CHAT_OUTBOX") | .cluster.leader // empty][0] // empty' |
			grep . && return 0
	done
	return 1
}
stamp() { echo "$(date -u +%T.%3N) $*"; }

echo "machine: $(nproc) cores; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
touch "$work/chatload.out"
CHATD_JWT_SECRET=$(cat "$CLUSTER_DIR/jwt-secret") ./bin/chatload --url "$CHATD_URLS" \
	--pid "$(scripts/cluster.sh pid chatd1)" \
	--scenario pairs --clients 600 --rate 2000 --duration 60s --warmup 5s \
	--progress 1s --json "$work/report.json" "$@" >"$work/chatload.out" 2>"$work/chatload.err" &
load=$!
while ! grep -q ' load ' "$work/chatload.out"; do
	kill -0 "$load" 2>/dev/null || { cat "$work/chatload.out" "$work/chatload.err"; exit 2; }
	sleep 0.1
done
stamp "measured load started"
sleep "$kill_at"
leader=$(stream_leader) || { echo "no stream leader found" >&2; exit 2; }
kill -KILL "$(scripts/cluster.sh pid "nats${leader#n}")"
stamp "SIGKILL nats-server $leader (stream leader)"
sleep 1
kill -KILL "$(scripts/cluster.sh pid chatd3)"
stamp "SIGKILL chatd n3"
sleep "$down_for"
scripts/cluster.sh start "nats${leader#n}"
stamp "nats-server $leader restarted and healthy"
scripts/cluster.sh start chatd3
stamp "chatd n3 restarted and ready; stream leader now $(stream_leader || echo none)"
rc=0
wait "$load" || rc=$?
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
grep -v '^ *[0-9]*s ' "$work/chatload.out"
[ -s "$work/chatload.err" ] && { echo "--- chatload stderr (last 10 lines)"; tail -10 "$work/chatload.err"; }
if [ -n "${OUT:-}" ]; then mkdir -p "$OUT" && cp "$work"/* "$OUT"/; fi
exit "$rc"
