# shellcheck shell=bash
# The cluster harness's stack, sourced by t/cluster/run and t/cluster/node
# after script/lib.sh: a three-node MariaDB Galera cluster, two app nodes
# (a FastCGI master and a deliverer each, app node N talking to database
# node N) and nginx balancing across both masters.  Everything lives under
# $CL, an absolute path:
#   ports            the ports chosen at start (sourced)
#   secret.key       shared by both app nodes (cursors, webhook secrets)
#   dbN/data         node N's datadir; dbN/mysql.sock its socket
#   appN/            app node N: waitlist.conf, run/fcgi.sock
#   nginx/           nginx.conf and its temp files
#   log/, run/       every log and pid file
# Runs as root or as a normal user.

CL_DB_USER=waitlist
CL_DB_PASSWORD=cluster-test-password
# The account mariadbd runs as.  As root: Debian's mysql account, because
# rsync SST starts an rsync daemon on the joiner, which as root would drop
# to "nobody" and could not write the data directory.
CL_DB_OS_USER=$WL_USER
[ "$(id -u)" -ne 0 ] || CL_DB_OS_USER=mysql

cl_die() {
	echo "cluster: $*" >&2
	exit 1
}

# A free port below the ephemeral range (Galera dials the nodes that are
# not up yet: an outgoing connection could otherwise take a port before
# its node listens on it), none picked twice.
cl_free_port() {
	wl_free_port 10000 65536 "$(cut -d= -f2 "$CL/ports" | tr '\n' ' ')"
}

# Picks every port once and records them in $CL/ports: Galera group
# communication (GCOMMn), IST (ISTn), SST (SSTn), SQL (DBn) per database
# node, and nginx's balanced (HTTP0) and per-app-node (HTTP1, HTTP2) ports.
cl_pick_ports() {
	local n f
	: >"$CL/ports"
	for n in 1 2 3; do
		for f in GCOMM IST SST DB; do
			echo "$f$n=$(cl_free_port)" >>"$CL/ports"
		done
	done
	for n in 0 1 2; do
		echo "HTTP$n=$(cl_free_port)" >>"$CL/ports"
	done
	cl_load_ports
}

cl_load_ports() {
	# shellcheck source=/dev/null
	. "$CL/ports"
}

cl_port() {
	local v=$1
	echo "${!v}"
}

cl_sql() {
	local n=$1
	shift
	mariadb --no-defaults --socket="$CL/db$n/mysql.sock" -u "$WL_USER" \
		-N -B "$@"
}

# A wsrep status variable of node n ("" when it does not answer).
cl_status() {
	cl_sql "$1" -e "SHOW GLOBAL STATUS LIKE '$2'" 2>/dev/null | cut -f2
}

# (Succeeds without a pid file: callers run under set -e.)
cl_db_pid() {
	cat "$CL/run/db$1.pid" 2>/dev/null || true
}

# A data directory of its own for each node: mariadb-install-db once
# (several at a time crash in a shared temporary directory), then copies.
# The joiners' copies are replaced by state transfer anyway.
cl_db_init() {
	local n
	mkdir -p "$CL/db1"
	# No --user (see wl_db_init in script/lib.sh); chown afterwards.
	if ! mariadb-install-db --no-defaults --datadir="$CL/db1/data" \
		--auth-root-authentication-method=socket \
		--auth-root-socket-user="$WL_USER" --skip-test-db \
		>"$CL/log/db-install.log" 2>&1; then
		tail -n 30 "$CL/log/db-install.log" >&2
		cl_die "mariadb-install-db failed"
	fi
	for n in 2 3; do
		mkdir -p "$CL/db$n"
		cp -a "$CL/db1/data" "$CL/db$n/data"
	done
	if [ "$CL_DB_OS_USER" != "$WL_USER" ]; then
		chown -R "$CL_DB_OS_USER:" "$CL/db1" "$CL/db2" "$CL/db3"
	fi
}

# Starts node n; "new" bootstraps a new cluster from it.  Returns at once:
# see cl_db_wait_synced.
cl_db_start() {
	local n=$1 mode=${2:-join} gcomm ist sst db extra=()
	gcomm=$(cl_port "GCOMM$n")
	ist=$(cl_port "IST$n")
	sst=$(cl_port "SST$n")
	db=$(cl_port "DB$n")
	[ "$mode" = new ] && extra+=(--wsrep-new-cluster)
	rm -f "$CL/db$n/mysql.sock"
	# wsrep-sync-wait=1: reads wait until this node has applied what the
	# cluster committed before them, so a client that wrote through one
	# node reads its write through the other (README "Running several
	# nodes").  evs.*: a node that vanished is evicted after about 3 s, not 5 to 15
	# (writes everywhere wait until then).  gcache: small, fast to create.
	setsid mariadbd --no-defaults --datadir="$CL/db$n/data" \
		--socket="$CL/db$n/mysql.sock" --pid-file="$CL/db$n/mysqld.pid" \
		--port="$db" --bind-address=127.0.0.1 --user="$CL_DB_OS_USER" \
		--log-error="$CL/db$n/error.log" \
		--innodb-buffer-pool-size=128M --innodb-log-file-size=48M \
		--innodb-flush-log-at-trx-commit=0 \
		--character-set-server=utf8mb4 \
		--collation-server=utf8mb4_unicode_ci --max-connections=300 \
		--default-storage-engine=InnoDB --binlog-format=ROW \
		--innodb-autoinc-lock-mode=2 \
		--wsrep-on=ON --wsrep-provider=/usr/lib/galera/libgalera_smm.so \
		--wsrep-cluster-name=waitlist-cluster-test \
		--wsrep-node-name="node$n" \
		--wsrep-cluster-address="gcomm://127.0.0.1:$GCOMM1,127.0.0.1:$GCOMM2,127.0.0.1:$GCOMM3" \
		--wsrep-node-address="127.0.0.1:$gcomm" \
		--wsrep-provider-options="gmcast.listen_addr=tcp://127.0.0.1:$gcomm;ist.recv_addr=127.0.0.1:$ist;gcache.size=64M;evs.suspect_timeout=PT3S;evs.inactive_timeout=PT6S;evs.install_timeout=PT6S;evs.keepalive_period=PT0.5S" \
		--wsrep-sst-method=rsync \
		--wsrep-sst-receive-address="127.0.0.1:$sst" \
		--wsrep-slave-threads=2 --wsrep-sync-wait="${CL_SYNC_WAIT:-1}" \
		"${extra[@]}" </dev/null >>"$CL/log/db$n.out" 2>&1 &
	echo "$!" >"$CL/run/db$n.pid"
	# The tests kill nodes: no "Killed" job notices from this shell.
	disown "$!"
}

# Exited (a zombie counts: its parent may be another shell).
cl_gone() {
	local state
	state=$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null) || return 0
	[ -z "$state" ] || [ "$state" = Z ] || [ "$state" = X ]
}

cl_db_synced() {
	local n=$1 pid
	pid=$(cl_db_pid "$n")
	[ -n "$pid" ] && ! cl_gone "$pid" || return 2
	[ "$(cl_status "$n" wsrep_ready)" = ON ] &&
		[ "$(cl_status "$n" wsrep_local_state_comment)" = Synced ]
}

# Waits up to SECONDS for node n to be ready and synced with the cluster.
cl_db_wait_synced() {
	local n=$1 secs=${2:-90} rc
	for _ in $(seq $((secs * 5))); do
		cl_db_synced "$n" && return 0
		rc=$?
		if [ "$rc" -eq 2 ]; then
			tail -n 40 "$CL/db$n/error.log" >&2
			cl_die "database node $n died while starting"
		fi
		sleep 0.2
	done
	tail -n 40 "$CL/db$n/error.log" >&2
	cl_die "database node $n not synced after $secs s"
}

# Waits until every live node sees a cluster of size n.
cl_wait_size() {
	local want=$1 secs=${2:-60} ok n pid
	for _ in $(seq $((secs * 5))); do
		ok=1
		for n in 1 2 3; do
			pid=$(cl_db_pid "$n")
			if [ -z "$pid" ] || cl_gone "$pid"; then continue; fi
			[ "$(cl_status "$n" wsrep_cluster_size)" = "$want" ] || ok=0
		done
		[ "$ok" -eq 1 ] && return 0
		sleep 0.2
	done
	cl_die "cluster size did not reach $want in $secs s"
}

cl_db_kill() {
	local pid
	pid=$(cl_db_pid "$1")
	[ -n "$pid" ] || return 0
	kill -KILL "$pid" 2>/dev/null || true
	wl_wait_until 10 cl_gone "$pid" || true
	cl_db_leftovers "$pid"
}

# Kills what a stopped node left in its session (an SST script, an rsync
# daemon): only processes whose command line names $CL.
cl_db_leftovers() {
	local p
	for p in $(pgrep -s "$1" 2>/dev/null); do
		grep -qF "$CL" "/proc/$p/cmdline" 2>/dev/null && kill -KILL "$p" 2>/dev/null
	done
	return 0
}

# A clean shutdown (SIGTERM), SIGKILL after 30 s.
cl_db_stop() {
	local pid
	pid=$(cl_db_pid "$1")
	[ -n "$pid" ] && ! cl_gone "$pid" || return 0
	kill -TERM "$pid" 2>/dev/null || true
	if ! wl_wait_until 30 cl_gone "$pid"; then
		kill -KILL "$pid" 2>/dev/null || true
		wl_wait_until 5 cl_gone "$pid" || true
	fi
}

# The database, and the service's account: TCP from 127.0.0.1 with a
# password (unix_socket authentication does not work over TCP).  Run on
# one node; Galera replicates it.
cl_db_setup() {
	cl_sql 1 -e "CREATE DATABASE IF NOT EXISTS waitlist CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;
		CREATE USER IF NOT EXISTS '$CL_DB_USER'@'127.0.0.1' IDENTIFIED BY '$CL_DB_PASSWORD';
		GRANT ALL ON waitlist.* TO '$CL_DB_USER'@'127.0.0.1';"
}

# ---------------------------------------------------------------------
# App nodes: app node n runs a FastCGI master and a deliverer, both
# configured for database node n.

cl_app_config() {
	local n=$1 dir
	dir=$CL/app$n
	mkdir -p "$dir/run"
	if [ ! -f "$CL/secret.key" ]; then
		(
			umask 077
			od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$CL/secret.key"
			echo >>"$CL/secret.key"
		)
	fi
	cat >"$dir/waitlist.conf" <<CONF
# app node $n of the cluster harness (t/cluster): database node $n
[database]
host = 127.0.0.1
port = $(cl_port "DB$n")
socket =
user = $CL_DB_USER
password = $CL_DB_PASSWORD
name = waitlist

[server]
workers = ${CL_WORKERS:-4}
fcgi_socket = $dir/run/fcgi.sock
max_requests = 10000
cluster_nodes = 2
test_clock = 1
secret_key_file = $CL/secret.key
migrations_dir = $WL_REPO/migrations
openapi_file = $WL_REPO/openapi.json
log_level = info

$(wl_dev_webhooks)
CONF
}

cl_ctl() {
	"$WL_BIN/ctl/waitlistctl" --config "$CL/app1/waitlist.conf" "$@"
}

# cl_spawn NAME COMMAND...: in the background, its own session, output
# to log/NAME.log, pid in run/NAME.pid.
cl_spawn() {
	local name=$1
	shift
	setsid "$@" </dev/null >>"$CL/log/$name.log" 2>&1 &
	echo "$!" >"$CL/run/$name.pid"
}

cl_pid() {
	cat "$CL/run/$1.pid" 2>/dev/null || true
}

cl_fcgi_start() {
	local n=$1 sock pid
	sock=$CL/app$n/run/fcgi.sock
	rm -f "$sock"
	cl_spawn "fcgi$n" "$WL_BIN/fcgi/waitlist-fcgi" --config "$CL/app$n/waitlist.conf"
	pid=$(cl_pid "fcgi$n")
	if ! wl_wait_until 15 wl_socket_ready "$pid" "$sock" || ! wl_alive "$pid"; then
		tail -n 30 "$CL/log/fcgi$n.log" >&2
		cl_die "waitlist-fcgi of app node $n did not open $sock"
	fi
}

cl_deliverer_start() {
	local n=$1 pid
	cl_spawn "deliverer$n" "$WL_BIN/deliverer/waitlist-deliverer" --config "$CL/app$n/waitlist.conf"
	pid=$(cl_pid "deliverer$n")
	sleep 0.3
	if ! wl_alive "$pid"; then
		tail -n 30 "$CL/log/deliverer$n.log" >&2
		cl_die "waitlist-deliverer of app node $n exited at start-up"
	fi
}

# nginx: HTTP0 balances across both masters (round robin; a master that
# answers 503, or cannot be reached, is skipped and the request passed to
# the other), HTTP1 and HTTP2 reach one master each.
cl_nginx_conf() {
	local user='' n
	mkdir -p "$CL/nginx/tmp"
	# As root the workers would run as nobody, who cannot reach the
	# sockets inside the private directory.
	[ "$(id -u)" -ne 0 ] || user='user root;'
	{
		cat <<CONF
# written by t/cluster (cl_nginx_conf)
$user
worker_processes 2;
pid $CL/nginx/nginx.pid;
error_log stderr;
events { worker_connections 1024; }
http {
    # As the production site: no query strings.
    log_format waitlist '\$remote_addr [\$time_iso8601] "\$request_method \$uri '
                        '\$server_protocol" \$status \$body_bytes_sent '
                        '\$request_time \$request_id';
    access_log $CL/log/nginx-access.log waitlist;
    client_body_temp_path $CL/nginx/tmp/body;
    fastcgi_temp_path $CL/nginx/tmp/fastcgi;
    proxy_temp_path $CL/nginx/tmp/proxy;
    scgi_temp_path $CL/nginx/tmp/scgi;
    uwsgi_temp_path $CL/nginx/tmp/uwsgi;
    server_tokens off;
    default_type application/json;
    client_max_body_size 1m;
    client_body_buffer_size 1m;

    upstream waitlist_all {
        server unix:$CL/app1/run/fcgi.sock max_fails=1 fail_timeout=5s;
        server unix:$CL/app2/run/fcgi.sock max_fails=1 fail_timeout=5s;
    }
    upstream waitlist_app1 { server unix:$CL/app1/run/fcgi.sock; }
    upstream waitlist_app2 { server unix:$CL/app2/run/fcgi.sock; }
CONF
		for n in 0 1 2; do
			local up=waitlist_all
			[ "$n" -eq 0 ] || up=waitlist_app$n
			cat <<CONF

    server {
        listen 127.0.0.1:$(cl_port "HTTP$n");
        error_page 502 503 504 = @unavailable;
        location /v1/external/ {
            fastcgi_pass $up;
            # A 503 from a master means its database node is out of
            # the cluster (or unreachable): try the other master.
            # Every mutation carries an Idempotency-Key, so passing a
            # POST on is safe (non_idempotent).
            fastcgi_next_upstream error timeout http_503 non_idempotent;
            fastcgi_next_upstream_tries 2;
            fastcgi_param REQUEST_METHOD \$request_method;
            fastcgi_param REQUEST_URI \$request_uri;
            fastcgi_param DOCUMENT_URI \$uri;
            fastcgi_param QUERY_STRING \$query_string;
            fastcgi_param CONTENT_TYPE \$content_type;
            fastcgi_param CONTENT_LENGTH \$content_length;
            fastcgi_param SERVER_PROTOCOL \$server_protocol;
            fastcgi_param REMOTE_ADDR \$remote_addr;
            fastcgi_param REQUEST_ID \$request_id;
            add_header X-Waitlist-Upstream \$upstream_addr always;
        }
        location @unavailable {
            add_header X-Request-Id \$request_id always;
            return 503 '{"error":"service temporarily unavailable","code":"unavailable","requestId":"\$request_id"}';
        }
    }
CONF
		done
		echo "}"
	} >"$CL/nginx/nginx.conf"
}

cl_nginx_start() {
	local pid
	cl_nginx_conf
	cl_spawn nginx nginx -e stderr -p "$CL/nginx" -c "$CL/nginx/nginx.conf" -g 'daemon off;'
	pid=$(cl_pid nginx)
	if ! wl_wait_until 20 cl_nginx_answers "$pid" || ! wl_alive "$pid"; then
		tail -n 30 "$CL/log/nginx.log" >&2
		cl_die "nginx did not start"
	fi
}

cl_nginx_answers() {
	wl_alive "$1" || return 0
	[ "$(curl -s -o /dev/null -w '%{http_code}' \
		"http://127.0.0.1:$HTTP0/v1/external/health")" != 000 ]
}

# SIGTERM, up to 10 s, then SIGKILL.
cl_terminate() {
	local pid
	pid=$(cl_pid "$1")
	[ -n "$pid" ] || return 0
	if wl_alive "$pid"; then
		kill -TERM "$pid" 2>/dev/null || true
		if ! wl_wait_until 10 wl_gone "$pid"; then
			kill -KILL "$pid" 2>/dev/null || true
			wl_wait_until 5 wl_gone "$pid" || true
		fi
	fi
	rm -f "$CL/run/$1.pid"
}

# Stops everything under $CL, newest first.  Safe to call twice.
cl_stop_all() {
	local n pid
	[ -n "${CL:-}" ] && [ -d "$CL/run" ] || return 0
	for n in deliverer1 deliverer2 nginx fcgi1 fcgi2; do
		cl_terminate "$n"
	done
	for n in 3 2 1; do
		pid=$(cl_db_pid "$n")
		[ -n "$pid" ] || continue
		cl_db_stop "$n"
		cl_db_leftovers "$pid"
		rm -f "$CL/run/db$n.pid"
	done
}
