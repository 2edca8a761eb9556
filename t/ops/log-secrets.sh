#!/usr/bin/env bash
# No log of a stack holds a guest value or a secret.  Run at the end of the
# integration run, while its database still holds what the tests wrote:
# every guest name, phone number and note in it (at least 8 characters and
# not all digits, so that they cannot match by chance), the server secret,
# API keys (wl_ + 40 or more base64url characters), webhook signing
# secrets (whsec_...) and the SECRET-GUEST- sentinel are searched for in
# every file under VARDIR/log (the service's logs, nginx's and Apache's).
# To show that it can fail, the same search first runs on a copy of the
# logs with such values injected, and must find each of them.
#   t/ops/log-secrets.sh [VARDIR]      (default: $WL_VAR)
set -euo pipefail

var=${1:-${WL_VAR:-}}
if [ -z "$var" ] || [ ! -d "$var/log" ]; then
	echo "usage: t/ops/log-secrets.sh VARDIR" >&2
	exit 2
fi
tmp=$(mktemp -d /tmp/waitlist-logscan.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export LC_ALL=C

# Guest values, one per line as mariadb -B writes them (newlines and tabs
# escaped, as the JSON logs would escape them too).
mariadb --no-defaults --socket="$var/mysql.sock" -u "$(id -un)" -N -B waitlist -e "
	SELECT full_name FROM entries
	UNION SELECT phone FROM entries WHERE phone IS NOT NULL
	UNION SELECT notes FROM entries WHERE notes IS NOT NULL" >"$tmp/values"
awk 'length($0) >= 8 && $0 !~ /^[0-9 ]+$/' "$tmp/values" >"$tmp/fixed"
nguest=$(wc -l <"$tmp/fixed")
[ "$nguest" -gt 0 ] || { echo "log-secrets: the database holds no guest values to look for" >&2; exit 1; }
echo "SECRET-GUEST-" >>"$tmp/fixed"
secret=$(tr -d ' \r\n' <"$var/secret.key")
[ "${#secret}" -ge 32 ] && echo "$secret" >>"$tmp/fixed"
printf '%s\n' 'wl_[A-Za-z0-9_-]{40,}' 'whsec_[A-Za-z0-9+/=_-]{16,}' >"$tmp/regex"

# scan DIR: print the leaks found under DIR (file: excerpt), one per line.
scan() {
	{
		grep -rnoF -f "$tmp/fixed" "$1" || true
		grep -rnoE -f "$tmp/regex" "$1" || true
	} | sed "s|^$1/||" | cut -c1-200
}

# The search can fail: a copy of the logs with a guest value, a key, a
# webhook secret and the server secret added must show all four.
cp -r "$var/log" "$tmp/copy"
guest=$(head -n 1 "$tmp/fixed")
key="wl_$(head -c 32 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')"
{
	echo "{\"msg\":\"request\",\"note\":\"$guest\"}"
	echo "Authorization: Bearer $key"
	echo "secret whsec_$(head -c 24 /dev/urandom | base64)"
	echo "key $secret"
} >>"$tmp/copy/fcgi.log"
scan "$tmp/copy" >"$tmp/injected"
for what in "$guest" "$key" whsec_ "$secret"; do
	grep -qF -- "$what" "$tmp/injected" ||
		{ echo "log-secrets: FAIL: the search missed an injected ${what:0:12}..." >&2; exit 1; }
done

scan "$var/log" >"$tmp/found"
if [ -s "$tmp/found" ]; then
	echo "log-secrets: FAIL: guest values or secrets in the logs:" >&2
	head -n 20 "$tmp/found" >&2
	echo "($(wc -l <"$tmp/found") in all)" >&2
	exit 1
fi
echo "log-secrets: ok ($nguest guest values, keys and secrets looked for in $(find "$var/log" -type f | wc -l) logs; none found)"
