/*
 * GET /analytics/queues/{queueId}/summary?date=YYYY-MM-DD: counts for one
 * local business day of a line, from its entries and their status
 * history, in two indexed queries.  Never a guest value.
 *
 * Definitions: the day's entries are those created during it (local
 * time of the line, DST-correct).  Waits are creation to first
 * in_service of walk-ins; service is the last in_service to completed.
 * served counts entries that reached in_service; noShowRate is no_show
 * over all entries of the day.  Averages and percentiles (nearest rank)
 * are minutes with one decimal, 0 when there is nothing to measure.
 */
#include "config.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>

#include "extern.h"

#define MAX_BACK_DAYS 90

static int
cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return x < y ? -1 : x > y;
}

static double
minutes(double ms)
{
	return round(ms / 60000.0 * 10.0) / 10.0;
}

/* Nearest-rank percentile p of n sorted values. */
static double
percentile(const long long *v, size_t n, double p)
{
	size_t rank;

	if (n == 0)
		return 0;
	rank = (size_t)ceil(p / 100.0 * (double)n);
	return (double)v[rank > 0 ? rank - 1 : 0];
}

/* Is s exactly DDDD-DD-DD (digits and two dashes, nothing else)? */
static int
ymd_shaped(const char *s)
{
	size_t i;

	for (i = 0; i < 10; i++)
		if (i == 4 || i == 7 ? s[i] != '-'
				     : !isdigit((unsigned char)s[i]))
			return 0;
	return s[10] == '\0';
}

/* Parse the date parameter into a local day; -1 after a 400 reply. */
static int
day_param(struct wl_ctx *ctx, const struct wl_queue *q, int64_t now,
	  struct wl_local *day)
{
	char date[16];
	struct wl_local today;
	int64_t start, end, t;
	int y, m, d, rc;

	rc = wl_query_get(ctx->http->query, "date", date, sizeof(date));
	if (wl_business_day(q->tz, now, &start, &end, &today) < 0)
		return WL_ERR_INVALID;
	if (rc == 0) {
		*day = today;
		return 0;
	}
	if (rc < 0 || !ymd_shaped(date) ||
	    sscanf(date, "%4d-%2d-%2d", &y, &m, &d) != 3 ||
	    wl_tz_instant(q->tz, y, m, d, 720, &t) < 0 ||
	    wl_tz_local(q->tz, t, day) < 0 || day->year != y ||
	    day->month != m || day->day != d)
		return wl_reply_error(ctx, WL_C_VALIDATION_FAILED,
				      "date must be a calendar date "
				      "YYYY-MM-DD"), -1;
	if (t >= end)
		return wl_reply_error(ctx, WL_C_VALIDATION_FAILED,
				      "date is in the future"), -1;
	if (t < start - MAX_BACK_DAYS * DAY_MS)
		return wl_reply_error(ctx, WL_C_VALIDATION_FAILED,
				      "date is more than %d days back",
				      MAX_BACK_DAYS), -1;
	return 0;
}

/* Mean minutes from the last in_service to completed, per entry. */
static double
service_average(const struct wl_rows *h)
{
	double sum = 0;
	long long n = 0, since = -1;
	const char *cur = "";
	size_t r;

	for (r = 0; h && r < h->nrows; r++) {
		if (strcmp(wl_rows_str(h, r, 0), cur) != 0) {
			cur = wl_rows_str(h, r, 0);
			since = -1;
		}
		if (strcmp(wl_rows_str(h, r, 1), "in_service") == 0)
			since = wl_rows_int(h, r, 2);
		else if (since >= 0) {
			sum += (double)(wl_rows_int(h, r, 2) - since);
			n++;
			since = -1;
		}
	}
	return n ? minutes(sum / (double)n) : 0;
}

static cJSON *
summary_json(const struct wl_queue *q, const struct wl_local *day,
	     const struct wl_rows *e, const struct wl_rows *h)
{
	long long by[WL_ST__MAX] = {0}, arrivals[24] = {0}, *waits;
	long long total = e->nrows, bookings = 0, served = 0;
	size_t r, nw = 0;
	double sum = 0;
	char date[16];
	cJSON *o = cJSON_CreateObject(), *x, *a;
	struct wl_local l;
	int s;

	waits = calloc(e->nrows + 1, sizeof(*waits));
	for (r = 0; r < e->nrows; r++) {
		int booking = (int)wl_rows_int(e, r, 1);
		bookings += booking;
		if ((s = wl_status_parse(wl_rows_str(e, r, 2))) >= 0)
			by[s]++;
		if (wl_tz_local(q->tz, wl_rows_int(e, r, 3), &l) == 0)
			arrivals[l.minute / 60 % 24]++;
		if (wl_rows_str(e, r, 4) == NULL)
			continue;
		served++;
		if (!booking && waits) {
			waits[nw] = wl_rows_int(e, r, 4) - wl_rows_int(e, r, 3);
			sum += (double)waits[nw++];
		}
	}
	if (waits)
		qsort(waits, nw, sizeof(*waits), cmp_ll);
	snprintf(date, sizeof(date), "%04d-%02d-%02d", day->year % 10000,
		 day->month % 100, day->day % 100);
	wl_json_add_str(o, "queueId", q->id);
	wl_json_add_str(o, "date", date);
	wl_json_add_str(o, "timeZone", q->tz);
	x = cJSON_AddObjectToObject(o, "entries");
	wl_json_add_int(x, "total", total);
	wl_json_add_int(x, "walkIns", total - bookings);
	wl_json_add_int(x, "bookings", bookings);
	x = cJSON_AddObjectToObject(o, "byStatus");
	for (s = 0; s < WL_ST__MAX; s++)
		wl_json_add_int(x, wl_status_names[s], by[s]);
	wl_json_add_int(o, "served", served);
	cJSON_AddNumberToObject(o, "noShowRate",
				total ? round((double)by[WL_ST_NO_SHOW] /
					      (double)total * 10000) / 10000
				      : 0);
	x = cJSON_AddObjectToObject(o, "waitMinutes");
	cJSON_AddNumberToObject(x, "average", nw ? minutes(sum / (double)nw) : 0);
	cJSON_AddNumberToObject(x, "p50", minutes(percentile(waits, nw, 50)));
	cJSON_AddNumberToObject(x, "p90", minutes(percentile(waits, nw, 90)));
	x = cJSON_AddObjectToObject(o, "serviceMinutes");
	cJSON_AddNumberToObject(x, "average", service_average(h));
	a = cJSON_AddArrayToObject(o, "arrivalsByHour");
	for (s = 0; s < 24; s++)
		cJSON_AddItemToArray(a, cJSON_CreateNumber((double)arrivals[s]));
	free(waits);
	return o;
}

/* GET /analytics/queues/{queueId}/summary */
int
wl_h_analytics_summary(struct wl_ctx *ctx)
{
	struct wl_rows *e = NULL, *h = NULL;
	struct wl_queue q;
	struct wl_local day;
	int64_t start, end;
	cJSON *root;
	int rc;

	if ((rc = wl_queue_load(ctx, ctx->param[0], &q)) < 0)
		return -rc;
	if (rc == 0)
		return wl_reply_error(ctx, WL_C_NOT_FOUND, "queue not found");
	if ((rc = day_param(ctx, &q, wl_now_ms(), &day)) != 0) {
		wl_queue_clear(&q);
		return rc < 0 ? WL_OK : rc;
	}
	rc = WL_ERR_INVALID;
	if (wl_tz_instant(q.tz, day.year, day.month, day.day, 0, &start) < 0 ||
	    wl_tz_instant(q.tz, day.year, day.month, day.day, 1440, &end) < 0)
		goto out;
	rc = wl_sql_exec(ctx->app->db, STMT_ANALYTICS_ENTRIES,
			 SQL_ARGS(SQL_STR(q.id), SQL_INT(start), SQL_INT(end)),
			 &e, NULL);
	if (rc == WL_OK)
		rc = wl_sql_exec(ctx->app->db, STMT_ANALYTICS_SERVICE,
				 SQL_ARGS(SQL_STR(q.id), SQL_INT(start),
					  SQL_INT(end)),
				 &h, NULL);
	if (rc != WL_OK)
		goto out;
	root = cJSON_CreateObject();
	cJSON_AddItemToObject(root, "summary", summary_json(&q, &day, e, h));
	rc = wl_reply_json(ctx, 200, root);
out:
	wl_rows_free(e);
	wl_rows_free(h);
	wl_queue_clear(&q);
	return rc;
}
