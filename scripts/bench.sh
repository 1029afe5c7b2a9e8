#!/usr/bin/env bash
# Runs one chatload measurement against a separately started chatd, so the
# report's RSS and CPU are chatd's alone (sampled from /proc via --pid).
#   scripts/bench.sh [chatd flags...] -- [chatload flags...]
# chatd gets a fresh data dir under /tmp (reachable by the postgres user),
# embedded NATS and PostgreSQL, admin user chatload-admin; it is stopped after.
# CHATD_BIN runs that chatd binary instead of building ./bin/chatd (how
# scripts/ab.sh compares builds; chatload is always ./bin/chatload).
set -euo pipefail
cd "$(dirname "$0")/.."
chatd_args=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do chatd_args+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
chatd=${CHATD_BIN:-./bin/chatd}
if [ -z "${CHATD_BIN:-}" ] || [ ! -x ./bin/chatload ]; then make -s build; fi
dir=$(mktemp -d /tmp/chatd-bench.XXXXXX)
chmod 755 "$dir"
port=${BENCH_PORT:-18090}
"$chatd" --data-dir "$dir/data" --listen "127.0.0.1:$port" --admin-users chatload-admin \
  --log-level warn "${chatd_args[@]}" >"$dir/chatd.log" 2>&1 &
pid=$!
trap 'kill -INT $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 1 200); do
  curl -fs "127.0.0.1:$port/readyz" >/dev/null 2>&1 && break
  sleep 0.1
done
./bin/chatload --url "http://127.0.0.1:$port" --data-dir "$dir/data" --pid "$pid" "$@"
