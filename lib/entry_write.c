/*
 * Entry changes: POST /waitlist/entries (walk-ins and bookings),
 * PATCH /waitlist/entries/{entryId} and PATCH .../status.  Each runs
 * inside the idempotency transaction (idempotency.c): validate everything,
 * then write the change, its status history and its events together.
 */
#include "config.h"

#include <stdlib.h>

#include "extern.h"

#define MIN_MS 60000LL

/* Columns of STMT_ENTRY_LOCK. */
enum { L_ID, L_QUEUE, L_BUSINESS, L_STATUS, L_VERSION, L_IS_BOOKING,
       L_BOOKING, L_SCHEDULED, L_END, L_SERVICE, L_CUSTOM, L_NAME, L_PHONE,
       L_PARTY, L_NOTES, L_EXTREF, L_TICKET, L_CREATED, L_SERVED };

/*
 * Lock entry id for update.  Returns 0 with *rows (one row), -1 after a
 * 404 reply (absent, other tenant, or outside the key's restrictions), or
 * a wl_err.
 */
int
wl_entry_lock(struct wl_ctx *ctx, const char *id, struct wl_rows **rows)
{
	int rc;

	rc = wl_sql_exec(ctx->app->db, STMT_ENTRY_LOCK,
			 SQL_ARGS(SQL_STR(ctx->key.tenant.id), SQL_STR(id)),
			 rows, NULL);
	if (rc != WL_OK)
		return rc;
	if ((*rows)->nrows == 1 &&
	    wl_key_allows_queue(&ctx->key, wl_rows_str(*rows, 0, L_BUSINESS),
				wl_rows_str(*rows, 0, L_QUEUE)))
		return 0;
	wl_rows_free(*rows);
	*rows = NULL;
	wl_reply_error(ctx, WL_C_NOT_FOUND, "entry not found");
	return -1;
}

static int
history(struct wl_ctx *ctx, const char *entry, long long version,
	const char *queue, const char *status, const char *previous,
	int64_t now)
{
	return wl_sql_later(ctx->app->db, STMT_HISTORY_INSERT,
			    SQL_ARGS(SQL_STR(entry), SQL_INT(version),
				     SQL_STR(ctx->key.tenant.id),
				     SQL_STR(queue), SQL_STR(status),
				     SQL_STR(previous), SQL_INT(now)));
}

/*
 * A booking that returns to the line (in_service -> waiting) is active
 * again and takes a place at its time: only when that still has room, so
 * capacity holds however the booking got there.  0, -1 after a 409 reply,
 * or a wl_err.
 */
static int
booking_return(struct wl_ctx *ctx, const struct wl_rows *e)
{
	struct wl_queue q = {0};
	int rc;

	if ((rc = wl_queue_load(ctx, wl_rows_str(e, 0, L_QUEUE), &q)) <= 0)
		return rc == 0 ? WL_ERR_NOTFOUND : -rc;
	rc = wl_booking_capacity(ctx, &q, wl_rows_int(e, 0, L_SCHEDULED),
				 wl_rows_int(e, 0, L_END),
				 wl_rows_str(e, 0, L_ID));
	wl_queue_clear(&q);
	return rc;
}

/*
 * Keep the line's head and recent wait (migrations/011) as walk-in e
 * moves from `from` to `to`: before the entry's own update, so that the
 * line's row is locked before the entry's index entries change.
 */
static int
line_move(struct wl_ctx *ctx, const struct wl_rows *e, enum wl_status from,
	  enum wl_status to, int64_t now)
{
	int ret = !wl_status_active(from) && wl_status_active(to);
	int dep = wl_status_active(from) && !wl_status_active(to);
	int served = to == WL_ST_IN_SERVICE && !wl_rows_str(e, 0, L_SERVED);
	long long t = wl_rows_int(e, 0, L_TICKET);
	const char *queue = wl_rows_str(e, 0, L_QUEUE);
	int64_t w = now - wl_rows_int(e, 0, L_CREATED);

	if (wl_rows_int(e, 0, L_IS_BOOKING) || (!ret && !dep && !served))
		return WL_OK;
	return wl_sql_later(
	    ctx->app->db, STMT_LINE_MOVE,
	    SQL_ARGS(SQL_INT(ret), SQL_INT(t), SQL_INT(dep), SQL_INT(t),
		     SQL_INT(ret), served ? SQL_INT(w) : SQL_NULL,
		     SQL_INT(now - DAY_MS), served ? SQL_INT(w) : SQL_NULL,
		     served ? SQL_INT(w) : SQL_NULL,
		     served ? SQL_INT(now) : SQL_NULL, SQL_INT(ret),
		     SQL_INT(dep), SQL_STR(queue)));
}

/*
 * Move the locked entry to status `to`, checking in order: expected
 * status and version (409), then the transition table (400).  Writes the
 * history, emits status_changed (and booking.cancelled for a booking that
 * is cancelled), and replies with the entry.
 */
int
wl_entry_change_status(struct wl_ctx *ctx, const struct wl_rows *e,
		       int expected, long long version, enum wl_status to)
{
	const char *id = wl_rows_str(e, 0, L_ID);
	int from = wl_status_parse(wl_rows_str(e, 0, L_STATUS));
	struct wl_events ev = {0};
	int64_t now = wl_now_ms();
	cJSON *data;
	int rc;

	if (expected != from)
		return wl_reply_error(ctx, WL_C_STATUS_CONFLICT,
				      "expectedStatus %s does not match the "
				      "current status %s",
				      wl_status_names[expected],
				      wl_rows_str(e, 0, L_STATUS));
	if (wl_rows_int(e, 0, L_VERSION) != version)
		return wl_reply_error(ctx, WL_C_VERSION_CONFLICT,
				      "expectedVersion %lld does not match the "
				      "current version %lld",
				      version, wl_rows_int(e, 0, L_VERSION));
	if (from < 0 || !wl_status_allowed((enum wl_status)from, to))
		return wl_reply_error(ctx, WL_C_INVALID_TRANSITION,
				      "an entry cannot move from %s to %s",
				      wl_rows_str(e, 0, L_STATUS),
				      wl_status_names[to]);
	if (wl_rows_int(e, 0, L_IS_BOOKING) && !wl_status_active(from) &&
	    wl_status_active(to) && (rc = booking_return(ctx, e)) != 0)
		return rc < 0 ? WL_OK : rc;
	if ((rc = line_move(ctx, e, (enum wl_status)from, to, now)) != WL_OK)
		return rc;
	rc = wl_sql_later(ctx->app->db, STMT_ENTRY_SET_STATUS,
			  SQL_ARGS(SQL_STR(wl_status_names[to]), SQL_INT(now),
				   SQL_STR(wl_status_names[to]), SQL_INT(now),
				   SQL_STR(wl_status_names[to]), SQL_INT(now),
				   SQL_STR(id), SQL_INT(version)));
	if (rc == WL_OK)
		rc = history(ctx, id, version + 1, wl_rows_str(e, 0, L_QUEUE),
			     wl_status_names[to], wl_status_names[from], now);
	if (rc != WL_OK)
		return rc;
	/* (An add is NULL when out of memory: no event, and no change.) */
	data = cJSON_CreateObject();
	if (!wl_json_add_str(data, "entryId", id) ||
	    !wl_json_add_str(data, "status", wl_status_names[to]) ||
	    !wl_json_add_str(data, "previousStatus", wl_status_names[from]))
		data = wl_json_drop(data);
	wl_events_add(&ev, WL_EV_ENTRY_STATUS_CHANGED, data);
	if (wl_rows_int(e, 0, L_IS_BOOKING) && to == WL_ST_CANCELLED) {
		data = cJSON_CreateObject();
		if (!wl_json_add_str(data, "entryId", id) ||
		    !wl_json_add_str(data, "bookingId",
				     wl_rows_str(e, 0, L_BOOKING)))
			data = wl_json_drop(data);
		wl_events_add(&ev, WL_EV_BOOKING_CANCELLED, data);
	}
	/* Reply first: the event sequence is locked only at the end. */
	if ((rc = wl_entry_reply(ctx, id, 200)) != WL_OK) {
		wl_events_clear(&ev);
		return rc;
	}
	return wl_outbox_write(ctx->app->db, &ev, ctx->key.tenant.id,
			       wl_rows_str(e, 0, L_BUSINESS),
			       wl_rows_str(e, 0, L_QUEUE), id, version + 1, now);
}

/* A creation request's fields, validated, and what the service adds. */
struct create {
	const char *queue_id, *name, *service, *extref, *phone, *notes;
	const char *when;
	const cJSON *custom;
	cJSON *consent;
	long long party;
	int is_booking;
	int64_t at;
	/* the entry as written */
	enum wl_status status; /* its first */
	char id[WL_ID_MAX], guest[WL_ID_MAX], booking[WL_ID_MAX];
	char *custom_text, *consent_text;
	int64_t now, end; /* end: a booking's */
};

/* Type checks of the body that need no database.  0 or -1 (replied). */
static int
create_parse(struct wl_ctx *ctx, const cJSON *b, struct create *c)
{
	static const char *const keys[] = {
	    "queueId", "fullName", "serviceTypeId", "customData",
	    "externalReference", "isBooking", "scheduledFor", "smsConsent",
	    "phone", "partySize", "notes", NULL};
	int rc;

	if (wl_body_only(ctx, b, keys) < 0)
		return -1;
	if ((rc = wl_field_string(ctx, b, "queueId", 1, 160, 0,
				  &c->queue_id)) < 0)
		return -1;
	if (rc == 0) {
		wl_reply_error(ctx, WL_C_VALIDATION_FAILED,
			       "queueId is required");
		return -1;
	}
	if ((rc = wl_field_name(ctx, b, &c->name)) < 0)
		return -1;
	if (rc == 0) {
		wl_reply_error(ctx, WL_C_VALIDATION_FAILED,
			       "fullName is required");
		return -1;
	}
	if (wl_field_string(ctx, b, "serviceTypeId", 1, 160, 0,
			    &c->service) < 0 ||
	    wl_field_string(ctx, b, "externalReference", 1, 255, 0,
			    &c->extref) < 0 ||
	    wl_field_phone(ctx, b, &c->phone) < 0 ||
	    wl_field_string(ctx, b, "notes", 0, 500, 1, &c->notes) < 0 ||
	    (rc = wl_field_int(ctx, b, "partySize", 1, 100, &c->party)) < 0 ||
	    wl_field_consent(ctx, b, &c->consent) < 0)
		return -1;
	if (rc == 0)
		c->party = 1;
	if (wl_json_get_object(b, "customData", &c->custom) < 0) {
		wl_reply_error(ctx, WL_C_VALIDATION_FAILED,
			       "customData must be an object keyed by custom "
			       "field id");
		return -1;
	}
	if (wl_json_get_bool(b, "isBooking", &c->is_booking) < 0) {
		wl_reply_error(ctx, WL_C_VALIDATION_FAILED,
			       "isBooking must be a boolean");
		return -1;
	}
	rc = wl_field_string(ctx, b, "scheduledFor", 1, WL_ISO_INPUT_MAX, 0,
			     &c->when);
	if (rc < 0)
		return -1;
	if (c->is_booking && (rc == 0 || wl_iso_to_ms(c->when, &c->at) < 0)) {
		wl_reply_error(ctx, WL_C_VALIDATION_FAILED,
			       "scheduledFor must be an ISO 8601 timestamp "
			       "with a UTC offset");
		return -1;
	}
	if (!c->is_booking && rc > 0) {
		wl_reply_error(ctx, WL_C_VALIDATION_FAILED,
			       "scheduledFor is only accepted with isBooking "
			       "true");
		return -1;
	}
	return 0;
}

/*
 * Count the guest against this month's allowance.  The count goes up
 * with the commit, where the tenant's hot row is locked for the shortest
 * time; past the allowance, the server refuses the transaction, and the
 * answer is 402.
 */
static int
allowance(struct wl_ctx *ctx, const char *month)
{
	long long max = ctx->key.tenant.guest_allowance;
	int rc;

	ctx->refusal = WL_C_GUEST_ALLOWANCE_EXCEEDED;
	snprintf(ctx->refusal_msg, sizeof(ctx->refusal_msg),
		 "the guest allowance of %lld this month is used up", max);
	rc = wl_sql_later(
	    ctx->app->db, STMT_USAGE_BUMP,
	    SQL_ARGS(SQL_STR(ctx->key.tenant.id), SQL_STR(month)));
	if (rc == WL_OK)
		rc = wl_sql_later(ctx->app->db, STMT_USAGE_CHECK,
				  SQL_ARGS(SQL_INT(max)));
	return rc;
}

/*
 * Write the new entry and its first history row.  A walk-in first takes
 * its ticket, which locks its line's ticket row until commit; so this
 * comes late in the transaction, after the history row.  Then the
 * walk-in's numbers that only the server knows go into @wl_patch.
 */
static int
entry_insert(struct wl_ctx *ctx, const struct wl_queue *q,
	     const struct create *c)
{
	int rc;

	rc = history(ctx, c->id, 1, q->id, wl_status_names[c->status], NULL,
		     c->now);
	if (rc == WL_OK && !c->is_booking)
		rc = wl_sql_later(ctx->app->db, STMT_TICKET_ISSUE,
				  SQL_ARGS(SQL_STR(q->id)));
	if (rc == WL_OK)
		rc = wl_sql_later(
		    ctx->app->db, STMT_ENTRY_INSERT,
		    SQL_ARGS(SQL_STR(c->id), SQL_STR(ctx->key.tenant.id),
			     SQL_STR(q->business_id), SQL_STR(q->id),
			     SQL_STR(c->guest),
			     c->is_booking ? SQL_STR(c->booking) : SQL_NULL,
			     SQL_STR(wl_status_names[c->status]),
			     SQL_INT(c->is_booking), SQL_STR(c->name),
			     SQL_STR(c->phone), SQL_INT(c->party),
			     SQL_STR(c->notes), SQL_STR(c->service),
			     SQL_STR(c->custom_text), SQL_STR(c->extref),
			     c->is_booking ? SQL_INT(c->at) : SQL_NULL,
			     c->is_booking ? SQL_INT(c->end) : SQL_NULL,
			     SQL_STR(c->consent_text), SQL_INT(!c->is_booking),
			     SQL_INT(c->now), SQL_INT(c->now)));
	if (rc == WL_OK && !c->is_booking)
		rc = wl_sql_later(ctx->app->db, STMT_ENTRY_NUMBERS,
				  SQL_ARGS(SQL_INT(c->now - DAY_MS),
					   SQL_STR(q->id)));
	return rc;
}

/*
 * Reply 201 with the new entry: the Entry object of the row that the
 * insert writes, made here from the request.  A walk-in's position and
 * estimated wait are left null: only the server knows them, and its
 * figures (STMT_ENTRY_NUMBERS) go in after the commit, into this answer
 * and its replays alike (idempotency.c).
 */
static int
created_reply(struct wl_ctx *ctx, const struct wl_queue *q,
	      const struct create *c)
{
	char party[24], at[24], now[24];
	const char *cell[] = {
	    c->id, c->guest, c->is_booking ? c->booking : NULL, "1",
	    wl_status_names[c->status], q->id, q->business_id, c->name,
	    c->phone, party, c->notes, c->service, c->custom_text, c->extref,
	    c->is_booking ? "1" : "0", c->is_booking ? at : NULL,
	    c->consent_text, now, now, NULL, NULL, NULL};
	/* Read only: the cells are not the row's to free. */
	struct wl_rows row = {1, sizeof(cell) / sizeof(*cell), (char **)cell,
			      NULL, 0};

	snprintf(party, sizeof(party), "%lld", c->party);
	snprintf(at, sizeof(at), "%lld", (long long)c->at);
	snprintf(now, sizeof(now), "%lld", (long long)c->now);
	ctx->patched = !c->is_booking;
	return wl_entry_reply_row(ctx, &row, 201);
}

/* Write the new entry, its guest and its events, and reply. */
static int
create_write(struct wl_ctx *ctx, const struct wl_queue *q, struct create *c)
{
	struct wl_events ev = {0};
	char month[WL_TS_MAX];
	cJSON *data;
	int rc;

	if (wl_id_new("ent_", c->id) || wl_id_new("bkg_", c->booking) ||
	    wl_id_new("gst_", c->guest))
		return WL_ERR_CRYPTO;
	c->status = c->is_booking ? WL_ST_CONFIRMED : WL_ST_WAITING;
	/* The UTC month, "YYYY-MM": the timestamp's first seven characters
	 * (no time zone switch, which would reload the zone file). */
	wl_ms_to_iso(c->now, month);
	month[7] = '\0';
	/* The tenant's hot rows (the monthly guest count, the event
	 * sequence) are written last, with the commit, so that their locks
	 * are held for the shortest time. */
	if ((rc = entry_insert(ctx, q, c)) != WL_OK ||
	    (rc = allowance(ctx, month)) != WL_OK ||
	    (rc = created_reply(ctx, q, c)) != WL_OK)
		return rc;
	data = cJSON_CreateObject();
	if (!wl_json_add_str(data, "entryId", c->id) ||
	    !wl_json_add_str(data, "status", wl_status_names[c->status]) ||
	    !wl_json_add_bool(data, "isBooking", c->is_booking))
		data = wl_json_drop(data);
	wl_events_add(&ev, WL_EV_ENTRY_CREATED, data);
	if (c->is_booking) {
		data = cJSON_CreateObject();
		if (!wl_json_add_str(data, "entryId", c->id) ||
		    !wl_json_add_str(data, "bookingId", c->booking) ||
		    !wl_json_add_ts(data, "scheduledFor", c->at))
			data = wl_json_drop(data);
		wl_events_add(&ev, WL_EV_BOOKING_CREATED, data);
	}
	return wl_outbox_write(ctx->app->db, &ev, ctx->key.tenant.id,
			       q->business_id, q->id, c->id, 1, c->now);
}

/* POST /waitlist/entries */
int
wl_h_entry_create(struct wl_ctx *ctx)
{
	struct create c = {0};
	struct wl_queue q = {0};
	cJSON *body, *custom = NULL;
	long long minutes;
	int rc = WL_OK;

	c.now = wl_now_ms();
	if ((body = wl_body_json(ctx)) == NULL)
		return WL_OK;
	if (create_parse(ctx, body, &c) < 0)
		goto out;
	if ((rc = wl_queue_load(ctx, c.queue_id, &q)) <= 0) {
		rc = -rc;
		if (rc == WL_OK)
			wl_reply_error(ctx, WL_C_NOT_FOUND, "queue not found");
		goto out;
	}
	rc = WL_OK;
	minutes = q.slot_minutes;
	if (c.service == NULL && q.service_required) {
		wl_reply_error(ctx, WL_C_VALIDATION_FAILED,
			       "serviceTypeId is required on this line");
		goto out;
	}
	if (c.service && (rc = wl_service_check(ctx, q.id, c.service,
						&minutes)) != 0)
		goto done;
	custom = cJSON_CreateObject();
	if ((rc = wl_custom_data_merge(ctx, q.id, custom, c.custom)) != 0)
		goto done;
	if ((c.custom_text = cJSON_PrintUnformatted(custom)) == NULL ||
	    (c.consent &&
	     (c.consent_text = cJSON_PrintUnformatted(c.consent)) == NULL)) {
		rc = WL_ERR_NOMEM;
		goto out;
	}
	if (c.is_booking) {
		if ((rc = wl_booking_place(ctx, &q, c.at, minutes, NULL,
					   &c.end)))
			goto done;
	} else if (!q.walk_ins_enabled || q.walk_ins_paused ||
		   !wl_queue_open_now(&q, c.now)) {
		wl_reply_error(ctx, WL_C_QUEUE_UNAVAILABLE,
			       "this line is not taking walk-ins now");
		goto out;
	}
	rc = create_write(ctx, &q, &c);
	goto done;
done:
	if (rc < 0)
		rc = WL_OK; /* the 4xx reply has been made */
out:
	free(c.custom_text);
	free(c.consent_text);
	cJSON_Delete(custom);
	cJSON_Delete(c.consent);
	cJSON_Delete(body);
	wl_queue_clear(&q);
	return rc;
}

/* PATCH /waitlist/entries/{entryId}/status */
int
wl_h_entry_status(struct wl_ctx *ctx)
{
	static const char *const keys[] = {"status", "expectedStatus",
					   "expectedVersion", NULL};
	struct wl_rows *e = NULL;
	const char *to, *expected;
	long long version;
	cJSON *body;
	int rc = WL_OK;

	if ((body = wl_body_json(ctx)) == NULL)
		return WL_OK;
	if (wl_body_only(ctx, body, keys) < 0)
		goto out;
	if (wl_json_get_string(body, "status", &to) != 1 ||
	    wl_status_parse(to) < 0 ||
	    wl_json_get_string(body, "expectedStatus", &expected) != 1 ||
	    wl_status_parse(expected) < 0) {
		wl_reply_error(ctx, WL_C_VALIDATION_FAILED,
			       "status and expectedStatus are required, each "
			       "one of waiting, ready, confirmed, in_service, "
			       "completed, cancelled, no_show");
		goto out;
	}
	if (wl_field_version(ctx, body, &version) < 0)
		goto out;
	if ((rc = wl_entry_lock(ctx, ctx->param[0], &e)) != 0) {
		rc = rc < 0 ? WL_OK : rc;
		goto out;
	}
	rc = wl_entry_change_status(ctx, e, wl_status_parse(expected), version,
				    (enum wl_status)wl_status_parse(to));
out:
	wl_rows_free(e);
	cJSON_Delete(body);
	return rc;
}

static int
has(const cJSON *body, const char *name)
{
	return cJSON_GetObjectItemCaseSensitive(body, name) != NULL;
}

/* Editable fields, in the order changedFields lists them. */
static const char *const editable[] = {
    "fullName", "phone", "partySize", "notes", "serviceTypeId",
    "customData", "externalReference", NULL};

/* An edit: the body's fields, then merged with the stored entry. */
struct edit {
	cJSON *body;
	long long version, party;
	int64_t end; /* a booking's booking_end */
	const char *name, *phone, *notes, *svc, *extref;
	const cJSON *patch; /* customData changes */
};

/* Check the body of an edit; no database needed.  0 or -1 (replied). */
static int
edit_parse(struct wl_ctx *ctx, struct edit *ed)
{
	static const char *const keys[] = {
	    "expectedVersion", "fullName", "phone", "partySize", "notes",
	    "serviceTypeId", "customData", "externalReference", NULL};
	const cJSON *b = ed->body;
	int i, any = 0;

	if (wl_body_only(ctx, b, keys) < 0)
		return -1;
	if (wl_field_version(ctx, b, &ed->version) < 0)
		return -1;
	for (i = 0; editable[i]; i++)
		any |= has(b, editable[i]);
	if (!any)
		return wl_reply_error(ctx, WL_C_VALIDATION_FAILED,
				      "no editable field given: fullName, "
				      "phone, partySize, notes, serviceTypeId, "
				      "customData, externalReference"), -1;
	if (wl_field_name(ctx, b, &ed->name) < 0 ||
	    wl_field_phone(ctx, b, &ed->phone) < 0 ||
	    wl_field_string(ctx, b, "notes", 0, 500, 1, &ed->notes) < 0 ||
	    wl_field_string(ctx, b, "serviceTypeId", 1, 160, 0, &ed->svc) < 0 ||
	    wl_field_string(ctx, b, "externalReference", 1, 255, 0,
			    &ed->extref) < 0 ||
	    wl_field_int(ctx, b, "partySize", 1, 100, &ed->party) < 0)
		return -1;
	if (cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(b, "fullName")) ||
	    cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(b, "partySize")))
		return wl_reply_error(ctx, WL_C_VALIDATION_FAILED,
				      "fullName and partySize cannot be "
				      "removed"), -1;
	/* customData is merged per field id: a null removes one field, and
	 * customData itself is no field to remove. */
	if (wl_json_get_object(b, "customData", &ed->patch) < 0 ||
	    cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(b, "customData")))
		return wl_reply_error(ctx, WL_C_VALIDATION_FAILED,
				      "customData must be an object keyed by "
				      "custom field id"), -1;
	return 0;
}

/* Are the two service ids (either NULL) the same? */
static int
same_service(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

/*
 * Check a new or removed service against the line: attached and active,
 * or not required.  A booking's interval lasts its service (else the
 * line's slot), so a booking given another one ends at its new length
 * (ed->end).  Returns 0, -1 after a 400 reply, or a wl_err.
 */
static int
edit_service(struct wl_ctx *ctx, const struct wl_rows *e, struct edit *ed)
{
	const char *queue = wl_rows_str(e, 0, L_QUEUE);
	struct wl_queue q;
	long long minutes = 0;
	int rc;

	if (ed->svc && (rc = wl_service_check(ctx, queue, ed->svc, &minutes)))
		return rc;
	if ((rc = wl_queue_load(ctx, queue, &q)) <= 0)
		return rc < 0 ? -rc : WL_ERR_NOTFOUND;
	rc = 0;
	if (ed->svc == NULL && q.service_required) {
		wl_reply_error(ctx, WL_C_VALIDATION_FAILED,
			       "serviceTypeId is required on this line");
		rc = -1;
	} else if (wl_rows_int(e, 0, L_IS_BOOKING) &&
		   !same_service(ed->svc, wl_rows_str(e, 0, L_SERVICE)))
		ed->end = wl_rows_int(e, 0, L_SCHEDULED) +
			  (ed->svc ? minutes : q.slot_minutes) * MIN_MS;
	wl_queue_clear(&q);
	return rc;
}

/*
 * A booking that holds a place and grows longer must still fit: inside
 * its day's bookingHours and the line's capacity.  Returns 0, -1 after a
 * 409 reply, or a wl_err.
 */
static int
edit_fit(struct wl_ctx *ctx, const struct wl_rows *e, const struct edit *ed)
{
	int64_t at = wl_rows_int(e, 0, L_SCHEDULED);
	struct wl_booking_window w;
	struct wl_queue q;
	int rc;

	if (ed->end <= wl_rows_int(e, 0, L_END) ||
	    !wl_status_active(wl_status_parse(wl_rows_str(e, 0, L_STATUS))))
		return 0;
	if ((rc = wl_queue_load(ctx, wl_rows_str(e, 0, L_QUEUE), &q)) <= 0)
		return rc < 0 ? -rc : WL_ERR_NOTFOUND;
	if (wl_booking_window(&q, at, &w) < 0 ||
	    !wl_booking_within(&w, at, ed->end)) {
		wl_reply_error(ctx, WL_C_BOOKING_UNAVAILABLE,
			       "the booking would run past its day's booking "
			       "hours with that service");
		rc = -1;
	} else
		rc = wl_booking_capacity(ctx, &q, at, ed->end,
					 wl_rows_str(e, 0, L_ID));
	wl_queue_clear(&q);
	return rc;
}

/*
 * Merge the edit with the locked entry e: fields not in the body keep
 * their stored values; a service must be attached to the line (and may
 * only be removed where the line does not require one).  Returns 0, -1
 * after a 4xx reply, or a wl_err.
 */
static int
edit_merge(struct wl_ctx *ctx, const struct wl_rows *e, struct edit *ed)
{
	int st = wl_status_parse(wl_rows_str(e, 0, L_STATUS));

	if (wl_rows_int(e, 0, L_VERSION) != ed->version)
		return wl_reply_error(ctx, WL_C_VERSION_CONFLICT,
				      "expectedVersion %lld does not match the "
				      "current version %lld",
				      ed->version,
				      wl_rows_int(e, 0, L_VERSION)), -1;
	if (st == WL_ST_COMPLETED || st == WL_ST_CANCELLED ||
	    st == WL_ST_NO_SHOW)
		return wl_reply_error(ctx, WL_C_INVALID_TRANSITION,
				      "a %s entry cannot be edited",
				      wl_status_names[st]), -1;
	if (!has(ed->body, "fullName"))
		ed->name = wl_rows_str(e, 0, L_NAME);
	if (!has(ed->body, "phone"))
		ed->phone = wl_rows_str(e, 0, L_PHONE);
	if (!has(ed->body, "notes"))
		ed->notes = wl_rows_str(e, 0, L_NOTES);
	if (!has(ed->body, "externalReference"))
		ed->extref = wl_rows_str(e, 0, L_EXTREF);
	if (!has(ed->body, "partySize"))
		ed->party = wl_rows_int(e, 0, L_PARTY);
	ed->end = wl_rows_int(e, 0, L_END);
	if (!has(ed->body, "serviceTypeId")) {
		ed->svc = wl_rows_str(e, 0, L_SERVICE);
		return 0;
	}
	return edit_service(ctx, e, ed);
}

/* Write the merged edit and its waitlist.entry.updated event, and reply. */
static int
edit_write(struct wl_ctx *ctx, const struct wl_rows *e, const struct edit *ed,
	   const char *custom)
{
	const char *id = wl_rows_str(e, 0, L_ID);
	struct wl_events ev = {0};
	int64_t now = wl_now_ms();
	cJSON *data, *changed = NULL;
	int rc, i, ok;

	rc = wl_sql_later(
	    ctx->app->db, STMT_ENTRY_EDIT,
	    SQL_ARGS(SQL_STR(ed->name), SQL_STR(ed->phone), SQL_INT(ed->party),
		     SQL_STR(ed->notes), SQL_STR(ed->svc), SQL_STR(custom),
		     SQL_STR(ed->extref),
		     wl_rows_int(e, 0, L_IS_BOOKING) ? SQL_INT(ed->end)
						     : SQL_NULL,
		     SQL_INT(now), SQL_STR(id), SQL_INT(ed->version)));
	if (rc != WL_OK)
		return rc;
	data = cJSON_CreateObject();
	ok = wl_json_add_str(data, "entryId", id) &&
	     (changed = cJSON_AddArrayToObject(data, "changedFields")) != NULL;
	for (i = 0; ok && editable[i]; i++)
		if (has(ed->body, editable[i]))
			ok = cJSON_AddItemToArray(
			    changed, cJSON_CreateString(editable[i]));
	wl_events_add(&ev, WL_EV_ENTRY_UPDATED, ok ? data : wl_json_drop(data));
	if ((rc = wl_entry_reply(ctx, id, 200)) != WL_OK) {
		wl_events_clear(&ev);
		return rc;
	}
	return wl_outbox_write(ctx->app->db, &ev, ctx->key.tenant.id,
			       wl_rows_str(e, 0, L_BUSINESS),
			       wl_rows_str(e, 0, L_QUEUE), id, ed->version + 1,
			       now);
}

/* PATCH /waitlist/entries/{entryId}: checks in order: the body (400),
 * the entry (404), its version (409), not terminal (400), the fields
 * against the line (400), a booking's new length (409). */
int
wl_h_entry_edit(struct wl_ctx *ctx)
{
	struct edit ed;
	struct wl_rows *e = NULL;
	cJSON *custom = NULL;
	char *custom_text = NULL;
	int rc = 0;

	memset(&ed, 0, sizeof(ed));
	if ((ed.body = wl_body_json(ctx)) == NULL)
		return WL_OK;
	if (edit_parse(ctx, &ed) < 0 ||
	    (rc = wl_entry_lock(ctx, ctx->param[0], &e)) != 0 ||
	    (rc = edit_merge(ctx, e, &ed)) != 0)
		goto out;
	if ((custom = cJSON_Parse(wl_rows_str(e, 0, L_CUSTOM))) == NULL)
		custom = cJSON_CreateObject();
	rc = wl_custom_data_merge(ctx, wl_rows_str(e, 0, L_QUEUE), custom,
				  ed.patch);
	if (rc == 0 && (custom_text = cJSON_PrintUnformatted(custom)) == NULL)
		rc = WL_ERR_NOMEM;
	if (rc == 0 && (rc = edit_fit(ctx, e, &ed)) == 0)
		rc = edit_write(ctx, e, &ed, custom_text);
out:
	free(custom_text);
	cJSON_Delete(custom);
	wl_rows_free(e);
	cJSON_Delete(ed.body);
	return rc < 0 ? WL_OK : rc;
}
