#!/usr/bin/env bash
# Compares chatd builds by alternating scripts/bench.sh runs, one chatload
# binary for all (the box drifts: only alternated runs are comparable).
#   scripts/ab.sh N BIN_A BIN_B [BIN...] -- [chatd flags...] -- [chatload flags...]
# Each binary runs N times, in rotation. A line per run: the build, its run,
# CPU per accepted message (chatd, PostgreSQL, chatload), the p99 of
# send->delivered, lost, accepted/s. Every report is kept in $AB_DIR (default
# a new /tmp/chatd-ab.XXXXXX) as NAME-RUN.txt, NAME the binary's file name.
# Build a revision's chatd with, e.g.:
#   git worktree add /tmp/base REV && (cd /tmp/base && go build -o /tmp/chatd-base ./cmd/chatd)
set -euo pipefail
cd "$(dirname "$0")/.."
n=$1
shift
bins=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do bins+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
chatd_args=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do chatd_args+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
if [ "${#bins[@]}" -lt 2 ]; then
  echo "usage: scripts/ab.sh N BIN_A BIN_B [BIN...] -- [chatd flags...] -- [chatload flags...]" >&2
  exit 2
fi
names=$(for bin in "${bins[@]}"; do basename "$bin"; done)
if [ "$(sort <<<"$names" | uniq -d)" != "" ]; then
  echo "scripts/ab.sh: the binaries' file names must differ (they name the reports): $(echo $names)" >&2
  exit 2
fi
out=${AB_DIR:-$(mktemp -d /tmp/chatd-ab.XXXXXX)}
mkdir -p "$out"
make -s build
echo "reports in $out"
for i in $(seq 1 "$n"); do
  for bin in "${bins[@]}"; do
    name=$(basename "$bin")
    report="$out/$name-$i.txt"
    CHATD_BIN=$bin scripts/bench.sh "${chatd_args[@]}" -- --progress -1s "$@" >"$report" 2>&1 || true
    cpu=$(sed -n 's/^CPU per accepted *//; s/ (warm-up.*//p' "$report")
    p99=$(awk '/^send→delivered/ {print $6, $7}' "$report")
    lost=$(awk '/^lost/ {print $2}' "$report")
    rate=$(awk '/^accepted/ {print $6}' "$report")
    echo "$name $i: ${cpu:-no report (see $report)}; p99 ${p99:--}; lost ${lost:--}; accepted ${rate:--}"
  done
done
