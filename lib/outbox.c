/*
 * The outbox: every change writes its events here in the transaction that
 * makes the change.  The body stored is the exact JSON the feed serves and
 * the deliverer sends; it is serialized once, here.
 *
 * How the sequence is assigned, and why a reader cannot pass an event
 * that has not committed yet:
 *
 * Each tenant has one counter row (tenant_counters.event_seq).  A writing
 * transaction reserves its sequence numbers with a single UPDATE of that
 * row as its last statement before COMMIT, and keeps the row's exclusive
 * lock until the commit (or rollback) ends.  Any other writer of the same
 * tenant waits on that lock, so it can only read the counter after the
 * first has committed; therefore sequence order is commit order, and a
 * transaction that rolls back gives its numbers back (the next writer
 * reads the unchanged counter): no gaps.  A reader that has seen sequence
 * N can never later find an event below N appearing, because every event
 * numbered below N committed before N was even assigned.  The feed reads
 * WHERE seq > cursor ORDER BY seq and stops at the first gap it sees, so
 * it is correct on any node, including Galera, where two nodes updating
 * the same counter row conflict at certification and the loser retries
 * its whole transaction.
 */
#include "config.h"

#include <stdlib.h>

#include "extern.h"

const char *const wl_event_type_names[WL_EV__MAX] = {
    [WL_EV_ENTRY_CREATED] = "waitlist.entry.created",
    [WL_EV_ENTRY_UPDATED] = "waitlist.entry.updated",
    [WL_EV_ENTRY_STATUS_CHANGED] = "waitlist.entry.status_changed",
    [WL_EV_BOOKING_CREATED] = "booking.created",
    [WL_EV_BOOKING_RESCHEDULED] = "booking.rescheduled",
    [WL_EV_BOOKING_CANCELLED] = "booking.cancelled",
};

/* Add an event of type with data (consumed) to the batch. */
int
wl_events_add(struct wl_events *b, enum wl_event_type type, cJSON *data)
{
	if (b->n == WL_EVENTS_MAX || data == NULL) {
		cJSON_Delete(data);
		return WL_ERR_LIMIT;
	}
	b->type[b->n] = type;
	b->data[b->n] = data;
	b->n++;
	return WL_OK;
}

void
wl_events_clear(struct wl_events *b)
{
	size_t i;

	for (i = 0; i < b->n; i++)
		cJSON_Delete(b->data[i]);
	memset(b, 0, sizeof(*b));
}

/*
 * Write the batch for the resource (an entry) in the open transaction,
 * reserving b->n consecutive sequence numbers of the tenant.  Call it as
 * the last statement before COMMIT: the counter lock is held from here to
 * the end of the transaction.  The batch is emptied.
 */
int
wl_outbox_write(struct wl_db *db, struct wl_events *b, const char *tenant,
		const char *business, const char *queue, const char *resource,
		long long version, int64_t now)
{
	unsigned long long last;
	char id[WL_ID_MAX], *body;
	size_t i;
	int rc = WL_OK;
	cJSON *ev;

	if (b->n == 0)
		return WL_OK;
	rc = wl_sql_do_id(
	    db, STMT_SEQ_RESERVE,
	    SQL_ARGS(SQL_STR(tenant), SQL_INT(b->n), SQL_INT(b->n)), &last);
	if (rc != WL_OK)
		goto out;
	for (i = 0; i < b->n; i++) {
		long long seq = (long long)(last - b->n + 1 + i);
		if (wl_id_new("evt_", id) != WL_OK) {
			rc = WL_ERR_CRYPTO;
			goto out;
		}
		ev = cJSON_CreateObject();
		wl_json_add_str(ev, "id", id);
		wl_json_add_str(ev, "type", wl_event_type_names[b->type[i]]);
		wl_json_add_str(ev, "schemaVersion", "1");
		wl_json_add_int(ev, "sequence", seq);
		wl_json_add_ts(ev, "occurredAt", now);
		wl_json_add_str(ev, "tenantId", tenant);
		wl_json_add_str(ev, "businessId", business);
		wl_json_add_str(ev, "queueId", queue);
		wl_json_add_str(ev, "resourceId", resource);
		wl_json_add_int(ev, "resourceVersion", version);
		cJSON_AddItemToObject(ev, "data", b->data[i]);
		b->data[i] = NULL;
		body = cJSON_PrintUnformatted(ev);
		cJSON_Delete(ev);
		if (body == NULL) {
			rc = WL_ERR_NOMEM;
			goto out;
		}
		rc = wl_sql_later(
		    db, STMT_EVENT_INSERT,
		    SQL_ARGS(SQL_STR(tenant), SQL_INT(seq), SQL_STR(id),
			     SQL_STR(wl_event_type_names[b->type[i]]),
			     SQL_STR(business), SQL_STR(queue),
			     SQL_STR(resource), SQL_INT(now), SQL_STR(body)));
		free(body);
		if (rc != WL_OK)
			goto out;
	}
out:
	wl_events_clear(b);
	return rc;
}
