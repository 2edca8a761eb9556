#!/usr/bin/env bash
# The Debian package: `dpkg-buildpackage -us -uc -b` in a copy of the tree
# builds a .deb that installs with apt-get, creates the waitlist account,
# the secret and the configuration (readable by that account only), ships
# units that pass `systemd-analyze verify`, and whose programs run (the
# FastCGI master starts as user waitlist on the installed configuration).
# Then it is purged again.  Takes about a minute; needs root (or sudo) and
# refuses to run where the package is already installed.
# script/test runs it when WL_TEST_DEB=1.
#   t/ops/deb.sh
set -euo pipefail

# shellcheck source=t/ops/lib.sh
. "$(dirname "$0")/lib.sh"

if [ "$(id -u)" -eq 0 ]; then
	as_root=()
elif command -v sudo >/dev/null; then
	as_root=(sudo)
else
	echo "deb: installing the package needs root" >&2
	exit 1
fi
for c in dpkg-buildpackage dh; do
	command -v "$c" >/dev/null ||
		{ echo "deb: $c is missing: WL_TEST_DEB=1 script/bootstrap installs it" >&2; exit 1; }
done
if dpkg-query -W -f='${Status}' waitlist 2>/dev/null | grep -q installed; then
	echo "deb: the waitlist package is installed on this machine; not touching it" >&2
	exit 1
fi
had_user=0
! id waitlist >/dev/null 2>&1 || had_user=1

tmp=$(mktemp -d /tmp/waitlist-deb.XXXXXX)
installed=0
pid=
cleanup() {
	[ -z "$pid" ] || kill -TERM "$pid" 2>/dev/null || true
	if [ "$installed" -eq 1 ]; then
		"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get purge -y -q waitlist >>"$tmp/apt.log" 2>&1 ||
			echo "deb: apt-get purge waitlist failed" >&2
		# The package leaves its account behind on purge, as Debian's
		# practice is; a test leaves the machine as it found it.
		[ "$had_user" -eq 1 ] || "${as_root[@]}" deluser --system --quiet waitlist >/dev/null 2>&1 || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
fails=0
fail() {
	echo "deb: FAIL: $*" >&2
	fails=$((fails + 1))
}

# The sources as git sees them (tracked and new files), without any build.
mkdir "$tmp/src"
(cd "$OPS_REPO" && git ls-files -co --exclude-standard -z | tar --null -T - -cf -) |
	tar -C "$tmp/src" -xf -
started=$SECONDS
if ! (cd "$tmp/src" && DEB_BUILD_OPTIONS=parallel=2 dpkg-buildpackage -us -uc -b) >"$tmp/build.log" 2>&1; then
	tail -n 40 "$tmp/build.log" >&2
	echo "deb: dpkg-buildpackage failed" >&2
	exit 1
fi
built=$((SECONDS - started))
deb=$(find "$tmp" -maxdepth 1 -name 'waitlist_*.deb')
[ -n "$deb" ] || { echo "deb: no waitlist_*.deb built" >&2; exit 1; }

# An upgrade leaves the units as they run (README "Upgrade": migrate, then
# restart); a removal stops them.
dpkg-deb -e "$deb" "$tmp/control"
if grep -lE 'deb-systemd-invoke (stop|restart|try-restart)' "$tmp/control/preinst" "$tmp/control/postinst" 2>/dev/null; then
	fail "an upgrade stops or restarts the units: $(grep -hE 'deb-systemd-invoke' "$tmp/control/preinst" "$tmp/control/postinst" 2>/dev/null)"
fi
{ grep -q 'deb-systemd-invoke stop' "$tmp/control/prerm" && grep -q 'waitlist-fcgi.service' "$tmp/control/prerm"; } 2>/dev/null ||
	fail "prerm does not stop the units on removal"

installed=1
if ! "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$deb" >"$tmp/apt.log" 2>&1; then
	cat "$tmp/apt.log" >&2
	echo "deb: apt-get install failed" >&2
	exit 1
fi

for f in /usr/sbin/waitlist-fcgi /usr/sbin/waitlist-deliverer /usr/bin/waitlistctl; do
	[ -x "$f" ] || fail "$f is not installed"
	if ldd "$f" | grep -q 'not found'; then fail "$f: $(ldd "$f" | grep 'not found')"; fi
done
for f in /usr/share/waitlist/openapi.json /usr/share/waitlist/examples/nginx/waitlist.conf \
	/usr/share/waitlist/examples/apache/waitlist.conf /usr/share/waitlist/examples/waitlist.conf.example; do
	[ -f "$f" ] || fail "$f is not installed"
done
for m in "$OPS_REPO"/migrations/*.sql; do
	[ -f "/usr/share/waitlist/migrations/${m##*/}" ] || fail "migration ${m##*/} is not installed"
done
id waitlist >/dev/null 2>&1 || fail "postinst made no waitlist account"
for f in /etc/waitlist/waitlist.conf /etc/waitlist/secret.key; do
	perm=$("${as_root[@]}" stat -c '%a %U %G' "$f" 2>/dev/null) || { fail "$f is missing"; continue; }
	[ "$perm" = "600 waitlist waitlist" ] || fail "$f is $perm, not 600 waitlist waitlist"
done
dpkg-query -W -f='${Conffiles}\n' waitlist | grep -q ' /etc/waitlist/waitlist.conf ' ||
	fail "/etc/waitlist/waitlist.conf is not a conffile"
units=(/lib/systemd/system/waitlist-fcgi.service /lib/systemd/system/waitlist-deliverer.service
	/lib/systemd/system/waitlist-deliverer-once.service /lib/systemd/system/waitlist-deliverer-once.timer
	/lib/systemd/system/waitlist-purge.service /lib/systemd/system/waitlist-purge.timer)
for u in "${units[@]}"; do
	[ -f "$u" ] || fail "$u is not installed"
done
grep -qx 'ExecStart=/usr/sbin/waitlist-fcgi' /lib/systemd/system/waitlist-fcgi.service ||
	fail "waitlist-fcgi.service does not run /usr/sbin/waitlist-fcgi"
if out=$(systemd-analyze verify "${units[@]}" 2>&1) && [ -z "$out" ]; then :; else
	fail "systemd-analyze verify of the installed units: $out"
fi
# Installed, not enabled: the database comes first (README).
if find /etc/systemd/system -name 'waitlist-*' | grep -q .; then
	fail "units were enabled: $(find /etc/systemd/system -name 'waitlist-*')"
fi
out=$("${as_root[@]}" waitlistctl config check 2>/dev/null) || fail "waitlistctl config check refused the installed configuration"
[ "$out" = '{"ok":true}' ] || fail "waitlistctl config check printed \"$out\""

# The master starts as the service user on the installed configuration
# and secret (the database may be absent) and opens its socket 0660.
run=$tmp/run
mkdir "$run"
chmod 0711 "$tmp"
"${as_root[@]}" chown waitlist "$run"
"${as_root[@]}" sh -c "sed 's|^fcgi_socket = .*|fcgi_socket = $run/fcgi.sock|' /etc/waitlist/waitlist.conf >$run/waitlist.conf && chown waitlist $run/waitlist.conf && chmod 600 $run/waitlist.conf"
"${as_root[@]}" setpriv --reuid=waitlist --regid=waitlist --init-groups \
	/usr/sbin/waitlist-fcgi --config "$run/waitlist.conf" >"$tmp/fcgi.log" 2>&1 &
pid=$!
for _ in $(seq 50); do
	[ -S "$run/fcgi.sock" ] && break
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.1
done
if [ -S "$run/fcgi.sock" ]; then
	perm=$(stat -c '%a %U' "$run/fcgi.sock")
	[ "$perm" = "660 waitlist" ] || fail "the socket is $perm, not 660 waitlist"
else
	fail "the installed waitlist-fcgi did not open its socket: $(cat "$tmp/fcgi.log")"
fi
"${as_root[@]}" kill -TERM "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || fail "waitlist-fcgi did not exit cleanly on SIGTERM"
pid=

# Purge takes the configuration and the secret with it.
installed=0
if ! "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get purge -y -q waitlist >>"$tmp/apt.log" 2>&1; then
	fail "apt-get purge waitlist failed"
fi
[ ! -e /etc/waitlist ] || fail "/etc/waitlist is left after purge"
[ ! -e /usr/sbin/waitlist-fcgi ] || fail "/usr/sbin/waitlist-fcgi is left after purge"
[ "$had_user" -eq 1 ] || "${as_root[@]}" deluser --system --quiet waitlist >/dev/null 2>&1 || true

[ "$fails" -eq 0 ] || exit 1
echo "deb: ok (built in ${built} s, installed, checked and purged in $((SECONDS - started)) s: ${deb##*/})"
