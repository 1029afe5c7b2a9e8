#!/usr/bin/env bash
# Verifies chatd@.service with systemd-analyze, as `make check-deploy` runs it:
#   deploy/systemd/verify.sh bin/chatd
#
# systemd-analyze verify refuses a unit whose ExecStart binary does not
# exist, and the unit runs /usr/local/bin/chatd, which a build machine does
# not have. So it verifies a copy, as the instance chatd@node-1, whose
# ExecStart points at the chatd binary given (the `make build` output);
# nothing else in the unit changes. verify only warns on an unknown or
# misspelt directive, so any output at all fails here. Then
# `systemd-analyze security` scores the hardening offline and fails above
# an exposure of 2.0 (of 10; the unit scores 1.5 with systemd 252).
set -euo pipefail

bin=$(realpath "${1:?usage: verify.sh PATH-TO-CHATD}")
[ -x "$bin" ] || { echo "verify.sh: $bin is not an executable" >&2; exit 1; }
unit=$(dirname "$0")/chatd@.service

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
copy="$dir/chatd@node-1.service"
sed "s|^ExecStart=/usr/local/bin/chatd |ExecStart=$bin |" "$unit" >"$copy"
grep -q "^ExecStart=$bin " "$copy" || { echo "verify.sh: $unit has no 'ExecStart=/usr/local/bin/chatd ' line to point at $bin" >&2; exit 1; }

out=$(systemd-analyze verify --man=no "$copy" 2>&1) || { echo "$out" >&2; exit 1; }
if [ -n "$out" ]; then
  echo "systemd-analyze verify warned about chatd@.service:" >&2
  echo "$out" >&2
  exit 1
fi
systemd-analyze security --offline=yes --threshold=20 "$copy" >"$dir/security.txt" || {
  cat "$dir/security.txt" >&2
  echo "chatd@.service: exposure above 2.0" >&2
  exit 1
}
echo "chatd@.service: systemd-analyze verify clean; $(grep -o 'Overall exposure level.*' "$dir/security.txt")"
