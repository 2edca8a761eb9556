#!/usr/bin/env bash
# `make install` into a DESTDIR puts everything where OPERATIONS.md says
# (programs, library, header, migrations, openapi.json, the examples), and
# the systemd units it installs pass `systemd-analyze verify` without a
# single message.  verify checks that every Exec path exists on this
# machine, so the units are verified with their paths moved under DESTDIR
# (after checking that each one is there).
# Needs the built tree; no server.
#   t/ops/systemd-verify.sh
set -euo pipefail

# shellcheck source=t/ops/lib.sh
. "$(dirname "$0")/lib.sh"

command -v systemd-analyze >/dev/null ||
	{ echo "systemd-verify: systemd-analyze is missing (Debian package systemd)" >&2; exit 1; }
tmp=$(mktemp -d /tmp/waitlist-install.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
dest=$tmp/dest
fails=0
fail() {
	echo "systemd-verify: FAIL: $*" >&2
	fails=$((fails + 1))
}

if ! make -C "$OPS_REPO" -s install DESTDIR="$dest" >"$tmp/install.log" 2>&1; then
	cat "$tmp/install.log" >&2
	echo "systemd-verify: make install failed" >&2
	exit 1
fi

# find1 PATTERN: the one installed file whose path ends in PATTERN.
find1() {
	local hits
	hits=$(find "$dest" -path "*$1" \( -type f -o -type l \))
	[ "$(printf '%s' "$hits" | grep -c .)" -eq 1 ] || { fail "installed $1: ${hits:-none}"; return 1; }
	printf '%s\n' "$hits"
}
# (In $(...) find1 runs in a subshell: its failure is counted here.)
for f in /sbin/waitlist-fcgi /sbin/waitlist-deliverer /bin/waitlistctl; do
	if p=$(find1 "$f"); then
		[ -x "$p" ] || fail "$p is not executable"
	else
		fails=$((fails + 1))
	fi
done
find1 /lib/libwaitlist.so.0 >/dev/null || true
find1 /include/waitlist.h >/dev/null || true
for m in "$OPS_REPO"/migrations/*.sql; do
	find1 "/share/waitlist/migrations/${m##*/}" >/dev/null || true
done
if p=$(find1 /share/waitlist/openapi.json); then
	cmp -s "$p" "$OPS_REPO/openapi.json" || fail "the installed openapi.json differs from the tree's"
else
	fails=$((fails + 1))
fi
examples=(nginx/waitlist.conf apache/waitlist.conf waitlist.conf.example
	systemd/waitlist-fcgi.service systemd/waitlist-deliverer.service
	systemd/waitlist-deliverer-once.service systemd/waitlist-deliverer-once.timer
	systemd/waitlist-purge.service systemd/waitlist-purge.timer)
for e in "${examples[@]}"; do
	find1 "/share/waitlist/examples/$e" >/dev/null || true
done
# Nothing left unsubstituted anywhere.
if grep -rl '@[a-z]*dir@' "$dest" >"$tmp/unsub"; then
	fail "unsubstituted paths in: $(tr '\n' ' ' <"$tmp/unsub")"
fi

# The units, with each Exec path checked and moved under DESTDIR.
unit=$(find1 /share/waitlist/examples/systemd/waitlist-fcgi.service) || fails=$((fails + 1))
unitdir=$(dirname "$unit")
mkdir -p "$tmp/units"
for unit in "$unitdir"/*.service "$unitdir"/*.timer; do
	while read -r path; do
		case $path in
		/bin/kill) [ -x /bin/kill ] || fail "/bin/kill is missing here" ;;
		*) [ -x "$dest$path" ] || fail "${unit##*/} runs $path, which make install did not install" ;;
		esac
	done < <(sed -nE 's/^Exec[A-Za-z]*=[-+!@:]*([^ ]+).*/\1/p' "$unit")
	sed -E "/^Exec[A-Za-z]*=[-+!@:]*\/bin\/kill /! s#^(Exec[A-Za-z]*=[-+!@:]*)/#\1$dest/#" \
		"$unit" >"$tmp/units/${unit##*/}"
done
grep -q "^ExecStart=$dest/" "$tmp/units/waitlist-fcgi.service" ||
	fail "could not move waitlist-fcgi.service's ExecStart under DESTDIR"
(cd "$tmp/units" && systemd-analyze verify ./*.service ./*.timer) >"$tmp/verify.out" 2>&1 ||
	fail "systemd-analyze verify exited non-zero"
if [ -s "$tmp/verify.out" ]; then
	sed "s|$tmp/units/||g" "$tmp/verify.out" >&2
	fail "systemd-analyze verify is not clean"
fi

[ "$fails" -eq 0 ] || exit 1
echo "systemd-verify: ok (install tree complete, $(find "$tmp/units" -type f | wc -l) units verified clean)"
