#!/usr/bin/env bash
# Runs one step of `make test`, saying what runs, how long it took, and every
# minute while it runs, so a long step is never silent; keeps the timings for
# the summary at the end.
#   scripts/step.sh begin                 start a new run's timings
#   scripts/step.sh NAME COMMAND [ARG...] run COMMAND as the step NAME
#   scripts/step.sh summary               print every step's time
# The timings live in $STEP_LOG (default bin/.test-steps, git-ignored).
set -uo pipefail
log=${STEP_LOG:-bin/.test-steps}
mkdir -p "$(dirname "$log")"

case ${1:-} in
begin)
	: >"$log"
	date +%s >"$log.start"
	exit 0
	;;
summary)
	total=$(($(date +%s) - $(cat "$log.start" 2>/dev/null || date +%s)))
	echo "== make test: every step passed in $((total / 60)) min $((total % 60)) s"
	awk -F'\t' '{ printf "   %5d s  %s\n", $2, $1 }' "$log"
	exit 0
	;;
esac

name=$1
shift
echo "==> $name"
start=$(date +%s)
"$@" &
pid=$!
# The heartbeat: a line a minute while the step runs.
(
	while sleep 60; do
		kill -0 "$pid" 2>/dev/null || exit 0
		echo "... $name: still running after $(($(date +%s) - start)) s"
	done
) &
beat=$!
wait "$pid"
rc=$?
kill "$beat" 2>/dev/null
wait "$beat" 2>/dev/null
took=$(($(date +%s) - start))
printf '%s\t%d\n' "$name" "$took" >>"$log"
if [ "$rc" -ne 0 ]; then
	echo "<== $name FAILED after $took s (exit $rc)"
	exit "$rc"
fi
echo "<== $name: $took s"
