#!/usr/bin/env bash
# The production nginx site (nginx/waitlist.conf) is valid: `nginx -t`
# passes without a warning once its placeholders (certificate, ports, log
# directory) are filled in with throw-away values in a temporary prefix.
# With WL_VAR set to a running stack (script/test), it is also started in
# front of that stack's FastCGI socket and answers over TLS 1.2+ only,
# with HSTS and X-Request-Id, redirects plain HTTP, and shapes its own
# errors as JSON.
#   t/ops/nginx-prod.sh            (WL_VAR optional)
set -euo pipefail

# shellcheck source=t/ops/lib.sh
. "$(dirname "$0")/lib.sh"

command -v nginx >/dev/null || { echo "nginx-prod: nginx is not installed" >&2; exit 1; }
tmp=$(mktemp -d /tmp/waitlist-nginx.XXXXXX)
pid=
cleanup() {
	ops_stop "$pid"
	rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$tmp/log" "$tmp/tmp"
ops_cert "$tmp"

sock=/run/waitlist/fcgi.sock
if [ -n "${WL_VAR:-}" ]; then
	sock=$(wl_conf_get "$WL_VAR/waitlist.conf" server fcgi_socket)
fi
# From a range apart from script/test's.
https_port=$(wl_free_port 19100 19900)
http_port=$(wl_free_port 19100 19900 "$https_port")

# Only what a test machine must differ in: addresses, files, the socket;
# and its error log takes warnings, to show what nginx spools to disk.
sed -e "s|listen 443 ssl http2;|listen 127.0.0.1:$https_port ssl http2 sndbuf=8k;|" \
	-e "s|listen 80;|listen 127.0.0.1:$http_port;|" \
	-e '/listen \[::\]/d' \
	-e "s|/etc/ssl/certs/api.example.org.pem|$tmp/cert.pem|" \
	-e "s|/etc/ssl/private/api.example.org.key|$tmp/key.pem|" \
	-e "s|/var/log/nginx/|$tmp/log/|" \
	-e 's|\(error_log [^ ;]*\);|\1 warn;|' \
	-e "s|unix:/run/waitlist/fcgi.sock|unix:$sock|" \
	"$OPS_REPO/nginx/waitlist.conf" >"$tmp/site.conf"
for placeholder in 'listen 443' 'listen 80' /etc/ssl /var/log; do
	! grep -q "$placeholder" "$tmp/site.conf" ||
		{ echo "nginx-prod: $placeholder left in the site config" >&2; exit 1; }
done
cat >"$tmp/nginx.conf" <<CONF
pid $tmp/nginx.pid;
error_log stderr;
events { worker_connections 64; }
http {
    # As Debian's nginx.conf does, before the site.
    include /etc/nginx/mime.types;
    client_body_temp_path $tmp/tmp/body;
    fastcgi_temp_path $tmp/tmp/fastcgi;
    proxy_temp_path $tmp/tmp/proxy;
    scgi_temp_path $tmp/tmp/scgi;
    uwsgi_temp_path $tmp/tmp/uwsgi;
    include $tmp/site.conf;
}
CONF

# As root the workers would run as nobody, who cannot reach a private
# stack's socket; in production they are www-data in group waitlist.
global='daemon off;'
[ "$(id -u)" -ne 0 ] || global+=' user root;'
nginx_cmd=(nginx -e stderr -p "$tmp" -c "$tmp/nginx.conf" -g "$global")

out=$("${nginx_cmd[@]}" -t 2>&1) || { printf '%s\n' "$out" >&2; echo "nginx-prod: FAIL: nginx -t" >&2; exit 1; }
if grep -qE '\[(warn|emerg|alert|crit|error)\]' <<<"$out"; then
	printf '%s\n' "$out" >&2
	echo "nginx-prod: FAIL: nginx -t warns" >&2
	exit 1
fi
echo "nginx-prod: nginx -t: ok"
[ -n "${WL_VAR:-}" ] || exit 0

"${nginx_cmd[@]}" >"$tmp/log/nginx.out" 2>&1 &
pid=$!
ops_wait_port 10 "$https_port" || { cat "$tmp/log/nginx.out" >&2; echo "nginx-prod: nginx did not start" >&2; exit 1; }

fails=0
fail() {
	echo "nginx-prod: FAIL: $*" >&2
	fails=$((fails + 1))
}
base=https://127.0.0.1:$https_port/v1/external
# req OUT ARGS...: curl; the status line and headers in OUT, the body in
# OUT.body.
req() {
	local out=$1
	shift
	curl -sk -D "$out" -o "$out.body" --max-time 10 "$@" || true
}

req "$tmp/r1" --http2 "$base/health"
grep -q '^HTTP/2 200' "$tmp/r1" || fail "GET /health over HTTP/2: $(head -1 "$tmp/r1")"
grep -qi '^strict-transport-security: max-age=63072000' "$tmp/r1" || fail "GET /health: no HSTS header"
rid=$(sed -n 's/^x-request-id: *\([^[:space:]]*\).*/\1/Ip' "$tmp/r1")
[[ $rid =~ ^[0-9a-f]{32}$ ]] || fail "GET /health: X-Request-Id \"$rid\" is not nginx's \$request_id"
# The stack's worker logged the same request id.
sleep 0.2
grep -rqF "\"requestId\":\"$rid\"" "$WL_VAR/log" || fail "request id $rid is not in the service's logs"
grep -qF "$rid" "$tmp/log/waitlist-access.log" || fail "request id $rid is not in the access log"

req "$tmp/r2" "$base"
grep -q '^HTTP/[0-9.]* 404' "$tmp/r2" || fail "GET /v1/external: $(head -1 "$tmp/r2")"
grep -q '"code":"not_found"' "$tmp/r2.body" || fail "GET /v1/external: $(cat "$tmp/r2.body")"
grep -qi '^strict-transport-security:' "$tmp/r2" || fail "nginx's own 404 has no HSTS header"
grep -qi '^cache-control: no-store' "$tmp/r2" || fail "nginx's own 404 has no Cache-Control: no-store"
# JSON whatever the extension of the path.
req "$tmp/r7" "https://127.0.0.1:$https_port/index.html"
grep -q '^HTTP/[0-9.]* 404' "$tmp/r7" || fail "GET /index.html: $(head -1 "$tmp/r7")"
grep -qi '^content-type: application/json' "$tmp/r7" || fail "GET /index.html: $(grep -i '^content-type' "$tmp/r7")"

head -c $((2 * 1024 * 1024)) /dev/zero | tr '\0' 'a' >"$tmp/big"
req "$tmp/r3" -X POST -H 'content-type: application/json' --data-binary @"$tmp/big" "$base/waitlist/entries"
grep -q '^HTTP/[0-9.]* 400' "$tmp/r3" || fail "2 MiB body: $(head -1 "$tmp/r3")"
grep -q '"code":"payload_too_large"' "$tmp/r3.body" || fail "2 MiB body: $(cat "$tmp/r3.body")"
grep -qi '^cache-control: no-store' "$tmp/r3" || fail "2 MiB body: no Cache-Control: no-store"

# An answer larger than the default buffers, to a client that reads it
# slowly (openapi.json, 180 KiB, at 16 KiB a tenth of a second with a
# small receive buffer), stays in memory: nginx spools none to a
# temporary file, as a page of guests would be.
python3 - "$https_port" >"$tmp/slow.out" 2>&1 <<'PY' || fail "the slow read of openapi.json: $(tail -3 "$tmp/slow.out")"
import socket, ssl, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect(("127.0.0.1", int(sys.argv[1])))
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
t = ctx.wrap_socket(s)
t.sendall(b"GET /v1/external/openapi.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
got = b""
while True:
    time.sleep(0.1)
    chunk = t.recv(16384)
    if not chunk:
        break
    got += chunk
assert got.startswith(b"HTTP/1.1 200"), got[:100]
assert got.rstrip().endswith(b"}"), got[-100:]
print(len(got))
PY
if grep -q 'buffered to a temporary file' "$tmp/log/waitlist-error.log"; then
	fail "nginx spooled an answer to disk: $(grep 'buffered to a temporary file' "$tmp/log/waitlist-error.log" | head -1)"
fi

# A request nginx cannot parse (an encoded NUL in the path) is its JSON 400.
req "$tmp/r5" --path-as-is "$base/me%00"
grep -q '^HTTP/[0-9.]* 400' "$tmp/r5" || fail "GET /me%00: $(head -1 "$tmp/r5")"
grep -q '"code":"invalid_request"' "$tmp/r5.body" || fail "GET /me%00: $(cat "$tmp/r5.body")"
grep -qi '^strict-transport-security:' "$tmp/r5" || fail "nginx's own 400 has no HSTS header"
grep -qi '^cache-control: no-store' "$tmp/r5" || fail "nginx's own 400 has no Cache-Control: no-store"
# Plain HTTP sent to the TLS port: the same JSON 400.
req "$tmp/r6" "http://127.0.0.1:$https_port/v1/external/health"
grep -q '^HTTP/[0-9.]* 400' "$tmp/r6" || fail "plain HTTP to the TLS port: $(head -1 "$tmp/r6")"
grep -q '"code":"invalid_request"' "$tmp/r6.body" || fail "plain HTTP to the TLS port: $(cat "$tmp/r6.body")"

req "$tmp/r4" "http://127.0.0.1:$http_port/v1/external/me?x=1"
grep -q '^HTTP/[0-9.]* 301' "$tmp/r4" || fail "plain HTTP: $(head -1 "$tmp/r4")"
grep -qi '^location: https://127.0.0.1/v1/external/me?x=1' "$tmp/r4" || fail "plain HTTP: $(grep -i '^location' "$tmp/r4")"

# OpenSSL 3 refuses TLS 1.0 and 1.1 by itself, on both ends, so only the
# configuration can show that nginx would too.
grep -qE '^ *ssl_protocols TLSv1\.2 TLSv1\.3;$' "$tmp/site.conf" || fail "ssl_protocols is not TLSv1.2 TLSv1.3"
for v in 1.2 1.3; do
	curl -sk -o /dev/null --max-time 5 "--tlsv$v" --tls-max "$v" "$base/health" || fail "TLS $v was refused"
done

# X-Test-Now from outside never reaches the service: an entry created with
# it through this site is stamped with the real time, where through the
# development nginx it is stamped with the pinned one (when the stack
# allows pinning: [server] test_clock = 1, as script/test sets it).
read -ra ctl <<<"${WL_CTL:-$OPS_REPO/ctl/waitlistctl --config $WL_VAR/waitlist.conf}"
day='{"enabled": true, "start": "00:00", "end": "24:00"}'
cat >"$tmp/fixture.json" <<JSON
{"tenants": [{"ref": "t", "name": "nginx-prod $$ $RANDOM", "plan": "pro",
  "publicApi": true, "state": "active", "emailVerified": true, "billingAvailable": true,
  "businesses": [{"ref": "b", "name": "b", "slug": "nginx-prod-$$-$RANDOM", "timeZone": "UTC",
    "queues": [{"ref": "q", "name": "q", "workingHours": $day,
      "availability": {"walkInsEnabled": true, "bookingHours": $day}}]}],
  "keys": [{"ref": "k", "scopes": ["waitlist:read", "waitlist:write"]}]}]}
JSON
refs=$("${ctl[@]}" seed "$tmp/fixture.json")
key=$(jq -r .refs.k <<<"$refs")
queue=$(jq -r .refs.q <<<"$refs")
pinned=$(date -u -d '+2 days' +%Y-%m-%dT%H:%M:%S.000Z)
created_at() {
	curl -sk --max-time 10 -X POST -H "authorization: Bearer $key" \
		-H 'content-type: application/json' -H "idempotency-key: $RANDOM$RANDOM$RANDOM" \
		-H "x-test-now: $pinned" --data "{\"queueId\":\"$queue\",\"fullName\":\"SECRET-GUEST-nginx-$RANDOM\"}" \
		"$1/waitlist/entries" | jq -r '.entry.createdAt // "none"'
}
dev=${WL_BASE_URL:-http://127.0.0.1:${WAITLIST_HTTP_PORT:-8080}/v1/external}
if [ "$(created_at "$dev")" = "$pinned" ]; then
	got=$(created_at "$base")
	case $got in
	none) fail "POST /waitlist/entries through the site failed" ;;
	"$pinned") fail "the site passed X-Test-Now to the service" ;;
	esac
elif [ "${WL_TEST_CLOCK:-0}" = 1 ]; then
	fail "the test stack did not honour X-Test-Now"
else
	echo "nginx-prod: the stack does not honour X-Test-Now; that check is skipped"
fi

[ "$fails" -eq 0 ] || exit 1
echo "nginx-prod: in front of the stack: ok (HTTP/2, HSTS, request id, redirect, JSON errors, answers kept in memory, TLS >= 1.2, no X-Test-Now)"
