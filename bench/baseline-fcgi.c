/*
 * baseline-fcgi: the limits bench/run compares the service against.  A
 * preforked libfcgi responder, shaped like waitlist-fcgi (one listening
 * socket, N workers each serving one connection at a time, the body read
 * in full), that does the least a request of each kind must do:
 *
 *   --mode static   answer a fixed small JSON (the FastCGI + nginx limit)
 *   --mode select   one primary-key SELECT (prepared) of the entries row
 *                   named by ?id=, then a small JSON (the database read
 *                   round-trip limit)
 *   --mode insert   one INSERT of the request body in autocommit mode, so
 *                   one durable commit per request (the database write
 *                   limit)
 *   --mode writes   the rows a walk-in writes, and nothing else: the same
 *                   statements on copies of the service's tables, in one
 *                   transaction, one round trip each (the floor of the
 *                   walk-in as the service sends it)
 *   --mode block    the same statements as one prepared compound
 *                   statement (BEGIN NOT ATOMIC ... END): one round trip
 *
 * usage: baseline-fcgi --mode M --socket PATH --workers N
 *                      [--db-socket PATH --db-user USER --db-name NAME]
 * SIGTERM stops the workers and removes the socket.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <fcgiapp.h>
#include <mysql.h>

#define MAX_WORKERS 256
#define BODY_MAX 65536
#define COL_MAX 8192

enum mode { M_STATIC, M_SELECT, M_INSERT, M_WRITES, M_BLOCK };

static volatile sig_atomic_t stopping;
static enum mode mode;
static const char *db_socket, *db_user, *db_name = "waitlist";

static void
on_term(int sig)
{
	(void)sig;
	stopping = 1;
}

static void
die(const char *what, MYSQL *db)
{
	fprintf(stderr, "baseline-fcgi: %s: %s\n", what,
		db ? mysql_error(db) : strerror(errno));
	exit(1);
}

static MYSQL *
db_connect(void)
{
	MYSQL *db = mysql_init(NULL);

	if (db == NULL ||
	    !mysql_real_connect(db, "localhost", db_user, NULL, db_name, 0,
				db_socket, 0))
		die("connect", db);
	return db;
}

/* The service's tables a walk-in writes, copied into bench. */
static const char *const walkin_tables[] = {
    "entry_status_history", "line_tickets", "entries", "tenant_usage",
    "tenant_counters", "events", "idempotency_keys", NULL};

/*
 * A walk-in's writes in the service's order (lib/entry_write.c,
 * lib/outbox.c, lib/idempotency.c), with its values where they shape the
 * work: one line, one tenant, a ticket and a sequence number taken with
 * LAST_INSERT_ID(), the request body as the event and the stored answer.
 * Parameters: e entry id, v event id, k Idempotency-Key, b body, t now.
 */
static const struct {
	const char *sql, *params;
} walkin_writes[] = {
    {"INSERT INTO bench.entry_status_history (entry_id, version, "
     "tenant_id, queue_id, status, previous_status, at) VALUES (?, 1, "
     "'ten_bench', 'que_bench', 'waiting', NULL, ?)", "et"},
    {"INSERT INTO bench.line_tickets (queue_id, issued) VALUES "
     "('que_bench', LAST_INSERT_ID(1)) ON DUPLICATE KEY UPDATE issued = "
     "LAST_INSERT_ID(issued + 1)", ""},
    {"INSERT INTO bench.entries (id, tenant_id, business_id, queue_id, "
     "guest_id, booking_id, version, status, is_booking, full_name, phone, "
     "party_size, notes, service_type_id, custom_data, external_reference, "
     "scheduled_for, booking_end, sms_consent, ticket, created_at, "
     "updated_at) VALUES (?, 'ten_bench', 'biz_bench', 'que_bench', ?, "
     "NULL, 1, 'waiting', 0, 'Bench Guest', '+15551234567', 2, NULL, NULL, "
     "'{}', ?, NULL, NULL, NULL, LAST_INSERT_ID(), ?, ?)", "evktt"},
    {"INSERT INTO bench.tenant_usage (tenant_id, month, guests) VALUES "
     "('ten_bench', '2026-01', LAST_INSERT_ID(1)) ON DUPLICATE KEY UPDATE "
     "guests = LAST_INSERT_ID(guests + 1)", ""},
    {"INSERT INTO bench.tenant_counters (tenant_id, event_seq) VALUES "
     "('ten_bench', LAST_INSERT_ID(1)) ON DUPLICATE KEY UPDATE event_seq = "
     "LAST_INSERT_ID(event_seq + 1)", ""},
    {"INSERT INTO bench.events (tenant_id, seq, id, type, business_id, "
     "queue_id, resource_id, occurred_at, body) VALUES ('ten_bench', "
     "LAST_INSERT_ID(), ?, 'waitlist.entry.created', 'biz_bench', "
     "'que_bench', ?, ?, ?)", "vetb"},
    {"INSERT INTO bench.idempotency_keys (key_id, idem_key, request_hash, "
     "status, body, created_at) VALUES ('key_bench', ?, REPEAT('0', 64), "
     "201, ?, ?)", "kbt"},
};
#define NWRITES (sizeof(walkin_writes) / sizeof(walkin_writes[0]))
#define PARAMS_MAX 32

/* Create the tables the write modes use (parent, before forking). */
static void
db_prepare_schema(void)
{
	MYSQL *db = db_connect();
	char sql[256];
	int i;

	if (mysql_query(db, "CREATE DATABASE IF NOT EXISTS bench") ||
	    mysql_query(db,
			"CREATE TABLE IF NOT EXISTS bench.writes ("
			"id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, "
			"idem_key VARCHAR(255) NOT NULL, "
			"body MEDIUMTEXT NOT NULL, "
			"created_at BIGINT NOT NULL) ENGINE=InnoDB"))
		die("schema", db);
	for (i = 0; walkin_tables[i]; i++) {
		snprintf(sql, sizeof(sql),
			 "CREATE TABLE IF NOT EXISTS bench.%s LIKE `%s`.%s",
			 walkin_tables[i], db_name, walkin_tables[i]);
		if (mysql_query(db, sql))
			die(sql, db);
	}
	mysql_close(db);
}

static long long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct worker {
	MYSQL *db;
	MYSQL_STMT *st;
	MYSQL_BIND *res; /* select: one string buffer per column */
	unsigned ncols;
	char *colbuf;
	unsigned long *collen;
	MYSQL_STMT *writes[NWRITES]; /* writes: one per statement */
	long n;                      /* requests served, for unique ids */
};

static MYSQL_STMT *
prepare(MYSQL *db, const char *sql)
{
	MYSQL_STMT *st = mysql_stmt_init(db);

	if (st == NULL || mysql_stmt_prepare(st, sql, strlen(sql)))
		die(sql, db);
	return st;
}

static void
worker_init(struct worker *w)
{
	MYSQL_RES *meta;
	unsigned i;

	memset(w, 0, sizeof(*w));
	if (mode == M_STATIC)
		return;
	w->db = db_connect();
	if (mode == M_INSERT) {
		w->st = prepare(w->db, "INSERT INTO bench.writes (idem_key, "
				       "body, created_at) VALUES (?, ?, ?)");
		return;
	}
	if (mode == M_WRITES) {
		for (i = 0; i < NWRITES; i++)
			w->writes[i] = prepare(w->db, walkin_writes[i].sql);
		return;
	}
	if (mode == M_BLOCK) {
		char block[8192] = "BEGIN NOT ATOMIC START TRANSACTION; ";
		for (i = 0; i < NWRITES; i++) {
			strcat(block, walkin_writes[i].sql);
			strcat(block, "; ");
		}
		strcat(block, "COMMIT; END");
		w->st = prepare(w->db, block);
		return;
	}
	/* The whole row, like the service's entry read; by primary key. */
	w->st = prepare(w->db, "SELECT * FROM entries WHERE id = ?");
	if ((meta = mysql_stmt_result_metadata(w->st)) == NULL)
		die("metadata", w->db);
	w->ncols = mysql_num_fields(meta);
	mysql_free_result(meta);
	w->res = calloc(w->ncols, sizeof(*w->res));
	w->colbuf = malloc((size_t)w->ncols * COL_MAX);
	w->collen = calloc(w->ncols, sizeof(*w->collen));
	if (!w->res || !w->colbuf || !w->collen)
		die("malloc", NULL);
	for (i = 0; i < w->ncols; i++) {
		w->res[i].buffer_type = MYSQL_TYPE_STRING;
		w->res[i].buffer = w->colbuf + (size_t)i * COL_MAX;
		w->res[i].buffer_length = COL_MAX;
		w->res[i].length = &w->collen[i];
	}
}

/* The value of name in a query string, into out; 0 when absent. */
static int
query_get(const char *q, const char *name, char *out, size_t outsz)
{
	size_t n = strlen(name), i;

	while (q && *q) {
		if (strncmp(q, name, n) == 0 && q[n] == '=') {
			q += n + 1;
			for (i = 0; q[i] && q[i] != '&' && i + 1 < outsz; i++)
				out[i] = q[i];
			out[i] = '\0';
			return 1;
		}
		q = strchr(q, '&');
		if (q)
			q++;
	}
	return 0;
}

static void
reply(FCGX_Request *r, int status, const char *json)
{
	char head[256];
	int n;

	n = snprintf(head, sizeof(head),
		     "Status: %d %s\r\nCache-Control: no-store\r\n"
		     "Content-Type: application/json\r\n"
		     "Content-Length: %zu\r\n\r\n",
		     status,
		     status == 200 ? "OK" : status == 201 ? "Created"
			 : status == 404 ? "Not Found" : "Error",
		     strlen(json));
	FCGX_PutStr(head, n, r->out);
	FCGX_PutStr(json, (int)strlen(json), r->out);
}

static void
serve_select(struct worker *w, FCGX_Request *r)
{
	char id[64], out[160];
	unsigned long idlen;
	MYSQL_BIND p;
	int rc, found = 0;

	if (!query_get(FCGX_GetParam("QUERY_STRING", r->envp), "id", id,
		       sizeof(id))) {
		reply(r, 404, "{\"error\":\"id missing\"}");
		return;
	}
	idlen = strlen(id);
	memset(&p, 0, sizeof(p));
	p.buffer_type = MYSQL_TYPE_STRING;
	p.buffer = id;
	p.buffer_length = idlen;
	p.length = &idlen;
	if (mysql_stmt_bind_param(w->st, &p) || mysql_stmt_execute(w->st) ||
	    mysql_stmt_bind_result(w->st, w->res)) {
		reply(r, 500, "{\"error\":\"select failed\"}");
		return;
	}
	while ((rc = mysql_stmt_fetch(w->st)) == 0 || rc == MYSQL_DATA_TRUNCATED)
		found++;
	mysql_stmt_free_result(w->st);
	if (!found) {
		reply(r, 404, "{\"error\":\"not found\"}");
		return;
	}
	snprintf(out, sizeof(out), "{\"entry\":{\"id\":\"%s\",\"found\":true}}",
		 id);
	reply(r, 200, out);
}

static void
serve_insert(struct worker *w, FCGX_Request *r, const char *body,
	     unsigned long len)
{
	const char *ik = FCGX_GetParam("HTTP_IDEMPOTENCY_KEY", r->envp);
	unsigned long iklen;
	long long at = now_ms();
	MYSQL_BIND p[3];
	char out[96];

	if (ik == NULL)
		ik = "";
	iklen = strlen(ik);
	memset(p, 0, sizeof(p));
	p[0].buffer_type = MYSQL_TYPE_STRING;
	p[0].buffer = (char *)ik;
	p[0].buffer_length = iklen;
	p[0].length = &iklen;
	p[1].buffer_type = MYSQL_TYPE_STRING;
	p[1].buffer = (char *)body;
	p[1].buffer_length = len;
	p[1].length = &len;
	p[2].buffer_type = MYSQL_TYPE_LONGLONG;
	p[2].buffer = &at;
	if (mysql_stmt_bind_param(w->st, p) || mysql_stmt_execute(w->st)) {
		reply(r, 500, "{\"error\":\"insert failed\"}");
		return;
	}
	snprintf(out, sizeof(out), "{\"id\":%llu}",
		 (unsigned long long)mysql_stmt_insert_id(w->st));
	reply(r, 201, out);
}

/* Bind the values named by params (see walkin_writes) from p[0]. */
static void
bind_walkin(MYSQL_BIND *p, unsigned long *len, const char *params,
	    const char *const val[4], long long *at)
{
	static const char names[] = "evkb";
	const char *c;

	for (c = params; *c; c++, p++, len++) {
		memset(p, 0, sizeof(*p));
		if (*c == 't') {
			p->buffer_type = MYSQL_TYPE_LONGLONG;
			p->buffer = at;
			continue;
		}
		p->buffer = (char *)val[strchr(names, *c) - names];
		*len = strlen(p->buffer);
		p->buffer_type = MYSQL_TYPE_STRING;
		p->buffer_length = *len;
		p->length = len;
	}
}

static int
execute(MYSQL_STMT *st, MYSQL_BIND *p)
{
	return (mysql_stmt_param_count(st) > 0 &&
		mysql_stmt_bind_param(st, p)) ||
	       mysql_stmt_execute(st);
}

/* The writes of one walk-in: mode writes or block. */
static void
serve_walkin(struct worker *w, FCGX_Request *r, const char *body)
{
	const char *ik = FCGX_GetParam("HTTP_IDEMPOTENCY_KEY", r->envp);
	char entry[64], event[64];
	const char *val[4] = {entry, event, ik ? ik : entry, body};
	unsigned long len[PARAMS_MAX];
	MYSQL_BIND p[PARAMS_MAX];
	long long at = now_ms();
	size_t i, np = 0;
	int bad;

	w->n++;
	snprintf(entry, sizeof(entry), "ent_bench_%ld_%ld", (long)getpid(),
		 w->n);
	snprintf(event, sizeof(event), "evt_bench_%ld_%ld", (long)getpid(),
		 w->n);
	if (mode == M_BLOCK) {
		for (i = 0; i < NWRITES; i++) {
			bind_walkin(p + np, len + np, walkin_writes[i].params,
				    val, &at);
			np += strlen(walkin_writes[i].params);
		}
		bad = execute(w->st, p);
	} else {
		bad = mysql_query(w->db, "START TRANSACTION");
		for (i = 0; i < NWRITES && !bad; i++) {
			bind_walkin(p, len, walkin_writes[i].params, val, &at);
			bad = execute(w->writes[i], p);
		}
		bad = bad || mysql_commit(w->db);
	}
	if (bad) {
		mysql_rollback(w->db);
		reply(r, 500, "{\"error\":\"walk-in writes failed\"}");
		return;
	}
	reply(r, 201, "{\"entry\":{\"id\":\"ent_bench\"}}");
}

static int
worker_run(int fd)
{
	static char body[BODY_MAX + 1];
	struct sigaction sa;
	struct worker w;
	FCGX_Request r;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_term; /* no SA_RESTART: accept() must return */
	sigaction(SIGTERM, &sa, NULL);
	worker_init(&w);
	if (FCGX_Init() != 0 || FCGX_InitRequest(&r, fd, FCGI_FAIL_ACCEPT_ON_INTR) != 0)
		return 1;
	while (!stopping && FCGX_Accept_r(&r) >= 0) {
		const char *cl = FCGX_GetParam("CONTENT_LENGTH", r.envp);
		long want = cl && *cl ? strtol(cl, NULL, 10) : 0;
		int got = 0;

		if (want > BODY_MAX)
			want = BODY_MAX;
		if (want > 0 && (got = FCGX_GetStr(body, (int)want, r.in)) < 0)
			got = 0;
		body[got] = '\0';
		if (mode == M_STATIC)
			reply(&r, 200, "{\"status\":\"ok\",\"entry\":{\"id\":"
				       "\"ent_static\",\"version\":1}}");
		else if (mode == M_SELECT)
			serve_select(&w, &r);
		else if (mode == M_INSERT)
			serve_insert(&w, &r, body, (unsigned long)got);
		else
			serve_walkin(&w, &r, body);
		FCGX_Finish_r(&r);
	}
	if (w.db)
		mysql_close(w.db);
	return 0;
}

static void
usage(void)
{
	fprintf(stderr, "usage: baseline-fcgi --mode "
			"static|select|insert|writes|block "
			"--socket PATH --workers N [--db-socket PATH "
			"--db-user USER --db-name NAME]\n");
	exit(2);
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
	    {"mode", required_argument, NULL, 'm'},
	    {"socket", required_argument, NULL, 's'},
	    {"workers", required_argument, NULL, 'w'},
	    {"db-socket", required_argument, NULL, 'd'},
	    {"db-user", required_argument, NULL, 'u'},
	    {"db-name", required_argument, NULL, 'n'},
	    {NULL, 0, NULL, 0}};
	const char *path = NULL, *m = NULL;
	pid_t pid[MAX_WORKERS];
	struct sigaction sa;
	int ch, fd, i, n = 4, left;

	while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (ch) {
		case 'm': m = optarg; break;
		case 's': path = optarg; break;
		case 'w': n = atoi(optarg); break;
		case 'd': db_socket = optarg; break;
		case 'u': db_user = optarg; break;
		case 'n': db_name = optarg; break;
		default: usage();
		}
	}
	if (m == NULL || path == NULL || n < 1 || n > MAX_WORKERS)
		usage();
	if (strcmp(m, "static") == 0)
		mode = M_STATIC;
	else if (strcmp(m, "select") == 0)
		mode = M_SELECT;
	else if (strcmp(m, "insert") == 0)
		mode = M_INSERT;
	else if (strcmp(m, "writes") == 0)
		mode = M_WRITES;
	else if (strcmp(m, "block") == 0)
		mode = M_BLOCK;
	else
		usage();
	if (mode != M_STATIC && (db_socket == NULL || db_user == NULL))
		usage();
	if (mode != M_STATIC && mode != M_SELECT)
		db_prepare_schema();
	unlink(path);
	if ((fd = FCGX_OpenSocket(path, 1024)) < 0)
		die("listen", NULL);
	chmod(path, 0660);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	for (i = 0; i < n; i++) {
		if ((pid[i] = fork()) == 0)
			_exit(worker_run(fd));
		if (pid[i] < 0)
			die("fork", NULL);
	}
	while (!stopping)
		pause();
	for (i = 0; i < n; i++)
		kill(pid[i], SIGTERM);
	/* A worker blocked in accept() returns on the signal (no restart);
	 * give them a moment, then make sure. */
	for (left = 50; left > 0; left--) {
		int alive = 0;
		for (i = 0; i < n; i++)
			if (pid[i] > 0 && waitpid(pid[i], NULL, WNOHANG) == 0)
				alive++;
			else
				pid[i] = 0;
		if (!alive)
			break;
		usleep(100000);
	}
	for (i = 0; i < n; i++)
		if (pid[i] > 0) {
			kill(pid[i], SIGKILL);
			waitpid(pid[i], NULL, 0);
		}
	close(fd);
	unlink(path);
	return 0;
}
