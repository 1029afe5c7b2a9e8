#!/usr/bin/env bash
# Runs Stoplight Prism, a validating proxy independent of the Go tests'
# kin-openapi, in front of a real chatd and fails on any violation it
# reports. chatd is bin/chatd in embedded mode on a free port with a
# temporary data dir; Prism (the version pinned in scripts/openapi/prism)
# proxies it with --errors, so an answer the document does not describe
# comes back as Prism's 500 with an sl-violations header. Each call below
# is one the document calls valid, so Prism forwards it, and the status
# checked is chatd's; what Prism refuses itself (a text/plain body, which
# chatd answers 415) never reaches chatd, and the Go tests cover it, as they
# cover the 503s. make test runs it (make check-prism); alone:
#   make build && scripts/prism-check.sh
# Prism 5.16 declares Node 24 in its engines; npm warns, and it runs on the
# Node 20 that scripts/ensure-web.sh requires.
set -euo pipefail
cd "$(dirname "$0")/.."

[ -x bin/chatd ] || { echo "bin/chatd not found: run make build" >&2; exit 1; }
dir=scripts/openapi/prism
if ! [ -f "$dir/node_modules/.package-lock.json" ] ||
   ! [ "$dir/node_modules/.package-lock.json" -nt "$dir/package-lock.json" ]; then
  echo "npm ci in $dir (Stoplight Prism)..." >&2
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
fi

free_port() {
  node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}
tmp=$(mktemp -d)
# Run as root, chatd's PostgreSQL runs as the postgres user, which must reach
# the data dir; in a 0700 dir the cluster would go under /var/lib/chatd and
# outlive the run.
chmod 755 "$tmp"
chatd_pid='' prism_pid=''
# cleanup stops what this script started and keeps the script's status.
cleanup() {
  local rc=$?
  set +e # wait returns the killed process's status
  if [ -n "$prism_pid" ]; then kill "$prism_pid" 2>/dev/null; wait "$prism_pid" 2>/dev/null; fi
  if [ -n "$chatd_pid" ]; then kill "$chatd_pid" 2>/dev/null; wait "$chatd_pid" 2>/dev/null; fi
  rm -rf "$tmp"
  exit "$rc"
}
trap cleanup EXIT

cport=$(free_port)
pport=$(free_port)
echo "starting chatd on 127.0.0.1:$cport (embedded, data in $tmp)"
bin/chatd --listen "127.0.0.1:$cport" --data-dir "$tmp/data" --dev-login --admin-users ops >"$tmp/chatd.log" 2>&1 &
chatd_pid=$!
for _ in $(seq 120); do
  curl -fs "127.0.0.1:$cport/readyz" >/dev/null 2>&1 && break
  kill -0 "$chatd_pid" 2>/dev/null || { cat "$tmp/chatd.log" >&2; exit 1; }
  sleep 0.5
done
echo "starting prism $("$dir/node_modules/.bin/prism" --version 2>/dev/null) proxy --errors on 127.0.0.1:$pport"
"$dir/node_modules/.bin/prism" proxy --errors -h 127.0.0.1 -p "$pport" pkg/api/openapi.yaml "http://127.0.0.1:$cport" >"$tmp/prism.log" 2>&1 &
prism_pid=$!
for _ in $(seq 120); do
  curl -fs "127.0.0.1:$pport/healthz" >/dev/null 2>&1 && break
  kill -0 "$prism_pid" 2>/dev/null || { cat "$tmp/prism.log" >&2; exit 1; }
  sleep 0.5
done

P=http://127.0.0.1:$pport
failures=0
# call WANT NAME CURL-ARGS...: one call through Prism; fails unless the
# status is WANT and Prism reported no violation. The body is in $tmp/body.
call() {
  local want=$1 name=$2
  shift 2
  judge "$want" "$name" "$(curl -s -o "$tmp/body" -D "$tmp/headers" -w '%{http_code}' "$@")"
}
# judge WANT NAME GOT: the verdict on the answer in $tmp/headers and body.
judge() {
  local want=$1 name=$2 got=$3
  if grep -qi '^sl-violations:' "$tmp/headers"; then
    echo "FAIL $got $name: $(grep -i '^sl-violations:' "$tmp/headers")"
    failures=$((failures + 1))
  elif [ "$got" != "$want" ]; then
    echo "FAIL $got $name: want $want: $(head -c 300 "$tmp/body")"
    failures=$((failures + 1))
  else
    echo "ok   $got $name"
  fi
}
json=(-H 'Content-Type: application/json')
# field NAME: the top-level field NAME of the JSON object on stdin (node
# comes with the web tests' set-up; jq need not be installed).
field() { node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s)[process.argv[1]]))' "$1"; }
login() { curl -s "${json[@]}" -d "{\"user\":\"$1\"}" "$P/api/dev/login" | field token; }

call 200 "GET /healthz" "$P/healthz"
call 200 "GET /readyz" "$P/readyz"
call 200 "GET /metrics" "$P/metrics"
call 200 "GET /api/openapi.yaml" "$P/api/openapi.yaml"
call 200 "POST /api/dev/login" "${json[@]}" -d '{"user":"alice"}' "$P/api/dev/login"
A=(-H "Authorization: Bearer $(field token <"$tmp/body")")
C=(-H "Authorization: Bearer $(login carol)")
call 201 "POST /api/chats" "${A[@]}" "${json[@]}" -d '{"members":["bob"],"title":"t"}' "$P/api/chats"
chat=$(field id <"$tmp/body")
call 200 "GET /api/chats" "${A[@]}" "$P/api/chats"
call 201 "POST /api/chats/direct (created)" "${A[@]}" "${json[@]}" -d '{"user":"bob"}' "$P/api/chats/direct"
direct=$(field id <"$tmp/body")
call 200 "POST /api/chats/direct (existed)" "${A[@]}" "${json[@]}" -d '{"user":"bob"}' "$P/api/chats/direct"
call 200 "POST /api/chats/{id}/members" "${A[@]}" "${json[@]}" -d '{"user":"dave"}' "$P/api/chats/$chat/members"
call 201 "POST /api/chats/{id}/messages" "${A[@]}" "${json[@]}" -d '{"cid":"c1","body":"hi"}' "$P/api/chats/$chat/messages"
mid=$(field id <"$tmp/body")
call 200 "POST /api/chats/{id}/messages (resent)" "${A[@]}" "${json[@]}" -d '{"cid":"c1","body":"hi"}' "$P/api/chats/$chat/messages"
call 201 "PATCH /api/chats/{id}/messages/{mid}" "${A[@]}" "${json[@]}" -d '{"cid":"e1","body":"hi!"}' -X PATCH "$P/api/chats/$chat/messages/$mid"
call 201 "POST .../reactions" "${A[@]}" "${json[@]}" -d '{"cid":"r1","emoji":"👍","on":true}' "$P/api/chats/$chat/messages/$mid/reactions"
call 200 "GET /api/chats/{id}/messages" "${A[@]}" "$P/api/chats/$chat/messages"
call 200 "GET /api/chats/{id}/messages?before=" "${A[@]}" "$P/api/chats/$chat/messages?before=100&limit=2"
call 200 "GET /api/chats/{id}/messages?since=&limit= (empty is absent)" "${A[@]}" "$P/api/chats/$chat/messages?since=&limit="
call 200 "GET /api/chats/{id}/messages/{mid}" "${A[@]}" "$P/api/chats/$chat/messages/$mid"
call 201 "DELETE /api/chats/{id}/messages/{mid}" "${A[@]}" -X DELETE "$P/api/chats/$chat/messages/$mid?cid=d1"
call 200 "GET /api/presence" "${A[@]}" "$P/api/presence?users=bob,alice"
call 204 "DELETE /api/chats/{id}/members/{user}" "${A[@]}" -X DELETE "$P/api/chats/$chat/members/dave"
call 200 "GET /api/admin/outbox (admin)" -H "Authorization: Bearer $(login ops)" "$P/api/admin/outbox"

call 401 "GET /api/chats with a bad token" -H "Authorization: Bearer not.a.token" "$P/api/chats"
call 403 "GET /api/admin/outbox (not an admin)" "${A[@]}" "$P/api/admin/outbox"
call 403 "POST /api/chats/{id}/messages (not a member)" "${C[@]}" "${json[@]}" -d '{"cid":"c9","body":"hi"}' "$P/api/chats/$chat/messages"
call 404 "GET /api/chats/{id}/messages (unknown chat)" "${A[@]}" "$P/api/chats/nochat/messages"
call 404 "GET /api/chats/{id}/messages/{mid} (unknown message)" "${A[@]}" "$P/api/chats/$chat/messages/nomessage"
call 409 "POST /api/chats/{id}/members (direct chat)" "${A[@]}" "${json[@]}" -d '{"user":"dave"}' "$P/api/chats/$direct/members"
call 409 "POST /api/chats/{id}/messages (cid_conflict)" "${A[@]}" "${json[@]}" -d '{"cid":"c1","body":"hi"}' "$P/api/chats/$direct/messages"
call 400 "GET /api/presence (not a user id)" "${A[@]}" "$P/api/presence?users=bad!"
call 400 "POST /api/chats/{id}/messages (too_large)" "${A[@]}" "${json[@]}" \
  -d "{\"cid\":\"c2\",\"body\":\"$(head -c 5000 /dev/zero | tr '\0' a)\"}" "$P/api/chats/$chat/messages"
call 413 "POST /api/chats/{id}/messages (over the body limit)" "${A[@]}" "${json[@]}" \
  -d "{\"cid\":\"c3\",\"body\":\"$(head -c 100000 /dev/zero | tr '\0' a)\"}" "$P/api/chats/$chat/messages"
call 431 "GET /healthz (header over --max-header-bytes)" -H "X-Big: $(head -c 6000 /dev/zero | tr '\0' a)" "$P/healthz"
call 426 "GET /ws (not an upgrade)" "$P/ws"
# Over the REST rate (a bucket per user, 20/s, burst 40): Prism's own
# latency lets the bucket refill between calls made through it, so the
# user's bucket is kept empty by calls straight to chatd meanwhile; every
# answer Prism relays is checked.
R=(-H "Authorization: Bearer $(login rater)")
seq 3000 | xargs -P 8 -I{} curl -s -o /dev/null "${R[@]}" "127.0.0.1:$cport/api/chats" &
hammer=$!
for _ in $(seq 50); do
  got=$(curl -s -o "$tmp/body" -D "$tmp/headers" -w '%{http_code}' "${R[@]}" "$P/api/chats")
  [ "$got" = 429 ] && break
  judge 200 "GET /api/chats (before the rate is exceeded)" "$got" >/dev/null
done
kill "$hammer" 2>/dev/null || true
wait "$hammer" 2>/dev/null || true
judge 429 "GET /api/chats (over the rate)" "$got"
if [ "$got" = 429 ] && ! grep -qi '^retry-after:' "$tmp/headers"; then
  echo "FAIL 429 without Retry-After"
  failures=$((failures + 1))
fi

echo
grep -c 'Request terminated with error' "$tmp/prism.log" | sed 's/^/prism log, requests terminated with an error: /' || true
if [ "$failures" -ne 0 ]; then
  echo "prism-check: $failures failures; prism's log:"
  grep -E 'error|violation' "$tmp/prism.log" | tail -20
  exit 1
fi
echo "prism-check: every answer as documented, zero violations"
