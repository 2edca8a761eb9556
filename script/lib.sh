# shellcheck shell=bash
# Shared by script/server, script/test and script/stack: build the tree and
# run one private stack (MariaDB, FastCGI workers, deliverer, nginx) whose
# state, sockets, pids and logs all live under $WL_VAR (an absolute path).
# Everything runs as the invoking user; root works too.

WL_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# The build whose fcgi/, deliverer/ and ctl/ binaries the stack runs: the
# tree itself, or a copy built otherwise (script/test's sanitized build).
WL_BIN=${WL_BIN:-$WL_REPO}
WL_USER=$(id -un)
# mariadbd and nginx live in /usr/sbin, which is not on a normal user's PATH.
PATH=$PATH:/usr/sbin:/sbin

WL_STARTED=" "   # components started by this shell, for wl_stop_all
WL_NAP_FD=       # wl_nap's pipe, opened at its first pause (never inherited)
WL_CHILDREN=()   # their pids, for script/server's wait
declare -gA WL_NAMES=()  # pid -> component, for messages

wl_die() {
	echo "${0##*/}: $*" >&2
	exit 1
}

# The test suites: node --test's options and the OpenAPI linter need
# Node.js 20.19 or later (Debian 12's own nodejs is 18).
wl_need_node() {
	node -e 'const [a, b] = process.versions.node.split(".").map(Number);
		process.exit(a > 20 || (a === 20 && b >= 19) ? 0 : 1)' ||
		wl_die "the test suites need Node.js 20.19 or later (this is $(node --version))"
}

# wl_free_port FROM TO [TAKEN]: a TCP port in [FROM, TO) that nothing
# listens on at 127.0.0.1 and that the space-separated list TAKEN does not
# hold.  TO comes down to the start of the ephemeral range: a port there
# may be the local end of an outgoing connection, which the probe cannot
# see and which makes the listener's bind() fail.
wl_free_port() {
	local from=$1 to=$2 taken=" ${3:-} " low port
	low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null) || low=32768
	if [ "$low" -gt "$from" ] 2>/dev/null && [ "$low" -lt "$to" ]; then
		to=$low
	fi
	for _ in $(seq 200); do
		port=$((from + RANDOM % (to - from)))
		[[ $taken == *" $port "* ]] && continue
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			echo "$port"
			return 0
		fi
	done
	wl_die "no free port found in $from-$to"
}

# wl_nap MS: a pause of MS milliseconds without a process of its own:
# read times out on a pipe that no one writes (held open read-write, so
# it never ends).  A sleep process costs this box milliseconds of CPU,
# which a poll made while something is measured takes from it.
# (Opening the pipe sets $!, to the pid of its ":": read $! right after
# the "&" it stands for.)
wl_nap() {
	local s rc=0
	printf -v s '%d.%03d' $(($1 / 1000)) $(($1 % 1000))
	if [ -z "$WL_NAP_FD" ]; then
		exec {WL_NAP_FD}<> <(:) || WL_NAP_FD=none
	fi
	if [ "$WL_NAP_FD" != none ]; then
		read -r -t "$s" -u "$WL_NAP_FD" _ || rc=$?
		# Over 128: timed out, the pause made.  Else the pipe failed.
		[ "$rc" -gt 128 ] && return 0
		WL_NAP_FD=none
	fi
	sleep "$s"
}

# wl_wait_until SECONDS COMMAND...: poll COMMAND every WL_WAIT_MS ms
# (100) until it succeeds; fails once SECONDS have passed.
wl_wait_until() {
	local step=${WL_WAIT_MS:-100} tries
	tries=$(($1 * 1000 / step))
	shift
	until "$@"; do
		tries=$((tries - 1))
		[ "$tries" -gt 0 ] || return 1
		wl_nap "$step"
	done
}

wl_alive() {
	kill -0 "$1" 2>/dev/null
}

wl_gone() {
	! wl_alive "$1"
}

wl_tail() {
	echo "--- last lines of $1:" >&2
	tail -n 30 "$1" >&2 2>/dev/null || true
}

# wl_failing_tests FILE: the summary of failed tests in FILE, the output of
# node's spec reporter; printed last on failure, where a short tail of the
# output shows it.
wl_failing_tests() {
	grep -q "failing tests:" "$1" 2>/dev/null || return 0
	echo "--- the failing tests:" >&2
	sed -n '/failing tests:/,$p' "$1" | head -n 80 >&2
}

wl_var_dirs() {
	mkdir -p "$WL_VAR/log" "$WL_VAR/run" "$WL_VAR/nginx/tmp"
}

# wl_spawn NAME LOG COMMAND...: run COMMAND in the background with its
# output appended to LOG.  Its stdin and stdout are detached so that a
# caller reading our output (node's execFileSync) does not wait for it.
# setsid keeps Ctrl-C away from it: the caller's trap stops things in order.
# (setsid only forks when run as a group leader, so $! stays COMMAND's pid.)
wl_spawn() {
	local name=$1 log=$2
	shift 2
	if [ "${WL_NAP_FD:-none}" = none ]; then
		setsid "$@" </dev/null >>"$log" 2>&1 &
	else # (without wl_nap's pipe)
		setsid "$@" </dev/null >>"$log" 2>&1 {WL_NAP_FD}>&- &
	fi
	echo "$!" >"$WL_VAR/run/$name.pid"
	WL_CHILDREN+=("$!")
	WL_NAMES[$!]=$name
	WL_STARTED+="$name "
}

wl_name_of() {
	echo "${WL_NAMES[$1]:-process}"
}

# wl_terminate PIDFILE: SIGTERM, up to 10 s to drain, then SIGKILL.
wl_terminate() {
	local pid
	pid=$(cat "$1" 2>/dev/null) || return 0
	kill -TERM "$pid" 2>/dev/null || true
	if ! wl_wait_until 10 wl_gone "$pid"; then
		echo "${0##*/}: pid $pid ignored SIGTERM, killing it" >&2
		kill -KILL "$pid" 2>/dev/null || true
		wl_wait_until 5 wl_gone "$pid" || true
	fi
	rm -f "$1"
}

# wl_quietly COMMAND...: show COMMAND's chatter only if it fails.
wl_quietly() {
	local out
	if ! out=$("$@" 2>&1); then
		printf '%s\n' "$out" >&2
		echo "${0##*/}: failed: $*" >&2
		return 1
	fi
}

# Generates and configures only when there is no Makefile yet (a fresh
# checkout, or a failed earlier attempt); after that make reruns whatever
# autotools steps an edited configure.ac or Makefile.am needs.
wl_build() {
	(
		cd "$WL_REPO" || exit
		local flags
		read -ra flags <<<"${WL_CONFIGURE_FLAGS:-}"
		if [ ! -f Makefile ]; then
			wl_quietly autoreconf -fi || exit
			# A half-written Makefile would make the next run skip this.
			wl_quietly ./configure "${flags[@]}" || { rm -f Makefile; exit 1; }
		fi
		make -j2 -s
	)
}

# wl_build_copy DIR [CONFIGURE-FLAGS...]: build a copy of the tree in DIR
# with other flags.  automake allows no second build directory beside a
# configured source tree, so the sources (tracked and new files alike)
# are mirrored into DIR with their times, and make rebuilds only what
# changed since the last copy.  Needs a git checkout.
wl_build_copy() {
	local dir=$1
	shift
	mkdir -p "$dir" || return
	(cd "$WL_REPO" && git ls-files -co --exclude-standard -z |
		tar --null -T - -cf -) | tar -C "$dir" -xf - || return
	(
		cd "$dir" || exit
		if [ ! -f Makefile ]; then
			wl_quietly autoreconf -fi || exit
			wl_quietly ./configure "$@" || { rm -f Makefile; exit 1; }
		fi
		make -j2 -s
	)
}

wl_mariadb_admin() {
	mariadb-admin --no-defaults --socket="$WL_VAR/mysql.sock" -u "$WL_USER" "$@"
}

wl_db_init() {
	[ -d "$WL_VAR/mysql" ] && return 0
	# No --user: as root it would chown the system's auth_pam_tool_dir, and
	# as anyone else it only fails noisily.  The files belong to whoever runs
	# this, and --auth-root-socket-user gives that OS user a passwordless
	# unix_socket account (root@localhost is the other one).
	if ! mariadb-install-db --no-defaults --datadir="$WL_VAR/mysql" \
		--auth-root-authentication-method=socket \
		--auth-root-socket-user="$WL_USER" --skip-test-db \
		>"$WL_VAR/log/mariadb-install.log" 2>&1; then
		wl_tail "$WL_VAR/log/mariadb-install.log"
		# A half-made data directory would be skipped on the next run.
		rm -rf "$WL_VAR/mysql"
		wl_die "mariadb-install-db failed"
	fi
}

wl_db_start() {
	local flags pid
	read -ra flags <<<"${WL_DB_EXTRA_FLAGS:-}"
	# --user must name the current user: mariadbd refuses to run as root
	# without it, and ignores it otherwise.
	wl_spawn db "$WL_VAR/log/mariadb.out" mariadbd --no-defaults \
		--datadir="$WL_VAR/mysql" --socket="$WL_VAR/mysql.sock" \
		--pid-file="$WL_VAR/mysql.pid" --skip-networking --user="$WL_USER" \
		--log-error="$WL_VAR/log/mariadb.err" \
		--innodb-buffer-pool-size=256M --character-set-server=utf8mb4 \
		--collation-server=utf8mb4_unicode_ci --max-connections=500 \
		"${flags[@]}"
	pid=$!
	if ! wl_wait_until 30 wl_db_ping "$pid" || ! wl_alive "$pid"; then
		wl_tail "$WL_VAR/log/mariadb.err"
		wl_die "MariaDB did not start (pid $pid)"
	fi
	mariadb --no-defaults --socket="$WL_VAR/mysql.sock" -u "$WL_USER" -e \
		'CREATE DATABASE IF NOT EXISTS waitlist CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci'
}

# Succeeds once the server answers; stops the wait early if it died.
wl_db_ping() {
	wl_alive "$1" || return 0
	wl_mariadb_admin ping >/dev/null 2>&1
}

wl_db_stop() {
	local pid
	# mariadbd removes its own pid file; run/db.pid covers a crash.
	pid=$(cat "$WL_VAR/mysql.pid" 2>/dev/null || cat "$WL_VAR/run/db.pid" 2>/dev/null || true)
	if [ -n "$pid" ] && wl_alive "$pid"; then
		wl_mariadb_admin shutdown >/dev/null 2>&1 || kill -TERM "$pid" 2>/dev/null || true
		if ! wl_wait_until 30 wl_gone "$pid"; then
			kill -KILL "$pid" 2>/dev/null || true
			wl_wait_until 5 wl_gone "$pid" || true
		fi
	fi
	rm -f "$WL_VAR/run/db.pid"
}

# The webhook policy of local stacks: plain http to loopback allowed, a
# short retry schedule so that a developer sees retries happen.
wl_dev_webhooks() {
	cat <<'EOF'
[webhooks]
allowed_hosts =
insecure_hosts = 127.0.0.1,localhost,::1
zapier_hosts = hooks.zapier.com
retry_base_seconds = 1
retry_cap_seconds = 10
max_attempts = 32
max_age_seconds = 86400
timeout_seconds = 10
deliverer_concurrency = 64
deliverer_per_endpoint = 16
deliverer_poll_ms = 200
EOF
}

wl_write_config() {
	local conf=$WL_VAR/waitlist.conf key=$WL_VAR/secret.key
	if [ ! -f "$key" ]; then
		# Signs cursors and encrypts webhook secrets: only we may read it.
		(
			umask 077
			if command -v openssl >/dev/null; then
				openssl rand -hex 32 >"$key"
			else
				od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$key"
				echo >>"$key"
			fi
		)
	fi
	# Written once: later runs keep whatever the developer changed.
	[ -f "$conf" ] && return 0
	cat >"$conf" <<EOF
# waitlist local development configuration (written by script/server)
[database]
host = localhost
port = 3306
socket = $WL_VAR/mysql.sock
user = $WL_USER
password =
name = waitlist

[server]
workers = ${WL_WORKERS:-4}
fcgi_socket = $WL_VAR/run/fcgi.sock
max_requests = 10000
# 1 only on test stacks: lets a request pin its clock with X-Test-Now.
test_clock = ${WL_TEST_CLOCK:-0}
secret_key_file = $key
migrations_dir = $WL_REPO/migrations
openapi_file = $WL_REPO/openapi.json
log_level = info

$(wl_dev_webhooks)
EOF
}

# The socket path as the workers will read it (its section, the last
# one, blanks and a CR trimmed), so that an edited config and nginx agree.
wl_fcgi_socket() {
	wl_conf_get "$WL_VAR/waitlist.conf" server fcgi_socket
}

wl_http_port() {
	echo "${WAITLIST_HTTP_PORT:-8080}"
}

wl_nginx_conf() {
	mkdir -p "$WL_VAR/nginx/tmp"
	sed -e "s|@PORT@|$(wl_http_port)|g" -e "s|@VAR@|$WL_VAR|g" \
		-e "s|@FCGI_SOCKET@|$(wl_fcgi_socket)|g" \
		"$WL_REPO/nginx/dev.conf.in" >"$WL_VAR/nginx/nginx.conf"
}

# The nginx command line, as an array so that $! is nginx itself.
wl_nginx_cmd() {
	local global='daemon off;'
	# As root the workers would otherwise run as nobody, who cannot reach
	# the FastCGI socket inside a private (0700) directory.
	[ "$(id -u)" -ne 0 ] || global+=' user root;'
	WL_NGINX=(nginx -e stderr -p "$WL_VAR/nginx" -c "$WL_VAR/nginx/nginx.conf" -g "$global")
}

# Any HTTP answer will do (even a 503 from a missing upstream): it proves
# nginx listens.  Stops the wait early if nginx died.
wl_nginx_answers() {
	wl_alive "$1" || return 0
	[ "$(curl -s -o /dev/null -w '%{http_code}' \
		"http://127.0.0.1:$(wl_http_port)/v1/external/health")" != 000 ]
}

wl_nginx_start() {
	local pid
	wl_nginx_cmd
	wl_spawn nginx "$WL_VAR/log/nginx.log" "${WL_NGINX[@]}"
	pid=$!
	if ! wl_wait_until 20 wl_nginx_answers "$pid" || ! wl_alive "$pid"; then
		wl_tail "$WL_VAR/log/nginx.log"
		wl_die "nginx did not start on port $(wl_http_port)"
	fi
}

wl_nginx_stop() {
	wl_terminate "$WL_VAR/run/nginx.pid"
}

# Keeps the rendered config: the port it was started on is only in there.
wl_nginx_reload() {
	wl_nginx_cmd
	if ! "${WL_NGINX[@]}" -s reload >>"$WL_VAR/log/nginx.log" 2>&1; then
		wl_tail "$WL_VAR/log/nginx.log"
		wl_die "nginx reload failed"
	fi
}

wl_socket_ready() {
	wl_alive "$1" || return 0
	[ -S "$2" ]
}

# wl_exe PATH: the command that runs the program PATH, in the array
# WL_EXE.  In a build tree PATH is libtool's wrapper script, a shell
# that works out where the uninstalled library is: about 90 ms of CPU
# and 70 ms at every start on a 2-core box, which bench/run would count
# as the deliverer's.  The program itself is in .libs beside it, and is
# given the tree's lib/.libs as the wrapper would give it.
wl_exe() {
	local dir=${1%/*} name=${1##*/} head=
	WL_EXE=("$1")
	[ -x "$dir/.libs/$name" ] && [ -d "$WL_BIN/lib/.libs" ] || return 0
	read -r -N 200 head 2>/dev/null <"$1" || true
	[[ $head == *"temporary wrapper script for .libs/$name"* ]] || return 0
	WL_EXE=(env "LD_LIBRARY_PATH=$WL_BIN/lib/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
		"$dir/.libs/$name")
}

wl_fcgi_start() {
	local pid sock
	sock=$(wl_fcgi_socket)
	# A socket left by a killed run would look ready at once.
	rm -f "$sock"
	wl_exe "$WL_BIN/fcgi/waitlist-fcgi"
	wl_spawn fcgi "$WL_VAR/log/fcgi.log" "${WL_EXE[@]}" --config "$WL_VAR/waitlist.conf"
	pid=$!
	if ! wl_wait_until 10 wl_socket_ready "$pid" "$sock" || ! wl_alive "$pid"; then
		wl_tail "$WL_VAR/log/fcgi.log"
		wl_die "waitlist-fcgi did not open $sock"
	fi
}

wl_fcgi_stop() {
	wl_terminate "$WL_VAR/run/fcgi.pid"
}

# The deliverer is optional until it is built.
wl_deliverer_start() {
	local bin=$WL_BIN/deliverer/waitlist-deliverer pid
	[ -x "$bin" ] || return 0
	wl_exe "$bin"
	wl_spawn deliverer "$WL_VAR/log/deliverer.log" "${WL_EXE[@]}" --config "$WL_VAR/waitlist.conf"
	pid=$!
	# It has no socket to wait for; give it a moment to fail on bad config.
	wl_nap 300
	if ! wl_alive "$pid"; then
		wl_tail "$WL_VAR/log/deliverer.log"
		wl_die "waitlist-deliverer exited at start-up"
	fi
}

wl_deliverer_stop() {
	wl_terminate "$WL_VAR/run/deliverer.pid"
}

# wl_conf_get FILE SECTION KEY: the value of KEY in [SECTION] of an INI
# file such as waitlist.conf, the last one as the service reads it
# (empty when absent).
wl_conf_get() {
	awk -v sec="[$2]" -v key="$3" '
		{ sub(/\r$/, "") }
		/^[ \t]*\[/ { gsub(/[ \t]/, ""); in_sec = ($0 == sec); next }
		in_sec && $0 ~ "^[ \t]*" key "[ \t]*=" {
			sub(/^[^=]*=[ \t]*/, ""); sub(/[ \t]+$/, ""); v = $0
		}
		END { print v }' "$1"
}

wl_ctl() {
	wl_exe "$WL_BIN/ctl/waitlistctl"
	"${WL_EXE[@]}" --config "$WL_VAR/waitlist.conf" "$@"
}

# Stops, newest first, whatever this shell started.  Safe to call twice.
wl_stop_all() {
	local name
	for name in deliverer nginx fcgi db; do
		if [[ $WL_STARTED == *" $name "* ]]; then
			"wl_${name}_stop" || true
		fi
	done
	WL_STARTED=" "
	WL_CHILDREN=()
}
