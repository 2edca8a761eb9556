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

/* Add an event of type with data (consumed; NULL: it could not be made)
 * to the batch.  An event that cannot be added fails the batch's
 * wl_outbox_write(), and with it the change. */
int
wl_events_add(struct wl_events *b, enum wl_event_type type, cJSON *data)
{
	if (b->n == WL_EVENTS_MAX || data == NULL) {
		cJSON_Delete(data);
		b->err = data ? WL_ERR_LIMIT : WL_ERR_NOMEM;
		return b->err;
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
 * The event's JSON around its sequence number, which the server assigns:
 * *head ends with "sequence": and *tail follows the number.  Consumes
 * data.
 */
static int
event_text(const char *id, enum wl_event_type type, const char *tenant,
	   const char *business, const char *queue, const char *resource,
	   long long version, int64_t now, cJSON *data, char **head,
	   char **tail)
{
	static const char seq[] = ",\"sequence\":";
	cJSON *h = cJSON_CreateObject(), *t = cJSON_CreateObject();
	size_t n;
	char *p;
	/* (Each add is NULL when out of memory.) */
	int ok = wl_json_add_str(h, "id", id) &&
		 wl_json_add_str(h, "type", wl_event_type_names[type]) &&
		 wl_json_add_str(h, "schemaVersion", "1") &&
		 wl_json_add_ts(t, "occurredAt", now) &&
		 wl_json_add_str(t, "tenantId", tenant) &&
		 wl_json_add_str(t, "businessId", business) &&
		 wl_json_add_str(t, "queueId", queue) &&
		 wl_json_add_str(t, "resourceId", resource) &&
		 wl_json_add_int(t, "resourceVersion", version);

	if (!ok || !cJSON_AddItemToObject(t, "data", data)) {
		cJSON_Delete(data);
		ok = 0;
	}
	*head = ok ? cJSON_PrintUnformatted(h) : NULL;
	*tail = ok ? cJSON_PrintUnformatted(t) : NULL;
	cJSON_Delete(h);
	cJSON_Delete(t);
	/* {"id":...,"schemaVersion":"1"} -> {"id":...,"sequence":
	 * {"occurredAt":...} -> ,"occurredAt":...} */
	if (*head && *tail && (n = strlen(*head)) >= 2 &&
	    (p = realloc(*head, n - 1 + sizeof(seq))) != NULL) {
		memcpy(p + n - 1, seq, sizeof(seq));
		*head = p;
		**tail = ',';
		return WL_OK;
	}
	free(*head);
	free(*tail);
	return WL_ERR_NOMEM;
}

/*
 * Write the batch for the resource (an entry) in the open transaction,
 * reserving b->n consecutive sequence numbers of the tenant.  Call it
 * last before COMMIT: the counter lock is held from here to the end of
 * the transaction.  Nothing here waits for an answer: the server puts
 * the numbers it reserves (LAST_INSERT_ID()) into the events' rows and
 * bodies, so the writes go to it with the COMMIT.  The batch is emptied.
 */
int
wl_outbox_write(struct wl_db *db, struct wl_events *b, const char *tenant,
		const char *business, const char *queue, const char *resource,
		long long version, int64_t now)
{
	char id[WL_ID_MAX], *head, *tail;
	size_t i;
	int rc = b->err;

	if (rc != WL_OK || b->n == 0) {
		wl_events_clear(b);
		return rc;
	}
	rc = wl_sql_later(
	    db, STMT_SEQ_RESERVE,
	    SQL_ARGS(SQL_STR(tenant), SQL_INT(b->n), SQL_INT(b->n)));
	for (i = 0; rc == WL_OK && i < b->n; i++) {
		long long back = (long long)(b->n - 1 - i); /* from the last */

		if (wl_id_new("evt_", id) != WL_OK) {
			rc = WL_ERR_CRYPTO;
			break;
		}
		rc = event_text(id, b->type[i], tenant, business, queue,
				resource, version, now, b->data[i], &head,
				&tail);
		b->data[i] = NULL;
		if (rc != WL_OK)
			break;
		rc = wl_sql_later(
		    db, STMT_EVENT_INSERT,
		    SQL_ARGS(SQL_STR(tenant), SQL_INT(back), SQL_STR(id),
			     SQL_STR(wl_event_type_names[b->type[i]]),
			     SQL_STR(business), SQL_STR(queue),
			     SQL_STR(resource), SQL_INT(now), SQL_STR(head),
			     SQL_INT(back), SQL_STR(tail)));
		free(head);
		free(tail);
	}
	wl_events_clear(b);
	return rc;
}
