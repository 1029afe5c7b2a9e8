#!/usr/bin/env bash
# Makes sure the browser tests can run: Debian's chromium (driven headless by
# playwright-core over CDP, never a browser build downloaded by a tool) and
# the node packages of web/e2e (and web/sdk once it has devDependencies),
# installed from their package-lock.json. Idempotent: does nothing that is
# already done. Works as root on a fresh Debian machine (CI); uses sudo
# otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -ne 0 ]; then
  SUDO=sudo
else
  SUDO=
fi
export DEBIAN_FRONTEND=noninteractive

apt_install() {
  # Another apt (unattended upgrades, a parallel job) may hold the lock for a
  # while; wait for it instead of failing.
  $SUDO apt-get -o DPkg::Lock::Timeout=300 update -qq
  $SUDO apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends "$@" >/dev/null
}

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "node/npm not found; installing Debian's nodejs and npm..." >&2
  apt_install nodejs npm
fi
# playwright-core and the SDK need Node 20 or later.
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then
  echo "node $(node --version) is too old for the web tests: they need Node 20 or later" >&2
  exit 1
fi

# Debian's chromium without recommends (they pull in avahi, samba, cups
# helpers); the fonts are what a page needs to render text and emoji; curl
# makes scripts/prism-check.sh's calls; python3 runs the Standard Webhooks
# Python library in web/sdk/test/webhooks.test.mjs.
want=(chromium fonts-liberation fonts-noto-color-emoji curl python3-minimal)
missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing Debian packages for the browser tests: ${missing[*]}..." >&2
  apt_install "${missing[@]}"
fi
[ -x /usr/bin/chromium ] || { echo "chromium installed but /usr/bin/chromium is missing" >&2; exit 1; }

# npm ci only when node_modules does not match the lock file (npm writes
# node_modules/.package-lock.json; equal contents mean nothing changed).
npm_ci() {
  local dir=$1
  [ -f "$dir/package-lock.json" ] || return 0
  if [ -f "$dir/node_modules/.package-lock.json" ] &&
     [ "$dir/node_modules/.package-lock.json" -nt "$dir/package-lock.json" ]; then
    return 0
  fi
  echo "npm ci in $dir..." >&2
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
}

npm_ci web/e2e
npm_ci web/sdk
