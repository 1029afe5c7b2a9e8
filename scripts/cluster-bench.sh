#!/usr/bin/env bash
# Runs one chatload measurement against a local three-node cluster
# (scripts/cluster.sh: three clustered nats-server with the stream at R3, one
# PostgreSQL, three chatd), the clients spread over the nodes; the report's
# chatd CPU and RSS are the three nodes' summed, and it adds the NATS
# servers' CPU.
#   scripts/cluster-bench.sh [chatload flags...]
# BENCH_PROFILE=DIR also takes a 20 s CPU profile of every node 10 s into
# the run (DIR/chatdN.pprof; read it with `go tool pprof -top`).
# The cluster lives in a fresh directory under /tmp and is removed after.
set -euo pipefail
cd "$(dirname "$0")/.."
make -s build
dir=$(mktemp -d /tmp/chatd-cluster-bench.XXXXXX)
chmod 755 "$dir"
export CLUSTER_DIR=$dir CLUSTER_HTTP_PORT=${BENCH_PORT:-18191} CLUSTER_NATS_PORT=${BENCH_NATS_PORT:-15220}
profile=${BENCH_PROFILE:-}
[ -n "$profile" ] && export CLUSTER_DEBUG_PORT=${BENCH_DEBUG_PORT:-16060}
cleanup() {
	scripts/cluster.sh down >/dev/null 2>&1 || true
	rm -rf "$dir"
}
trap cleanup EXIT
scripts/cluster.sh up >&2
eval "$(scripts/cluster.sh env)"
pids=$(for i in 1 2 3; do scripts/cluster.sh pid "chatd$i"; done | paste -sd,)
if [ -n "$profile" ]; then
	mkdir -p "$profile"
	(
		sleep 10
		for i in 1 2 3; do
			curl -fsS -o "$profile/chatd$i.pprof" "http://127.0.0.1:$((CLUSTER_DEBUG_PORT + i))/debug/pprof/profile?seconds=20" &
		done
		wait
	) &
fi
CHATD_JWT_SECRET=$(cat "$dir/jwt-secret") ./bin/chatload --url "$CHATD_URLS" --pid "$pids" "$@"
wait
