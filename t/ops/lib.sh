# shellcheck shell=bash
# Shared by the t/ops checks.

# shellcheck disable=SC2034 # used by the scripts that source this
OPS_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# nginx and apache2 live in /usr/sbin, not on a normal user's PATH.
PATH=$PATH:/usr/sbin:/sbin
# wl_free_port, among others.
# shellcheck source=script/lib.sh
. "$OPS_REPO/script/lib.sh"

# ops_cert DIR: a throw-away self-signed certificate for 127.0.0.1 and
# localhost, as DIR/cert.pem and DIR/key.pem.
ops_cert() {
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		-days 2 -subj /CN=localhost \
		-addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
		-keyout "$1/key.pem" -out "$1/cert.pem" 2>/dev/null
}

# ops_wait_port SECONDS PORT: until something listens on PORT.
ops_wait_port() {
	local tries=$(($1 * 10))
	until (exec 3<>"/dev/tcp/127.0.0.1/$2") 2>/dev/null; do
		tries=$((tries - 1))
		[ "$tries" -gt 0 ] || return 1
		sleep 0.1
	done
}

# ops_stop PID: SIGTERM a child of this shell and wait for it to end
# (nothing when PID is empty).
ops_stop() {
	[ -n "$1" ] || return 0
	kill -TERM "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}
