#!/usr/bin/env bash
# Makes sure PostgreSQL's server binaries (initdb, postgres) are installed.
# chatd runs them itself as a private, supervised cluster; nothing is started
# here. Installs Debian's `postgresql` package only when no server is found.
set -euo pipefail

have_server() {
  local dir
  if command -v pg_config >/dev/null 2>&1; then
    dir=$(pg_config --bindir 2>/dev/null || true)
    [ -x "$dir/initdb" ] && [ -x "$dir/postgres" ] && return 0
  fi
  for dir in /usr/lib/postgresql/*/bin; do
    [ -x "$dir/initdb" ] && [ -x "$dir/postgres" ] && return 0
  done
  return 1
}

if have_server; then
  exit 0
fi
echo "PostgreSQL server binaries not found; installing Debian's postgresql package..." >&2
if [ "$(id -u)" -ne 0 ]; then
  SUDO=sudo
else
  SUDO=
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq postgresql >/dev/null
have_server || { echo "postgresql installed but initdb/postgres still not found" >&2; exit 1; }
echo "PostgreSQL installed." >&2
