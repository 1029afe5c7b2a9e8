#!/usr/bin/env bash
# Runs chatload against a separately started chatd that posts every event to
# two webhook endpoints chatload serves and reconciles: one healthy, one that
# fails a share of its requests and goes down for a while during the load
# (docs/integrations.md, "Delivery semantics"). chatload waits after the drain
# until both hold every accepted event and fails the run on a lost or
# misordered one.
#   scripts/webhook-bench.sh [--without-webhooks] [chatd flags...] -- [chatload flags...]
# e.g. scripts/webhook-bench.sh -- --clients 600 --rate 2000 --duration 30s --warmup 5s
# --without-webhooks runs the identical chatd and load with no webhook (the
# baseline for the live p99). Env:
#   WEBHOOK_FAULTS   the second receiver's faults (default fail-pct=10,down-at=10s,down-for=20s;
#                    see chatload --webhook-receiver)
#   BENCH_PORT, HOOK_PORT1, HOOK_PORT2   chatd's and the receivers' ports (default: free ones)
#   CHATD_BIN        as in scripts/bench.sh
# Free ports are found with ss (iproute2).
# chatd's webhook retries (default 10 attempts, waits doubling from 1 s to
# 1 min) outlast a 20 s outage, so no event is set aside; for longer outages
# add --webhook-max-attempts to the chatd flags.
set -euo pipefail
cd "$(dirname "$0")/.."
hooks=1
if [ "${1:-}" = "--without-webhooks" ]; then
	hooks=0
	shift
fi
chatd_args=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
	chatd_args+=("$1")
	shift
done
[ "${1:-}" = "--" ] && shift

# free_port prints a port below the kernel's ephemeral range (where
# outgoing connections, many while chatd's webhooks run, take their local
# ports) that no socket uses and that is not in $taken.
taken=" "
free_port() {
	local p lo
	read -r lo _ </proc/sys/net/ipv4/ip_local_port_range
	for _ in $(seq 1 100); do
		p=$((10000 + RANDOM % (lo - 10000)))
		case $taken in *" $p "*) continue ;; esac
		if [ -z "$(ss -Htan "( sport = :$p )")" ]; then
			taken+="$p "
			echo "$p"
			return
		fi
	done
	echo "webhook-bench: no free port found" >&2
	exit 2
}
port=${BENCH_PORT:-$(free_port)}
taken+="$port "
hook1=${HOOK_PORT1:-$(free_port)}
taken+="$hook1 "
hook2=${HOOK_PORT2:-$(free_port)}
faults=${WEBHOOK_FAULTS-fail-pct=10,down-at=10s,down-for=20s}

chatd=${CHATD_BIN:-./bin/chatd}
if [ -z "${CHATD_BIN:-}" ] || [ ! -x ./bin/chatload ]; then make -s build; fi
dir=$(mktemp -d /tmp/chatd-webhook-bench.XXXXXX)
chmod 755 "$dir"
hook_chatd=()
hook_load=()
if [ "$hooks" = 1 ]; then
	# One secret for both endpoints, passed by env to keep it out of ps.
	CHATD_WEBHOOK_SECRET="whsec_$(head -c 32 /dev/urandom | base64)"
	export CHATD_WEBHOOK_SECRET
	hook_chatd=(--webhook "http://127.0.0.1:$hook1/healthy" --webhook "http://127.0.0.1:$hook2/failing")
	hook_load=(--webhook-receiver "127.0.0.1:$hook1" --webhook-receiver "127.0.0.1:$hook2${faults:+,$faults}")
	echo "webhook-bench: chatd on :$port posting to :$hook1 (healthy) and :$hook2 ($faults)"
else
	unset CHATD_WEBHOOK_SECRET
	echo "webhook-bench: chatd on :$port without webhooks"
fi
"$chatd" --data-dir "$dir/data" --listen "127.0.0.1:$port" --admin-users chatload-admin \
	--log-level warn "${hook_chatd[@]}" "${chatd_args[@]}" >"$dir/chatd.log" 2>&1 &
pid=$!
trap 'kill -INT $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 1 200); do
	curl -fs "127.0.0.1:$port/readyz" >/dev/null 2>&1 && break
	sleep 0.1
done
status=0
./bin/chatload --url "http://127.0.0.1:$port" --data-dir "$dir/data" --pid "$pid" "${hook_load[@]}" "$@" || status=$?
if [ "$hooks" = 1 ]; then
	# What chatd counted, for the report: attempts that failed, events set aside,
	# offline notifications sent and skipped.
	curl -fs "127.0.0.1:$port/metrics" | grep -E '^chatd_(webhook_(delivered_total|failed_attempts_total|dead_lettered_total)|notify_(sent_total|skipped_total|positions_recorded_total|record_failures_total)|changes_published_total)' || true
fi
if [ "$status" != 0 ]; then
	echo "webhook-bench: chatload exited $status; chatd's log (tail):" >&2
	tail -20 "$dir/chatd.log" >&2
fi
exit "$status"
