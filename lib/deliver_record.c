/*
 * What follows an attempt, and its record: the retry policy (backoff,
 * Retry-After, the limits), the outcome of each finished attempt written
 * in one transaction per batch, and the ranges of new events a deliverer
 * holds, each given up (deleted) in the transaction that records its
 * last send.  A retry updates its delivery's record; a first attempt
 * creates it.
 */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>

#include <curl/curl.h>

#include "extern.h"

#define RETRY_AFTER_CAP_S 3600

/*
 * Seconds asked by a Retry-After value (delta-seconds or an HTTP date),
 * at least 0; -1 when absent or unparseable.
 */
long
wl_retry_after_parse(const char *v, int64_t now_ms)
{
	const char *p;
	time_t t;
	long n = 0;

	if (v == NULL)
		return -1;
	while (*v == ' ' || *v == '\t')
		v++;
	if (*v == '\0')
		return -1;
	for (p = v; *p >= '0' && *p <= '9'; p++)
		n = n > 100000000 ? n : n * 10 + (*p - '0');
	while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
		p++;
	if (p > v && *p == '\0')
		return n;
	if ((t = curl_getdate(v, NULL)) == -1)
		return -1;
	/* A date centuries ahead is as good as never; in milliseconds it
	 * would overflow. */
	if (t > (time_t)1 << 40)
		t = (time_t)1 << 40;
	return t * 1000LL > now_ms ? (long)((t * 1000LL - now_ms + 999) / 1000)
				   : 0;
}

/*
 * Delay before attempt number `attempt` + 1 (attempt >= 1 failed so far):
 * exponential with full jitter, random in [0, min(cap, base * 2^(n-1))],
 * at least one second; a Retry-After value replaces it, capped at an
 * hour.  random is a uniformly random number (passed in for tests).
 */
int64_t
wl_backoff_ms(const struct wl_config *cfg, int attempt, long retry_after,
	      unsigned random)
{
	int64_t cap = (int64_t)cfg->retry_cap_seconds * 1000,
		top = (int64_t)cfg->retry_base_seconds * 1000;
	int i;

	if (retry_after >= 0)
		return (retry_after > RETRY_AFTER_CAP_S ? RETRY_AFTER_CAP_S
							: (retry_after < 1 ? 1
									   : retry_after)) *
		       1000LL;
	for (i = 1; i < attempt && top < cap; i++)
		top *= 2;
	if (top > cap)
		top = cap;
	top = (int64_t)(random % (uint64_t)(top + 1));
	return top < 1000 ? 1000 : top;
}

static const char *
error_class(const struct wl_send_result *res)
{
	if (res->timed_out)
		return "timeout";
	if (res->http_status == 0)
		return "network";
	if (res->http_status >= 200 && res->http_status < 300)
		return NULL;
	return "http";
}

/* What one attempt leads to, decided before the transaction that
 * writes it (so that a retried transaction writes the same thing). */
struct outcome {
	const struct wl_send *s;
	const struct wl_send_result *res; /* NULL: failed unsent */
	const char *status;
	int count;
	int64_t next;
	char *text; /* the attempt records with this one appended */
};

/*
 * Decide what follows an attempt: 2xx succeeded; 410 failed (and the
 * subscription disabled, by the caller); network errors, timeouts, 408,
 * 429 and 5xx retried with backoff until the attempt or age limit;
 * anything else (3xx, other 4xx, a status past 599) failed.  Appends
 * the redacted attempt record.  Without an attempt (res NULL): failed.
 */
static int
decide(const struct wl_config *cfg, const struct wl_send *s,
       const struct wl_send_result *res, int64_t now, struct outcome *o)
{
	int st = res ? res->http_status : 0;
	int retry = res && (res->timed_out || st == 0 || st == 408 ||
			    st == 429 || (st >= 500 && st <= 599));
	cJSON *attempts = cJSON_Parse(s->attempts ? s->attempts : "[]"), *a;
	unsigned rnd = 0;

	o->s = s;
	o->res = res;
	o->status = "failed";
	o->count = s->attempt_count + (res != NULL);
	o->next = now;
	if (res && st >= 200 && st < 300)
		o->status = "succeeded";
	else if (retry && !s->manual && o->count < (int)cfg->max_attempts) {
		wl_random_bytes(&rnd, sizeof(rnd));
		o->next = now + wl_backoff_ms(cfg, o->count, res->retry_after,
					      rnd);
		if (o->next < s->created_at + cfg->max_age_seconds * 1000LL)
			o->status = "pending";
	}
	if (attempts == NULL)
		attempts = cJSON_CreateArray();
	if (res) {
		a = cJSON_CreateObject();
		cJSON_AddItemToArray(attempts, a);
		wl_json_add_ts(a, "attemptedAt", res->attempted_at);
		if (st > 0)
			wl_json_add_int(a, "responseStatus", st);
		else
			cJSON_AddNullToObject(a, "responseStatus");
		wl_json_add_int(a, "durationMs", res->duration_ms);
		wl_json_add_str(a, "errorClass", error_class(res));
	}
	o->text = cJSON_PrintUnformatted(attempts);
	cJSON_Delete(attempts);
	return o->text == NULL ? WL_ERR_NOMEM : WL_OK;
}

/* The held range of sub from first, or -1. */
static long
range_of(const struct wl_ranges *rs, const char *sub, int64_t first)
{
	size_t i;

	for (i = 0; i < rs->n; i++)
		if (rs->v[i].first_seq == first &&
		    strcmp(rs->v[i].subscription_id, sub) == 0)
			return (long)i;
	return -1;
}

/* Hold a new range with `left` sends to settle. */
int
wl_ranges_add(struct wl_ranges *rs, const char *sub, int64_t first,
	      unsigned left)
{
	struct wl_range *v;
	size_t cap;
	long i;
	int rc = WL_OK;

	pthread_mutex_lock(&rs->mu);
	if ((i = range_of(rs, sub, first)) >= 0) {
		/* Held already: taken over from itself, its lease having run
		 * out with sends still to settle.  Those settle too, so they
		 * still count: counting only the new sends would let the range
		 * go (STMT_RANGE_DONE) while events of the old ones are not
		 * recorded yet.  The new sends are of every event left
		 * unrecorded, so an earlier give-back is covered by them. */
		rs->v[i].left += left;
		rs->v[i].given_back = 0;
		goto out;
	}
	if (rs->n == rs->cap) {
		cap = rs->cap ? rs->cap * 2 : 16;
		if ((v = realloc(rs->v, cap * sizeof(*v))) == NULL) {
			rc = WL_ERR_NOMEM;
			goto out;
		}
		rs->v = v;
		rs->cap = cap;
	}
	v = &rs->v[rs->n++];
	memset(v, 0, sizeof(*v));
	snprintf(v->subscription_id, sizeof(v->subscription_id), "%s", sub);
	v->first_seq = first;
	v->left = left;
out:
	pthread_mutex_unlock(&rs->mu);
	return rc;
}

/*
 * One send of a range is settled (recorded, or given back unsent).  When
 * it was the range's last, the range is let go of here and copied to
 * *done: the caller deletes it (or gives it back) in the transaction
 * that settles that send.  If that transaction fails, its lease expires
 * and another look takes it over.  Returns 1 when *done was filled.
 */
static int
range_settle(struct wl_ranges *rs, const struct wl_send *s, int given_back,
	     struct wl_range *done)
{
	long i;
	int settled = 0;

	if (s->range_first == 0)
		return 0;
	pthread_mutex_lock(&rs->mu);
	i = range_of(rs, s->subscription_id, s->range_first);
	if (i >= 0) {
		rs->v[i].given_back |= given_back;
		if (rs->v[i].left > 0)
			rs->v[i].left--;
		if (rs->v[i].left == 0) {
			*done = rs->v[i];
			rs->v[i] = rs->v[--rs->n];
			settled = 1;
		}
	}
	pthread_mutex_unlock(&rs->mu);
	return settled;
}

/* Whether o is a first attempt, whose record does not exist yet. */
static int
is_first(const struct outcome *o)
{
	return o->s->range_first != 0;
}

/*
 * The record of n outcomes failed: the ranges of its first attempts that
 * are still held are to be given back, not deleted, when their last send
 * settles, so that their events without a record go out again (taken
 * over: STMT_RANGE_LEFT).  A range already let go of by this batch keeps
 * its row, leased to this deliverer until it is taken over.
 */
static void
ranges_unrecorded(struct wl_ranges *rs, const struct outcome *v, size_t n)
{
	size_t i;
	long r;

	pthread_mutex_lock(&rs->mu);
	for (i = 0; i < n; i++)
		if (is_first(&v[i]) &&
		    (r = range_of(rs, v[i].s->subscription_id,
				  v[i].s->range_first)) >= 0)
			rs->v[r].given_back = 1;
	pthread_mutex_unlock(&rs->mu);
}

void
wl_ranges_init(struct wl_ranges *rs)
{
	memset(rs, 0, sizeof(*rs));
	pthread_mutex_init(&rs->mu, NULL);
}

void
wl_ranges_free(struct wl_ranges *rs)
{
	free(rs->v);
	rs->v = NULL;
	rs->n = rs->cap = 0;
	pthread_mutex_destroy(&rs->mu);
}

struct record {
	const char *owner;
	struct outcome *v;
	size_t n;
	char *retries;		/* see retries_json(); NULL: none */
	struct wl_range *done;	/* ranges settled by this batch */
	size_t ndone;
	int64_t now;
};

/* v, or SQL NULL when 0 (never attempted). */
static struct wl_sqlval
ms_or_null(int64_t v)
{
	return v ? SQL_INT(v) : SQL_NULL;
}


/*
 * The ranges of the batch's first attempts, as STMT_RANGES_HELD takes
 * them: [[subscription_id, first_seq], ...], each once.
 */
static char *
ranges_json(const struct record *b)
{
	cJSON *all = cJSON_CreateArray(), *row;
	const struct wl_send *s;
	size_t i, j;
	char *out = NULL;

	for (i = 0; all && i < b->n; i++) {
		s = b->v[i].s;
		if (!is_first(&b->v[i]))
			continue;
		for (j = 0; j < i; j++)
			if (b->v[j].s->range_first == s->range_first &&
			    strcmp(b->v[j].s->subscription_id,
				   s->subscription_id) == 0)
				break;
		if (j < i)
			continue; /* listed already */
		if ((row = cJSON_CreateArray()) == NULL ||
		    !cJSON_AddItemToArray(all, row)) {
			cJSON_Delete(row);
			goto out;
		}
		cJSON_AddItemToArray(row,
				     cJSON_CreateString(s->subscription_id));
		cJSON_AddItemToArray(row, wl_json_int(s->range_first));
		if (cJSON_GetArraySize(row) != 2)
			goto out;
	}
	if (all)
		out = cJSON_PrintUnformatted(all);
out:
	cJSON_Delete(all);
	return out;
}

/* The tenant of o's range among the held ones, or NULL: not held.
 * *live: its subscription is active since before the range. */
static const char *
held_tenant(const struct wl_rows *held, const struct outcome *o, int *live)
{
	size_t r;

	for (r = 0; r < held->nrows; r++)
		if (wl_rows_int(held, r, 1) == o->s->range_first &&
		    strcmp(wl_rows_str(held, r, 0), o->s->subscription_id) ==
			0) {
			*live = wl_rows_int(held, r, 3) != 0;
			return wl_rows_str(held, r, 2);
		}
	return NULL;
}

/* Bind o's record, of tenant, as a row of STMT_RECORD_NEW.  Not live
 * (see held_tenant()), its subscription was paused, disabled or resumed
 * since it was read: a retry it would have had is given up (failed, and
 * skipped, as STMT_DELIVERY_FAIL_PENDING leaves the pending ones). */
static struct wl_sqlval *
first_row(struct wl_sqlval *a, const struct outcome *o, const char *tenant,
	  int live, int64_t now)
{
	int given_up = !live && strcmp(o->status, "pending") == 0;

	*a++ = SQL_STR(o->s->delivery_id);
	*a++ = SQL_STR(tenant);
	*a++ = SQL_STR(o->s->subscription_id);
	*a++ = SQL_INT(o->s->event_seq);
	*a++ = SQL_STR(o->s->event_id);
	*a++ = SQL_STR(o->s->event_type);
	*a++ = SQL_STR(given_up ? "failed" : o->status);
	*a++ = SQL_INT(given_up);
	*a++ = SQL_INT(o->count);
	*a++ = SQL_INT(o->next);
	*a++ = ms_or_null(o->res ? o->res->attempted_at : 0);
	*a++ = SQL_STR(o->text);
	*a++ = SQL_INT(o->s->created_at);
	*a++ = SQL_INT(now);
	return a;
}

/*
 * Create the records of the batch's first attempts whose ranges are
 * still held (STMT_RANGES_HELD; its answer is the one the transaction
 * waits for), WL_RECORD_NEW_ROWS to a STMT_RECORD_NEW.  Those of a range
 * no longer ours, or of a subscription deleted, are left out.  Of a
 * subscription paused, disabled or resumed since the claim, only the
 * attempts made are recorded (the attempt is the endpoint's, and stays to
 * be seen); one never made (a destination refused) is of the paused
 * period, and gets none.
 */
static int
record_firsts(struct wl_db *db, const struct record *b)
{
	struct wl_sqlval args[WL_RECORD_NEW_ROWS * WL_RECORD_NEW_COLS], *a;
	struct wl_rows *held = NULL;
	const char *tenant;
	char *ranges;
	size_t i, k;
	int rc, live = 1;

	for (i = 0; i < b->n && !is_first(&b->v[i]); i++)
		;
	if (i == b->n)
		return WL_OK;
	if ((ranges = ranges_json(b)) == NULL)
		return WL_ERR_NOMEM;
	rc = wl_sql_exec(db, STMT_RANGES_HELD,
			 SQL_ARGS(SQL_STR(ranges), SQL_STR(b->owner)), &held,
			 NULL);
	free(ranges);
	for (a = args, k = 0; rc == WL_OK && i <= b->n; i++) {
		tenant = i < b->n && is_first(&b->v[i])
			     ? held_tenant(held, &b->v[i], &live)
			     : NULL;
		if (tenant && (live || b->v[i].res)) {
			a = first_row(a, &b->v[i], tenant, live, b->now);
			k++;
		}
		if (k == 0 || (k < WL_RECORD_NEW_ROWS && i < b->n))
			continue;
		/* Full, or the last: copies of its first row fill it. */
		for (; k < WL_RECORD_NEW_ROWS; k++) {
			memcpy(a, args, WL_RECORD_NEW_COLS * sizeof(*a));
			a += WL_RECORD_NEW_COLS;
		}
		rc = wl_sql_later(db, STMT_RECORD_NEW, args,
				  WL_RECORD_NEW_ROWS * WL_RECORD_NEW_COLS);
		a = args;
		k = 0;
	}
	wl_rows_free(held);
	return rc;
}

/* Write every outcome, in one statement for the retries and one for
 * every WL_RECORD_NEW_ROWS first attempts, and let go of the ranges the
 * batch settles; a record whose lease or range is no longer ours is
 * left as it is, or not created.
 * The 410s come last, so that the pending deliveries they fail stay
 * failed whatever else the batch holds.  A 410 to an attempt read before
 * the subscription's last resume disables nothing. */
static int
record_txn(struct wl_db *db, void *arg)
{
	struct record *b = arg;
	const struct wl_range *r;
	size_t i;
	int rc = WL_OK;

	if (b->retries)
		rc = wl_sql_later(db, STMT_RECORD,
				  SQL_ARGS(SQL_STR(b->retries),
					   SQL_INT(b->now),
					   SQL_STR(b->owner)));
	if (rc == WL_OK)
		rc = record_firsts(db, b);
	for (i = 0; rc == WL_OK && i < b->ndone; i++) {
		r = &b->done[i];
		rc = wl_sql_later(db,
				  r->given_back ? STMT_RANGE_GIVE_BACK
						: STMT_RANGE_DONE,
				  SQL_ARGS(SQL_STR(r->subscription_id),
					   SQL_INT(r->first_seq),
					   SQL_STR(b->owner)));
	}
	for (i = 0; rc == WL_OK && i < b->n; i++) {
		const char *sub = b->v[i].s->subscription_id;
		const struct wl_send_result *res = b->v[i].res;
		if (res == NULL || res->http_status != 410)
			continue;
		rc = wl_sql_later(db, STMT_SUB_DISABLE,
				  SQL_ARGS(SQL_INT(b->now), SQL_STR(sub),
					   SQL_INT(b->v[i].s->resumes)));
		if (rc == WL_OK)
			rc = wl_sql_later(
			    db, STMT_DELIVERY_FAIL_DISABLED,
			    SQL_ARGS(SQL_INT(b->now), SQL_STR(sub)));
	}
	return rc;
}

/* Add v, or null when 0 (never attempted). */
static void
add_ms(cJSON *row, int64_t v)
{
	cJSON_AddItemToArray(row, v ? wl_json_int(v) : cJSON_CreateNull());
}

/*
 * The batch of STMT_RECORD: [id, status, count, next, at, attempts] for
 * each retry's outcome.  *out stays NULL when there is none;
 * WL_ERR_NOMEM.
 */
static int
retries_json(const struct outcome *v, size_t n, char **out)
{
	cJSON *all = cJSON_CreateArray(), *row;
	const struct wl_send *s;
	size_t i;
	int rows = 0;

	*out = NULL;
	for (i = 0; all && i < n; i++) {
		s = v[i].s;
		if (is_first(&v[i]))
			continue;
		if ((row = cJSON_CreateArray()) == NULL ||
		    !cJSON_AddItemToArray(all, row)) {
			cJSON_Delete(row);
			break;
		}
		cJSON_AddItemToArray(row, cJSON_CreateString(s->delivery_id));
		cJSON_AddItemToArray(row, cJSON_CreateString(v[i].status));
		cJSON_AddItemToArray(row, wl_json_int(v[i].count));
		cJSON_AddItemToArray(row, wl_json_int(v[i].next));
		add_ms(row, v[i].res ? v[i].res->attempted_at : 0);
		cJSON_AddItemToArray(row, cJSON_CreateString(v[i].text));
		if (cJSON_GetArraySize(row) != 6)
			break; /* an item was lost */
		rows++;
	}
	if (i == n && all && rows > 0)
		*out = cJSON_PrintUnformatted(all);
	cJSON_Delete(all);
	return i == n && all && (rows == 0 || *out) ? WL_OK : WL_ERR_NOMEM;
}

/*
 * Write n decided outcomes in one transaction (one commit for the lot
 * rather than one per attempt), settling their ranges, then free their
 * texts.  On an error nothing is recorded: those deliveries are sent
 * again, with the same webhook-id (at least once), retries once their
 * leases expire, first attempts when their range is taken over (see
 * ranges_unrecorded()).
 */
static int
record(struct wl_app *app, const char *owner, struct wl_ranges *rs,
       struct outcome *v, size_t n, int64_t now)
{
	struct wl_loglines lines;
	struct record b;
	const struct wl_send *s;
	size_t i;
	int rc;

	memset(&lines, 0, sizeof(lines));
	memset(&b, 0, sizeof(b));
	b.owner = owner;
	b.v = v;
	b.n = n;
	b.now = now;
	if ((b.done = calloc(n, sizeof(*b.done))) == NULL)
		rc = WL_ERR_NOMEM;
	else
		rc = retries_json(v, n, &b.retries);
	for (i = 0; b.done && i < n; i++)
		if (range_settle(rs, v[i].s, 0, &b.done[b.ndone]))
			b.ndone++;
	/* Lost with its commit (a connection idle since the server went
	 * away, say): done or not, it runs again.  Each of its writes holds
	 * only while the lease is ours, or is the same done twice. */
	if (rc == WL_OK &&
	    (rc = wl_db_txn(app->db, record_txn, &b)) == WL_ERR_DB_GONE)
		rc = wl_db_txn(app->db, record_txn, &b);
	if (rc != WL_OK)
		ranges_unrecorded(rs, v, n);
	for (i = 0; i < n; i++) {
		s = v[i].s;
		wl_log_add(&lines, WL_LOG_INFO,
		       "\"msg\":\"delivery attempt\",\"deliveryId\":\"%s\","
		       "\"subscriptionId\":\"%s\",\"httpStatus\":%d,"
		       "\"durationMs\":%ld,\"outcome\":\"%s\"",
		       s->delivery_id, s->subscription_id,
		       v[i].res ? v[i].res->http_status : 0,
		       v[i].res ? v[i].res->duration_ms : 0,
		       rc == WL_OK ? v[i].status : "unrecorded");
		free(v[i].text);
	}
	wl_log_flush(&lines);
	free(b.retries);
	free(b.done);
	return rc;
}

/* Decide and record n outcomes: of the attempts v, or, when v is NULL,
 * of the sends `unsent`, failed without an attempt. */
static int
settle(struct wl_app *app, const char *owner, struct wl_ranges *rs,
       const struct wl_attempt *v, const struct wl_send *unsent, size_t n)
{
	struct outcome *o;
	int64_t now = wl_now_ms();
	size_t i;
	int rc = WL_OK;

	if (n == 0)
		return WL_OK;
	if ((o = calloc(n, sizeof(*o))) == NULL)
		return WL_ERR_NOMEM;
	for (i = 0; i < n; i++)
		if (decide(app->cfg, v ? v[i].send : &unsent[i],
			   v ? &v[i].res : NULL, now, &o[i]) != WL_OK)
			rc = WL_ERR_NOMEM;
	if (rc == WL_OK)
		rc = record(app, owner, rs, o, n, now);
	else
		for (i = 0; i < n; i++)
			free(o[i].text);
	free(o);
	return rc;
}

/*
 * Record n finished attempts of deliveries claimed by owner, and decide
 * what follows each (see decide()), in one transaction.
 */
int
wl_deliver_record(struct wl_app *app, const char *owner,
		  struct wl_ranges *rs, const struct wl_attempt *v, size_t n)
{
	return settle(app, owner, rs, v, NULL, n);
}

/* Record first attempts that cannot be made (destination refused, no
 * signature): failed, without an attempt. */
int
wl_deliver_fail_unsent(struct wl_app *app, const char *owner,
		       struct wl_ranges *rs, const struct wl_send *v,
		       size_t n)
{
	return settle(app, owner, rs, NULL, v, n);
}

/* Give a claimed delivery back without an attempt (shutting down, or
 * its endpoint is busy); a range once all its sends are settled. */
int
wl_deliver_release(struct wl_app *app, const char *owner,
		   struct wl_ranges *rs, const struct wl_send *s)
{
	struct wl_range done;

	if (s->range_first == 0)
		return wl_sql_do(app->db, STMT_RELEASE,
				 SQL_ARGS(SQL_STR(s->delivery_id),
					  SQL_STR(owner)));
	if (!range_settle(rs, s, 1, &done))
		return WL_OK;
	return wl_sql_do(app->db, STMT_RANGE_GIVE_BACK,
			 SQL_ARGS(SQL_STR(done.subscription_id),
				  SQL_INT(done.first_seq), SQL_STR(owner)));
}
