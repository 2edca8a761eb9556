/*
 * The database handle, shared by sql.c (connections, statements) and
 * txn.c (transactions and the batch of writes sent with the next
 * statement).  Nothing else includes this.
 */
#ifndef WL_DB_H
#define WL_DB_H

#include <mysql.h>

#define BATCH_MAX 24    /* statements sent as one compound statement */
#define BATCH_ARGS 2048 /* their parameters */
#define COMPOUNDS 32    /* compound statements kept prepared per connection */

/* A compound statement: the statements ids[0..n) in one BEGIN ... END. */
struct compound {
	unsigned short ids[BATCH_MAX + 1];
	size_t n;
	MYSQL_STMT *s;
	unsigned long long used;
};

struct wl_db {
	const struct wl_config *cfg;
	MYSQL *conn;
	MYSQL_STMT *stmt[STMT__MAX];
	int in_txn;
	int sent; /* the transaction has reached the server */
	unsigned last_errno;
	unsigned long lost; /* connections lost (wl_db_lost()) */
	unsigned rw_timeout; /* s; 0: none (wl_db_unhurried()) */
	unsigned long long insert_id;
	char err[512];
	/*
	 * The statements that go with the next one (wl_sql_later()): ids,
	 * arguments, and the arguments' strings (a WL_SQL_STR's s is an
	 * offset into strs until the batch is sent).
	 */
	unsigned short later[BATCH_MAX];
	size_t nlater;
	struct wl_sqlval largs[BATCH_ARGS];
	size_t nlargs;
	struct wl_buf strs;
	struct wl_rows **at_commit; /* see wl_sql_at_commit() */
	enum wl_stmt at_commit_id;
	struct compound comp[COMPOUNDS];
	unsigned long long uses;
	/* Binding a batch's arguments (db_send_later(), db_execute()): too
	 * much for a thread's stack. */
	struct wl_sqlval all[BATCH_ARGS];
	MYSQL_BIND bind[BATCH_ARGS];
	unsigned long lens[BATCH_ARGS];
	long long ints[BATCH_ARGS];
};

int db_fail(struct wl_db *, unsigned e, const char *msg);
int db_ensure(struct wl_db *);
MYSQL_STMT *db_prepare(struct wl_db *, const char *sql, size_t len);
int db_prepare_failed(struct wl_db *);
int db_execute(struct wl_db *, MYSQL_STMT *, const struct wl_sqlval *,
	       size_t nargs);
int db_answer(struct wl_db *, MYSQL_STMT *, struct wl_rows **rows,
	      unsigned long long *affected);
int db_any_non_ascii(const struct wl_sqlval *, size_t nargs);
int db_send_later(struct wl_db *, enum wl_stmt, const struct wl_sqlval *,
		  size_t nargs, struct wl_rows **rows);
void db_close_compounds(struct wl_db *);
void db_backoff(unsigned attempt);

#endif
