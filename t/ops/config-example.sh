#!/usr/bin/env bash
# The configuration is documented completely and checked strictly:
#  - every key of the table in lib/config.c is in etc/waitlist.conf.example
#    with its default value, and in README.md's Configuration section;
#  - `waitlistctl config check` accepts the example (pointed at a secret
#    and an OpenAPI file that exist);
#  - an unknown key or a bad value is refused, by waitlistctl, waitlist-fcgi
#    and waitlist-deliverer alike, with a message naming the key (the two
#    services' a JSON log line, "cannot start").
# Needs the built tree (ctl/waitlistctl, fcgi/, deliverer/); no server.
#   t/ops/config-example.sh
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
example=$repo/etc/waitlist.conf.example
readme=$repo/README.md
ctl=$repo/ctl/waitlistctl
fails=0

fail() {
	echo "config-example: FAIL: $*" >&2
	fails=$((fails + 1))
}

for bin in "$ctl" "$repo/fcgi/waitlist-fcgi" "$repo/deliverer/waitlist-deliverer"; do
	[ -x "$bin" ] || { echo "config-example: $bin is not built" >&2; exit 1; }
done

tmp=$(mktemp -d /tmp/waitlist-config.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# "section key type default" for every entry of the opts[] table; the
# system paths are given as the example gives them (Debian's layout).
awk '/^static const struct opt opts\[\]/ { f = 1; next } f && /^};/ { f = 0 } f' \
	"$repo/lib/config.c" | tr '\n' ' ' | sed 's/},/}\n/g' |
	sed -n 's/.*{"\([a-z_]*\)", *"\([a-z_]*\)", *OPT_\([A-Z]*\), *S([a-z_]*), *\(.*\), *[0-9]*, *[0-9]*}.*/\1 \2 \3 \4/p' |
	sed -e 's/WL_SYSCONFDIR *"/"\/etc/' -e 's/WL_DATADIR *"/"\/usr\/share/' \
		-e 's/ "\(.*\)"$/ \1/' >"$tmp/keys"
nkeys=$(wc -l <"$tmp/keys")
[ "$nkeys" -ge 20 ] || fail "read only $nkeys keys from lib/config.c's table"

# "section key value" for every setting of the example.
awk '
	/^[ \t]*[#;]/ || /^[ \t]*$/ { next }
	/^\[/ { s = $0; gsub(/[][ \t]/, "", s); next }
	{
		k = $0; sub(/=.*/, "", k); gsub(/[ \t]/, "", k)
		v = $0; sub(/^[^=]*=[ \t]*/, "", v); sub(/[ \t]*$/, "", v)
		print s, k, v
	}' "$example" >"$tmp/example"

# README.md from "## Configuration" to the next "## ".
awk '/^## / { f = ($0 == "## Configuration") } f' "$readme" >"$tmp/readme"
[ -s "$tmp/readme" ] || fail "README.md has no \"## Configuration\" section"

while read -r section key type def; do
	got=$(awk -v s="$section" -v k="$key" '$1 == s && $2 == k { v = $0; sub(/^[^ ]* [^ ]* ?/, "", v); print v; n++ } END { exit n != 1 }' "$tmp/example") ||
		{ fail "[$section] $key is not set exactly once in etc/waitlist.conf.example"; continue; }
	[ "$got" = "$def" ] ||
		fail "[$section] $key is \"$got\" in etc/waitlist.conf.example; its default is \"$def\""
	grep -qF "\`[$section] $key\`" "$tmp/readme" ||
		fail "[$section] $key is not documented in README.md's Configuration section"
done <"$tmp/keys"
while read -r section key _; do
	grep -q "^$section $key " "$tmp/keys" ||
		fail "etc/waitlist.conf.example sets [$section] $key, which lib/config.c does not know"
done <"$tmp/example"

# The example, with files that exist here, passes the check.
head -c 48 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$tmp/secret.key"
sed -e "s|^secret_key_file = .*|secret_key_file = $tmp/secret.key|" \
	-e "s|^openapi_file = .*|openapi_file = $repo/openapi.json|" \
	-e "s|^migrations_dir = .*|migrations_dir = $repo/migrations|" \
	"$example" >"$tmp/ok.conf"
if ! out=$("$ctl" --config "$tmp/ok.conf" config check 2>"$tmp/err"); then
	fail "waitlistctl config check refused the example: $(cat "$tmp/err")"
elif [ "$out" != '{"ok":true}' ]; then
	fail "waitlistctl config check printed \"$out\""
fi

# refused FILE KEY WHAT: every program refuses FILE, naming KEY.
refused() {
	local file=$1 key=$2 what=$3 name rc
	for name in ctl fcgi deliverer; do
		case $name in
		ctl) cmd=("$ctl" --config "$file" config check) ;;
		fcgi) cmd=("$repo/fcgi/waitlist-fcgi" --config "$file") ;;
		deliverer) cmd=("$repo/deliverer/waitlist-deliverer" --config "$file" --once) ;;
		esac
		rc=0
		timeout 10 "${cmd[@]}" >/dev/null 2>"$tmp/err" || rc=$?
		if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ]; then
			fail "$name accepted $what (exit $rc)"
		elif ! grep -qF "$key" "$tmp/err"; then
			fail "$name refused $what without naming $key: $(cat "$tmp/err")"
		elif [ "$name" != ctl ] && ! jq -e -s \
			'map(select(.level == "error" and .msg == "cannot start")) | length == 1' \
			"$tmp/err" >/dev/null 2>&1; then
			# The services log as JSON lines, their refusal to start too.
			fail "$name refused $what in other than one JSON log line: $(cat "$tmp/err")"
		fi
	done
}

{ cat "$tmp/ok.conf"; printf '[server]\nworker_count = 4\n'; } >"$tmp/unknown.conf"
refused "$tmp/unknown.conf" worker_count "an unknown key"
printf '[nosuch]\nhost = x\n' >"$tmp/section.conf"
refused "$tmp/section.conf" "unknown section [nosuch]" "a key of an unknown section"
{ cat "$tmp/ok.conf"; printf '[nosuch]\n'; } >"$tmp/empty-section.conf"
refused "$tmp/empty-section.conf" "unknown section [nosuch]" "an empty unknown section"
sed 's/^log_level = .*/log_level = loud/' "$tmp/ok.conf" >"$tmp/level.conf"
refused "$tmp/level.conf" log_level "log_level = loud"
sed 's|^fcgi_socket = .*|fcgi_socket = run/fcgi.sock|' "$tmp/ok.conf" >"$tmp/socket.conf"
refused "$tmp/socket.conf" fcgi_socket "a relative fcgi_socket"
# Every number: not a number, and out of range.
while read -r section key type _; do
	[ "$type" = UINT ] || continue
	for bad in many -1 99999999999; do
		sed "/^\[$section\]/,/^\[/ s/^$key = .*/$key = $bad/" "$tmp/ok.conf" >"$tmp/bad.conf"
		cmp -s "$tmp/bad.conf" "$tmp/ok.conf" && { fail "could not set [$section] $key"; continue; }
		rc=0
		"$ctl" --config "$tmp/bad.conf" config check >/dev/null 2>"$tmp/err" || rc=$?
		if [ "$rc" -eq 0 ]; then
			fail "waitlistctl accepted [$section] $key = $bad"
		elif ! grep -qF "[$section] $key" "$tmp/err"; then
			fail "waitlistctl refused [$section] $key = $bad without naming it: $(cat "$tmp/err")"
		fi
	done
done <"$tmp/keys"

if [ "$fails" -gt 0 ]; then
	echo "config-example: $fails failure(s)" >&2
	exit 1
fi
echo "config-example: ok ($nkeys keys documented, example accepted, bad values refused)"
