#!/usr/bin/env bash
# Makes sure the tools `make check-deploy` runs are installed: helm (lint and
# render the chart), promtool (check and unit-test the alert rules), caddy
# (validate the compose proxy's Caddyfile), all built from the Go module proxy
# into $(go env GOPATH)/bin, systemd-analyze (verify the unit) from Debian's
# systemd package, and shellcheck (the scripts) from Debian's.
#
# Idempotent: a tool already built at the pinned version is left alone, so
# only the first run pays for the builds (timed in docs/operations.md,
# "Checking deploy/").
# Prints the directory holding helm and promtool on stdout, for the Makefile.
set -euo pipefail

GO=${GO:-go}
HELM_VERSION=v3.22.0
PROMETHEUS_VERSION=v0.316.0 # promtool; the Go module version of Prometheus 3.x
# The compose proxy's image is caddy:2.10 (deploy/caddy_test.go checks they
# agree). Not Debian's caddy: bookworm ships 2.6, which rejects directives the
# image supports (stream_close_delay).
CADDY_VERSION=v2.10.2

bindir=$("$GO" env GOBIN)
if [ -z "$bindir" ]; then
  bindir=$("$GO" env GOPATH)/bin
fi

# built_at prints the module version a Go binary was built from, or nothing.
built_at() {
  [ -x "$1" ] || return 0
  "$GO" version -m "$1" 2>/dev/null | awk '$1 == "mod" { print $3; exit }'
}

# need_go_tool BINARY VERSION: whether BINARY in $bindir is missing or was
# built from another version.
need_go_tool() {
  [ "$(built_at "$bindir/$1")" != "$2" ]
}

# The missing tools build at once, each in the background with its output in
# a log: on two cores the builds overlap their downloads and links, and the
# first `make test` waits for the slowest instead of the sum. A line a minute
# says which are still building.
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
pids=() names=()
# build BINARY PACKAGE VERSION [TAGS] starts installing PACKAGE@VERSION unless
# BINARY is already that version.
build() {
  local bin=$1 pkg=$2 version=$3 tags=${4:-}
  need_go_tool "$bin" "$version" || return 0
  echo "building $bin $version ($pkg), once; later runs reuse it..." >&2
  (
    start=$SECONDS
    GOFLAGS=-buildvcs=false CGO_ENABLED=0 GOBIN=$bindir "$GO" install -tags "$tags" "$pkg@$version" >"$logs/$bin" 2>&1 ||
      exit 1
    echo "built $bin $version in $((SECONDS - start)) s" >&2
  ) &
  pids+=($!)
  names+=("$bin")
}

build helm helm.sh/helm/v3/cmd/helm "$HELM_VERSION"
# remove_all_sd: leave out Prometheus's cloud service discoveries (AWS, Azure,
# GCE, ...), a large share of the build; promtool only checks our static
# scrape config and rules. (Kubernetes discovery stays: promtool imports it.)
build promtool github.com/prometheus/prometheus/cmd/promtool "$PROMETHEUS_VERSION" remove_all_sd
build caddy github.com/caddyserver/caddy/v2/cmd/caddy "$CADDY_VERSION"

if [ ${#pids[@]} -gt 0 ]; then
  started=$SECONDS
  (while sleep 60; do echo "... still building (${names[*]}), $((SECONDS - started)) s so far" >&2; done) &
  beat=$!
  failed=()
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || failed+=("${names[$i]}")
  done
  kill "$beat" 2>/dev/null
  for bin in "${failed[@]}"; do
    echo "building $bin failed:" >&2
    cat "$logs/$bin" >&2
  done
  [ ${#failed[@]} -eq 0 ] || exit 1
fi

# apt_tool COMMAND PACKAGE: installs Debian's PACKAGE unless COMMAND is found.
apt_tool() {
  command -v "$1" >/dev/null 2>&1 && return 0
  echo "$1 not found; installing Debian's $2 package..." >&2
  local sudo=
  if [ "$(id -u)" -ne 0 ]; then sudo=sudo; fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "$2" >/dev/null
  command -v "$1" >/dev/null 2>&1 || { echo "$2 installed but $1 still not found" >&2; exit 1; }
}
apt_tool systemd-analyze systemd
apt_tool shellcheck shellcheck

echo "$bindir"
