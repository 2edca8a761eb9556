/*
 * Transactions: begin, commit, rollback and whole retries, and the batch
 * of writes that waits to go with the transaction's next statement.
 *
 * A walk-in is a dozen statements.  The writes whose outcome is not
 * needed at once (wl_sql_later()), START TRANSACTION among them, wait,
 * and go to the server with the next statement that needs an answer, or
 * with the COMMIT, as one compound statement (BEGIN NOT ATOMIC ... END,
 * prepared with its parameters once per connection).  That spares the
 * worker a round trip's system calls and, with the database across a
 * network, its latency; the server spends about what it saves in the
 * kernel on running the compound statement (README "Benchmarks").  The
 * server runs its statements in order and stops at the first that fails;
 * that error is the one the sending call reports.
 */
#include "config.h"

#include <stdlib.h>
#include <time.h>

#include <errmsg.h>

#include "extern.h"
#include "db.h"

/*
 * The compound statement of ids[0..n), prepared once per connection; the
 * least recently used of COMPOUNDS gives way.
 */
static MYSQL_STMT *
compound(struct wl_db *db, const unsigned short *ids, size_t n)
{
	struct compound *c, *victim = &db->comp[0];
	struct wl_buf sql = {0};
	size_t i;
	int rc;

	for (c = db->comp; c < db->comp + COMPOUNDS; c++) {
		if (c->s && c->n == n &&
		    memcmp(c->ids, ids, n * sizeof(*ids)) == 0) {
			c->used = ++db->uses;
			return c->s;
		}
		if (c->used < victim->used)
			victim = c;
	}
	if (victim->s)
		mysql_stmt_close(victim->s);
	memset(victim, 0, sizeof(*victim));
	rc = wl_buf_printf(&sql, "BEGIN NOT ATOMIC ");
	for (i = 0; rc == WL_OK && i < n; i++)
		rc = wl_buf_printf(&sql, "%s; ", wl_stmt_sql[ids[i]]);
	if (rc != WL_OK || wl_buf_printf(&sql, "END") != WL_OK) {
		wl_buf_free(&sql);
		/* (Classified by db_prepare_failed(): not an error of before.) */
		db_fail(db, CR_OUT_OF_MEMORY, "out of memory");
		return NULL;
	}
	victim->s = db_prepare(db, sql.p, sql.len);
	wl_buf_free(&sql);
	if (victim->s == NULL)
		return NULL;
	memcpy(victim->ids, ids, n * sizeof(*ids));
	victim->n = n;
	victim->used = ++db->uses;
	return victim->s;
}

void
db_close_compounds(struct wl_db *db)
{
	struct compound *c;

	for (c = db->comp; c < db->comp + COMPOUNDS; c++) {
		if (c->s)
			mysql_stmt_close(c->s);
		memset(c, 0, sizeof(*c));
	}
}

static void
later_clear(struct wl_db *db)
{
	db->nlater = db->nlargs = 0;
	db->strs.len = 0;
}

/*
 * Send the statements waiting in the batch and then id with args (none
 * when id is STMT__MAX) as one compound statement; rows (when given)
 * receives id's result set.  The batch is emptied.  (A batch that finds
 * its connection dead fails the transaction, which wl_db_txn() runs once
 * more on a new one unless the batch held the commit.)
 */
int
db_send_later(struct wl_db *db, enum wl_stmt id,
	      const struct wl_sqlval *args, size_t nargs, struct wl_rows **rows)
{
	unsigned short ids[BATCH_MAX + 1];
	struct wl_sqlval *all = db->all;
	size_t n = db->nlater, na = db->nlargs, i;
	MYSQL_STMT *s;
	int rc;

	memcpy(ids, db->later, n * sizeof(*ids));
	if (id != STMT__MAX)
		ids[n++] = (unsigned short)id;
	for (i = 0; i < na; i++) {
		all[i] = db->largs[i];
		if (all[i].type == WL_SQL_STR)
			all[i].s = all[i].len ? db->strs.p + all[i].i : "";
	}
	if (nargs)
		memcpy(all + na, args, nargs * sizeof(*args));
	if ((rc = db_ensure(db)) == WL_OK) {
		if ((s = compound(db, ids, n)) == NULL)
			rc = db_prepare_failed(db);
		else if ((rc = db_execute(db, s, all, na + nargs)) == WL_OK)
			rc = db_answer(db, s, rows, NULL);
	}
	db->sent = 1;
	later_clear(db);
	return rc;
}

/*
 * Queue a write of the open transaction whose outcome is not needed
 * before the commit: it goes to the server with the next statement that
 * needs an answer, or with the commit, as one compound statement, and
 * that call reports its failure.  Outside a transaction, or with
 * non-ASCII arguments (see wl_sql_exec()), it runs at once.
 */
int
wl_sql_later(struct wl_db *db, enum wl_stmt id, const struct wl_sqlval *args,
	     size_t nargs)
{
	struct wl_sqlval v;
	size_t i, had, len;
	int rc;

	if (!db->in_txn || nargs > BATCH_ARGS || db_any_non_ascii(args, nargs))
		return wl_sql_exec(db, id, args, nargs, NULL, NULL);
	if ((db->nlater == BATCH_MAX || db->nlargs + nargs > BATCH_ARGS) &&
	    (rc = db_send_later(db, STMT__MAX, NULL, 0, NULL)) != WL_OK)
		return rc;
	had = db->nlargs;
	len = db->strs.len;
	for (i = 0; i < nargs; i++) {
		v = args[i];
		if (v.type == WL_SQL_STR) {
			v.i = (long long)db->strs.len;
			rc = v.len ? wl_buf_append(&db->strs, v.s, v.len)
				   : WL_OK;
			if (rc != WL_OK) {
				db->nlargs = had;
				db->strs.len = len;
				return rc;
			}
			v.s = NULL;
		}
		db->largs[db->nlargs++] = v;
	}
	db->later[db->nlater++] = (unsigned short)id;
	return WL_OK;
}

/*
 * Name read id to run right after the commit, in the commit's compound
 * statement, whose answer is its result set: it goes to *rows.  So a
 * transaction sent whole with its commit still learns what the server
 * worked out on the way (in session variables).  The read comes after
 * the COMMIT so that the whole answer leaves the server at once, when
 * the commit is durable, rather than in two parts with the log flush in
 * between.  It should be a read that cannot fail but with the connection
 * (which the caller's idempotency record covers): an error of its own
 * would report a transaction that did commit as failed.
 */
int
wl_sql_at_commit(struct wl_db *db, enum wl_stmt id, struct wl_rows **rows)
{
	*rows = NULL;
	if (!db->in_txn)
		return WL_ERR_INVALID;
	db->at_commit = rows;
	db->at_commit_id = id;
	return WL_OK;
}

/*
 * Run a statement that sets LAST_INSERT_ID() (an auto-increment insert,
 * or LAST_INSERT_ID(expr)) and give that value.  In a transaction the
 * statement and the read of the value go with the waiting writes.
 */
int
wl_sql_do_id(struct wl_db *db, enum wl_stmt id, const struct wl_sqlval *args,
	     size_t nargs, unsigned long long *value)
{
	struct wl_rows *rows = NULL;
	int rc;

	*value = 0;
	if (!db->in_txn) {
		if ((rc = wl_sql_do(db, id, args, nargs)) == WL_OK)
			*value = db->insert_id;
		return rc;
	}
	if ((rc = wl_sql_later(db, id, args, nargs)) == WL_OK &&
	    (rc = wl_sql_exec(db, STMT_LAST_ID, SQL_NOARGS, &rows, NULL)) ==
		WL_OK) {
		if (rows->nrows == 1 && wl_rows_str(rows, 0, 0))
			*value = strtoull(wl_rows_str(rows, 0, 0), NULL, 10);
		else
			rc = WL_ERR_DB;
	}
	wl_rows_free(rows);
	return rc;
}

/*
 * Start a transaction (reconnecting first if needed).  START TRANSACTION
 * waits in the batch: it goes with the transaction's first statement.
 */
int
wl_db_begin(struct wl_db *db)
{
	int rc;

	if ((rc = db_ensure(db)) != WL_OK)
		return rc;
	later_clear(db);
	db->in_txn = 1;
	db->sent = 0;
	db->at_commit = NULL;
	return wl_sql_later(db, STMT_TXN_START, SQL_NOARGS);
}

/* Commit; a Galera certification failure surfaces here as a retry. */
int
wl_db_commit(struct wl_db *db)
{
	struct wl_rows **rows = db->at_commit;
	int rc;

	db->at_commit = NULL;
	if (rows) {
		rc = wl_sql_later(db, STMT_TXN_COMMIT, SQL_NOARGS);
		db->in_txn = 0;
		return rc == WL_OK ? db_send_later(db, db->at_commit_id,
						   SQL_NOARGS, rows)
				   : rc;
	}
	db->in_txn = 0;
	if (!db->sent && db->nlater == 1) { /* START TRANSACTION alone */
		later_clear(db);
		return WL_OK;
	}
	if (db->nlater > 0)
		return db_send_later(db, STMT_TXN_COMMIT, SQL_NOARGS, rows);
	if (db->conn == NULL)
		return WL_ERR_DB_GONE;
	if (mysql_commit(db->conn) != 0)
		return db_fail(db, mysql_errno(db->conn),
			       mysql_error(db->conn));
	return WL_OK;
}

/* Roll back; errors are ignored (the connection may already be gone).
 * A transaction that has not reached the server is only forgotten. */
int
wl_db_rollback(struct wl_db *db)
{
	int sent = db->sent;

	db->in_txn = db->sent = 0;
	db->at_commit = NULL;
	later_clear(db);
	if (sent && db->conn && mysql_rollback(db->conn) != 0)
		db_fail(db, mysql_errno(db->conn), mysql_error(db->conn));
	return WL_OK;
}

void
db_backoff(unsigned attempt)
{
	unsigned cap = 5000u << (attempt < 6 ? attempt : 6), r = 0;
	struct timespec ts;

	wl_random_bytes(&r, sizeof(r));
	r %= cap; /* full jitter, microseconds */
	ts.tv_sec = r / 1000000;
	ts.tv_nsec = (long)(r % 1000000) * 1000;
	nanosleep(&ts, NULL);
}

/*
 * Run fn in a transaction, retried whole (up to 8 times, with jittered
 * backoff) when it or the commit reports WL_ERR_DB_RETRY.  A connection
 * lost before the commit was sent took the transaction with it: fn runs
 * once more on a new one.  (Galera was seen to leave a brute-force
 * aborted statement without an answer until the client's 30 s read
 * timeout; a lost commit is never run again, it may have happened.)  fn
 * must be safe to run again from the start.  Returns fn's or the commit's
 * result.
 */
int
wl_db_txn(struct wl_db *db, int (*fn)(struct wl_db *, void *), void *arg)
{
	unsigned attempt, lost = 0;
	int rc = WL_ERR_DB_RETRY;

	for (attempt = 0; attempt < 8; attempt++) {
		if (attempt)
			db_backoff(attempt);
		if ((rc = wl_db_begin(db)) != WL_OK)
			return rc;
		if ((rc = fn(db, arg)) == WL_OK) {
			if ((rc = wl_db_commit(db)) == WL_OK)
				return WL_OK;
		} else if (rc == WL_ERR_DB_GONE && lost++ == 0)
			rc = WL_ERR_DB_RETRY;
		wl_db_rollback(db);
		if (rc != WL_ERR_DB_RETRY)
			return rc;
	}
	return rc;
}
