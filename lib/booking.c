/*
 * Same-day bookings: the availability rules, the capacity check that
 * cannot overbook, GET /waitlist/queues/{queueId}/availability (computed
 * by the same code), and the reschedule and cancel routes.
 */
#include "config.h"

#include <stdlib.h>

#include "extern.h"

#define MIN_MS 60000LL

/* Fill w for the business day containing now; -1 when closed today. */
int
wl_booking_window(const struct wl_queue *q, int64_t now,
		  struct wl_booking_window *w)
{
	int from = 0, to = 1440, rc;

	w->now = now;
	if (wl_business_day(q->tz, now, &w->day_start, &w->day_end, &w->day) < 0)
		return -1;
	rc = wl_hours_span(q->booking_hours, w->day.wday, &from, &to);
	if (rc == 0)
		return -1;
	if (rc == 2) {
		from = 0;
		to = 1440;
	}
	/* In local time, as walk-ins are let in: on a day the clocks
	 * change, the hours' instants are not those of their wall times. */
	w->nspans = wl_tz_day_spans(q->tz, &w->day, w->day_start, w->day_end,
				    from, to, w->span);
	w->open = w->nspans ? w->span[0].start : w->day_start;
	w->close = w->nspans ? w->span[w->nspans - 1].end : w->day_start;
	return 0;
}

/* Does [at, end) lie inside the booking hours of window w? */
int
wl_booking_within(const struct wl_booking_window *w, int64_t at, int64_t end)
{
	int i;

	for (i = 0; i < w->nspans; i++)
		if (at >= w->span[i].start && end <= w->span[i].end)
			return 1;
	return 0;
}

/* Does [at, at + minutes) satisfy the slot rules of window w: not in
 * the past, on the same local day, on the grid from the day's opening,
 * wholly inside bookingHours? */
int
wl_booking_slot_ok(const struct wl_queue *q,
		   const struct wl_booking_window *w, int64_t at,
		   long long minutes)
{
	int64_t end = at + minutes * MIN_MS;

	return at >= w->now && at >= w->day_start && at < w->day_end &&
	       wl_booking_within(w, at, end) &&
	       (at - w->open) % (q->slot_minutes * MIN_MS) == 0;
}

struct intervals {
	size_t n;
	int64_t *start, *end;
};

static void
intervals_free(struct intervals *iv)
{
	free(iv->start);
	free(iv->end);
	memset(iv, 0, sizeof(*iv));
}

/* Active bookings of the line overlapping [from, to), except entry
 * exclude. */
static int
intervals_load(struct wl_ctx *ctx, const char *queue_id, int64_t from,
	       int64_t to, const char *exclude, struct intervals *iv)
{
	struct wl_rows *rows = NULL;
	size_t r;
	int rc;

	memset(iv, 0, sizeof(*iv));
	rc = wl_sql_exec(ctx->app->db, STMT_BOOKING_INTERVALS,
			 SQL_ARGS(SQL_STR(queue_id), SQL_INT(to), SQL_INT(from),
				  SQL_STR(exclude ? exclude : "")),
			 &rows, NULL);
	if (rc != WL_OK)
		return rc;
	iv->start = calloc(rows->nrows + 1, sizeof(int64_t));
	iv->end = calloc(rows->nrows + 1, sizeof(int64_t));
	if (iv->start == NULL || iv->end == NULL) {
		wl_rows_free(rows);
		intervals_free(iv);
		return WL_ERR_NOMEM;
	}
	for (r = 0; r < rows->nrows; r++) {
		iv->start[r] = wl_rows_int(rows, r, 0);
		iv->end[r] = wl_rows_int(rows, r, 1);
	}
	iv->n = rows->nrows;
	wl_rows_free(rows);
	return WL_OK;
}

/* How many of the bookings overlap [s, e). */
static long long
overlapping(const struct intervals *iv, int64_t s, int64_t e)
{
	long long n = 0;
	size_t i;

	for (i = 0; i < iv->n; i++)
		if (iv->start[i] < e && iv->end[i] > s)
			n++;
	return n;
}

/*
 * Check that a booking of minutes at instant at fits line q: bookings
 * open, a slot of today's grid, and room (wl_booking_capacity(); inside
 * the open transaction; exclude is the entry being moved, or NULL).
 * Returns 0 with *end set, -1 after a 409 reply, or a wl_err.
 */
int
wl_booking_place(struct wl_ctx *ctx, const struct wl_queue *q, int64_t at,
		 long long minutes, const char *exclude, int64_t *end)
{
	struct wl_booking_window w;

	if (!q->bookings_enabled || q->bookings_paused) {
		wl_reply_error(ctx, WL_C_QUEUE_UNAVAILABLE,
			       "this line is not taking bookings now");
		return -1;
	}
	*end = at + minutes * MIN_MS;
	if (wl_booking_window(q, wl_now_ms(), &w) < 0 ||
	    !wl_booking_slot_ok(q, &w, at, minutes)) {
		wl_reply_error(ctx, WL_C_BOOKING_UNAVAILABLE,
			       "scheduledFor is not a bookable slot today: "
			       "same business day, not in the past, on the "
			       "%d-minute grid and within booking hours",
			       q->slot_minutes);
		return -1;
	}
	return wl_booking_capacity(ctx, q, at, *end, exclude);
}

/*
 * Check that line q has room for one more active booking over [at, end)
 * (inside the open transaction; exclude is the entry being placed, or
 * NULL).  The line's booking counter is updated first, which serializes
 * every booking of the line until commit, so the count cannot be raced.
 * Returns 0, -1 after a 409 reply, or a wl_err.
 */
int
wl_booking_capacity(struct wl_ctx *ctx, const struct wl_queue *q,
		    int64_t at, int64_t end, const char *exclude)
{
	struct intervals iv;
	long long taken;
	int rc;

	if ((rc = wl_sql_later(ctx->app->db, STMT_QUEUE_BOOKING_LOCK,
			       SQL_ARGS(SQL_STR(q->id)))) != WL_OK)
		return rc;
	if ((rc = intervals_load(ctx, q->id, at, end, exclude, &iv)) != WL_OK)
		return rc;
	taken = overlapping(&iv, at, end);
	intervals_free(&iv);
	if (taken >= q->capacity) {
		wl_reply_error(ctx, WL_C_BOOKING_UNAVAILABLE,
			       "scheduledFor is fully booked: no room for "
			       "another booking at that time");
		return -1;
	}
	return 0;
}

/* GET /waitlist/queues/{queueId}/availability[?serviceTypeId=] */
int
wl_h_queue_availability(struct wl_ctx *ctx)
{
	char svc[WL_ID_MAX * 2], date[16];
	struct intervals iv = {0};
	struct wl_queue q;
	long long minutes;
	struct wl_booking_window w;
	cJSON *root = NULL, *o, *slots, *s;
	int64_t at, first;
	int rc, has_svc, open;

	if ((rc = wl_queue_load(ctx, ctx->param[0], &q)) < 0)
		return -rc;
	if (rc == 0)
		return wl_reply_error(ctx, WL_C_NOT_FOUND, "queue not found");
	minutes = q.slot_minutes;
	has_svc = wl_query_get(ctx->http->query, "serviceTypeId", svc,
			       sizeof(svc));
	if (has_svc < 0) {
		rc = wl_reply_error(ctx, WL_C_VALIDATION_FAILED,
				    "serviceTypeId is not valid");
		goto out;
	}
	if (has_svc && (rc = wl_service_check(ctx, q.id, svc, &minutes)) != 0) {
		rc = rc < 0 ? WL_OK : rc;
		goto out;
	}
	/* (Hours wholly inside a skipped hour have no time today.) */
	open = wl_booking_window(&q, wl_now_ms(), &w) == 0 && w.nspans > 0 &&
	       q.bookings_enabled && !q.bookings_paused;
	root = cJSON_CreateObject();
	o = cJSON_AddObjectToObject(root, "availability");
	wl_json_add_str(o, "queueId", q.id);
	snprintf(date, sizeof(date), "%04d-%02d-%02d", w.day.year % 10000,
		 w.day.month % 100, w.day.day % 100);
	wl_json_add_str(o, "date", date);
	wl_json_add_str(o, "timeZone", q.tz);
	wl_json_add_bool(o, "bookingsOpen", open);
	wl_json_add_int(o, "slotMinutes", q.slot_minutes);
	wl_json_add_int(o, "durationMinutes", minutes);
	wl_json_add_int(o, "capacity", q.capacity);
	slots = cJSON_AddArrayToObject(o, "slots");
	if (open) {
		rc = intervals_load(ctx, q.id, w.open, w.close, NULL, &iv);
		if (rc != WL_OK)
			goto out;
		/* The first grid point not in the past. */
		first = w.open;
		if (w.now > first)
			first += (w.now - first + q.slot_minutes * MIN_MS - 1) /
				 (q.slot_minutes * MIN_MS) *
				 (q.slot_minutes * MIN_MS);
		/* (A repeated hour can leave a hole in the hours.) */
		for (at = first; at + minutes * MIN_MS <= w.close;
		     at += q.slot_minutes * MIN_MS) {
			long long left;

			if (!wl_booking_slot_ok(&q, &w, at, minutes))
				continue;
			left = q.capacity -
			       overlapping(&iv, at, at + minutes * MIN_MS);
			s = cJSON_CreateObject();
			cJSON_AddItemToArray(slots, s);
			wl_json_add_ts(s, "startsAt", at);
			wl_json_add_ts(s, "endsAt", at + minutes * MIN_MS);
			wl_json_add_int(s, "remaining", left > 0 ? left : 0);
		}
	}
	rc = wl_reply_json(ctx, 200, root);
	root = NULL;
out:
	cJSON_Delete(root);
	intervals_free(&iv);
	wl_queue_clear(&q);
	return rc;
}

/* The locked booking of the route, or -1 after a 404/400 reply. */
static int
lock_booking(struct wl_ctx *ctx, struct wl_rows **rows)
{
	int rc = wl_entry_lock(ctx, ctx->param[0], rows);

	if (rc != 0)
		return rc;
	if (!wl_rows_int(*rows, 0, 5)) {
		wl_rows_free(*rows);
		*rows = NULL;
		wl_reply_error(ctx, WL_C_INVALID_REQUEST,
			       "this entry is a walk-in, not a booking");
		return -1;
	}
	return 0;
}

/* The body of a reschedule; 0 or -1 after a 400 reply. */
static int
reschedule_parse(struct wl_ctx *ctx, const cJSON *body, int64_t *at,
		 long long *version)
{
	static const char *const keys[] = {"scheduledFor", "expectedVersion",
					   NULL};
	const char *when;

	if (wl_body_only(ctx, body, keys) < 0)
		return -1;
	if (wl_json_get_string(body, "scheduledFor", &when) != 1 ||
	    wl_iso_to_ms(when, at) < 0)
		return wl_reply_error(ctx, WL_C_VALIDATION_FAILED,
				      "scheduledFor must be an ISO 8601 "
				      "timestamp with a UTC offset"), -1;
	if (wl_field_version(ctx, body, version) < 0)
		return -1;
	return 0;
}

/* The booking's length: its service's duration, else the slot length; a
 * service since made inactive keeps the booking's current length. */
static long long
booking_minutes(struct wl_ctx *ctx, const struct wl_queue *q,
		const struct wl_rows *e, int *err)
{
	const char *svc = wl_rows_str(e, 0, 9);
	long long minutes = q->slot_minutes;
	int rc;

	*err = 0;
	if (svc == NULL)
		return minutes;
	if ((rc = wl_service_check(ctx, q->id, svc, &minutes)) > 0)
		*err = rc;
	else if (rc < 0) {
		wl_resp_clear_body(ctx->resp);
		minutes = (wl_rows_int(e, 0, 8) - wl_rows_int(e, 0, 7)) / MIN_MS;
	}
	return minutes;
}

/* POST /bookings/{entryId}/reschedule {scheduledFor, expectedVersion} */
int
wl_h_booking_reschedule(struct wl_ctx *ctx)
{
	struct wl_rows *e = NULL;
	struct wl_events ev = {0};
	struct wl_queue q = {0};
	long long version, minutes;
	int64_t at, end, now = wl_now_ms();
	cJSON *body, *data;
	int rc = 0;

	if ((body = wl_body_json(ctx)) == NULL)
		return WL_OK;
	if (reschedule_parse(ctx, body, &at, &version) < 0 ||
	    (rc = lock_booking(ctx, &e)) != 0)
		goto out;
	if (wl_rows_int(e, 0, 4) != version) {
		rc = wl_reply_error(ctx, WL_C_VERSION_CONFLICT,
				    "expectedVersion %lld does not match the "
				    "current version %lld",
				    version, wl_rows_int(e, 0, 4));
		goto out;
	}
	if (!wl_status_active(wl_status_parse(wl_rows_str(e, 0, 3)))) {
		rc = wl_reply_error(ctx, WL_C_INVALID_TRANSITION,
				    "only an active booking can be "
				    "rescheduled");
		goto out;
	}
	if ((rc = wl_queue_load(ctx, wl_rows_str(e, 0, 1), &q)) <= 0) {
		rc = rc < 0 ? -rc : WL_ERR_NOTFOUND;
		goto out;
	}
	minutes = booking_minutes(ctx, &q, e, &rc);
	if (rc != 0 ||
	    (rc = wl_booking_place(ctx, &q, at, minutes, wl_rows_str(e, 0, 0),
				   &end)) != 0)
		goto out;
	rc = wl_sql_later(ctx->app->db, STMT_ENTRY_RESCHEDULE,
			  SQL_ARGS(SQL_INT(at), SQL_INT(end), SQL_INT(now),
				   SQL_STR(wl_rows_str(e, 0, 0)),
				   SQL_INT(version)));
	if (rc != WL_OK)
		goto out;
	/* (An add is NULL when out of memory: no event, and no change.) */
	data = cJSON_CreateObject();
	if (!wl_json_add_str(data, "entryId", wl_rows_str(e, 0, 0)) ||
	    !wl_json_add_str(data, "bookingId", wl_rows_str(e, 0, 6)) ||
	    !wl_json_add_ts(data, "scheduledFor", at) ||
	    !wl_json_add_ts(data, "previousScheduledFor",
			    wl_rows_int(e, 0, 7)))
		data = wl_json_drop(data);
	wl_events_add(&ev, WL_EV_BOOKING_RESCHEDULED, data);
	/* Reply first: the event sequence is locked only at the end. */
	if ((rc = wl_entry_reply(ctx, wl_rows_str(e, 0, 0), 200)) == WL_OK)
		rc = wl_outbox_write(ctx->app->db, &ev, ctx->key.tenant.id,
				     wl_rows_str(e, 0, 2), q.id,
				     wl_rows_str(e, 0, 0), version + 1, now);
out:
	wl_events_clear(&ev);
	wl_queue_clear(&q);
	wl_rows_free(e);
	cJSON_Delete(body);
	return rc < 0 ? WL_OK : rc;
}

/* POST /bookings/{entryId}/cancel {expectedStatus, expectedVersion,
 * reason?} */
int
wl_h_booking_cancel(struct wl_ctx *ctx)
{
	static const char *const keys[] = {"expectedStatus", "expectedVersion",
					   "reason", NULL};
	struct wl_rows *e = NULL;
	const char *expected, *reason;
	long long version;
	cJSON *body;
	int rc = WL_OK;

	if ((body = wl_body_json(ctx)) == NULL)
		return WL_OK;
	if (wl_body_only(ctx, body, keys) < 0 ||
	    wl_field_string(ctx, body, "reason", 1, 500, 1, &reason) < 0)
		goto out;
	if (wl_json_get_string(body, "expectedStatus", &expected) != 1 ||
	    wl_status_parse(expected) < 0) {
		wl_reply_error(ctx, WL_C_VALIDATION_FAILED,
			       "expectedStatus must be one of the entry "
			       "statuses");
		goto out;
	}
	if (wl_field_version(ctx, body, &version) < 0)
		goto out;
	if ((rc = lock_booking(ctx, &e)) != 0) {
		rc = rc < 0 ? WL_OK : rc;
		goto out;
	}
	rc = wl_entry_change_status(ctx, e, wl_status_parse(expected), version,
				    WL_ST_CANCELLED);
out:
	wl_rows_free(e);
	cJSON_Delete(body);
	return rc;
}
