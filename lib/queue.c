/*
 * Lines (queues): loading, the Queue object, GET /waitlist/queues and
 * GET /waitlist/queues/{queueId}, and the business-day arithmetic the
 * entry and booking rules share.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>

#include "extern.h"

#define QUEUE_NCOLS 16

/* Fill q from the QUEUE_COLS of row r.  Returns WL_OK or WL_ERR_NOMEM. */
static int
queue_from_row(const struct wl_rows *rows, size_t r, struct wl_queue *q)
{
	const char *own = wl_rows_str(rows, r, 3), *biz = wl_rows_str(rows, r, 4);

	memset(q, 0, sizeof(*q));
	snprintf(q->id, sizeof(q->id), "%s", wl_rows_str(rows, r, 0));
	snprintf(q->business_id, sizeof(q->business_id), "%s",
		 wl_rows_str(rows, r, 1));
	snprintf(q->tz, sizeof(q->tz), "%s", own ? own : biz ? biz : "UTC");
	q->name = strdup(wl_rows_str(rows, r, 2));
	q->working_hours = cJSON_Parse(wl_rows_str(rows, r, 5));
	q->booking_hours = cJSON_Parse(wl_rows_str(rows, r, 11));
	q->walk_ins_enabled = (int)wl_rows_int(rows, r, 6);
	q->walk_ins_paused = (int)wl_rows_int(rows, r, 7);
	q->bookings_enabled = (int)wl_rows_int(rows, r, 8);
	q->bookings_paused = (int)wl_rows_int(rows, r, 9);
	q->slot_minutes = (int)wl_rows_int(rows, r, 10);
	q->capacity = (int)wl_rows_int(rows, r, 12);
	q->service_required = (int)wl_rows_int(rows, r, 13);
	if (q->name == NULL || q->working_hours == NULL ||
	    q->booking_hours == NULL) {
		wl_queue_clear(q);
		return WL_ERR_NOMEM;
	}
	return WL_OK;
}

void
wl_queue_clear(struct wl_queue *q)
{
	free(q->name);
	cJSON_Delete(q->working_hours);
	cJSON_Delete(q->booking_hours);
	memset(q, 0, sizeof(*q));
}

/*
 * Line id of the key's tenant: 1 visible (*rows holds its row; the caller
 * frees it), 0 absent, 2 present but outside the key's restrictions, or a
 * negated wl_err.
 */
static int
queue_row(struct wl_ctx *ctx, const char *id, struct wl_rows **rows)
{
	int rc;

	*rows = NULL;
	if (!wl_id_usable(id))
		return 0;
	rc = wl_cached_exec(ctx->app->keys, ctx->app->db, STMT_QUEUE_GET,
			    SQL_ARGS(SQL_STR(ctx->key.tenant.id), SQL_STR(id)),
			    0, rows);
	if (rc != WL_OK)
		return -rc;
	rc = (*rows)->nrows == 0 ? 0
	     : wl_key_allows_queue(&ctx->key, wl_rows_str(*rows, 0, 1), id)
		 ? 1
		 : 2;
	if (rc != 1) {
		wl_rows_free(*rows);
		*rows = NULL;
	}
	return rc;
}

/*
 * Load line id of the key's tenant if the key may see it.  Returns 1 and
 * fills q (clear with wl_queue_clear()), 0 when absent or not visible, or
 * a negated wl_err.
 */
int
wl_queue_load(struct wl_ctx *ctx, const char *id, struct wl_queue *q)
{
	struct wl_rows *rows;
	int rc;

	if ((rc = queue_row(ctx, id, &rows)) != 1)
		return rc == 2 ? 0 : rc;
	rc = queue_from_row(rows, 0, q) == WL_OK ? 1 : -WL_ERR_NOMEM;
	wl_rows_free(rows);
	return rc;
}

/*
 * Look up line id of the key's tenant.  Returns 1 visible (with its
 * business's id in business, WL_ID_MAX bytes, unless NULL), 0 absent, 2
 * present but outside the key's restrictions, or a negated wl_err (the
 * twin of wl_business_find()).
 */
int
wl_queue_find(struct wl_ctx *ctx, const char *id, char *business)
{
	struct wl_rows *rows;
	int rc = queue_row(ctx, id, &rows);

	if (rc == 1 && business)
		snprintf(business, WL_ID_MAX, "%s", wl_rows_str(rows, 0, 1));
	wl_rows_free(rows);
	return rc;
}

/*
 * The local business day containing instant now in zone tz, as the
 * instants [*start, *end) and the local date.  Returns 0 or -1.
 */
int
wl_business_day(const char *tz, int64_t now, int64_t *start, int64_t *end,
		struct wl_local *day)
{
	if (wl_tz_local(tz, now, day) < 0 ||
	    wl_tz_instant(tz, day->year, day->month, day->day, 0, start) < 0 ||
	    wl_tz_instant(tz, day->year, day->month, day->day, 1440, end) < 0)
		return -1;
	return 0;
}

/*
 * The opening span of hours on local weekday wday: returns 1 with the
 * minutes [*from, *to) when open that day, 0 when closed, 2 when no
 * schedule is enforced (hours.enabled false).
 */
int
wl_hours_span(const cJSON *hours, int wday, int *from, int *to)
{
	const cJSON *days = cJSON_GetObjectItemCaseSensitive(hours, "days");
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(days,
							  wl_day_names[wday]);
	const char *s, *e;
	int on;

	if (wl_json_get_bool(hours, "enabled", &on) == 1 && !on)
		return 2;
	if (d == NULL || wl_json_get_bool(d, "enabled", &on) != 1 || !on ||
	    wl_json_get_string(d, "start", &s) != 1 ||
	    wl_json_get_string(d, "end", &e) != 1 ||
	    wl_hhmm_parse(s, from) < 0 || wl_hhmm_parse(e, to) < 0)
		return 0;
	return 1;
}

/* Is the line open for walk-ins at instant now? */
int
wl_queue_open_now(const struct wl_queue *q, int64_t now)
{
	struct wl_local l;
	int from, to, rc;

	if (wl_tz_local(q->tz, now, &l) < 0)
		return 0;
	rc = wl_hours_span(q->working_hours, l.wday, &from, &to);
	return rc == 2 || (rc == 1 && l.minute >= from && l.minute < to);
}

/* Active guests and today's average wait of line q. */
static int
queue_stats(struct wl_ctx *ctx, const struct wl_queue *q, long long *active,
	    long long *avg_wait)
{
	struct wl_rows *rows = NULL;
	struct wl_local day;
	int64_t start, end;
	const char *avg;
	int rc;

	*active = *avg_wait = 0;
	if (wl_business_day(q->tz, wl_now_ms(), &start, &end, &day) < 0)
		return WL_ERR_INVALID;
	rc = wl_sql_exec(ctx->app->db, STMT_QUEUE_STATS,
			 SQL_ARGS(SQL_STR(q->id), SQL_STR(q->id),
				  SQL_INT(start), SQL_INT(end)),
			 &rows, NULL);
	if (rc != WL_OK)
		return rc;
	*active = wl_rows_int(rows, 0, 0);
	if ((avg = wl_rows_str(rows, 0, 1)) != NULL)
		*avg_wait = llround(strtod(avg, NULL) / 60000.0);
	wl_rows_free(rows);
	return WL_OK;
}

/* The Queue object of q with its attached services and fields. */
static cJSON *
queue_json(const struct wl_queue *q, long long active, long long avg_wait,
	   const struct wl_rows *services, const struct wl_rows *fields)
{
	cJSON *o = cJSON_CreateObject(), *av;

	wl_json_add_str(o, "id", q->id);
	wl_json_add_str(o, "businessId", q->business_id);
	wl_json_add_str(o, "name", q->name);
	wl_json_add_int(o, "activeGuests", active);
	wl_json_add_int(o, "averageWaitMinutes", avg_wait);
	wl_json_add_str(o, "timeZone", q->tz);
	wl_attach_children(o, "services", services, q->id, wl_service_json);
	wl_attach_children(o, "customFields", fields, q->id, wl_field_json);
	cJSON_AddItemToObject(o, "workingHours",
			      cJSON_Duplicate(q->working_hours, 1));
	av = cJSON_AddObjectToObject(o, "availability");
	wl_json_add_bool(av, "walkInsEnabled", q->walk_ins_enabled);
	wl_json_add_bool(av, "walkInsPaused", q->walk_ins_paused);
	wl_json_add_bool(av, "bookingsEnabled", q->bookings_enabled);
	wl_json_add_bool(av, "bookingsPaused", q->bookings_paused);
	wl_json_add_str(av, "bookingWindow", "same_business_day");
	wl_json_add_int(av, "bookingSlotMinutes", q->slot_minutes);
	cJSON_AddItemToObject(av, "bookingHours",
			      cJSON_Duplicate(q->booking_hours, 1));
	wl_json_add_int(av, "bookingCapacity", q->capacity);
	wl_json_add_bool(av, "serviceRequired", q->service_required);
	return o;
}

/* Services and public fields of the lines whose ids are in JSON ids. */
static int
load_children(struct wl_ctx *ctx, const char *ids, struct wl_rows **services,
	      struct wl_rows **fields)
{
	int rc;

	rc = wl_sql_exec(ctx->app->db, STMT_QUEUE_SERVICES,
			 SQL_ARGS(SQL_STR(ids)), services, NULL);
	if (rc == WL_OK)
		rc = wl_sql_exec(ctx->app->db, STMT_QUEUE_FIELDS,
				 SQL_ARGS(SQL_STR(ids)), fields, NULL);
	return rc;
}

/* Append the Queue objects of the first n rows to array a. */
static int
add_queues(struct wl_ctx *ctx, const struct wl_rows *rows, size_t n,
	   cJSON *a)
{
	struct wl_rows *services = NULL, *fields = NULL;
	char *ids = wl_rows_ids_json(rows, n, 0);
	long long active, avg;
	struct wl_queue q;
	size_t r;
	int rc = WL_ERR_NOMEM;

	if (ids == NULL || (rc = load_children(ctx, ids, &services, &fields)))
		goto out;
	for (r = 0; r < n; r++) {
		if ((rc = queue_from_row(rows, r, &q)) != WL_OK)
			goto out;
		rc = queue_stats(ctx, &q, &active, &avg);
		if (rc == WL_OK)
			cJSON_AddItemToArray(a, queue_json(&q, active, avg,
							   services, fields));
		wl_queue_clear(&q);
		if (rc != WL_OK)
			goto out;
	}
out:
	free(ids);
	wl_rows_free(services);
	wl_rows_free(fields);
	return rc;
}

/* GET /waitlist/queues?businessId= */
int
wl_h_queue_list(struct wl_ctx *ctx)
{
	const struct wl_key *k = &ctx->key;
	struct wl_rows *rows = NULL;
	char biz[WL_ID_PARAM_BYTES], filters[sizeof("businessId=") + sizeof(biz)];
	char pos[WL_ID_MAX * 2];
	cJSON *root = NULL, *a;
	int limit, rc;
	size_t n;

	rc = wl_query_get(ctx->http->query, "businessId", biz, sizeof(biz));
	if (rc <= 0 || !wl_business_id_valid(biz))
		return wl_reply_error(ctx, WL_C_VALIDATION_FAILED,
				      "businessId is required: 1 to 160 "
				      "characters");
	snprintf(filters, sizeof(filters), "businessId=%s", biz);
	if (wl_page_params(ctx, filters, &limit, pos, sizeof(pos)) < 0)
		return WL_OK;
	if ((rc = wl_business_find(ctx, biz, NULL)) < 0)
		return -rc;
	if (rc == 0)
		return wl_reply_error(ctx, WL_C_NOT_FOUND,
				      "business not found");
	if (rc == 2)
		return wl_reply_error(ctx, WL_C_RESOURCE_FORBIDDEN,
				      "businessId is outside this key's "
				      "restrictions");
	rc = wl_sql_exec(ctx->app->db, STMT_QUEUE_PAGE,
			 SQL_ARGS(SQL_STR(k->tenant.id), SQL_STR(biz),
				  SQL_STR(pos), SQL_STR(k->queue_json),
				  SQL_STR(k->queue_json), SQL_INT(limit + 1)),
			 &rows, NULL);
	if (rc != WL_OK)
		return rc;
	n = rows->nrows > (size_t)limit ? (size_t)limit : rows->nrows;
	root = cJSON_CreateObject();
	a = cJSON_AddArrayToObject(root, "queues");
	if ((rc = add_queues(ctx, rows, n, a)) == WL_OK)
		rc = wl_page_next(ctx, root, filters,
				  rows->nrows > n ? wl_rows_str(rows, n - 1, 0)
						  : NULL);
	if (rc == WL_OK) {
		rc = wl_reply_json(ctx, 200, root);
		root = NULL;
	}
	cJSON_Delete(root);
	wl_rows_free(rows);
	return rc;
}

/* GET /waitlist/queues/{queueId} */
int
wl_h_queue_get(struct wl_ctx *ctx)
{
	struct wl_rows *rows = NULL;
	const char *id = ctx->param[0];
	cJSON *root = NULL, *a;
	int rc;

	rc = wl_sql_exec(ctx->app->db, STMT_QUEUE_GET,
			 SQL_ARGS(SQL_STR(ctx->key.tenant.id), SQL_STR(id)),
			 &rows, NULL);
	if (rc != WL_OK)
		return rc;
	if (rows->nrows != 1 ||
	    !wl_key_allows_queue(&ctx->key, wl_rows_str(rows, 0, 1), id)) {
		wl_rows_free(rows);
		return wl_reply_error(ctx, WL_C_NOT_FOUND, "queue not found");
	}
	a = cJSON_CreateArray();
	if ((rc = add_queues(ctx, rows, 1, a)) == WL_OK) {
		root = cJSON_CreateObject();
		cJSON_AddItemToObject(root, "queue",
				      cJSON_DetachItemFromArray(a, 0));
		rc = wl_reply_json(ctx, 200, root);
	}
	cJSON_Delete(a);
	wl_rows_free(rows);
	return rc;
}
