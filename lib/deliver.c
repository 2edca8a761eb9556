/*
 * The deliverer's claims: lease what is due, re-check access before
 * every attempt, and sign.  New events are leased in ranges, one row of
 * delivery_ranges per run of a subscription's events, taken by moving
 * its fanout_seq past them (conditionally, so that each event goes to
 * one deliverer); their records are written once, with the outcome of
 * their first attempt (deliver_record.c).  Retries of recorded
 * deliveries are leased one row each.  No lock is held across the HTTP
 * call: a lease is committed at once, and a result is written only while
 * the lease is still this deliverer's (by its owner token, new at every
 * start).  A deliverer killed mid-send leaves leases that expire: its
 * retries are claimed again and its ranges taken over, and the attempts
 * not recorded are made again with the same webhook-id (delivery is at
 * least once).
 */
#include "config.h"

#include <stdlib.h>

#include "extern.h"

/* Look for ranges whose deliverer is gone at most this often. */
#define TAKE_OVER_MS 1000
/* Events read for one range at most. */
#define RANGE_MAX 500

/* Columns of STMT_CLAIMED (retries). */
enum { C_ID, C_SEQ, C_EVENT, C_COUNT, C_MANUAL, C_ATTEMPTS, C_CREATED,
       C_SUB, C_URL, C_STATUS, C_SECRET, C_PREV, C_PREV_UNTIL, C_UPDATED,
       C_RESUMES, C_KEY, C_REVOKED, C_EXPIRES, C_ITYPE, C_BODY, C_TENANT };
/* Columns of STMT_FANOUT_SUBS and STMT_RANGE_SUB (RANGE_SUB_COLS). */
enum { S_ID, S_TENANT_ID, S_FANOUT, S_TYPES, S_BUSINESSES, S_QUEUES,
       S_HIGH_WATER, S_STATUS, S_URL, S_SECRET, S_PREV, S_PREV_UNTIL,
       S_UPDATED, S_RESUMES, S_KEY, S_REVOKED, S_EXPIRES, S_ITYPE, S_TENANT };
/* Columns of STMT_FANOUT_EVENTS and STMT_RANGE_LEFT. */
enum { E_SEQ, E_ID, E_TYPE, E_BUSINESS, E_QUEUE, E_BODY };

/* Where a row holds what access_ok(), pause_sub() and sign() read. */
struct cols {
	int sub, url, secret, prev, prev_until, updated, key, revoked,
	    expires, itype, tenant;
};
static const struct cols retry_cols = {
    .sub = C_SUB, .url = C_URL, .secret = C_SECRET, .prev = C_PREV,
    .prev_until = C_PREV_UNTIL, .updated = C_UPDATED, .key = C_KEY,
    .revoked = C_REVOKED, .expires = C_EXPIRES, .itype = C_ITYPE,
    .tenant = C_TENANT};
static const struct cols range_cols = {
    .sub = S_ID, .url = S_URL, .secret = S_SECRET, .prev = S_PREV,
    .prev_until = S_PREV_UNTIL, .updated = S_UPDATED, .key = S_KEY,
    .revoked = S_REVOKED, .expires = S_EXPIRES, .itype = S_ITYPE,
    .tenant = S_TENANT};

/* A fresh lease owner token. */
void
wl_deliver_owner(char out[48])
{
	if (wl_id_new("lse_", out) != WL_OK)
		snprintf(out, 48, "lse_%ld", (long)wl_now_ms());
}

/* A subscription's filters: event types, businesses, lines (no
 * businesses or lines: any). */
struct filters {
	char **v[3];
	size_t n[3];
};

static void
filters_free(struct filters *f)
{
	int c;

	for (c = 0; c < 3; c++)
		wl_strv_free(f->v[c], f->n[c]);
	memset(f, 0, sizeof(*f));
}

/* Read subscription row r's filters; -1 when unreadable (it gets
 * nothing). */
static int
filters_read(const struct wl_rows *subs, size_t r, struct filters *f)
{
	int c;

	memset(f, 0, sizeof(*f));
	for (c = 0; c < 3; c++)
		if (wl_strv_from_json(wl_rows_str(subs, r, S_TYPES + c),
				      &f->v[c], &f->n[c]) < 0) {
			filters_free(f);
			return -1;
		}
	return 0;
}

/* Does a subscription with filters f want event row i? */
static int
wants(const struct filters *f, const struct wl_rows *events, size_t i)
{
	size_t j;
	int c, ok = 1;

	for (c = 0; c < 3 && ok; c++) {
		/* types, businesses, lines against type, business, line */
		if (f->n[c] == 0 && c > 0)
			continue;
		ok = 0;
		for (j = 0; j < f->n[c] && !ok; j++)
			ok = strcmp(f->v[c][j],
				    wl_rows_str(events, i, E_TYPE + c)) == 0;
	}
	return ok;
}

/* Pause the subscription of row r, whose access is gone; its pending
 * deliveries will never go out (resume starts after the newest event).
 * Only if it has not changed since it was read: resumed or bound to
 * another key meanwhile, it is checked again at the next look.  *paused
 * (when given) tells which. */
static int
pause_sub(struct wl_app *app, const struct wl_rows *rows, size_t r,
	  const struct cols *k, int *paused)
{
	const char *sub = wl_rows_str(rows, r, k->sub);
	unsigned long long n = 0;
	int64_t now = wl_now_ms();
	int rc;

	rc = wl_sql_exec(app->db, STMT_SUB_SET_STATUS,
			 SQL_ARGS(SQL_STR("paused"), SQL_STR("access_lost"),
				  SQL_INT(now), SQL_STR(sub),
				  SQL_INT(wl_rows_int(rows, r, k->updated))),
			 NULL, &n);
	if (paused)
		*paused = rc == WL_OK && n > 0;
	if (rc != WL_OK || n == 0)
		return rc;
	rc = wl_sql_do(app->db, STMT_DELIVERY_FAIL_PENDING,
		       SQL_ARGS(SQL_INT(now), SQL_STR(sub)));
	wl_log(WL_LOG_WARN,
	       "\"msg\":\"subscription paused\",\"subscriptionId\":\"%s\","
	       "\"reason\":\"access_lost\"",
	       sub);
	return rc;
}

/* Is the subscription's tenant entitled and its bound key valid? */
static int
access_ok(const struct wl_rows *rows, size_t r, const struct cols *k,
	  int64_t now)
{
	struct wl_tenant t;
	int ok;

	if (wl_rows_str(rows, r, k->key) == NULL ||
	    wl_rows_str(rows, r, k->revoked) != NULL ||
	    wl_rows_int(rows, r, k->expires) <= now)
		return 0;
	if (wl_tenant_from_row(rows, r, k->tenant, &t) != WL_OK)
		return 0;
	ok = wl_tenant_unavailable(&t) == WL_C__MAX && t.webhooks;
	wl_tenant_clear(&t);
	return ok;
}

/* Fail a claimed retry without sending it; skipped when its
 * subscription is no longer active (see STMT_DELIVERY_FAIL_PENDING). */
static int
fail_one(struct wl_app *app, const char *owner, const char *id, int skipped)
{
	return wl_sql_do(app->db, STMT_DELIVERY_FAIL,
			 SQL_ARGS(SQL_INT(skipped), SQL_INT(wl_now_ms()),
				  SQL_STR(id), SQL_STR(owner)));
}

/* The secrets that sign for row r's subscription: its own, and the
 * previous one while that still signs (rotation). */
struct keys {
	char cur[160], prev[160];
	int nprev;
};

static int
keys_open(struct wl_app *app, const struct wl_rows *rows, size_t r,
	  const struct cols *k, int64_t now, struct keys *keys)
{
	keys->nprev = 0;
	if (wl_secret_open(app->secret, wl_rows_str(rows, r, k->secret),
			   keys->cur) != WL_OK)
		return -1;
	if (wl_rows_str(rows, r, k->prev) &&
	    wl_rows_int(rows, r, k->prev_until) > now &&
	    wl_secret_open(app->secret, wl_rows_str(rows, r, k->prev),
			   keys->prev) == WL_OK)
		keys->nprev = 1;
	return 0;
}

static void
keys_close(struct keys *keys)
{
	explicit_bzero(keys, sizeof(*keys));
}

/* The destination of row r, checked against the policy (which resolves
 * its host): s's host and insecure_ok.  0, or -1 when it is refused. */
static int
destination(struct wl_app *app, const struct wl_rows *rows, size_t r,
	    const struct cols *k, struct wl_send *s)
{
	char why[256];

	if (wl_dest_check(app->cfg,
			  strcmp(wl_rows_str(rows, r, k->itype), "zapier") == 0
			      ? WL_ITYPE_ZAPIER
			      : WL_ITYPE_API,
			  wl_rows_str(rows, r, k->url), s->host,
			  sizeof(s->host), why, sizeof(why)) < 0)
		return -1;
	s->insecure_ok = wl_host_listed(app->cfg->insecure_hosts, s->host);
	return 0;
}

/* Fill s to send event's body (len bytes) to the destination of row r
 * (see destination()), signed with keys (NULL: they could not be
 * opened): URL, headers.  0, or -1 when it cannot be sent as it stands. */
static int
sign(const struct wl_rows *rows, size_t r, const struct cols *k,
     const struct keys *keys, const char *event, const char *body,
     size_t len, int64_t now, struct wl_send *s)
{
	char sig[2][64], hdr[256];
	long long ts = now / 1000;

	if (body == NULL || keys == NULL)
		return -1; /* the event left the retention window */
	if (wl_webhook_sign(keys->cur, event, ts, body, len, sig[0]) !=
		WL_OK ||
	    (keys->nprev && wl_webhook_sign(keys->prev, event, ts, body, len,
					    sig[1]) != WL_OK))
		return -1;
	s->url = strdup(wl_rows_str(rows, r, k->url));
	s->body_len = len;
	if (s->url == NULL || (s->body = malloc(len + 1)) == NULL)
		return -1;
	memcpy(s->body, body, len);
	s->body[len] = '\0';
	snprintf(hdr, sizeof(hdr), "webhook-id: %s", event);
	s->headers[0] = strdup(hdr);
	snprintf(hdr, sizeof(hdr), "webhook-timestamp: %lld", ts);
	s->headers[1] = strdup(hdr);
	snprintf(hdr, sizeof(hdr), "webhook-signature: %s%s%s", sig[0],
		 keys->nprev ? " " : "", keys->nprev ? sig[1] : "");
	s->headers[2] = strdup(hdr);
	s->headers[3] = strdup("Content-Type: application/json");
	s->headers[4] = strdup("User-Agent: waitlist-webhooks/1.0");
	s->headers[5] = strdup("Expect:");
	return 0;
}

/* One look's claims. */
struct claim {
	struct wl_app *app;
	const char *owner;
	struct wl_ranges *ranges;
	unsigned max;
	const char *held;	/* subscriptions not to claim for (a,b) */
	int64_t now, lease;
	struct wl_send *v;	/* to send */
	size_t n, cap;
	struct wl_send *fails;	/* first attempts that cannot be made */
	size_t nfails, capfails;
	unsigned long long taken;
};

/* Is subscription sub in held, a comma-separated list of ids? */
int
wl_deliver_held(const char *held, const char *sub)
{
	size_t n = sub ? strlen(sub) : 0;
	const char *p = held;

	while (n > 0 && (p = strstr(p, sub)) != NULL) {
		if ((p == held || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
			return 1;
		p += n;
	}
	return 0;
}

/* A new zeroed send at the end of *v (n used, cap), or NULL. */
static struct wl_send *
push(struct wl_send **v, size_t *n, size_t *cap)
{
	struct wl_send *p;
	size_t c;

	if (*n == *cap) {
		c = *cap ? *cap * 2 : 64;
		if ((p = realloc(*v, c * sizeof(*p))) == NULL)
			return NULL;
		*v = p;
		*cap = c;
	}
	p = &(*v)[(*n)++];
	memset(p, 0, sizeof(*p));
	return p;
}

/* The due retries, up to the room left. */
static int
claim_retries(struct claim *c)
{
	struct wl_app *app = c->app;
	struct wl_rows *rows = NULL;
	unsigned long long claimed = 0;
	struct wl_send *s;
	struct keys keys;
	size_t r;
	int rc, opened, signed_ok;

	rc = wl_sql_exec(app->db, STMT_CLAIM,
			 SQL_ARGS(SQL_STR(c->owner), SQL_INT(c->lease),
				  SQL_INT(c->now), SQL_INT(c->now),
				  SQL_STR(c->held), SQL_INT(c->max)),
			 NULL, &claimed);
	c->taken += claimed;
	if (rc != WL_OK || claimed == 0)
		return rc;
	rc = wl_sql_exec(app->db, STMT_CLAIMED,
			 SQL_ARGS(SQL_STR(c->owner), SQL_INT(c->lease)), &rows,
			 NULL);
	for (r = 0; rc == WL_OK && r < rows->nrows; r++) {
		const char *id = wl_rows_str(rows, r, C_ID);
		const char *status = wl_rows_str(rows, r, C_STATUS);
		if (status == NULL || strcmp(status, "active") != 0) {
			rc = fail_one(app, c->owner, id, 1); /* or gone */
			continue;
		}
		if (!access_ok(rows, r, &retry_cols, c->now)) {
			rc = pause_sub(app, rows, r, &retry_cols, NULL);
			continue;
		}
		if ((s = push(&c->v, &c->n, &c->cap)) == NULL) {
			rc = WL_ERR_NOMEM;
			break;
		}
		snprintf(s->delivery_id, sizeof(s->delivery_id), "%s", id);
		snprintf(s->subscription_id, sizeof(s->subscription_id), "%s",
			 wl_rows_str(rows, r, C_SUB));
		s->attempts = strdup(wl_rows_str(rows, r, C_ATTEMPTS));
		s->attempt_count = (int)wl_rows_int(rows, r, C_COUNT);
		s->manual = (int)wl_rows_int(rows, r, C_MANUAL);
		s->created_at = wl_rows_int(rows, r, C_CREATED);
		s->resumes = wl_rows_int(rows, r, C_RESUMES);
		opened = keys_open(app, rows, r, &retry_cols, c->now,
				   &keys) == 0;
		signed_ok = s->attempts != NULL &&
			    destination(app, rows, r, &retry_cols, s) == 0 &&
			    sign(rows, r, &retry_cols,
				 opened ? &keys : NULL,
				 wl_rows_str(rows, r, C_EVENT),
				 wl_rows_str(rows, r, C_BODY),
				 rows->len[r * rows->ncols + C_BODY], c->now,
				 s) == 0;
		keys_close(&keys);
		if (!signed_ok) {
			wl_sends_free(s, 1);
			c->n--;
			rc = fail_one(app, c->owner, id, 0);
		}
	}
	wl_rows_free(rows);
	return rc;
}

/* The send of a range's event i (see range_sends()) to dest (NULL:
 * refused), or a failure to record when it cannot be made. */
static int
range_send(struct claim *c, const struct wl_rows *subs, size_t r,
	   const struct keys *keys, const struct wl_send *dest,
	   const struct wl_rows *events, size_t i, int64_t first)
{
	struct wl_send *s;

	if ((s = push(&c->v, &c->n, &c->cap)) == NULL ||
	    wl_id_new("dlv_", s->delivery_id) != WL_OK)
		return WL_ERR_NOMEM;
	snprintf(s->subscription_id, sizeof(s->subscription_id), "%s",
		 wl_rows_str(subs, r, S_ID));
	snprintf(s->event_id, sizeof(s->event_id), "%s",
		 wl_rows_str(events, i, E_ID));
	snprintf(s->event_type, sizeof(s->event_type), "%s",
		 wl_rows_str(events, i, E_TYPE));
	s->event_seq = wl_rows_int(events, i, E_SEQ);
	s->range_first = first;
	s->created_at = c->now;
	s->resumes = wl_rows_int(subs, r, S_RESUMES);
	if (dest) {
		memcpy(s->host, dest->host, sizeof(s->host));
		s->insecure_ok = dest->insecure_ok;
	}
	if (dest &&
	    sign(subs, r, &range_cols, keys, s->event_id,
		 wl_rows_str(events, i, E_BODY),
		 events->len[i * events->ncols + E_BODY], c->now, s) == 0)
		return WL_OK;
	/* Kept, without what was made for sending, as a failure. */
	c->n--;
	wl_sends_free(s, 1);
	memset(s->headers, 0, sizeof(s->headers));
	s->url = s->body = NULL;
	if (push(&c->fails, &c->nfails, &c->capfails) == NULL)
		return WL_ERR_NOMEM;
	c->fails[c->nfails - 1] = *s;
	return WL_OK;
}

/*
 * The sends of a range of subscription row r's events that it wants (f;
 * events' rows 0 to k - 1), held from first: each a first attempt, or a
 * failure to record when it cannot be made.  *wanted counts them.
 */
static int
range_sends(struct claim *c, const struct wl_rows *subs, size_t r,
	    const struct filters *f, const struct wl_rows *events, size_t k,
	    int64_t first, size_t *wanted)
{
	struct wl_send dest;
	struct keys keys;
	size_t i;
	int opened, refused, rc = WL_OK;

	*wanted = 0;
	for (i = 0; i < k; i++)
		*wanted += wants(f, events, i);
	if (*wanted == 0)
		return WL_OK;
	if (wl_ranges_add(c->ranges, wl_rows_str(subs, r, S_ID), first,
			  (unsigned)*wanted) != WL_OK)
		return WL_ERR_NOMEM; /* its lease expires: taken over */
	c->taken += *wanted;
	opened = keys_open(c->app, subs, r, &range_cols, c->now, &keys) == 0;
	/* Once for the range: resolving the host per event would make
	 * every send wait for DNS. */
	memset(&dest, 0, sizeof(dest));
	refused = destination(c->app, subs, r, &range_cols, &dest) < 0;
	for (i = 0; rc == WL_OK && i < k; i++)
		if (wants(f, events, i))
			rc = range_send(c, subs, r, opened ? &keys : NULL,
					refused ? NULL : &dest, events, i,
					first);
	keys_close(&keys);
	return rc;
}

/* Lease subscription row r's events first..last (conditionally: another
 * deliverer may have), holding a range when it wants some of them. */
struct lease_args {
	const char *sub, *owner;
	int64_t from, first, last, lease;
	int hold;
};

static int
lease_txn(struct wl_db *db, void *arg)
{
	struct lease_args *a = arg;
	unsigned long long moved = 0;
	int rc;

	rc = wl_sql_exec(db, STMT_FANOUT_ADVANCE,
			 SQL_ARGS(SQL_INT(a->last), SQL_STR(a->sub),
				  SQL_INT(a->from)),
			 NULL, &moved);
	if (rc != WL_OK || moved == 0)
		return rc != WL_OK ? rc : WL_ERR_CONFLICT; /* someone else did */
	if (a->hold)
		rc = wl_sql_later(db, STMT_RANGE_INSERT,
				  SQL_ARGS(SQL_STR(a->sub), SQL_INT(a->first),
					   SQL_INT(a->last), SQL_STR(a->owner),
					   SQL_INT(a->lease)));
	return rc;
}

/* New events of subscription row r, as many as room takes: a contiguous
 * run (never past a gap: a number not yet committed). */
static int
claim_range(struct claim *c, const struct wl_rows *subs, size_t r,
	    unsigned room)
{
	struct wl_app *app = c->app;
	struct wl_rows *events = NULL;
	struct lease_args a;
	struct filters f;
	size_t k = 0, wanted = 0;
	int rc;

	if (filters_read(subs, r, &f) < 0)
		return WL_OK; /* (cannot be: written by the service) */
	memset(&a, 0, sizeof(a));
	a.sub = wl_rows_str(subs, r, S_ID);
	a.owner = c->owner;
	a.from = wl_rows_int(subs, r, S_FANOUT);
	a.first = a.from + 1;
	a.lease = c->lease;
	rc = wl_sql_exec(app->db, STMT_FANOUT_EVENTS,
			 SQL_ARGS(SQL_STR(wl_rows_str(subs, r, S_TENANT_ID)),
				  SQL_INT(a.from),
				  SQL_INT(room + 16 < RANGE_MAX ? room + 16
								 : RANGE_MAX)),
			 &events, NULL);
	while (rc == WL_OK && k < events->nrows && wanted < room &&
	       wl_rows_int(events, k, E_SEQ) == a.first + (int64_t)k)
		wanted += wants(&f, events, k++);
	if (k > 0) {
		a.last = a.first + (int64_t)k - 1;
		a.hold = wanted > 0;
		rc = wl_db_txn(app->db, lease_txn, &a);
		if (rc == WL_OK)
			rc = range_sends(c, subs, r, &f, events, k, a.first,
					 &wanted);
		else if (rc == WL_ERR_CONFLICT)
			rc = WL_OK;
	}
	wl_rows_free(events);
	filters_free(&f);
	return rc;
}

/* Ranges of new events for every active subscription that is behind its
 * tenant's sequence, while there is room: each its share of the room
 * left, so that one subscription's backlog does not hold back another's
 * events (what one leaves goes to those after it). */
static int
claim_new(struct claim *c)
{
	struct wl_rows *subs = NULL;
	size_t r, others;
	unsigned left;
	int rc;

	rc = wl_sql_exec(c->app->db, STMT_FANOUT_SUBS, SQL_NOARGS, &subs,
			 NULL);
	for (r = 0; rc == WL_OK && r < subs->nrows && c->n < c->max; r++) {
		left = c->max - (unsigned)c->n;
		others = subs->nrows - r - 1;
		if (wl_deliver_held(c->held, wl_rows_str(subs, r, S_ID)))
			continue;
		if (!access_ok(subs, r, &range_cols, c->now))
			rc = pause_sub(c->app, subs, r, &range_cols, NULL);
		else
			rc = claim_range(c, subs, r,
					 (unsigned)((left + others) /
						    (others + 1)));
	}
	wl_rows_free(subs);
	return rc;
}

/* Drop a range taken over that nothing is left to send from. */
static int
range_drop(struct claim *c, const char *sub, int64_t first)
{
	return wl_sql_do(c->app->db, STMT_RANGE_DONE,
			 SQL_ARGS(SQL_STR(sub), SQL_INT(first),
				  SQL_STR(c->owner)));
}

/* The unrecorded events of a range taken over, first..last of sub. */
static int
resume_range(struct claim *c, const char *sub, int64_t first, int64_t last)
{
	struct wl_app *app = c->app;
	struct wl_rows *subs = NULL, *events = NULL;
	struct filters f;
	size_t wanted = 0;
	int rc, paused;

	rc = wl_sql_exec(app->db, STMT_RANGE_SUB, SQL_ARGS(SQL_STR(sub)),
			 &subs, NULL);
	if (rc != WL_OK)
		return rc;
	/* Gone, paused or resumed past it since: never sent. */
	if (subs->nrows == 0 ||
	    strcmp(wl_rows_str(subs, 0, S_STATUS), "active") != 0 ||
	    wl_rows_int(subs, 0, S_HIGH_WATER) >= first ||
	    filters_read(subs, 0, &f) < 0) {
		wl_rows_free(subs);
		return range_drop(c, sub, first);
	}
	if (!access_ok(subs, 0, &range_cols, c->now)) {
		/* Not paused: changed since it was read; the range waits
		 * for its lease to run out, and is looked at again. */
		rc = pause_sub(app, subs, 0, &range_cols, &paused);
		if (rc == WL_OK && paused)
			rc = range_drop(c, sub, first);
	} else {
		rc = wl_sql_exec(
		    app->db, STMT_RANGE_LEFT,
		    SQL_ARGS(SQL_STR(wl_rows_str(subs, 0, S_TENANT_ID)),
			     SQL_INT(first), SQL_INT(last), SQL_STR(sub)),
		    &events, NULL);
		if (rc == WL_OK)
			rc = range_sends(c, subs, 0, &f, events,
					 events->nrows, first, &wanted);
		if (rc == WL_OK && wanted == 0) /* nothing it wants is left */
			rc = range_drop(c, sub, first);
	}
	filters_free(&f);
	wl_rows_free(events);
	wl_rows_free(subs);
	return rc;
}

/* Take over the ranges whose lease expired (their deliverer is gone). */
static int
take_over(struct claim *c)
{
	static int64_t next;
	struct wl_rows *rows = NULL;
	unsigned long long n = 0;
	size_t r;
	int rc;

	if (c->now < next)
		return WL_OK;
	next = c->now + TAKE_OVER_MS;
	rc = wl_sql_exec(c->app->db, STMT_RANGE_TAKE,
			 SQL_ARGS(SQL_STR(c->owner), SQL_INT(c->lease),
				  SQL_INT(c->now)),
			 NULL, &n);
	if (rc != WL_OK || n == 0)
		return rc;
	rc = wl_sql_exec(c->app->db, STMT_RANGE_TAKEN,
			 SQL_ARGS(SQL_STR(c->owner), SQL_INT(c->lease)), &rows,
			 NULL);
	/* (A range of a held subscription stays leased, unsent, and is
	 * taken over again when its lease runs out.) */
	for (r = 0; rc == WL_OK && r < rows->nrows; r++)
		if (!wl_deliver_held(c->held, wl_rows_str(rows, r, 0)))
			rc = resume_range(c, wl_rows_str(rows, r, 0),
					  wl_rows_int(rows, r, 1),
					  wl_rows_int(rows, r, 2));
	wl_rows_free(rows);
	return rc;
}

/*
 * Claim up to about max deliveries for owner under a lease of the
 * timeout + 20 s: due retries first, then ranges taken over, then new
 * events.  Access is checked for each (a subscription that lost it is
 * paused), and the sends to make now come back in *out (free with
 * wl_sends_free()).  A claim's leases are told from the owner's earlier
 * ones, still in flight, by their lease_until, which differs from one
 * claim to the next.
 */
int
wl_deliver_claim(struct wl_app *app, const char *owner,
		 struct wl_ranges *ranges, unsigned max, const char *held,
		 struct wl_send **out, size_t *n, unsigned long long *taken)
{
	static int64_t last_lease;
	struct claim c;
	int rc;

	memset(&c, 0, sizeof(c));
	c.app = app;
	c.owner = owner;
	c.ranges = ranges;
	c.max = max;
	c.held = held ? held : "";
	c.now = wl_now_ms();
	c.lease = c.now + app->cfg->timeout_seconds * 1000LL + 20000;
	if (c.lease <= last_lease)
		c.lease = last_lease + 1;
	last_lease = c.lease;
	rc = claim_retries(&c);
	if (rc == WL_OK)
		rc = take_over(&c);
	if (rc == WL_OK && c.n < c.max)
		rc = claim_new(&c);
	/* What cannot be sent is recorded failed; what can goes out even
	 * when a later step failed (its leases are held). */
	if (c.nfails > 0 &&
	    wl_deliver_fail_unsent(app, owner, ranges, c.fails, c.nfails) !=
		WL_OK &&
	    rc == WL_OK)
		rc = WL_ERR_DB;
	wl_sends_free(c.fails, c.nfails);
	free(c.fails);
	*out = c.v;
	*n = c.n;
	*taken = c.taken;
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

