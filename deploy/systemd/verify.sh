#!/usr/bin/env bash
# Verifies the systemd units with systemd-analyze, as `make check-deploy` runs it:
#   deploy/systemd/verify.sh bin/chatd
#
# systemd-analyze verify refuses a unit whose ExecStart binary does not
# exist, and the units run /usr/local/bin/chatd and
# /usr/local/lib/chatd/backup.sh, which a build machine does not have. So it
# verifies copies (chatd@.service as the instance chatd@node-1) whose
# ExecStart points at the chatd binary given (the `make build` output) and
# at scripts/backup.sh; nothing else in the units changes. verify only warns
# on an unknown or misspelt directive, so any output at all fails here.
# Then `systemd-analyze security` scores each service's hardening offline
# and fails above an exposure of 2.0 (of 10).
set -euo pipefail

bin=$(realpath "${1:?usage: verify.sh PATH-TO-CHATD}")
[ -x "$bin" ] || { echo "verify.sh: $bin is not an executable" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
backup=$(realpath "$here/../../scripts/backup.sh")

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
copy() { # copy UNIT NAME: the unit as NAME in $dir, pointed at this machine's files
	sed -e "s|^ExecStart=/usr/local/bin/chatd |ExecStart=$bin |" \
		-e "s|^ExecStart=/usr/local/lib/chatd/backup.sh |ExecStart=$backup |" "$here/$1" >"$dir/$2"
	if grep -q '^ExecStart=/usr/local/' "$dir/$2"; then
		echo "verify.sh: $1 runs an ExecStart this script cannot point at a file here" >&2
		exit 1
	fi
}
copy chatd@.service chatd@node-1.service
copy chatd.service chatd.service
copy chatd-backup.service chatd-backup.service
copy chatd-backup.timer chatd-backup.timer

for unit in chatd@node-1.service chatd.service chatd-backup.service chatd-backup.timer; do
	out=$(cd "$dir" && systemd-analyze verify --man=no "$dir/$unit" 2>&1) || { echo "$out" >&2; exit 1; }
	if [ -n "$out" ]; then
		echo "systemd-analyze verify warned about $unit:" >&2
		echo "$out" >&2
		exit 1
	fi
done
for unit in chatd@node-1.service chatd.service chatd-backup.service; do
	systemd-analyze security --offline=yes --threshold=20 "$dir/$unit" >"$dir/security.txt" || {
		cat "$dir/security.txt" >&2
		echo "$unit: exposure above 2.0" >&2
		exit 1
	}
	echo "$unit: systemd-analyze verify clean; $(grep -o 'Overall exposure level.*' "$dir/security.txt")"
done
echo "chatd-backup.timer: systemd-analyze verify clean"
