#!/usr/bin/env bash
# Makes sure the tools `make check-deploy` runs are installed: helm (lint and
# render the chart), promtool (check and unit-test the alert rules), caddy
# (validate the compose proxy's Caddyfile), all built from the Go module proxy
# into $(go env GOPATH)/bin, and systemd-analyze (verify the unit) from
# Debian's systemd package.
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

# ensure_go_tool BINARY PACKAGE VERSION [TAGS] installs PACKAGE@VERSION
# unless BINARY in $bindir was already built from that version.
ensure_go_tool() {
  local bin=$1 pkg=$2 version=$3 tags=${4:-}
  if [ "$(built_at "$bindir/$bin")" = "$version" ]; then
    return 0
  fi
  echo "installing $bin $version ($pkg), a one-time build..." >&2
  local start=$SECONDS
  GOFLAGS=-buildvcs=false CGO_ENABLED=0 GOBIN=$bindir "$GO" install -tags "$tags" "$pkg@$version"
  echo "installed $bin $version in $((SECONDS - start)) s" >&2
}

ensure_go_tool helm helm.sh/helm/v3/cmd/helm "$HELM_VERSION"
# remove_all_sd: leave out Prometheus's cloud service discoveries (AWS, Azure,
# GCE, ...), a large share of the build; promtool only checks our static
# scrape config and rules. (Kubernetes discovery stays: promtool imports it.)
ensure_go_tool promtool github.com/prometheus/prometheus/cmd/promtool "$PROMETHEUS_VERSION" remove_all_sd
ensure_go_tool caddy github.com/caddyserver/caddy/v2/cmd/caddy "$CADDY_VERSION"

if ! command -v systemd-analyze >/dev/null 2>&1; then
  echo "systemd-analyze not found; installing Debian's systemd package..." >&2
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends systemd >/dev/null
  command -v systemd-analyze >/dev/null 2>&1 || { echo "systemd installed but systemd-analyze still not found" >&2; exit 1; }
fi

echo "$bindir"
