/*
 * The deliverer's work on the database: fan events out to deliveries,
 * claim due deliveries under short committed leases, re-check access
 * before every attempt, sign, and record each attempt with its outcome.
 * No lock is held across the HTTP call: a claim is an UPDATE of
 * lease_owner/lease_until that commits at once, and a result is written
 * only while the row is still leased to this deliverer (by its owner
 * token, new at every start).  A deliverer killed mid-send leaves
 * a lease that expires, and the attempt is made again with the same
 * webhook-id (delivery is at least once).
 */
#include "config.h"

#include <stdlib.h>

#include <curl/curl.h>

#include "extern.h"

#define RETRY_AFTER_CAP_S 3600

/* Columns of STMT_CLAIMED. */
enum { C_ID, C_SEQ, C_EVENT, C_COUNT, C_MANUAL, C_ATTEMPTS, C_CREATED,
       C_SUB, C_URL, C_STATUS, C_SECRET, C_PREV, C_PREV_UNTIL, C_KEY,
       C_REVOKED, C_EXPIRES, C_ITYPE, C_BODY, C_TENANT };

/* A fresh lease owner token. */
void
wl_deliver_owner(char out[48])
{
	if (wl_id_new("lse_", out) != WL_OK)
		snprintf(out, 48, "lse_%ld", (long)wl_now_ms());
}

/* Does the subscription want this event? */
static int
matches(const struct wl_rows *s, size_t r, const struct wl_rows *e,
	size_t i)
{
	char **v = NULL;
	size_t n = 0, j;
	int ok = 1, c;
	const char *val;

	for (c = 3; c <= 5 && ok; c++) {
		/* types, businesses, queues against type, business, queue */
		val = wl_rows_str(e, i, c - 1);
		if (wl_strv_from_json(wl_rows_str(s, r, c), &v, &n) < 0)
			return 0;
		if (n > 0 || c == 3) {
			ok = 0;
			for (j = 0; j < n; j++)
				if (strcmp(v[j], val) == 0)
					ok = 1;
		}
		wl_strv_free(v, n);
	}
	return ok;
}

struct fanout {
	const struct wl_rows *subs;
	size_t r;
	const struct wl_rows *events;
	size_t n; /* contiguous events to take */
	long created;
};

/* The deliveries of f's subscription for the events it wants, as
 * STMT_DELIVERY_INSERT takes them; *n counts them. */
static int
fanout_rows(const struct fanout *f, char **text, long *n)
{
	cJSON *all = cJSON_CreateArray(), *row;
	char id[WL_ID_MAX];
	size_t i;
	int rc = all ? WL_OK : WL_ERR_NOMEM;

	*text = NULL;
	*n = 0;
	for (i = 0; rc == WL_OK && i < f->n; i++) {
		if (!matches(f->subs, f->r, f->events, i))
			continue;
		if ((rc = wl_id_new("dlv_", id)) != WL_OK)
			break;
		if ((row = cJSON_CreateArray()) == NULL ||
		    !cJSON_AddItemToArray(all, row)) {
			cJSON_Delete(row);
			rc = WL_ERR_NOMEM;
			break;
		}
		cJSON_AddItemToArray(row, cJSON_CreateString(id));
		cJSON_AddItemToArray(row, cJSON_CreateNumber((double)
					      wl_rows_int(f->events, i, 0)));
		cJSON_AddItemToArray(row, cJSON_CreateString(
					      wl_rows_str(f->events, i, 1)));
		cJSON_AddItemToArray(row, cJSON_CreateString(
					      wl_rows_str(f->events, i, 2)));
		if (cJSON_GetArraySize(row) != 4) { /* an item was lost */
			rc = WL_ERR_NOMEM;
			break;
		}
		(*n)++;
	}
	if (rc == WL_OK && (*text = cJSON_PrintUnformatted(all)) == NULL)
		rc = WL_ERR_NOMEM;
	cJSON_Delete(all);
	return rc;
}

static int
fanout_txn(struct wl_db *db, void *arg)
{
	struct fanout *f = arg;
	const char *sub = wl_rows_str(f->subs, f->r, 0);
	const char *tenant = wl_rows_str(f->subs, f->r, 1);
	long long from = wl_rows_int(f->subs, f->r, 2);
	long long to = wl_rows_int(f->events, f->n - 1, 0);
	unsigned long long moved = 0;
	int64_t now = wl_now_ms();
	char *rows = NULL;
	long n = 0;
	int rc;

	f->created = 0;
	rc = wl_sql_exec(db, STMT_FANOUT_ADVANCE,
			 SQL_ARGS(SQL_INT(to), SQL_STR(sub), SQL_INT(from)),
			 NULL, &moved);
	if (rc != WL_OK || moved == 0)
		return rc != WL_OK ? rc : WL_ERR_CONFLICT; /* someone else did */
	if ((rc = fanout_rows(f, &rows, &n)) == WL_OK && n > 0)
		rc = wl_sql_later(db, STMT_DELIVERY_INSERT,
				  SQL_ARGS(SQL_STR(tenant), SQL_STR(sub),
					   SQL_INT(now), SQL_INT(now),
					   SQL_INT(now), SQL_STR(rows)));
	free(rows);
	if (rc == WL_OK)
		f->created = n;
	return rc;
}

/*
 * Turn new events into deliveries for every active subscription that is
 * behind its tenant's sequence.  Several deliverers may run this at once:
 * the advance of fanout_seq is conditional, so each event is fanned out
 * once.  *created counts the deliveries made.
 */
int
wl_deliver_fanout(struct wl_app *app, long *created)
{
	struct wl_rows *subs = NULL, *events = NULL;
	struct fanout f;
	size_t r;
	int rc;

	*created = 0;
	rc = wl_sql_exec(app->db, STMT_FANOUT_SUBS, SQL_NOARGS, &subs, NULL);
	for (r = 0; rc == WL_OK && r < subs->nrows; r++) {
		long long next = wl_rows_int(subs, r, 2) + 1;
		rc = wl_sql_exec(app->db, STMT_FANOUT_EVENTS,
				 SQL_ARGS(SQL_STR(wl_rows_str(subs, r, 1)),
					  SQL_INT(next - 1)),
				 &events, NULL);
		if (rc != WL_OK)
			break;
		memset(&f, 0, sizeof(f));
		f.subs = subs;
		f.r = r;
		f.events = events;
		/* Only a contiguous run: never pass a gap. */
		while (f.n < events->nrows &&
		       wl_rows_int(events, f.n, 0) == next + (long long)f.n)
			f.n++;
		if (f.n > 0) {
			rc = wl_db_txn(app->db, fanout_txn, &f);
			if (rc == WL_ERR_CONFLICT)
				rc = WL_OK;
			else
				*created += f.created;
		}
		wl_rows_free(events);
		events = NULL;
	}
	wl_rows_free(subs);
	return rc;
}

/* Pause a subscription whose access is gone; its pending deliveries will
 * never go out (resume starts after the newest event). */
static int
pause_sub(struct wl_app *app, const char *sub, const char *reason)
{
	int64_t now = wl_now_ms();
	int rc;

	rc = wl_sql_do(app->db, STMT_SUB_SET_STATUS,
		       SQL_ARGS(SQL_STR("paused"), SQL_STR(reason),
				SQL_INT(now), SQL_STR(sub)));
	if (rc == WL_OK)
		rc = wl_sql_do(app->db, STMT_DELIVERY_FAIL_PENDING,
			       SQL_ARGS(SQL_INT(now), SQL_STR(sub)));
	wl_log(WL_LOG_WARN,
	       "\"msg\":\"subscription paused\",\"subscriptionId\":\"%s\","
	       "\"reason\":\"%s\"",
	       sub, reason);
	return rc;
}

/* Is the subscription's tenant entitled and its bound key valid? */
static int
access_ok(const struct wl_rows *rows, size_t r, int64_t now)
{
	struct wl_tenant t;
	int ok;

	if (wl_rows_str(rows, r, C_KEY) == NULL ||
	    wl_rows_str(rows, r, C_REVOKED) != NULL ||
	    wl_rows_int(rows, r, C_EXPIRES) <= now)
		return 0;
	if (wl_tenant_from_row(rows, r, C_TENANT, &t) != WL_OK)
		return 0;
	ok = wl_tenant_unavailable(&t) == WL_C__MAX && t.webhooks;
	wl_tenant_clear(&t);
	return ok;
}

/* Fail a claimed delivery without sending it; skipped when its
 * subscription is no longer active (see STMT_DELIVERY_FAIL_PENDING). */
static int
fail_one(struct wl_app *app, const char *owner, const char *id, int skipped)
{
	return wl_sql_do(app->db, STMT_DELIVERY_FAIL,
			 SQL_ARGS(SQL_INT(skipped), SQL_INT(wl_now_ms()),
				  SQL_STR(id), SQL_STR(owner)));
}

/* Fill s from claimed row r: body, signed headers.  0, or -1 when the
 * delivery cannot be sent as it stands. */
static int
prepare(struct wl_app *app, const struct wl_rows *rows, size_t r,
	int64_t now, struct wl_send *s)
{
	char secret[160], sig[2][64], hdr[256], why[256];
	const char *event = wl_rows_str(rows, r, C_EVENT);
	long long ts = now / 1000;
	int nsig = 0;

	memset(s, 0, sizeof(*s));
	snprintf(s->delivery_id, sizeof(s->delivery_id), "%s",
		 wl_rows_str(rows, r, C_ID));
	snprintf(s->subscription_id, sizeof(s->subscription_id), "%s",
		 wl_rows_str(rows, r, C_SUB));
	if (wl_rows_str(rows, r, C_BODY) == NULL)
		return -1; /* the event left the retention window */
	if (wl_dest_check(app->cfg,
			  strcmp(wl_rows_str(rows, r, C_ITYPE), "zapier") == 0
			      ? WL_ITYPE_ZAPIER
			      : WL_ITYPE_API,
			  wl_rows_str(rows, r, C_URL), s->host,
			  sizeof(s->host), why, sizeof(why)) < 0)
		return -1;
	s->insecure_ok = wl_host_listed(app->cfg->insecure_hosts, s->host);
	if (wl_secret_open(app->secret, wl_rows_str(rows, r, C_SECRET),
			   secret) != WL_OK ||
	    wl_webhook_sign(secret, event, ts, wl_rows_str(rows, r, C_BODY),
			    rows->len[r * rows->ncols + C_BODY],
			    sig[nsig++]) != WL_OK)
		return -1;
	if (wl_rows_str(rows, r, C_PREV) &&
	    wl_rows_int(rows, r, C_PREV_UNTIL) > now &&
	    wl_secret_open(app->secret, wl_rows_str(rows, r, C_PREV),
			   secret) == WL_OK &&
	    wl_webhook_sign(secret, event, ts, wl_rows_str(rows, r, C_BODY),
			    rows->len[r * rows->ncols + C_BODY],
			    sig[nsig]) == WL_OK)
		nsig++;
	s->url = strdup(wl_rows_str(rows, r, C_URL));
	s->body_len = rows->len[r * rows->ncols + C_BODY];
	s->body = malloc(s->body_len + 1);
	s->attempts = strdup(wl_rows_str(rows, r, C_ATTEMPTS));
	if (s->url == NULL || s->body == NULL || s->attempts == NULL)
		return -1;
	memcpy(s->body, wl_rows_str(rows, r, C_BODY), s->body_len + 1);
	snprintf(hdr, sizeof(hdr), "webhook-id: %s", event);
	s->headers[0] = strdup(hdr);
	snprintf(hdr, sizeof(hdr), "webhook-timestamp: %lld", ts);
	s->headers[1] = strdup(hdr);
	snprintf(hdr, sizeof(hdr), "webhook-signature: %s%s%s", sig[0],
		 nsig > 1 ? " " : "", nsig > 1 ? sig[1] : "");
	s->headers[2] = strdup(hdr);
	s->headers[3] = strdup("Content-Type: application/json");
	s->headers[4] = strdup("User-Agent: waitlist-webhooks/1.0");
	s->headers[5] = strdup("Expect:");
	s->attempt_count = (int)wl_rows_int(rows, r, C_COUNT);
	s->manual = (int)wl_rows_int(rows, r, C_MANUAL);
	s->created_at = wl_rows_int(rows, r, C_CREATED);
	explicit_bzero(secret, sizeof(secret));
	return 0;
}

/*
 * Claim up to max due deliveries for owner (a lease of timeout + 20 s),
 * check access for each (pausing subscriptions that lost it), and return
 * the ones to send now in *out (free with wl_sends_free()).  Only this
 * claim's rows: they are told from the owner's earlier claims, still in
 * flight, by their lease_until, which differs from one claim to the next.
 */
int
wl_deliver_claim(struct wl_app *app, const char *owner, unsigned max,
		 struct wl_send **out, size_t *n, unsigned long long *taken)
{
	static int64_t last_lease;
	int64_t now = wl_now_ms(),
		lease = now + app->cfg->timeout_seconds * 1000LL + 20000;
	struct wl_rows *rows = NULL;
	unsigned long long claimed = 0;
	struct wl_send *v;
	size_t r;
	int rc;

	*out = NULL;
	*n = 0;
	*taken = 0;
	if (lease <= last_lease)
		lease = last_lease + 1;
	last_lease = lease;
	rc = wl_sql_exec(app->db, STMT_CLAIM,
			 SQL_ARGS(SQL_STR(owner), SQL_INT(lease), SQL_INT(now),
				  SQL_INT(now), SQL_INT(max)),
			 NULL, &claimed);
	*taken = claimed;
	if (rc != WL_OK || claimed == 0)
		return rc;
	rc = wl_sql_exec(app->db, STMT_CLAIMED,
			 SQL_ARGS(SQL_STR(owner), SQL_INT(lease)), &rows, NULL);
	if (rc != WL_OK)
		return rc;
	if ((v = calloc(rows->nrows + 1, sizeof(*v))) == NULL) {
		wl_rows_free(rows);
		return WL_ERR_NOMEM;
	}
	for (r = 0; rc == WL_OK && r < rows->nrows; r++) {
		const char *id = wl_rows_str(rows, r, C_ID);
		const char *status = wl_rows_str(rows, r, C_STATUS);
		if (status == NULL || strcmp(status, "active") != 0)
			rc = fail_one(app, owner, id, 1); /* or gone */
		else if (!access_ok(rows, r, now))
			rc = pause_sub(app, wl_rows_str(rows, r, C_SUB),
				       "access_lost");
		else if (prepare(app, rows, r, now, &v[*n]) < 0) {
			wl_sends_free(&v[*n], 1);
			memset(&v[*n], 0, sizeof(v[*n]));
			rc = fail_one(app, owner, id, 0);
		} else
			(*n)++;
	}
	wl_rows_free(rows);
	*out = v;
	return rc;
}

/* Free n sends (the array too when it came from wl_deliver_claim()). */
void
wl_sends_free(struct wl_send *v, size_t n)
{
	size_t i, h;

	for (i = 0; v && i < n; i++) {
		free(v[i].url);
		free(v[i].body);
		free(v[i].attempts);
		for (h = 0; h < 8; h++)
			free(v[i].headers[h]);
	}
}

/* Is connecting to ip allowed for this send?  (DNS rebinding check.) */
int
wl_deliver_address_ok(const struct wl_send *s, const char *ip)
{
	return s->insecure_ok || !wl_addr_private(ip);
}

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
	const struct wl_attempt *a;
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
 * the redacted attempt record.
 */
static int
decide(const struct wl_config *cfg, const struct wl_attempt *at,
       int64_t now, struct outcome *o)
{
	const struct wl_send *s = at->send;
	const struct wl_send_result *res = &at->res;
	int st = res->http_status;
	int retry = res->timed_out || st == 0 || st == 408 || st == 429 ||
		    (st >= 500 && st <= 599);
	cJSON *attempts = cJSON_Parse(s->attempts), *a;
	unsigned rnd = 0;

	o->a = at;
	o->status = "failed";
	o->count = s->attempt_count + 1;
	o->next = now;
	if (st >= 200 && st < 300)
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
	a = cJSON_CreateObject();
	cJSON_AddItemToArray(attempts, a);
	wl_json_add_ts(a, "attemptedAt", res->attempted_at);
	if (st > 0)
		wl_json_add_int(a, "responseStatus", st);
	else
		cJSON_AddNullToObject(a, "responseStatus");
	wl_json_add_int(a, "durationMs", res->duration_ms);
	wl_json_add_str(a, "errorClass", error_class(res));
	o->text = cJSON_PrintUnformatted(attempts);
	cJSON_Delete(attempts);
	return o->text == NULL ? WL_ERR_NOMEM : WL_OK;
}

struct record {
	const char *owner;
	struct outcome *v;
	size_t n;
	char *batch; /* see batch_json() */
	int64_t now;
};

/* Write every outcome, in one statement; a row whose lease is no longer
 * ours is left as it is.  The 410s come last, so that the pending
 * deliveries they fail stay failed whatever else the batch holds. */
static int
record_txn(struct wl_db *db, void *arg)
{
	struct record *b = arg;
	size_t i;
	int rc;

	rc = wl_sql_later(db, STMT_RECORD,
			  SQL_ARGS(SQL_STR(b->batch), SQL_INT(b->now),
				   SQL_STR(b->owner)));
	for (i = 0; rc == WL_OK && i < b->n; i++) {
		const char *sub = b->v[i].a->send->subscription_id;
		if (b->v[i].a->res.http_status != 410)
			continue;
		rc = wl_sql_later(db, STMT_SUB_DISABLE,
				  SQL_ARGS(SQL_INT(b->now), SQL_STR(sub)));
		if (rc == WL_OK)
			rc = wl_sql_later(
			    db, STMT_DELIVERY_FAIL_PENDING,
			    SQL_ARGS(SQL_INT(b->now), SQL_STR(sub)));
	}
	return rc;
}

/* The batch of STMT_RECORD: one [id, status, count, next, at, attempts]
 * per outcome.  NULL when out of memory. */
static char *
batch_json(const struct outcome *v, size_t n)
{
	cJSON *all = cJSON_CreateArray(), *row;
	char *text;
	size_t i;

	for (i = 0; all && i < n; i++) {
		if ((row = cJSON_CreateArray()) == NULL ||
		    !cJSON_AddItemToArray(all, row)) {
			cJSON_Delete(row);
			break;
		}
		cJSON_AddItemToArray(row, cJSON_CreateString(
					      v[i].a->send->delivery_id));
		cJSON_AddItemToArray(row, cJSON_CreateString(v[i].status));
		cJSON_AddItemToArray(row, cJSON_CreateNumber(v[i].count));
		cJSON_AddItemToArray(row,
				     cJSON_CreateNumber((double)v[i].next));
		cJSON_AddItemToArray(row, cJSON_CreateNumber(
					      (double)v[i].a->res.attempted_at));
		cJSON_AddItemToArray(row, cJSON_CreateString(v[i].text));
		if (cJSON_GetArraySize(row) != 6) /* an item was lost */
			break;
	}
	text = i == n && all ? cJSON_PrintUnformatted(all) : NULL;
	cJSON_Delete(all);
	return text;
}

/*
 * Record n finished attempts of deliveries claimed by owner, and decide
 * what follows each (see decide()), in one transaction: one commit for
 * the lot rather than one per attempt.  On an error nothing is recorded;
 * the leases then expire and those deliveries are sent again, with the
 * same webhook-id (at least once).
 */
int
wl_deliver_record(struct wl_app *app, const char *owner,
		  const struct wl_attempt *v, size_t n)
{
	struct record b;
	size_t i;
	int rc = WL_OK;

	if (n == 0)
		return WL_OK;
	b.owner = owner;
	b.n = n;
	b.batch = NULL;
	b.now = wl_now_ms();
	if ((b.v = calloc(n, sizeof(*b.v))) == NULL)
		return WL_ERR_NOMEM;
	for (i = 0; rc == WL_OK && i < n; i++)
		rc = decide(app->cfg, &v[i], b.now, &b.v[i]);
	if (rc == WL_OK && (b.batch = batch_json(b.v, n)) == NULL)
		rc = WL_ERR_NOMEM;
	if (rc == WL_OK)
		rc = wl_db_txn(app->db, record_txn, &b);
	free(b.batch);
	for (i = 0; i < n; i++) {
		wl_log(WL_LOG_INFO,
		       "\"msg\":\"delivery attempt\",\"deliveryId\":\"%s\","
		       "\"subscriptionId\":\"%s\",\"httpStatus\":%d,"
		       "\"durationMs\":%ld,\"outcome\":\"%s\"",
		       v[i].send->delivery_id, v[i].send->subscription_id,
		       v[i].res.http_status, v[i].res.duration_ms,
		       rc == WL_OK ? b.v[i].status : "unrecorded");
		free(b.v[i].text);
	}
	free(b.v);
	return rc;
}

/* Give a claimed delivery back without an attempt (shutting down, or
 * its endpoint is busy). */
int
wl_deliver_release(struct wl_app *app, const char *owner,
		   const struct wl_send *s)
{
	return wl_sql_do(app->db, STMT_RELEASE,
			 SQL_ARGS(SQL_STR(s->delivery_id), SQL_STR(owner)));
}
