/*
 * GET /events: the feed, read in the per-tenant sequence (commit order,
 * see outbox.c) and never past a gap; and retention.
 *
 * The cursor holds the last sequence the reader has been shown or passed
 * over.  Filters (types, business, line, the key's restrictions) are
 * applied while scanning forward, so the cursor advances over events the
 * reader does not want and a filtered poll does not rescan them.
 */
#include "config.h"

#include <stdlib.h>

#include "extern.h"

#define SCAN_MAX 500 /* rows examined per request */

struct feed_filter {
	unsigned types;	/* bit per enum wl_event_type; 0: all */
	char business[WL_ID_PARAM_BYTES];
	char queue[WL_ID_PARAM_BYTES];
};

/* Read and check the filters; 0, or -1 after a 4xx reply, or >0 error. */
static int
filters_read(struct wl_ctx *ctx, struct feed_filter *f, char *canon,
	     size_t canonsz)
{
	char types[1024];
	char **v = NULL;
	size_t n = 0, i;
	int rc, t;

	memset(f, 0, sizeof(*f));
	rc = wl_query_get(ctx->http->query, "types", types, sizeof(types));
	if (rc < 0 || (rc > 0 && wl_split_list(types, &v, &n) <= 0))
		goto bad_types;
	for (i = 0; i < n; i++) {
		t = wl_name_index(wl_event_type_names, WL_EV__MAX, v[i]);
		if (t < 0)
			goto bad_types;
		f->types |= 1u << t;
	}
	wl_strv_free(v, n);
	v = NULL;
	if (rc > 0 && (strstr(types, ",,") != NULL || types[0] == ',' ||
		       types[strlen(types) - 1] == ','))
		goto bad_types;
	rc = wl_query_get(ctx->http->query, "businessId", f->business,
			  sizeof(f->business));
	if (rc < 0 || (rc > 0 && !wl_business_id_valid(f->business)))
		return wl_reply_error(ctx, WL_C_VALIDATION_FAILED,
				      "businessId must be 1 to 160 "
				      "characters"), -1;
	if (rc > 0) {
		if ((rc = wl_business_find(ctx, f->business, NULL)) < 0)
			return -rc;
		if (rc == 0)
			return wl_reply_error(ctx, WL_C_NOT_FOUND,
					      "business not found"), -1;
		if (rc == 2)
			return wl_reply_error(ctx, WL_C_RESOURCE_FORBIDDEN,
					      "businessId is outside this "
					      "key's restrictions"), -1;
	}
	rc = wl_query_get(ctx->http->query, "queueId", f->queue,
			  sizeof(f->queue));
	if (rc < 0 || (rc > 0 && !wl_business_id_valid(f->queue)))
		return wl_reply_error(ctx, WL_C_VALIDATION_FAILED,
				      "queueId must be 1 to 160 characters"),
		       -1;
	if (rc > 0) {
		if ((rc = wl_queue_find(ctx, f->queue, NULL)) < 0)
			return -rc;
		if (rc == 0)
			return wl_reply_error(ctx, WL_C_NOT_FOUND,
					      "queue not found"), -1;
		if (rc == 2)
			return wl_reply_error(ctx, WL_C_RESOURCE_FORBIDDEN,
					      "queueId is outside this key's "
					      "restrictions"), -1;
	}
	snprintf(canon, canonsz, "types=%u&businessId=%s&queueId=%s",
		 f->types, f->business, f->queue);
	return 0;
bad_types:
	wl_strv_free(v, n);
	wl_reply_error(ctx, WL_C_VALIDATION_FAILED,
		       "types must be a comma-separated list of event types");
	return -1;
}

static int
wanted(const struct wl_ctx *ctx, const struct feed_filter *f,
       const struct wl_rows *rows, size_t r)
{
	const char *biz = wl_rows_str(rows, r, 2), *queue = wl_rows_str(rows, r, 3);
	int t = wl_name_index(wl_event_type_names, WL_EV__MAX,
			      wl_rows_str(rows, r, 1));

	if (f->types && (t < 0 || !((f->types >> t) & 1)))
		return 0;
	if (*f->business && strcmp(f->business, biz) != 0)
		return 0;
	if (*f->queue && strcmp(f->queue, queue) != 0)
		return 0;
	return wl_key_allows_queue(&ctx->key, biz, queue);
}

/* GET /events?cursor=&limit=&types=&businessId=&queueId= */
int
wl_h_events(struct wl_ctx *ctx)
{
	struct wl_rows *rows = NULL, *ctr = NULL;
	struct feed_filter f;
	char canon[64 + 2 * WL_ID_PARAM_BYTES], pos[32];
	long long after = 0, last, purged;
	cJSON *root = NULL, *a;
	int limit, rc, shown = 0, more = 0;
	size_t r, n;

	if ((rc = filters_read(ctx, &f, canon, sizeof(canon))) != 0)
		return rc < 0 ? WL_OK : rc;
	if (wl_page_params(ctx, canon, &limit, pos, sizeof(pos)) < 0)
		return WL_OK;
	if (*pos)
		after = strtoll(pos, NULL, 10);
	rc = wl_sql_exec(ctx->app->db, STMT_COUNTER_GET,
			 SQL_ARGS(SQL_STR(ctx->key.tenant.id)), &ctr, NULL);
	if (rc != WL_OK)
		return rc;
	purged = wl_rows_int(ctr, 0, 1);
	wl_rows_free(ctr);
	if (*pos && after < purged)
		return wl_reply_error(ctx, WL_C_CURSOR_EXPIRED,
				      "the cursor is older than the feed's "
				      "seven-day window; restart without a "
				      "cursor");
	if (after < purged)
		after = purged;
	/* One row past the scan tells whether anything follows it. */
	rc = wl_sql_exec(ctx->app->db, STMT_EVENT_SCAN,
			 SQL_ARGS(SQL_STR(ctx->key.tenant.id), SQL_INT(after),
				  SQL_INT(SCAN_MAX + 1)),
			 &rows, NULL);
	if (rc != WL_OK)
		return rc;
	n = rows->nrows > SCAN_MAX ? SCAN_MAX : rows->nrows;
	root = cJSON_CreateObject();
	a = cJSON_AddArrayToObject(root, "events");
	last = after;
	for (r = 0; r < n; r++) {
		long long seq = wl_rows_int(rows, r, 0);
		if (seq != last + 1)
			break; /* never read past a gap */
		if (wanted(ctx, &f, rows, r)) {
			if (shown == limit) {
				more = 1;
				break;
			}
			cJSON_AddItemToArray(a,
					     cJSON_CreateRaw(wl_rows_str(rows, r, 4)));
			shown++;
		}
		last = seq;
	}
	if (r == n && rows->nrows > SCAN_MAX &&
	    wl_rows_int(rows, n, 0) == last + 1)
		more = 1;
	wl_rows_free(rows);
	snprintf(pos, sizeof(pos), "%lld", last);
	if ((rc = wl_page_next(ctx, root, canon, pos)) != WL_OK) {
		cJSON_Delete(root);
		return rc;
	}
	wl_json_add_bool(root, "hasMore", more);
	return wl_reply_json(ctx, 200, root);
}

/* Run a purging DELETE (STMT_PURGE_*, with a LIMIT) until it deletes
 * nothing; *count adds what it deleted. */
static int
purge_batches(struct wl_db *db, enum wl_stmt stmt,
	      const struct wl_sqlval *args, size_t nargs, long long *count)
{
	unsigned long long n;
	int rc;

	do {
		n = 0;
		rc = wl_sql_exec(db, stmt, args, nargs, NULL, &n);
		*count += (long long)n;
	} while (rc == WL_OK && n > 0);
	return rc;
}

/*
 * Webhook subscriptions whose fan-out has not reached events about to be
 * purged (their deliverers down for days) go on after them: those events
 * can no longer be sent, and the fan-out, which never passes a gap in
 * the numbers, would wait for them for ever.
 */
static int
purge_fanout(struct wl_db *db, const char *tenant, long long upto)
{
	unsigned long long n = 0;
	int rc;

	rc = wl_sql_exec(db, STMT_PURGE_FANOUT,
			 SQL_ARGS(SQL_INT(upto), SQL_STR(tenant),
				  SQL_INT(upto)),
			 NULL, &n);
	if (rc == WL_OK && n > 0)
		wl_log(WL_LOG_WARN,
		       "\"msg\":\"events purged before their fan-out\","
		       "\"tenantId\":\"%s\",\"subscriptions\":%llu,"
		       "\"upToSeq\":%lld",
		       tenant, n, upto);
	return rc;
}

/*
 * Retention: events older than seven days (recording per tenant how far
 * the feed has been cut, so older cursors are refused; the cut stops
 * before the first event still inside the window, so that none younger
 * goes even where clocks gave an event an older time than one numbered
 * before it), idempotency
 * records older than 24 hours, and finished delivery records (succeeded
 * or failed) last changed more than seven days ago, as long as the events
 * they delivered are kept.  Deletes in small batches.
 */
int
wl_purge(struct wl_db *db, int64_t now, struct wl_purged *p)
{
	struct wl_rows *rows = NULL, *kept = NULL;
	int64_t cut = now - WL_EVENT_RETENTION_MS;
	char before[WL_ID_MAX];
	size_t r;
	int rc;

	memset(p, 0, sizeof(*p));
	rc = wl_sql_exec(db, STMT_PURGE_EVENT_TENANTS, SQL_ARGS(SQL_INT(cut)),
			 &rows, NULL);
	for (r = 0; rc == WL_OK && r < rows->nrows; r++) {
		const char *tenant = wl_rows_str(rows, r, 0);
		long long upto = wl_rows_int(rows, r, 1);
		rc = wl_sql_exec(db, STMT_PURGE_FIRST_KEPT,
				 SQL_ARGS(SQL_STR(tenant), SQL_INT(cut)), &kept,
				 NULL);
		if (rc == WL_OK && kept->nrows == 1 &&
		    wl_rows_int(kept, 0, 0) - 1 < upto)
			upto = wl_rows_int(kept, 0, 0) - 1;
		wl_rows_free(kept);
		kept = NULL;
		if (rc == WL_OK)
			rc = wl_sql_do(db, STMT_PURGE_MARK,
			       SQL_ARGS(SQL_INT(upto), SQL_STR(tenant)));
		if (rc == WL_OK)
			rc = purge_fanout(db, tenant, upto);
		if (rc == WL_OK)
			rc = purge_batches(db, STMT_PURGE_EVENTS,
					   SQL_ARGS(SQL_STR(tenant),
						    SQL_INT(upto)),
					   &p->events);
	}
	wl_rows_free(rows);
	if (rc == WL_OK)
		rc = purge_batches(db, STMT_PURGE_IDEMPOTENCY,
				   SQL_ARGS(SQL_INT(now -
						    WL_IDEMPOTENCY_KEEP_MS)),
				   &p->idempotency);
	if (rc == WL_OK)
		rc = wl_id_at("dlv_", cut, before);
	if (rc == WL_OK)
		rc = purge_batches(db, STMT_PURGE_DELIVERIES,
				   SQL_ARGS(SQL_STR(before), SQL_INT(cut)),
				   &p->deliveries);
	return rc;
}
