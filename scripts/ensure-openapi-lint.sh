#!/usr/bin/env bash
# Makes sure Redocly CLI, the second validator of pkg/api/openapi.yaml, is
# installed: the version pinned in scripts/openapi/lint/package-lock.json,
# with npm ci, only when node_modules does not match the lock file (the same
# check as scripts/ensure-web.sh). The Go tests check the document with
# kin-openapi; Redocly is an independent reading of the same file.
set -euo pipefail
cd "$(dirname "$0")/.."

dir=scripts/openapi/lint
if ! command -v npm >/dev/null 2>&1; then
  echo "npm not found: run scripts/ensure-web.sh (make deps-web) or install Node 20+ and npm" >&2
  exit 1
fi
if [ -f "$dir/node_modules/.package-lock.json" ] &&
   [ "$dir/node_modules/.package-lock.json" -nt "$dir/package-lock.json" ]; then
  exit 0
fi
echo "npm ci in $dir (Redocly CLI for the OpenAPI lint)..." >&2
(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
