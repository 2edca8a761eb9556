/*
 * Idempotency for every mutating route.  The key is scoped to the API
 * key.  The mutation's transaction starts by claiming the key (inserting
 * its record, still without an answer) and ends by writing the answer
 * into it, so the mutation, its events and the record commit together.
 * A key whose record has committed fails the claim on the duplicate key:
 * the stored answer is replayed (a different request under the same key
 * is refused with idempotency_conflict).  A key claimed by a transaction
 * still running fails the claim at once (no lock wait):
 * idempotency_in_progress.  Only a request that has lost its connection
 * claims with a lock wait: the holder may be its own lost attempt (see
 * run()).  Results below 500 are stored: a 4xx rolls back whatever the
 * handler did and stores only the answer; 5xx, 429 and 503 store nothing
 * and a retry executes.  Stored answers are sealed
 * (AES-256-GCM): they may hold guest details or a signing secret shown
 * once.
 *
 * A mutation may go to the server whole with its commit, in one round
 * trip: its answer is then made, and sealed, before the server has
 * worked out some of its numbers (a new walk-in's position).  The
 * mutation leaves those in @wl_patch as a JSON object; the record keeps
 * it beside the sealed answer, and its members go into the answer, the
 * first time and at every replay alike (answer()).  A check that the
 * server makes on the way (the guest allowance) refuses with the 4xx the
 * mutation has named (wl_ctx.refusal).
 */
#include "config.h"

#include <ctype.h>
#include <stdlib.h>

#include "extern.h"

struct idem {
	struct wl_ctx *ctx;
	wl_handler handler;
	char hash[65];
	long long mark; /* set in the session by this attempt's claim */
	unsigned long lost_before; /* wl_db_lost() when the request began */
	struct wl_rows *patch; /* @wl_patch, with the commit */
};

/* The request's hash, of its method, path and body; WL_ERR_NOMEM rather
 * than the hash of a part of it, which could match another request. */
static int
request_hash(const struct wl_ctx *ctx, char out[65])
{
	struct wl_buf b = {0};
	int rc;

	rc = wl_buf_printf(&b, "%s\n%s\n", ctx->http->method, ctx->http->path);
	if (rc == WL_OK && ctx->http->body_len > 0)
		rc = wl_buf_append(&b, ctx->http->body, ctx->http->body_len);
	if (rc == WL_OK)
		wl_sha256_hex(b.p, b.len, out);
	wl_buf_free(&b);
	return rc;
}

static int
key_valid(const char *k)
{
	size_t n = k ? strlen(k) : 0, i;

	if (n == 0 || n > 255)
		return 0;
	for (i = 0; i < n; i++)
		if (!isprint((unsigned char)k[i]))
			return 0;
	return 1;
}

/*
 * Reply with status and answer body text, and the members of patch (a
 * JSON object, or NULL) put into it.  The body is as stored; only an
 * error body names this request, not the first.
 */
static int
answer(struct wl_ctx *ctx, int status, const char *body, const char *patch)
{
	cJSON *root = cJSON_Parse(body), *p = NULL;
	int rc = WL_OK;

	if (root == NULL || (patch && (p = cJSON_Parse(patch)) == NULL))
		rc = WL_ERR_DB;
	else if (wl_json_fill(root, p) < 0 || wl_json_exact_numbers(root) < 0)
		rc = WL_ERR_NOMEM;
	else if (cJSON_GetObjectItemCaseSensitive(root, "requestId"))
		cJSON_ReplaceItemInObjectCaseSensitive(
		    root, "requestId",
		    cJSON_CreateString(ctx->resp->request_id));
	cJSON_Delete(p);
	if (rc != WL_OK) {
		cJSON_Delete(root);
		return rc;
	}
	return wl_reply_json(ctx, status, root);
}

/*
 * Replay the stored result, or refuse when the request differs.  Returns
 * 1 when answered, 0 when there is no record.
 */
static int
replay(struct wl_ctx *ctx, const char *hash, int *rc)
{
	struct wl_rows *rows = NULL;
	const char *stored, *sealed;
	char *body = NULL;
	size_t n;
	int status;

	*rc = wl_sql_exec(ctx->app->db, STMT_IDEM_GET,
			  SQL_ARGS(SQL_STR(ctx->key.id),
				   SQL_STR(ctx->http->idempotency_key)),
			  &rows, NULL);
	if (*rc != WL_OK)
		return 1;
	if (rows->nrows == 0) {
		wl_rows_free(rows);
		return 0;
	}
	stored = wl_rows_str(rows, 0, 0);
	status = (int)wl_rows_int(rows, 0, 1);
	sealed = wl_rows_str(rows, 0, 2);
	if (strcmp(stored, hash) != 0)
		wl_reply_error(ctx, WL_C_IDEMPOTENCY_CONFLICT,
			       "this Idempotency-Key was used for a different "
			       "request");
	else if (status == 0) /* an earlier version's record, still running */
		wl_reply_error(ctx, WL_C_IDEMPOTENCY_IN_PROGRESS,
			       "a request with this Idempotency-Key is still "
			       "running");
	else {
		wl_resp_header(ctx->resp, "Idempotency-Replayed", "true");
		if (sealed == NULL)
			wl_reply_empty(ctx, status);
		else if ((body = wl_unseal(ctx->app->secret, sealed, &n)) ==
			 NULL)
			*rc = WL_ERR_CRYPTO;
		else
			*rc = answer(ctx, status, body,
				     wl_rows_str(rows, 0, 3));
	}
	free(body);
	wl_rows_free(rows);
	return 1;
}

/*
 * Write the finished answer (status, sealed body): stmt STMT_IDEM_ANSWER
 * into the claimed record (with its patch, which comes back with the
 * commit into s->patch), or STMT_IDEM_INSERT as a new record
 * (WL_ERR_CONFLICT when the key already has one).
 */
static int
store(struct wl_ctx *ctx, enum wl_stmt stmt, struct idem *s)
{
	char *sealed = NULL;
	int rc;

	if (ctx->resp->body &&
	    (sealed = wl_seal(ctx->app->secret, ctx->resp->body,
			      ctx->resp->body_len)) == NULL)
		return WL_ERR_CRYPTO;
	if (stmt == STMT_IDEM_ANSWER) {
		rc = wl_sql_later(
		    ctx->app->db,
		    ctx->patched ? STMT_IDEM_ANSWER_PATCHED : STMT_IDEM_ANSWER,
		    SQL_ARGS(SQL_INT(ctx->resp->status), SQL_STR(sealed),
			     SQL_STR(ctx->key.id),
			     SQL_STR(ctx->http->idempotency_key)));
		if (rc == WL_OK && ctx->patched)
			rc = wl_sql_at_commit(ctx->app->db, STMT_IDEM_PATCH_GET,
					      &s->patch);
	} else
		rc = wl_sql_do(ctx->app->db, stmt,
			       SQL_ARGS(SQL_STR(ctx->key.id),
					SQL_STR(ctx->http->idempotency_key),
					SQL_STR(s->hash),
					SQL_INT(ctx->resp->status),
					SQL_STR(sealed), SQL_INT(wl_now_ms())));
	free(sealed);
	return rc;
}

/*
 * The transaction: the claim, the handler, then its 2xx/3xx answer into
 * the record.  Anything else rolls back (WL_ERR_INVALID).  The claim goes
 * to the server with the handler's first statement, so its failure may
 * be reported there: a session variable set right after it tells
 * whether it went through (see claimed()).
 */
static int
run(struct wl_db *db, void *arg)
{
	static long long attempts; /* of this process, whose session it is */
	struct idem *s = arg;
	struct wl_ctx *ctx = s->ctx;
	int rc;

	s->mark = ++attempts;
	/* A request that has lost its connection may find its key claimed
	 * by its own lost attempt, which the server has not yet rolled back
	 * (or is committing): its claim waits for that outcome, at most the
	 * session's lock wait.  (It cannot tell whose claim it waits for: a
	 * request that lost its connection and meets another request's claim
	 * is told in progress only after that wait.) */
	rc = wl_sql_later(db,
			  wl_db_lost(db) == s->lost_before
			      ? STMT_IDEM_CLAIM
			      : STMT_IDEM_CLAIM_WAIT,
			  SQL_ARGS(SQL_STR(ctx->key.id),
				   SQL_STR(ctx->http->idempotency_key),
				   SQL_STR(s->hash), SQL_INT(wl_now_ms())));
	if (rc == WL_OK)
		rc = wl_sql_later(db, STMT_IDEM_MARK,
				  SQL_ARGS(SQL_INT(s->mark)));
	if (rc != WL_OK)
		return rc;
	wl_resp_clear_body(ctx->resp); /* status 0: no answer yet */
	ctx->refusal_msg[0] = '\0';
	ctx->patched = 0;
	if ((rc = s->handler(ctx)) != WL_OK)
		return rc;
	if (ctx->resp->status == 0 || ctx->resp->status >= 400)
		return WL_ERR_INVALID;
	return store(ctx, STMT_IDEM_ANSWER, s);
}

/* Did the attempt's claim go through?  (Asked after a failure only.) */
static int
claimed(struct wl_ctx *ctx, const struct idem *s)
{
	struct wl_rows *rows = NULL;
	int yes = 1; /* unknown: the failure is the handler's */

	if (wl_sql_exec(ctx->app->db, STMT_IDEM_MARK_GET, SQL_NOARGS, &rows,
			NULL) == WL_OK &&
	    rows->nrows == 1)
		yes = wl_rows_int(rows, 0, 0) == s->mark;
	wl_rows_free(rows);
	return yes;
}

static int
in_progress(struct wl_ctx *ctx)
{
	wl_resp_clear_body(ctx->resp);
	return wl_reply_error(ctx, WL_C_IDEMPOTENCY_IN_PROGRESS,
			      "a request with this Idempotency-Key is still "
			      "running");
}

/*
 * Run a mutating handler under the request's Idempotency-Key.  The handler
 * runs inside the transaction (it must not open its own) and may run more
 * than once when the transaction is retried.  Returns like a handler.
 */
int
wl_idempotent(struct wl_ctx *ctx, wl_handler handler)
{
	struct idem s = {ctx, handler, "", 0, 0, NULL};
	const char *patch;
	int rc, status, lost;

	if (ctx->http->idempotency_key == NULL ||
	    *ctx->http->idempotency_key == '\0')
		return wl_reply_error(ctx, WL_C_IDEMPOTENCY_KEY_REQUIRED,
				      "the Idempotency-Key header is required");
	if (!key_valid(ctx->http->idempotency_key))
		return wl_reply_error(ctx, WL_C_INVALID_REQUEST,
				      "Idempotency-Key must be 1 to 255 "
				      "printable ASCII characters");
	if ((rc = request_hash(ctx, s.hash)) != WL_OK)
		return rc;
	s.lost_before = wl_db_lost(ctx->app->db);
	for (lost = 0;; lost++) {
		rc = wl_db_txn(ctx->app->db, run, &s);
		/* The connection was lost, perhaps with the commit: whether
		 * the transaction took place, its record tells.  If it did
		 * not, it runs once more. */
		if (rc != WL_ERR_DB_GONE || lost)
			break;
		wl_resp_clear_body(ctx->resp);
		if (replay(ctx, s.hash, &rc))
			return rc;
	}
	if (rc == WL_OK && ctx->patched) {
		patch = wl_rows_str(s.patch, 0, 0);
		rc = answer(ctx, ctx->resp->status, ctx->resp->body,
			    patch ? patch : "");
	}
	wl_rows_free(s.patch);
	if (rc == WL_ERR_REFUSED && ctx->refusal_msg[0]) {
		wl_resp_clear_body(ctx->resp);
		wl_reply_error(ctx, ctx->refusal, "%s", ctx->refusal_msg);
		rc = WL_ERR_INVALID;
	}
	status = ctx->resp->status;
	/* The claim failed on a lock: another request holds the key.  (A
	 * lock wait of the handler's own is a 503, as anywhere.) */
	if (rc == WL_ERR_BUSY && !claimed(ctx, &s))
		return in_progress(ctx);
	/* A 4xx: what the handler did is rolled back; store the answer
	 * (unless another request with the key has claimed it meanwhile). */
	if (rc == WL_ERR_INVALID && status >= 400 && status < 500 &&
	    status != 429) {
		if ((rc = store(ctx, STMT_IDEM_INSERT, &s)) == WL_ERR_BUSY)
			return in_progress(ctx);
	} else if (rc == WL_ERR_INVALID)
		return WL_OK; /* the handler's own 5xx/429 answer stands */
	if (rc == WL_ERR_CONFLICT) {
		/* The key has a record: an earlier request's, or (for a 4xx
		 * stored after the rollback) one that committed meanwhile. */
		wl_resp_clear_body(ctx->resp);
		if (replay(ctx, s.hash, &rc))
			return rc;
		return in_progress(ctx);
	}
	return rc;
}
