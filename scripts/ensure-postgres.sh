#!/usr/bin/env bash
# Makes sure PostgreSQL's server binaries (initdb, postgres) are installed, and
# pg_auto_failover for the failover tests. chatd runs the server itself as a
# private, supervised cluster; nothing is started here. Installs Debian's
# packages only when a binary is missing.
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

if [ "$(id -u)" -ne 0 ]; then
  SUDO=sudo
else
  SUDO=
fi
export DEBIAN_FRONTEND=noninteractive
updated=
apt_install() {
  [ -n "$updated" ] || { $SUDO apt-get update -qq; updated=1; }
  $SUDO apt-get install -y -qq "$@" >/dev/null
}

if ! have_server; then
  echo "PostgreSQL server binaries not found; installing Debian's postgresql package..." >&2
  apt_install postgresql
  have_server || { echo "postgresql installed but initdb/postgres still not found" >&2; exit 1; }
  echo "PostgreSQL installed." >&2
fi

# pg_auto_failover, for the failover tests (e2e/pgfailover_test.go): the
# failover manager an operator would run, for the server's major version.
if ! command -v pg_autoctl >/dev/null 2>&1; then
  major=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sed 's#.*/postgresql/\([0-9]*\)/bin#\1#' | sort -n | tail -n 1)
  if [ -n "$major" ]; then
    echo "pg_autoctl not found; installing Debian's postgresql-$major-auto-failover for the failover tests..." >&2
    apt_install "postgresql-$major-auto-failover" ||
      echo "postgresql-$major-auto-failover could not be installed: the pg_auto_failover test will fail and say so" >&2
  fi
fi
