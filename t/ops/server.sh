#!/usr/bin/env bash
# script/server as a developer (and the acceptance suite) runs it, with its
# state in a temporary directory (WAITLIST_VAR) on a free port:
#  1. it prints the base URL and a demo key that GET /me accepts, and
#     SIGTERM stops everything it started (exit 0, no process left);
#  2. a second script/server on the same state refuses to start, and the
#     first goes on; a second run afterwards reuses the data: the same
#     key, still accepted;
#  3. with the demo key revoked, the next run gives the same tenant a new
#     key (no second demo tenant); with its database gone but the demo key
#     still on file, the demo tenant no longer exists: the next run seeds
#     it again, a new key;
#  4. with WL_VAR set to a running stack (script/test), a config naming
#     that stack's MariaDB: no MariaDB of its own, the demo tenant seeded
#     there.
#   t/ops/server.sh            (WL_VAR optional)
set -euo pipefail

# shellcheck source=t/ops/lib.sh
. "$(dirname "$0")/lib.sh"

stack_var=${WL_VAR:-}
tmp=$(mktemp -d /tmp/waitlist-server.XXXXXX)
var=$tmp/var
pid=
fail() {
	echo "server: $*" >&2
	echo "--- script/server output:" >&2
	cat "$tmp/out" >&2 || true
	exit 1
}
cleanup() {
	ops_stop "$pid"
	rm -rf "$tmp"
}
trap cleanup EXIT
port=$(wl_free_port 19100 19900)
base="http://127.0.0.1:$port/v1/external"

# start: script/server in the background, as from a developer's shell
# (none of script/test's settings), until it prints its demo key.
start() {
	# Not the last run's output: its key line would be read as this one's.
	: >"$tmp/out"
	(
		cd "$OPS_REPO"
		exec env -u WL_BIN -u WL_VAR -u WL_TEST_CLOCK -u WAITLIST_TEST_CLOCK \
			-u WL_DB_EXTRA_FLAGS -u ASAN_OPTIONS -u UBSAN_OPTIONS \
			WAITLIST_VAR="$var" WAITLIST_HTTP_PORT="$port" script/server
	) >"$tmp/out" 2>&1 &
	pid=$!
	for _ in $(seq 1800); do
		grep -q '^Demo API key: ' "$tmp/out" && break
		kill -0 "$pid" 2>/dev/null || fail "exited before printing its key"
		sleep 0.1
	done
	key=$(sed -n 's/^Demo API key: //p' "$tmp/out")
	[ -n "$key" ] || fail "no demo key after 180 s"
	grep -qx "Base URL: $base" "$tmp/out" || fail "no base URL $base"
	me=$(curl -sS -w '\n%{http_code}' -H "Authorization: Bearer $key" "$base/me")
	[ "$(tail -n1 <<<"$me")" = 200 ] || fail "GET /me with the demo key: $me"
	[ "$(head -n1 <<<"$me" | jq -r .tenant.name)" = "Demo Bistro" ] ||
		fail "GET /me is not the demo tenant's: $me"
}

# stop: SIGTERM; exit 0 and nothing it started still running.
stop() {
	local pids f status=0
	pids=$(cat "$var"/run/*.pid 2>/dev/null || true)
	kill -TERM "$pid"
	wait "$pid" || status=$?
	pid=
	[ "$status" -eq 0 ] || fail "exited with $status on SIGTERM"
	for f in $pids; do
		! kill -0 "$f" 2>/dev/null || fail "process $f still runs after SIGTERM"
	done
}

start
key1=$key
other=$(cd "$OPS_REPO" && env -u WL_BIN -u WL_VAR WAITLIST_VAR="$var" \
	WAITLIST_HTTP_PORT="$(wl_free_port 19100 19900 "$port")" timeout 300 script/server 2>&1) &&
	fail "a second script/server ran on the same state: $other"
grep -q 'in use by another script/server' <<<"$other" || fail "the second script/server said: $other"
[ "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $key" "$base/me")" = 200 ] ||
	fail "the first script/server stopped answering after a second one was refused"
stop

start
[ "$key" = "$key1" ] || fail "a second run printed another key"
ctl_var() { "$OPS_REPO/ctl/waitlistctl" --config "$var/waitlist.conf" "$@"; }
demo_sql() { mariadb --no-defaults --socket="$var/mysql.sock" -u "$(id -un)" -N waitlist -e "$1"; }
tenant=$(curl -sS -H "Authorization: Bearer $key" "$base/me" | jq -r .tenant.id)
kid=$(ctl_var key list --tenant "$tenant" | jq -r '.keys[0].id')
ctl_var key revoke "$kid" >/dev/null
stop

start
[ "$key" != "$key1" ] || fail "the revoked demo key was printed again"
n=$(demo_sql "SELECT COUNT(*) FROM tenants WHERE name = 'Demo Bistro'")
[ "$n" = 1 ] || fail "$n demo tenants after the demo key was revoked"
key1=$key
stop

rm -rf "$var/mysql"
start
[ "$key" != "$key1" ] || fail "the demo tenant was not seeded into a new database"
stop
echo "server: ok (key, one per state, reuse, stop, a revoked key replaced, a new database seeded again)"

[ -n "$stack_var" ] || exit 0
sock=$(wl_conf_get "$stack_var/waitlist.conf" database socket)
stack_sql() { mariadb --no-defaults --socket="$sock" -u "$(id -un)" -N -e "$1"; }
db=waitlist_server_$$
stack_sql "CREATE DATABASE $db"
trap 'stack_sql "DROP DATABASE IF EXISTS $db" || true; cleanup' EXIT
sed -i -e "s|^socket = .*|socket = $sock|" -e "s|^name = .*|name = $db|" "$var/waitlist.conf"
start
[ ! -e "$var/run/db.pid" ] || fail "started a MariaDB of its own with another server configured"
grep -q "using the database server of" "$tmp/out" || fail "did not say which server it uses"
n=$(stack_sql "SELECT COUNT(*) FROM $db.tenants WHERE name = 'Demo Bistro'")
[ "$n" = 1 ] || fail "the demo tenant is not in the configured server's database ($n)"
stop
echo "server: ok (the configured database server)"
