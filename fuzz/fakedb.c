/*
 * A stand-in for lib/sql.c and lib/txn.c in the fuzz targets: no MariaDB,
 * no sockets.  The one key lookup that matches FUZZ_KEY answers with an
 * active tenant holding every scope; every other statement succeeds with
 * an empty result.  So a request passes routing, authentication, rate limits,
 * scopes and idempotency, its body and query are validated in full, and
 * whatever it names is then simply not found.
 */
#include "config.h"

#include <stdlib.h>

#include "extern.h"
#include "fuzz.h"

struct wl_db {
	const struct wl_config *cfg;
};

#define KEY_COLS 26 /* 8 key columns, then TENANT_COLS */

static const char *const key_row[KEY_COLS] = {
    "key_fuzz", NULL /* the digest */,
    "waitlist:read,waitlist:write,"
    "guest:read,events:read,webhooks:read,webhooks:write,analytics:read",
    "[]", "[]", "api", "0", NULL,
    /* TENANT_COLS */
    "ten_fuzz", "fuzz tenant", "pro", "1", "1", "1", "active", "1", "1",
    "1000000", "1000000", "1000000", "1000000", "1000000", "10", "10", "90",
    "365"};

static struct wl_rows *
rows_new(size_t nrows, size_t ncols)
{
	struct wl_rows *r = calloc(1, sizeof(*r));

	if (r == NULL)
		abort();
	r->nrows = nrows;
	r->ncols = ncols;
	r->cell = calloc(nrows * ncols + 1, sizeof(char *));
	r->len = calloc(nrows * ncols + 1, sizeof(unsigned long));
	if (r->cell == NULL || r->len == NULL)
		abort();
	return r;
}

static void
rows_set(struct wl_rows *r, size_t c, const char *s)
{
	if (s == NULL)
		return;
	if ((r->cell[c] = strdup(s)) == NULL)
		abort();
	r->len[c] = strlen(s);
}

static struct wl_rows *
key_rows(const struct wl_sqlval *args, size_t nargs)
{
	char digest[65];
	struct wl_rows *r;
	size_t c;

	wl_sha256_hex(FUZZ_KEY, strlen(FUZZ_KEY), digest);
	if (nargs != 1 || args[0].type != WL_SQL_STR || args[0].len != 64 ||
	    memcmp(args[0].s, digest, 64) != 0)
		return rows_new(0, KEY_COLS);
	r = rows_new(1, KEY_COLS);
	for (c = 0; c < KEY_COLS; c++)
		rows_set(r, c, c == 1 ? digest : key_row[c]);
	return r;
}

struct wl_db *
wl_db_new(const struct wl_config *cfg, char *err, size_t errsz)
{
	struct wl_db *db = calloc(1, sizeof(*db));

	(void)err;
	(void)errsz;
	if (db)
		db->cfg = cfg;
	return db;
}

void
wl_db_free(struct wl_db *db)
{
	free(db);
}

const char *
wl_db_error(struct wl_db *db)
{
	(void)db;
	return "";
}

unsigned
wl_db_errno(struct wl_db *db)
{
	(void)db;
	return 0;
}

unsigned long
wl_db_lost(const struct wl_db *db)
{
	(void)db;
	return 0;
}

void
wl_db_unhurried(struct wl_db *db)
{
	(void)db;
}

int
wl_sql_exec(struct wl_db *db, enum wl_stmt id, const struct wl_sqlval *args,
            size_t nargs, struct wl_rows **rows, unsigned long long *affected)
{
	(void)db;
	if (affected)
		*affected = 0;
	if (rows)
		*rows = id == STMT_KEY_BY_DIGEST ? key_rows(args, nargs)
		                                 : rows_new(0, 64);
	return WL_OK;
}

int
wl_sql_do(struct wl_db *db, enum wl_stmt id, const struct wl_sqlval *args,
          size_t nargs)
{
	return wl_sql_exec(db, id, args, nargs, NULL, NULL);
}

int
wl_sql_raw(struct wl_db *db, const char *sql)
{
	(void)db;
	(void)sql;
	return WL_OK;
}

int
wl_sql_later(struct wl_db *db, enum wl_stmt id, const struct wl_sqlval *args,
             size_t nargs)
{
	return wl_sql_exec(db, id, args, nargs, NULL, NULL);
}

int
wl_sql_at_commit(struct wl_db *db, enum wl_stmt id, struct wl_rows **rows)
{
	return wl_sql_exec(db, id, SQL_NOARGS, rows, NULL);
}

int
wl_sql_do_id(struct wl_db *db, enum wl_stmt id, const struct wl_sqlval *args,
             size_t nargs, unsigned long long *value)
{
	*value = 1;
	return wl_sql_exec(db, id, args, nargs, NULL, NULL);
}

int
wl_db_begin(struct wl_db *db)
{
	(void)db;
	return WL_OK;
}

int
wl_db_commit(struct wl_db *db)
{
	(void)db;
	return WL_OK;
}

int
wl_db_rollback(struct wl_db *db)
{
	(void)db;
	return WL_OK;
}

int
wl_db_txn(struct wl_db *db, int (*fn)(struct wl_db *, void *), void *arg)
{
	return fn(db, arg);
}

