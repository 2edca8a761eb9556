/*
 * The one place that talks to MariaDB, with txn.c (transactions and
 * their batches of writes).  Statements live in one table
 * (stmt.c) indexed by enum wl_stmt, are prepared on first use on each
 * connection and reused; parameters are always bound.  Every result cell
 * comes back as text, which keeps callers simple and the binding code in
 * one place.
 */
#include "config.h"

#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <errmsg.h>
#include <mysql.h>
#include <mysqld_error.h>

#include "extern.h"
#include "db.h"

/*
 * Classify a server or client error: retry the transaction (deadlock,
 * Galera certification failure), busy (lock wait timeout: someone holds
 * the row for long), reconnect (the server went away or is not ready),
 * duplicate key, refused (a check of the service's own, SIGNAL SQLSTATE
 * '45000'), or fatal.
 */
static int
classify(unsigned e)
{
	switch (e) {
	case ER_LOCK_WAIT_TIMEOUT:
		return WL_ERR_BUSY;
	case ER_LOCK_DEADLOCK:
	case 1180: /* ER_ERROR_DURING_COMMIT (Galera) */
	/* A savepoint gone: the transaction was rolled back under us (a
	 * Galera brute-force abort reaches ROLLBACK TO SAVEPOINT this way;
	 * the service defines no stored routines). */
	case ER_SP_DOES_NOT_EXIST:
		return WL_ERR_DB_RETRY;
	case CR_SERVER_GONE_ERROR:
	case CR_SERVER_LOST:
	case CR_CONNECTION_ERROR:
	case CR_CONN_HOST_ERROR:
	case CR_SERVER_LOST_EXTENDED:
	case ER_SERVER_SHUTDOWN:
	case ER_CONNECTION_KILLED:
	case ER_UNKNOWN_COM_ERROR: /* Galera node not ready (WSREP) */
	case 4031:		   /* client interaction timeout */
	case 2026:		   /* SSL connection error */
	/* Results left unread by a failure (out of memory) block every
	 * later command: the connection starts over. */
	case CR_COMMANDS_OUT_OF_SYNC:
		return WL_ERR_DB_GONE;
	case ER_DUP_ENTRY:
		return WL_ERR_CONFLICT;
	case ER_SIGNAL_EXCEPTION:
		return WL_ERR_REFUSED;
	default:
		return WL_ERR_DB;
	}
}

static void
close_conn(struct wl_db *db)
{
	size_t i;

	for (i = 0; i < STMT__MAX; i++)
		if (db->stmt[i]) {
			mysql_stmt_close(db->stmt[i]);
			db->stmt[i] = NULL;
		}
	db_close_compounds(db);
	if (db->conn)
		mysql_close(db->conn);
	db->conn = NULL;
	db->in_txn = 0;
}

int
db_fail(struct wl_db *db, unsigned e, const char *msg)
{
	int rc = classify(e);

	db->last_errno = e;
	snprintf(db->err, sizeof(db->err), "%u: %s", e, msg);
	if (rc == WL_ERR_DB_GONE) {
		db->lost += db->conn != NULL;
		close_conn(db);
	}
	return rc;
}

unsigned long
wl_db_lost(const struct wl_db *db)
{
	return db->lost;
}

/*
 * Inside a transaction, is it still open on the server?  Each answer
 * carries the server's status flags.  A Galera brute-force abort can
 * roll the transaction back under a statement that then succeeds (a read
 * waiting for wsrep_sync_wait was seen to return no rows): what it read
 * belongs to no transaction, so the transaction is retried whole.
 */
static int
txn_alive(struct wl_db *db)
{
	unsigned status = 0;

	if (!db->in_txn ||
	    mariadb_get_infov(db->conn, MARIADB_CONNECTION_SERVER_STATUS,
			      &status) != 0 ||
	    (status & SERVER_STATUS_IN_TRANS))
		return WL_OK;
	return db_fail(db, ER_LOCK_DEADLOCK,
		       "the transaction was rolled back by the server");
}

static int
connect_db(struct wl_db *db)
{
	const struct wl_config *c = db->cfg;
	unsigned timeout = 3;
	MYSQL *m;

	if ((m = mysql_init(NULL)) == NULL)
		return WL_ERR_NOMEM;
	mysql_options(m, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
	if (db->rw_timeout > 0) {
		mysql_options(m, MYSQL_OPT_READ_TIMEOUT, &db->rw_timeout);
		mysql_options(m, MYSQL_OPT_WRITE_TIMEOUT, &db->rw_timeout);
	}
	mysql_options(m, MYSQL_SET_CHARSET_NAME, "utf8mb4");
	mysql_options(m, MYSQL_INIT_COMMAND,
		      "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED");
	mysql_options(m, MYSQL_INIT_COMMAND,
		      "SET SESSION sql_mode='STRICT_ALL_TABLES,"
		      "NO_ENGINE_SUBSTITUTION', innodb_lock_wait_timeout=5, "
		      "time_zone='+00:00'");
	if (mysql_real_connect(m, c->db_host, c->db_user, c->db_password,
			       c->db_name, c->db_port,
			       *c->db_socket ? c->db_socket : NULL,
			       CLIENT_MULTI_STATEMENTS | CLIENT_FOUND_ROWS) ==
	    NULL) {
		db->last_errno = mysql_errno(m);
		snprintf(db->err, sizeof(db->err), "connect: %s",
			 mysql_error(m));
		mysql_close(m);
		return WL_ERR_DB_GONE;
	}
	db->conn = m;
	return WL_OK;
}

/*
 * A database handle for cfg (which must outlive it).  Connecting is
 * attempted now; a failure is reported in err but the handle is still
 * returned, and every later call tries again.  NULL only without memory.
 */
struct wl_db *
wl_db_new(const struct wl_config *cfg, char *err, size_t errsz)
{
	struct wl_db *db;

	if ((db = calloc(1, sizeof(*db))) == NULL) {
		snprintf(err, errsz, "out of memory");
		return NULL;
	}
	db->cfg = cfg;
	db->rw_timeout = 30;
	if (connect_db(db) != WL_OK)
		snprintf(err, errsz, "%s", db->err);
	return db;
}

/*
 * No read or write timeout from now on (the next connection): for
 * statements that may rightly run for minutes, such as a migration's
 * rebuild of a large table, which the server would finish while the
 * client, timed out, reported it failed.
 */
void
wl_db_unhurried(struct wl_db *db)
{
	db->rw_timeout = 0;
	close_conn(db);
}

/* Close the connection and free the handle; NULL is a no-op. */
void
wl_db_free(struct wl_db *db)
{
	if (db == NULL)
		return;
	close_conn(db);
	wl_buf_free(&db->strs);
	free(db);
}

/* The last error message (for logs; never sent to clients). */
const char *
wl_db_error(struct wl_db *db)
{
	return db->err;
}

unsigned
wl_db_errno(struct wl_db *db)
{
	return db->last_errno;
}

int
db_ensure(struct wl_db *db)
{
	return db->conn ? WL_OK : connect_db(db);
}

MYSQL_STMT *
db_prepare(struct wl_db *db, const char *sql, size_t len)
{
	my_bool on = 1;
	MYSQL_STMT *s;

	if ((s = mysql_stmt_init(db->conn)) == NULL) {
		db_fail(db, CR_OUT_OF_MEMORY, "out of memory");
		return NULL;
	}
	if (mysql_stmt_prepare(s, sql, len) != 0) {
		db_fail(db, mysql_stmt_errno(s), mysql_stmt_error(s));
		mysql_stmt_close(s);
		return NULL;
	}
	mysql_stmt_attr_set(s, STMT_ATTR_UPDATE_MAX_LENGTH, &on);
	return s;
}

/*
 * What a failed db_prepare() returns.  A prepare meets what a statement
 * meets: under Galera, a transaction aborted by a conflicting write set
 * fails its next command, whatever it is, with a deadlock (retry the
 * transaction).
 */
int
db_prepare_failed(struct wl_db *db)
{
	int rc = classify(db->last_errno);

	return rc == WL_ERR_DB_GONE || rc == WL_ERR_DB_RETRY ? rc : WL_ERR_DB;
}

static MYSQL_STMT *
prepared(struct wl_db *db, enum wl_stmt id)
{
	if (db->stmt[id] == NULL)
		db->stmt[id] = db_prepare(db, wl_stmt_sql[id],
					  strlen(wl_stmt_sql[id]));
	return db->stmt[id];
}

/*
 * Copy the row just fetched into row r of rows, fetching again each value
 * longer than its buffer.
 */
static int
copy_row(struct wl_db *db, MYSQL_STMT *s, const MYSQL_BIND *b,
	 struct wl_rows *rows, size_t r)
{
	size_t c, ncols = rows->ncols;

	for (c = 0; c < ncols; c++) {
		unsigned long len = *b[c].length;
		char *cell;

		if (*b[c].is_null)
			continue;
		if ((cell = malloc(len + 1)) == NULL)
			return WL_ERR_NOMEM;
		if (len >= b[c].buffer_length) {
			MYSQL_BIND one = b[c];
			one.buffer = cell;
			one.buffer_length = len + 1;
			if (mysql_stmt_fetch_column(s, &one, (unsigned)c, 0)) {
				free(cell);
				return db_fail(db, mysql_stmt_errno(s),
					       mysql_stmt_error(s));
			}
		} else
			memcpy(cell, b[c].buffer, len);
		cell[len] = '\0';
		rows->cell[r * ncols + c] = cell;
		rows->len[r * ncols + c] = len;
	}
	return WL_OK;
}

static int
fetch_rows(struct wl_db *db, MYSQL_STMT *s, MYSQL_RES *meta,
	   struct wl_rows **out)
{
	MYSQL_FIELD *f = mysql_fetch_fields(meta);
	size_t ncols = mysql_num_fields(meta), nrows, r, c;
	MYSQL_BIND *b = NULL;
	unsigned long *lens = NULL;
	my_bool *nulls = NULL, *errs = NULL;
	char **bufs = NULL;
	struct wl_rows *rows = NULL;
	int rc = WL_ERR_NOMEM, frc;

	nrows = (size_t)mysql_stmt_num_rows(s);
	if ((rows = calloc(1, sizeof(*rows))) == NULL ||
	    (b = calloc(ncols, sizeof(*b))) == NULL ||
	    (lens = calloc(ncols, sizeof(*lens))) == NULL ||
	    (nulls = calloc(ncols, sizeof(*nulls))) == NULL ||
	    (errs = calloc(ncols, sizeof(*errs))) == NULL ||
	    (bufs = calloc(ncols, sizeof(*bufs))) == NULL ||
	    (rows->cell = calloc(nrows * ncols + 1, sizeof(char *))) == NULL ||
	    (rows->len = calloc(nrows * ncols + 1, sizeof(unsigned long))) ==
		NULL)
		goto out;
	rows->ncols = ncols;
	for (c = 0; c < ncols; c++) {
		size_t sz = f[c].max_length + 1;
		if (sz < 64)
			sz = 64;
		if ((bufs[c] = malloc(sz)) == NULL)
			goto out;
		b[c].buffer_type = MYSQL_TYPE_STRING;
		b[c].buffer = bufs[c];
		b[c].buffer_length = sz;
		b[c].length = &lens[c];
		b[c].is_null = &nulls[c];
		b[c].error = &errs[c];
	}
	if (mysql_stmt_bind_result(s, b) != 0) {
		rc = db_fail(db, mysql_stmt_errno(s), mysql_stmt_error(s));
		goto out;
	}
	for (r = 0; r < nrows; r++) {
		frc = mysql_stmt_fetch(s);
		if (frc == MYSQL_NO_DATA)
			break;
		if (frc == 1) {
			rc = db_fail(db, mysql_stmt_errno(s),
				     mysql_stmt_error(s));
			goto out;
		}
		/* Counted before its cells are filled, so that those filled
		 * are freed if one fails. */
		rows->nrows = r + 1;
		if ((rc = copy_row(db, s, b, rows, r)) != WL_OK)
			goto out;
	}
	*out = rows;
	rows = NULL;
	rc = WL_OK;
out:
	for (c = 0; bufs && c < ncols; c++)
		free(bufs[c]);
	free(bufs);
	free(b);
	free(lens);
	free(nulls);
	free(errs);
	wl_rows_free(rows);
	return rc;
}

int
db_any_non_ascii(const struct wl_sqlval *args, size_t nargs)
{
	size_t i, j;

	for (i = 0; i < nargs; i++)
		for (j = 0; args[i].type == WL_SQL_STR && j < args[i].len; j++)
			if ((unsigned char)args[i].s[j] >= 0x80)
				return 1;
	return 0;
}

/* Bind args[0..nargs) to s and execute it. */
int
db_execute(struct wl_db *db, MYSQL_STMT *s, const struct wl_sqlval *args,
	   size_t nargs)
{
	MYSQL_BIND *b = db->bind;
	unsigned long *lens = db->lens;
	long long *ints = db->ints;
	size_t i;

	if (nargs > BATCH_ARGS || nargs != mysql_stmt_param_count(s)) {
		db->last_errno = 0;
		snprintf(db->err, sizeof(db->err),
			 "%zu arguments for %lu parameters", nargs,
			 mysql_stmt_param_count(s));
		return WL_ERR_DB;
	}
	memset(b, 0, nargs * sizeof(*b));
	for (i = 0; i < nargs; i++) {
		switch (args[i].type) {
		case WL_SQL_STR:
			lens[i] = (unsigned long)args[i].len;
			b[i].buffer_type = MYSQL_TYPE_STRING;
			b[i].buffer = (void *)args[i].s;
			b[i].buffer_length = lens[i];
			b[i].length = &lens[i];
			break;
		case WL_SQL_INT:
			ints[i] = args[i].i;
			b[i].buffer_type = MYSQL_TYPE_LONGLONG;
			b[i].buffer = &ints[i];
			break;
		case WL_SQL_NULL:
			b[i].buffer_type = MYSQL_TYPE_NULL;
			break;
		}
	}
	if ((nargs && mysql_stmt_bind_param(s, b) != 0) ||
	    mysql_stmt_execute(s) != 0)
		return db_fail(db, mysql_stmt_errno(s), mysql_stmt_error(s));
	return WL_OK;
}

/*
 * Read what the executed s answered: its affected rows, and into rows
 * (when given) its last result set.  A compound statement answers with
 * a result set for each statement inside it that has one, then its own
 * status; an error inside it may come at any of these.
 */
int
db_answer(struct wl_db *db, MYSQL_STMT *s, struct wl_rows **rows,
	  unsigned long long *affected)
{
	MYSQL_RES *meta;
	int rc = WL_OK, more = -1;

	if (affected)
		*affected = mysql_stmt_affected_rows(s);
	db->insert_id = mysql_stmt_insert_id(s);
	do {
		if (mysql_stmt_field_count(s) == 0)
			continue;
		if ((meta = mysql_stmt_result_metadata(s)) == NULL)
			return db_fail(db, mysql_stmt_errno(s),
				       mysql_stmt_error(s));
		if (mysql_stmt_store_result(s) != 0)
			rc = db_fail(db, mysql_stmt_errno(s),
				     mysql_stmt_error(s));
		else if (rows) {
			wl_rows_free(*rows);
			*rows = NULL;
			rc = fetch_rows(db, s, meta, rows);
		}
		/* A lost connection was closed with its statements, s too. */
		if (db->conn != NULL)
			mysql_stmt_free_result(s);
		mysql_free_result(meta);
	} while (rc == WL_OK && (more = mysql_stmt_next_result(s)) == 0);
	if (rc == WL_OK && more > 0)
		rc = db_fail(db, mysql_stmt_errno(s), mysql_stmt_error(s));
	if (rc == WL_OK)
		rc = txn_alive(db);
	if (rc != WL_OK && rows) {
		wl_rows_free(*rows);
		*rows = NULL;
	}
	return rc;
}

static int
exec_once(struct wl_db *db, enum wl_stmt id, const struct wl_sqlval *args,
	  size_t nargs, struct wl_rows **rows, unsigned long long *affected)
{
	MYSQL_STMT *s;
	int rc;

	if ((rc = db_ensure(db)) != WL_OK)
		return rc;
	if ((s = prepared(db, id)) == NULL)
		return db_prepare_failed(db);
	if ((rc = db_execute(db, s, args, nargs)) != WL_OK)
		return rc;
	return db_answer(db, s, rows, affected);
}

/*
 * Run statement id with the bound arguments.  See extern.h for the
 * contract; rows, when given, is set (NULL on error) and freed by the
 * caller with wl_rows_free().
 */
int
wl_sql_exec(struct wl_db *db, enum wl_stmt id, const struct wl_sqlval *args,
	    size_t nargs, struct wl_rows **rows, unsigned long long *affected)
{
	int had_conn = db->conn != NULL, in_txn = db->in_txn, rc;
	unsigned attempt;

	if (rows)
		*rows = NULL;
	/* With writes waiting, this goes with them; only its own affected
	 * count cannot be told from theirs. */
	if (db->nlater == 0)
		rc = exec_once(db, id, args, nargs, rows, affected);
	else if (!affected && db->nlargs + nargs <= BATCH_ARGS)
		rc = db_send_later(db, id, args, nargs, rows);
	else if ((rc = db_send_later(db, STMT__MAX, SQL_NOARGS, NULL)) == WL_OK)
		rc = exec_once(db, id, args, nargs, rows, affected);
	/* A connection that died while idle (server restart) is replaced
	 * once, unless a transaction was under way on it. */
	if (rc == WL_ERR_DB_GONE && had_conn && !in_txn)
		rc = exec_once(db, id, args, nargs, rows, affected);
	/* An autocommit statement that lost a deadlock or a Galera
	 * certification conflict was rolled back whole: run it again, like
	 * wl_db_txn() (Galera's wsrep_retry_autocommit tries only once). */
	for (attempt = 1; rc == WL_ERR_DB_RETRY && !in_txn && attempt < 4;
	     attempt++) {
		db_backoff(attempt);
		rc = exec_once(db, id, args, nargs, rows, affected);
	}
	/*
	 * Ids are ASCII columns: a client's non-ASCII value cannot be
	 * compared with them ("illegal mix of collations"), and can never
	 * equal one either, so the exact answer is "nothing matches".
	 */
	if (rc == WL_ERR_DB && db->last_errno == ER_CANT_AGGREGATE_2COLLATIONS &&
	    db_any_non_ascii(args, nargs)) {
		if (affected)
			*affected = 0;
		if (rows && (*rows = calloc(1, sizeof(**rows))) == NULL)
			return WL_ERR_NOMEM;
		rc = WL_OK;
	}
	return rc;
}

/* wl_sql_exec() for statements whose result is not needed. */
int
wl_sql_do(struct wl_db *db, enum wl_stmt id, const struct wl_sqlval *args,
	  size_t nargs)
{
	return wl_sql_exec(db, id, args, nargs, NULL, NULL);
}

/* Run SQL text without parameters, possibly several statements. */
int
wl_sql_raw(struct wl_db *db, const char *sql)
{
	MYSQL_RES *res;
	int rc, st;

	if ((rc = db_ensure(db)) != WL_OK)
		return rc;
	if (mysql_real_query(db->conn, sql, strlen(sql)) != 0)
		return db_fail(db, mysql_errno(db->conn),
			       mysql_error(db->conn));
	do {
		if ((res = mysql_store_result(db->conn)) != NULL)
			mysql_free_result(res);
		else if (mysql_field_count(db->conn) != 0)
			return db_fail(db, mysql_errno(db->conn),
				       mysql_error(db->conn));
		st = mysql_next_result(db->conn);
		if (st > 0)
			return db_fail(db, mysql_errno(db->conn),
				       mysql_error(db->conn));
	} while (st == 0);
	return WL_OK;
}

