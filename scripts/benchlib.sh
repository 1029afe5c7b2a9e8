# shellcheck shell=bash
# Shell functions shared by the failover benchmarks (scripts/failover-bench.sh,
# scripts/pg-failover-bench.sh). Sourced, not run.

# find_nats_server sets nats_bin to the nats-server to run: $NATS_SERVER, else
# the one on PATH, else $(go env GOPATH)/bin's. It exits 2 with the install
# command when there is none, and warns when its version is not go.mod's.
find_nats_server() {
	local want have
	want=$(go list -m -f '{{.Version}}' github.com/nats-io/nats-server/v2)
	nats_bin=${NATS_SERVER:-$(command -v nats-server || echo "$(go env GOPATH)/bin/nats-server")}
	[ -x "$nats_bin" ] || {
		echo "no nats-server: go install github.com/nats-io/nats-server/v2@$want" >&2
		exit 2
	}
	have=$("$nats_bin" --version | awk '{print $NF}')
	[ "$have" = "$want" ] || echo "warning: $nats_bin is $have, go.mod has $want" >&2
}

# now prints the time in seconds with nanoseconds; minus prints $1 - $2
# with two decimals.
now() { date +%s.%N; }
minus() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; printf "%.2f", d }'; }
