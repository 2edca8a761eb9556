/*
 * Entries: statuses and their transitions, the Entry object, and the read
 * routes GET /waitlist/entries and GET /waitlist/entries/{entryId}.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>

#include "extern.h"

const char *const wl_status_names[WL_ST__MAX] = {
    "waiting", "ready", "confirmed", "in_service",
    "completed", "cancelled", "no_show",
};

#define B(s) (1u << (s))
static const unsigned transitions[WL_ST__MAX] = {
    [WL_ST_WAITING] = B(WL_ST_READY) | B(WL_ST_CONFIRMED) |
		      B(WL_ST_IN_SERVICE) | B(WL_ST_CANCELLED) |
		      B(WL_ST_NO_SHOW),
    [WL_ST_READY] = B(WL_ST_WAITING) | B(WL_ST_CONFIRMED) |
		    B(WL_ST_IN_SERVICE) | B(WL_ST_CANCELLED) | B(WL_ST_NO_SHOW),
    [WL_ST_CONFIRMED] = B(WL_ST_WAITING) | B(WL_ST_READY) |
			B(WL_ST_IN_SERVICE) | B(WL_ST_CANCELLED) |
			B(WL_ST_NO_SHOW),
    [WL_ST_IN_SERVICE] = B(WL_ST_WAITING) | B(WL_ST_COMPLETED),
};
#undef B

/* Status by name; -1 when unknown. */
int
wl_status_parse(const char *s)
{
	return wl_name_index(wl_status_names, WL_ST__MAX, s);
}

/* May an entry move from one status to another? */
int
wl_status_allowed(enum wl_status from, enum wl_status to)
{
	return (transitions[from] >> to) & 1;
}

/* Active statuses: waiting, ready, confirmed. */
int
wl_status_active(enum wl_status s)
{
	return s == WL_ST_WAITING || s == WL_ST_READY || s == WL_ST_CONFIRMED;
}

/*
 * The recent wait of row r's line in ms (a decimal string), or NULL: only
 * for a row with a position (an active walk-in), and only while a
 * walk-in of the line was first served within the last day.
 */
static const char *
recent_wait(const struct wl_rows *rows, size_t r, int64_t now)
{
	if (!wl_rows_str(rows, r, 19) || !wl_rows_str(rows, r, 21) ||
	    wl_rows_int(rows, r, 21) < now - DAY_MS)
		return NULL;
	return wl_rows_str(rows, r, 20);
}

/* The Entry object of row r (ENTRY_COLS).  Guest values only with
 * guest:read. */
cJSON *
wl_entry_json(const struct wl_ctx *ctx, const struct wl_rows *rows, size_t r)
{
	int guest = (ctx->key.scopes >> WL_SCOPE_GUEST_READ) & 1;
	const char *cd = wl_rows_str(rows, r, 12), *sms = wl_rows_str(rows, r, 16);
	int64_t now = wl_now_ms(), created = wl_rows_int(rows, r, 17);
	const char *avg = recent_wait(rows, r, now);
	cJSON *o = cJSON_CreateObject(), *v;

	wl_json_add_str(o, "id", wl_rows_str(rows, r, 0));
	wl_json_add_str(o, "guestId", wl_rows_str(rows, r, 1));
	wl_json_add_str(o, "bookingId", wl_rows_str(rows, r, 2));
	wl_json_add_int(o, "version", wl_rows_int(rows, r, 3));
	wl_json_add_str(o, "status", wl_rows_str(rows, r, 4));
	wl_json_add_str(o, "queueId", wl_rows_str(rows, r, 5));
	wl_json_add_str(o, "businessId", wl_rows_str(rows, r, 6));
	if (guest) {
		wl_json_add_str(o, "fullName", wl_rows_str(rows, r, 7));
		wl_json_add_str(o, "phone", wl_rows_str(rows, r, 8));
	}
	wl_json_add_int(o, "partySize", wl_rows_int(rows, r, 9));
	if (guest)
		wl_json_add_str(o, "notes", wl_rows_str(rows, r, 10));
	wl_json_add_str(o, "serviceTypeId", wl_rows_str(rows, r, 11));
	if (guest) {
		v = cd ? cJSON_Parse(cd) : NULL;
		wl_json_exact_numbers(v);
		cJSON_AddItemToObject(o, "customData",
				      v ? v : cJSON_CreateObject());
	}
	wl_json_add_str(o, "externalReference", wl_rows_str(rows, r, 13));
	wl_json_add_bool(o, "isBooking", (int)wl_rows_int(rows, r, 14));
	wl_json_add_ts(o, "scheduledFor", wl_rows_str(rows, r, 15)
					      ? wl_rows_int(rows, r, 15)
					      : -1);
	v = sms ? cJSON_Parse(sms) : NULL;
	cJSON_AddItemToObject(o, "smsConsent", v ? v : cJSON_CreateNull());
	if (wl_rows_str(rows, r, 19))
		wl_json_add_int(o, "position", wl_rows_int(rows, r, 19));
	else
		cJSON_AddNullToObject(o, "position");
	if (avg) {
		long long est = llround((strtod(avg, NULL) -
					 (double)(now - created)) /
					60000.0);
		wl_json_add_int(o, "estimatedWaitMinutes", est > 0 ? est : 0);
	} else
		cJSON_AddNullToObject(o, "estimatedWaitMinutes");
	wl_json_add_ts(o, "createdAt", created);
	wl_json_add_ts(o, "updatedAt", wl_rows_int(rows, r, 18));
	return o;
}

/*
 * Whether rows (ENTRY_COLS, then the line's departures out of turn) hold
 * an active walk-in of a line that walk-ins have left out of turn: 1 or
 * 0, or -1 with no active walk-in.
 */
static int
rows_departed(const struct wl_rows *rows)
{
	int found = -1;
	size_t r;

	for (r = 0; r < rows->nrows; r++) {
		if (!wl_rows_str(rows, r, 19))
			continue;
		if (wl_rows_int(rows, r, 22) != 0)
			return 1;
		found = 0;
	}
	return found;
}

/*
 * Read entries with statement plain, or with counted, its twin that
 * counts departures out of turn.  The position of a walk-in in a line
 * that none has left out of turn needs no count (ENTRY_POSITION_PLAIN in
 * stmt.c); in one that some have, the read counts them, in the same
 * statement so that the answer is one instant's.  The read the tenant's
 * last walk-ins needed is tried first: a plain read that finds departures
 * is made again, counted.
 */
static int
entry_rows(struct wl_ctx *ctx, enum wl_stmt plain, enum wl_stmt counted,
	   const struct wl_sqlval *args, size_t nargs, struct wl_rows **rows)
{
	unsigned char *departed = &ctx->app->departed[
	    wl_fnv1a(ctx->key.tenant.id, strlen(ctx->key.tenant.id)) %
	    WL_DEPARTED_SLOTS];
	int was = *departed, found, rc;

	rc = wl_sql_exec(ctx->app->db, was ? counted : plain, args, nargs,
			 rows, NULL);
	if (rc != WL_OK || (found = rows_departed(*rows)) < 0)
		return rc;
	*departed = (unsigned char)found;
	if (found && !was) {
		wl_rows_free(*rows);
		*rows = NULL;
		rc = wl_sql_exec(ctx->app->db, counted, args, nargs, rows,
				 NULL);
	}
	return rc;
}

/*
 * Read entry id of the key's tenant.  Returns 1 with *rows set (one row of
 * ENTRY_COLS, then the line's departures out of turn), 0 when absent or
 * outside the key's restrictions, or a negated wl_err.
 */
int
wl_entry_fetch(struct wl_ctx *ctx, const char *id, struct wl_rows **rows)
{
	int rc;

	rc = entry_rows(ctx, STMT_ENTRY_GET, STMT_ENTRY_GET_COUNTED,
			SQL_ARGS(SQL_STR(ctx->key.tenant.id), SQL_STR(id)),
			rows);
	if (rc != WL_OK)
		return -rc;
	if ((*rows)->nrows == 1 &&
	    wl_key_allows_queue(&ctx->key, wl_rows_str(*rows, 0, 6),
				wl_rows_str(*rows, 0, 5)))
		return 1;
	wl_rows_free(*rows);
	*rows = NULL;
	return 0;
}

/* Reply {"entry": Entry} with the entry of row 0 (ENTRY_COLS). */
int
wl_entry_reply_row(struct wl_ctx *ctx, const struct wl_rows *rows,
		   int status)
{
	cJSON *root = cJSON_CreateObject();

	cJSON_AddItemToObject(root, "entry", wl_entry_json(ctx, rows, 0));
	return wl_reply_json(ctx, status, root);
}

/* Reply {"entry": Entry} with the current state of entry id. */
int
wl_entry_reply(struct wl_ctx *ctx, const char *id, int status)
{
	struct wl_rows *rows = NULL;
	int rc;

	if ((rc = wl_entry_fetch(ctx, id, &rows)) < 0)
		return -rc;
	if (rc == 0)
		return wl_reply_error(ctx, WL_C_NOT_FOUND, "entry not found");
	rc = wl_entry_reply_row(ctx, rows, status);
	wl_rows_free(rows);
	return rc;
}

/* GET /waitlist/entries/{entryId} */
int
wl_h_entry_get(struct wl_ctx *ctx)
{
	return wl_entry_reply(ctx, ctx->param[0], 200);
}

static cJSON *
entry_item(const struct wl_ctx *ctx, const struct wl_rows *rows, size_t r,
	   void *arg)
{
	(void)arg;
	return wl_entry_json(ctx, rows, r);
}

/* GET /waitlist/entries?externalReference=&cursor=&limit= */
int
wl_h_entry_list(struct wl_ctx *ctx)
{
	const struct wl_key *k = &ctx->key;
	struct wl_rows *rows = NULL;
	/* 255 characters of up to 4 bytes each, as entries store them. */
	char ext[4 * 255 + 1], filters[sizeof("externalReference=") + sizeof(ext)];
	char pos[128];
	long long after_ts;
	const char *after_id;
	int limit, rc, has_ext;

	has_ext = wl_query_get(ctx->http->query, "externalReference", ext,
			       sizeof(ext));
	if (has_ext < 0 || (has_ext && (*ext == '\0' || wl_utf8_len(ext) > 255)))
		return wl_reply_error(ctx, WL_C_VALIDATION_FAILED,
				      "externalReference must be 1 to 255 "
				      "characters");
	snprintf(filters, sizeof(filters), "externalReference=%s",
		 has_ext ? ext : "");
	if (wl_page_params(ctx, filters, &limit, pos, sizeof(pos)) < 0)
		return WL_OK;
	wl_page_after(pos, &after_ts, &after_id);
	if (has_ext)
		rc = entry_rows(
		    ctx, STMT_ENTRY_LIST_EXTREF, STMT_ENTRY_LIST_EXTREF_COUNTED,
		    SQL_ARGS(SQL_STR(k->tenant.id), SQL_STR(ext),
			     SQL_INT(after_ts), SQL_INT(after_ts),
			     SQL_STR(after_id), SQL_STR(k->biz_json),
			     SQL_STR(k->biz_json), SQL_STR(k->queue_json),
			     SQL_STR(k->queue_json), SQL_INT(limit + 1)),
		    &rows);
	else
		rc = entry_rows(
		    ctx, STMT_ENTRY_LIST, STMT_ENTRY_LIST_COUNTED,
		    SQL_ARGS(SQL_STR(k->tenant.id), SQL_INT(after_ts),
			     SQL_INT(after_ts), SQL_STR(after_id),
			     SQL_STR(k->biz_json), SQL_STR(k->biz_json),
			     SQL_STR(k->queue_json), SQL_STR(k->queue_json),
			     SQL_INT(limit + 1)),
		    &rows);
	if (rc == WL_OK)
		rc = wl_page_reply(ctx, rows, limit, "entries", filters, 18, 0,
				   entry_item, NULL);
	wl_rows_free(rows);
	return rc;
}
