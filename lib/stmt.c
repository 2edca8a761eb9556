/*
 * Every SQL statement of the service, indexed by enum wl_stmt.  Nothing
 * outside this table builds SQL; parameters are always bound.
 */
#include "config.h"

#include "extern.h"

/* Tenant columns in the order wl_tenant_from_row() reads them. */
#define TENANT_COLS                                                       \
	"t.id, t.name, t.plan, t.public_api, t.webhooks, t.zapier, t.state, " \
	"t.email_verified, t.billing_available, t.guest_allowance, "       \
	"t.reads_per_minute, t.writes_per_minute, "                        \
	"t.tenant_reads_per_minute, t.tenant_writes_per_minute, "          \
	"t.active_keys, t.webhook_subscriptions, "                         \
	"t.default_key_expiry_days, t.maximum_key_expiry_days"

/* A business is visible to a key when it passes the key's business
 * restriction (a JSON array, "[]" for none) and, if the key is restricted
 * to lines, holds one of them.  Parameters: biz, biz, queues, queues. */
#define BUSINESS_VISIBLE                                                  \
	"((? = '[]' OR JSON_CONTAINS(?, JSON_QUOTE(b.id))) AND "            \
	"(? = '[]' OR EXISTS (SELECT 1 FROM queues vq WHERE "               \
	"vq.business_id = b.id AND JSON_CONTAINS(?, JSON_QUOTE(vq.id)))))"

#define BUSINESS_COLS                                                     \
	"b.id, b.name, b.slug, b.time_zone, b.created_at, b.updated_at"

/* Queue columns in the order wl_queue_from_row() reads them. */
#define QUEUE_COLS                                                        \
	"q.id, q.business_id, q.name, q.time_zone, b.time_zone, "         \
	"q.working_hours, q.walk_ins_enabled, q.walk_ins_paused, "         \
	"q.bookings_enabled, q.bookings_paused, q.booking_slot_minutes, "  \
	"q.booking_hours, q.booking_capacity, q.service_required, "        \
	"q.created_at, q.updated_at"

/* Rows of a JSON array of ids, joinable to indexed id columns. */
#define ID_TABLE(name)                                                    \
	"JSON_TABLE(?, '$[*]' COLUMNS (" name                              \
	" VARCHAR(48) CHARACTER SET ascii PATH '$')) jt"

#define ACTIVE_STATUSES "('waiting', 'ready', 'confirmed')"

/*
 * A count of a line's walk-ins reads entries_walkins (migrations/008).
 * MariaDB plans a prepared statement again at every execution, and left
 * to choose it estimates the ranges of every index that starts with the
 * line, five of them, to pick this one.
 */
#define WALKINS_INDEX "FORCE INDEX (entries_walkins)"

/*
 * The position of e, an active walk-in.  A line's tickets run 1, 2, 3...
 * without gaps (migrations/008), and no active walk-in of the line has a
 * ticket below h, its line_tickets.head (migrations/011), so the tickets
 * h..e.ticket are held by e, by those ahead of e, and by those no longer
 * active: position = e.ticket - h + 1 - (walk-ins no longer active with a
 * ticket from h to e.ticket).  h is the lowest active ticket or lags
 * below it, which costs rows read, not the right answer.  That is a range
 * of out-of-turn departures, however long the line.  MariaDB bounds this
 * range only when e is a constant (one entry read by id), so lists use
 * ENTRY_POSITION_LIST, which counts the active walk-ins ahead: its index
 * lookup by line keeps that to the line's active walk-ins.  Both give the
 * same number.
 */
#define ENTRY_POSITION                                                    \
	"e.ticket + 1 - lt.head - (SELECT COUNT(*) FROM entries d "         \
	WALKINS_INDEX " WHERE d.queue_id = e.queue_id AND d.is_booking = 0 " \
	"AND d.is_active = 0 AND d.ticket >= lt.head AND d.ticket < "       \
	"e.ticket)"
/*
 * The position of e, an active walk-in, while no walk-in of its line has
 * left out of turn: the tickets head..issued are then all held by active
 * walk-ins, and ENTRY_POSITION's count is 0.  LINE_DEPARTURES is how many
 * have left since the head (issued + 1 - head - active, with the count of
 * migrations/014); entry.c reads entries among which an active walk-in
 * has a non-zero one again, counting (ENTRY_POSITION for one entry,
 * ENTRY_POSITION_LIST for a page).  The count's subquery costs MariaDB
 * about as much as the rest of a read of one entry, planned at every
 * execution whether it runs or not, and a page's counts grow with the
 * length of the line.  Like a new walk-in's position (STMT_ENTRY_NUMBERS), this
 * trusts the line's count of active walk-ins: one gone astray (a program
 * older than migrations/014 still running after it) is mended once the
 * line is next left empty.
 */
#define ENTRY_POSITION_PLAIN "e.ticket + 1 - lt.head"
#define LINE_DEPARTURES "lt.issued + 1 - lt.head - lt.active"
#define ENTRY_POSITION_LIST                                               \
	"(SELECT COUNT(*) FROM entries p " WALKINS_INDEX " WHERE "          \
	"p.queue_id = e.queue_id AND p.is_booking = 0 AND p.is_active = 1 " \
	"AND p.ticket <= e.ticket)"

/*
 * Entry columns in the order entry.c reads them, with `pos` computing the
 * position of e, an active walk-in; FROM ENTRY_FROM.  The last two are
 * the line's recent wait and when a walk-in of the line was last first
 * served (migrations/011): entry.c tells whether that wait is still
 * recent.
 */
#define ENTRY_COLS(pos)                                                   \
	"e.id, e.guest_id, e.booking_id, e.version, e.status, e.queue_id, "  \
	"e.business_id, e.full_name, e.phone, e.party_size, e.notes, "       \
	"e.service_type_id, e.custom_data, e.external_reference, "          \
	"e.is_booking, e.scheduled_for, e.sms_consent, e.created_at, "      \
	"e.updated_at, CASE WHEN e.is_booking = 0 AND e.is_active = 1 THEN " \
	pos " END, lt.wait_ms, lt.served_at"
#define ENTRY_FROM                                                        \
	" FROM entries e LEFT JOIN line_tickets lt ON lt.queue_id = "       \
	"e.queue_id"

/* A line's recent wait, with w ms the wait of its newly served walk-in:
 * a moving average in which each newly served walk-in weighs 1/5. */
#define LINE_WAIT "wait_ms * 0.8 + ? * 0.2"

/* The key's restrictions on entries: biz, biz, queues, queues. */
#define ENTRY_VISIBLE                                                     \
	"(? = '[]' OR JSON_CONTAINS(?, JSON_QUOTE(e.business_id))) AND "   \
	"(? = '[]' OR JSON_CONTAINS(?, JSON_QUOTE(e.queue_id)))"

/* A page of the key's entries, and of those with an external reference;
 * FROM ENTRY_FROM. */
#define ENTRY_LIST_WHERE                                                  \
	ENTRY_FROM " WHERE e.tenant_id = ? AND (e.updated_at > ? OR "       \
	"(e.updated_at = ? AND e.id > ?)) AND " ENTRY_VISIBLE               \
	" ORDER BY e.updated_at, e.id LIMIT ?"
#define ENTRY_EXTREF_WHERE                                                \
	ENTRY_FROM " WHERE e.tenant_id = ? AND e.external_reference = ? "   \
	"AND (e.updated_at > ? OR (e.updated_at = ? AND e.id > ?)) AND "     \
	ENTRY_VISIBLE " ORDER BY e.updated_at, e.id LIMIT ?"

/* An Idempotency-Key's claim: its record, still without an answer. */
#define IDEM_CLAIM                                                        \
	"INSERT INTO idempotency_keys (key_id, idem_key, request_hash, "  \
	"status, body, created_at) VALUES (?, ?, ?, 0, NULL, ?)"

/* Subscription columns in the order webhook.c reads them. */
#define SUB_COLS                                                          \
	"s.id, s.url, s.event_types, s.business_ids, s.queue_ids, "        \
	"s.description, s.status, s.status_reason, s.created_at, "         \
	"s.updated_at, s.key_id"

/* A subscription as a range of its events needs it (see deliver.c). */
#define RANGE_SUB_COLS                                                    \
	"s.id, s.tenant_id, s.fanout_seq, s.event_types, s.business_ids, " \
	"s.queue_ids, s.high_water_seq, s.status, s.url, s.secret_enc, "   \
	"s.previous_secret_enc, s.previous_secret_until, s.updated_at, "   \
	"s.resumes, k.id, k.revoked_at, k.expires_at, k.integration_type, " \
	TENANT_COLS
#define RANGE_SUB_JOINS                                                   \
	"LEFT JOIN api_keys k ON k.id = s.key_id JOIN tenants t ON t.id = " \
	"s.tenant_id"

/*
 * STMT_RECORD_NEW's rows: thirty-two (WL_RECORD_NEW_ROWS) of fourteen
 * columns (WL_RECORD_NEW_COLS): id, tenant_id, subscription_id,
 * event_seq, event_id, event_type, status, skipped, attempt_count,
 * next_attempt_at, last_attempt_at, attempts, created_at, updated_at.
 * Bound parameters cost the server a fraction of what reading the same
 * values out of a JSON_TABLE does.
 */
#define NEW_ROW "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
#define NEW_ROW4 NEW_ROW ", " NEW_ROW ", " NEW_ROW ", " NEW_ROW
#define NEW_ROW16 NEW_ROW4 ", " NEW_ROW4 ", " NEW_ROW4 ", " NEW_ROW4
#define NEW_ROWS NEW_ROW16 ", " NEW_ROW16

/* Delivery columns in the order webhook.c reads them. */
#define DLV_COLS                                                          \
	"d.id, d.subscription_id, d.event_id, d.event_type, d.status, "    \
	"d.attempt_count, d.next_attempt_at, d.last_attempt_at, "          \
	"d.attempts, d.created_at"

const char *const wl_stmt_sql[STMT__MAX] = {
    [STMT_KEY_BY_DIGEST] =
	"SELECT k.id, k.digest, k.scopes, k.business_ids, k.queue_ids, "
	"k.integration_type, k.expires_at, k.revoked_at, " TENANT_COLS
	" FROM api_keys k JOIN tenants t ON t.id = k.tenant_id"
	" WHERE k.digest = ?",
    [STMT_PING] = "SELECT 1",
    [STMT_MIGRATION_LIST] = "SELECT version FROM schema_migrations",
    [STMT_MIGRATION_ADD] =
	"INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)",
    [STMT_TENANT_INSERT] =
	"INSERT INTO tenants (id, name, plan, public_api, webhooks, zapier, "
	"state, email_verified, billing_available, guest_allowance, "
	"reads_per_minute, writes_per_minute, tenant_reads_per_minute, "
	"tenant_writes_per_minute, active_keys, webhook_subscriptions, "
	"default_key_expiry_days, maximum_key_expiry_days, created_at, "
	"updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
	"?, ?, ?, ?)",
    [STMT_TENANT_GET] = "SELECT " TENANT_COLS " FROM tenants t WHERE t.id = ?",
    [STMT_TENANT_UPDATE] =
	"UPDATE tenants SET plan = ?, public_api = ?, webhooks = ?, "
	"zapier = ?, state = ?, email_verified = ?, billing_available = ?, "
	"guest_allowance = ?, reads_per_minute = ?, writes_per_minute = ?, "
	"tenant_reads_per_minute = ?, tenant_writes_per_minute = ?, "
	"active_keys = ?, webhook_subscriptions = ?, "
	"default_key_expiry_days = ?, maximum_key_expiry_days = ?, "
	"updated_at = ? WHERE id = ?",
    [STMT_COUNTER_INSERT] =
	"INSERT INTO tenant_counters (tenant_id) VALUES (?)",
    [STMT_KEY_INSERT] =
	"INSERT INTO api_keys (id, tenant_id, digest, scopes, business_ids, "
	"queue_ids, integration_type, created_at, expires_at) "
	"VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
    [STMT_KEY_REVOKE] = "UPDATE api_keys SET revoked_at = ? WHERE id = ? "
			"AND revoked_at IS NULL",
    /* A key's restrictions name the tenant's own businesses and lines. */
    [STMT_KEY_BUSINESS_OWNED] =
	"SELECT 1 FROM businesses WHERE id = ? AND tenant_id = ?",
    [STMT_KEY_QUEUE_OWNED] =
	"SELECT 1 FROM queues WHERE id = ? AND tenant_id = ?",
    [STMT_KEY_LIST] =
	"SELECT id, tenant_id, scopes, business_ids, queue_ids, "
	"integration_type, created_at, expires_at, revoked_at FROM api_keys "
	"WHERE tenant_id = ? ORDER BY created_at, id",
    [STMT_KEY_COUNT_ACTIVE] =
	"SELECT COUNT(*) FROM api_keys WHERE tenant_id = ? AND revoked_at "
	"IS NULL AND expires_at > ?",
    /* Serializes a tenant's key creations (migrations/010). */
    [STMT_KEY_LOCK] = "UPDATE tenant_counters SET key_lock = key_lock + 1 "
		      "WHERE tenant_id = ?",
    [STMT_BUSINESS_INSERT] =
	"INSERT INTO businesses (id, tenant_id, name, slug, time_zone, "
	"created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
    [STMT_SERVICE_INSERT] =
	"INSERT INTO services (id, tenant_id, business_id, service_name, "
	"base_duration_minutes, is_active) VALUES (?, ?, ?, ?, ?, ?)",
    [STMT_FIELD_INSERT] =
	"INSERT INTO custom_fields (id, tenant_id, business_id, label, type, "
	"required, is_public, options) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    [STMT_QUEUE_INSERT] =
	"INSERT INTO queues (id, tenant_id, business_id, name, time_zone, "
	"working_hours, walk_ins_enabled, walk_ins_paused, bookings_enabled, "
	"bookings_paused, booking_slot_minutes, booking_hours, "
	"booking_capacity, service_required, created_at, updated_at) VALUES "
	"(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    [STMT_QUEUE_SERVICE_INSERT] = "INSERT INTO queue_services (queue_id, "
				  "service_id, position) VALUES (?, ?, ?)",
    [STMT_QUEUE_FIELD_INSERT] = "INSERT INTO queue_custom_fields (queue_id, "
				"field_id, position) VALUES (?, ?, ?)",
    [STMT_BUSINESS_PAGE] =
	"SELECT " BUSINESS_COLS " FROM businesses b WHERE b.tenant_id = ? "
	"AND b.id > ? AND " BUSINESS_VISIBLE " ORDER BY b.id LIMIT ?",
    [STMT_BUSINESS_GET] = "SELECT " BUSINESS_COLS ", " BUSINESS_VISIBLE
			  " FROM businesses b WHERE b.tenant_id = ? AND "
			  "b.id = ?",
    [STMT_BUSINESS_SERVICES] =
	"SELECT s.business_id, s.id, s.service_name, "
	"s.base_duration_minutes, s.is_active FROM " ID_TABLE("bid")
	" JOIN services s ON s.business_id = jt.bid ORDER BY s.business_id, "
	"s.id",
    [STMT_BUSINESS_FIELDS] =
	"SELECT f.business_id, f.id, f.label, f.type, f.required, f.options "
	"FROM " ID_TABLE("bid") " JOIN custom_fields f ON f.business_id = "
	"jt.bid WHERE f.is_public = 1 ORDER BY f.business_id, f.id",
    [STMT_QUEUE_PAGE] =
	"SELECT " QUEUE_COLS " FROM queues q JOIN businesses b ON b.id = "
	"q.business_id WHERE q.tenant_id = ? AND q.business_id = ? AND "
	"q.id > ? AND (? = '[]' OR JSON_CONTAINS(?, JSON_QUOTE(q.id))) "
	"ORDER BY q.id LIMIT ?",
    [STMT_QUEUE_GET] = "SELECT " QUEUE_COLS " FROM queues q JOIN businesses "
		       "b ON b.id = q.business_id WHERE q.tenant_id = ? AND "
		       "q.id = ?",
    [STMT_QUEUE_SERVICES] =
	"SELECT qs.queue_id, s.id, s.service_name, s.base_duration_minutes, "
	"s.is_active FROM " ID_TABLE("qid") " JOIN queue_services qs ON "
	"qs.queue_id = jt.qid JOIN services s ON s.id = qs.service_id "
	"ORDER BY qs.queue_id, qs.position",
    [STMT_QUEUE_FIELDS] =
	"SELECT qf.queue_id, f.id, f.label, f.type, f.required, f.options "
	"FROM " ID_TABLE("qid") " JOIN queue_custom_fields qf ON "
	"qf.queue_id = jt.qid JOIN custom_fields f ON f.id = qf.field_id "
	"WHERE f.is_public = 1 ORDER BY qf.queue_id, qf.position",
    [STMT_LINE_FIELDS] =
	"SELECT qf.queue_id, f.id, f.label, f.type, f.required, f.options "
	"FROM queue_custom_fields qf JOIN custom_fields f ON f.id = "
	"qf.field_id WHERE qf.queue_id = ? AND f.is_public = 1 ORDER BY "
	"qf.position",
    [STMT_QUEUE_STATS] =
	"SELECT (SELECT COUNT(*) FROM entries WHERE queue_id = ? AND status "
	"IN ('waiting', 'ready', 'confirmed')), (SELECT "
	"AVG(first_in_service_at - created_at) FROM entries WHERE queue_id "
	"= ? AND is_booking = 0 AND first_in_service_at >= ? AND "
	"first_in_service_at < ?)",
    [STMT_SEQ_RESERVE] =
	"INSERT INTO tenant_counters (tenant_id, event_seq) VALUES (?, "
	"LAST_INSERT_ID(?)) ON DUPLICATE KEY UPDATE event_seq = "
	"LAST_INSERT_ID(event_seq + ?)",
    [STMT_EVENT_INSERT] =
	"INSERT INTO events (tenant_id, seq, id, type, business_id, "
	"queue_id, resource_id, occurred_at, body) VALUES (?, "
	"LAST_INSERT_ID() - ?, ?, ?, ?, ?, ?, ?, CONCAT(?, LAST_INSERT_ID() - "
	"?, ?))",
    [STMT_IDEM_GET] = "SELECT request_hash, status, body, patch FROM "
		      "idempotency_keys WHERE key_id = ? AND idem_key = ?",
    [STMT_IDEM_INSERT] =
	"INSERT INTO idempotency_keys (key_id, idem_key, request_hash, "
	"status, body, created_at) VALUES (?, ?, ?, ?, ?, ?)",
    /* The key's claim, first in the mutation's transaction: a claim that
     * another transaction holds fails at once (lock wait 0: in progress),
     * a committed record on the duplicate key (a retry). */
    [STMT_IDEM_CLAIM] =
	"SET STATEMENT innodb_lock_wait_timeout = 0 FOR " IDEM_CLAIM,
    /* The same claim with the session's lock wait, once the request has
     * lost a connection (idempotency.c run()). */
    [STMT_IDEM_CLAIM_WAIT] = IDEM_CLAIM,
    /* Set by the claim's attempt right after it (idempotency.c). */
    [STMT_IDEM_MARK] = "SET @wl_idem_claim = ?",
    [STMT_IDEM_MARK_GET] = "SELECT @wl_idem_claim",
    [STMT_IDEM_ANSWER] =
	"UPDATE idempotency_keys SET status = ?, body = ? WHERE key_id = ? "
	"AND idem_key = ?",
    /* The answer with the patch the transaction has left in @wl_patch;
     * then the patch, read right after the commit (wl_sql_at_commit()).
     * Outside a transaction a Galera node with wsrep_sync_wait would first
     * wait for the cluster, which a session variable does not need (every
     * MariaDB built with Galera support has the variable). */
    [STMT_IDEM_ANSWER_PATCHED] =
	"UPDATE idempotency_keys SET status = ?, body = ?, patch = @wl_patch "
	"WHERE key_id = ? AND idem_key = ?",
    [STMT_IDEM_PATCH_GET] =
	"SET STATEMENT wsrep_sync_wait = 0 FOR SELECT @wl_patch",
    [STMT_USAGE_BUMP] =
	"INSERT INTO tenant_usage (tenant_id, month, guests) VALUES (?, ?, "
	"LAST_INSERT_ID(1)) ON DUPLICATE KEY UPDATE guests = "
	"LAST_INSERT_ID(guests + 1)",
    /* Right after STMT_USAGE_BUMP: past the allowance, the server
     * refuses the transaction (WL_ERR_REFUSED). */
    [STMT_USAGE_CHECK] =
	"IF LAST_INSERT_ID() > ? THEN SIGNAL SQLSTATE '45000' SET "
	"MESSAGE_TEXT = 'the guest allowance is used up'; END IF",
    [STMT_ENTRY_GET] = "SELECT " ENTRY_COLS(ENTRY_POSITION_PLAIN) ", "
		       LINE_DEPARTURES ENTRY_FROM
		       " WHERE e.tenant_id = ? AND e.id = ?",
    [STMT_ENTRY_GET_COUNTED] = "SELECT " ENTRY_COLS(ENTRY_POSITION) ", "
			       LINE_DEPARTURES ENTRY_FROM
			       " WHERE e.tenant_id = ? AND e.id = ?",
    [STMT_ENTRY_LIST] = "SELECT " ENTRY_COLS(ENTRY_POSITION_PLAIN) ", "
			LINE_DEPARTURES ENTRY_LIST_WHERE,
    [STMT_ENTRY_LIST_COUNTED] = "SELECT " ENTRY_COLS(ENTRY_POSITION_LIST)
				", " LINE_DEPARTURES ENTRY_LIST_WHERE,
    [STMT_ENTRY_LIST_EXTREF] = "SELECT " ENTRY_COLS(ENTRY_POSITION_PLAIN)
			       ", " LINE_DEPARTURES ENTRY_EXTREF_WHERE,
    [STMT_ENTRY_LIST_EXTREF_COUNTED] =
	"SELECT " ENTRY_COLS(ENTRY_POSITION_LIST) ", " LINE_DEPARTURES
	ENTRY_EXTREF_WHERE,
    [STMT_ENTRY_LOCK] =
	"SELECT id, queue_id, business_id, status, version, is_booking, "
	"booking_id, scheduled_for, booking_end, service_type_id, "
	"custom_data, full_name, phone, party_size, notes, "
	"external_reference, ticket, created_at, first_in_service_at FROM "
	"entries WHERE tenant_id = ? AND id = ? FOR UPDATE",
    /* A walk-in's ticket is the one STMT_TICKET_ISSUE has just issued. */
    [STMT_ENTRY_INSERT] =
	"INSERT INTO entries (id, tenant_id, business_id, queue_id, "
	"guest_id, booking_id, version, status, is_booking, full_name, phone, "
	"party_size, notes, service_type_id, custom_data, "
	"external_reference, scheduled_for, booking_end, sms_consent, "
	"ticket, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?, ?, "
	"?, ?, ?, ?, ?, ?, ?, ?, ?, IF(?, LAST_INSERT_ID(), NULL), ?, ?)",
    /*
     * The numbers of the Entry object of a new walk-in of line q that
     * only the server knows, as a patch of the answer {"entry": ...}
     * (idempotency.c): its position and estimated wait, as entry.c works
     * them out, at its creation (created at the instant now, so no time
     * has gone by; since is a day before).  Its ticket is the line's
     * last, so its position is the count of the line's active walk-ins
     * (migrations/014), which the ticket it has just taken holds locked:
     * the position a read after the commit finds.  A read into a
     * variable takes no lock.
     */
    [STMT_ENTRY_NUMBERS] =
	"SELECT JSON_OBJECT('entry', JSON_OBJECT('position', GREATEST("
	"active, 1), 'estimatedWaitMinutes', IF(served_at >= ?, CAST("
	"GREATEST(FLOOR(wait_ms / 60000 + 0.5), 0) AS SIGNED), NULL))) INTO "
	"@wl_patch FROM line_tickets WHERE queue_id = ?",
    [STMT_TICKET_ISSUE] =
	"INSERT INTO line_tickets (queue_id, issued, active) VALUES (?, "
	"LAST_INSERT_ID(1), 1) ON DUPLICATE KEY UPDATE issued = "
	"LAST_INSERT_ID(issued + 1), active = active + 1",
    /*
     * A walk-in with ticket t moves into or out of the active statuses,
     * or is first served after waiting w ms (NULL otherwise), at instant
     * now; since is 24 hours before it.  Runs before the entry's own
     * update, with t still active: a departure takes the head again, the
     * lowest other active ticket (two index entries at most), in a
     * subquery that names the locked row, so that it runs once the lock
     * is granted and sees every change committed before (MariaDB works
     * out an uncorrelated MIN while planning, before the lock).  A return
     * always changes the row (return_count), so that on Galera it
     * conflicts with a departure from another node that raises the head
     * past it.  The count of active walk-ins follows; a line left with
     * none (its new head past the last ticket) counts 0 again, which
     * mends a count that went astray.  Parameters: returning, t,
     * departing, t, returning, w, since, w, w, now (NULL unless w is
     * given), returning, departing, queue.
     */
    [STMT_LINE_MOVE] =
	"UPDATE line_tickets SET head = CASE WHEN ? THEN LEAST(head, ?) "
	"WHEN ? THEN COALESCE((SELECT h.ticket FROM entries h WHERE "
	"h.queue_id = line_tickets.queue_id AND h.is_booking = 0 AND "
	"h.is_active = 1 AND h.ticket <> ? ORDER BY h.ticket LIMIT 1), "
	"issued + 1) ELSE head END, return_count = return_count + ?, "
	"wait_ms = CASE WHEN ? IS NULL THEN wait_ms WHEN served_at >= ? "
	"THEN " LINE_WAIT " ELSE ? END, served_at = NULLIF(GREATEST("
	"COALESCE(served_at, 0), COALESCE(?, 0)), 0), active = CASE WHEN "
	"head > issued THEN 0 ELSE active + ? - ? END WHERE queue_id = ?",
    [STMT_ENTRY_SET_STATUS] =
	"UPDATE entries SET status = ?, version = version + 1, updated_at = "
	"?, first_in_service_at = IF(? = 'in_service' AND "
	"first_in_service_at IS NULL, ?, first_in_service_at), completed_at "
	"= IF(? = 'completed', ?, completed_at) WHERE id = ? AND version = ?",
    [STMT_ENTRY_EDIT] =
	"UPDATE entries SET full_name = ?, phone = ?, party_size = ?, notes "
	"= ?, service_type_id = ?, custom_data = ?, external_reference = ?, "
	"booking_end = ?, version = version + 1, updated_at = ? WHERE id = ? "
	"AND version = ?",
    [STMT_ENTRY_RESCHEDULE] =
	"UPDATE entries SET scheduled_for = ?, booking_end = ?, version = "
	"version + 1, updated_at = ? WHERE id = ? AND version = ?",
    [STMT_HISTORY_INSERT] =
	"INSERT INTO entry_status_history (entry_id, version, tenant_id, "
	"queue_id, status, previous_status, at) VALUES (?, ?, ?, ?, ?, ?, ?)",
    [STMT_QUEUE_HAS_SERVICE] =
	"SELECT s.base_duration_minutes, s.is_active FROM queue_services qs "
	"JOIN services s ON s.id = qs.service_id WHERE qs.queue_id = ? AND "
	"qs.service_id = ?",
    [STMT_QUEUE_BOOKING_LOCK] =
	"UPDATE queues SET booking_lock = booking_lock + 1 WHERE id = ?",
    [STMT_EVENT_SCAN] =
	"SELECT seq, type, business_id, queue_id, body FROM events WHERE "
	"tenant_id = ? AND seq > ? ORDER BY seq LIMIT ?",
    [STMT_COUNTER_GET] =
	"SELECT event_seq, purged_seq FROM tenant_counters WHERE tenant_id = ?",
    [STMT_PURGE_EVENT_TENANTS] =
	"SELECT tenant_id, MAX(seq) FROM events WHERE occurred_at < ? GROUP "
	"BY tenant_id",
    /* The oldest event still inside the window: nothing from it on goes,
     * whatever the age of the events numbered after it. */
    [STMT_PURGE_FIRST_KEPT] =
	"SELECT seq FROM events WHERE tenant_id = ? AND occurred_at >= ? "
	"ORDER BY seq LIMIT 1",
    [STMT_PURGE_MARK] =
	"UPDATE tenant_counters SET purged_seq = GREATEST(purged_seq, ?) "
	"WHERE tenant_id = ?",
    /* Purged events are gone for the fan-out too: it goes on after them. */
    [STMT_PURGE_FANOUT] =
	"UPDATE webhook_subscriptions SET fanout_seq = ? WHERE tenant_id = ? "
	"AND fanout_seq < ?",
    [STMT_PURGE_EVENTS] =
	"DELETE FROM events WHERE tenant_id = ? AND seq <= ? ORDER BY seq "
	"LIMIT 1000",
    [STMT_PURGE_IDEMPOTENCY] =
	"DELETE FROM idempotency_keys WHERE created_at < ? LIMIT 1000",
    /* Returns event_seq as the insert id (see webhook.c lock_seq). */
    [STMT_COUNTER_LOCK] =
	"UPDATE tenant_counters SET webhook_lock = webhook_lock + 1, "
	"event_seq = LAST_INSERT_ID(event_seq) WHERE tenant_id = ?",
    [STMT_SUB_COUNT] =
	"SELECT COUNT(*) FROM webhook_subscriptions WHERE tenant_id = ?",
    [STMT_SUB_INSERT] =
	"INSERT INTO webhook_subscriptions (id, tenant_id, key_id, url, "
	"event_types, business_ids, queue_ids, description, status, "
	"status_reason, secret_enc, high_water_seq, fanout_seq, created_at, "
	"updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'active', NULL, ?, ?, ?, "
	"?, ?)",
    [STMT_SUB_GET] = "SELECT " SUB_COLS " FROM webhook_subscriptions s "
		     "WHERE s.tenant_id = ? AND s.id = ?",
    [STMT_SUB_PAGE] = "SELECT " SUB_COLS " FROM webhook_subscriptions s "
		      "WHERE s.tenant_id = ? AND s.id > ? ORDER BY s.id LIMIT ?",
    [STMT_SUB_DELETE] = "DELETE FROM webhook_subscriptions WHERE id = ?",
    [STMT_SUB_DELETE_DELIVERIES] =
	"DELETE FROM deliveries WHERE subscription_id = ?",
    /* A paused or disabled subscription comes back from the newest event
     * on; an active one is only bound to the calling key (its pending
     * deliveries and the events not yet fanned out stay its own). */
    [STMT_SUB_RESUME] =
	"UPDATE webhook_subscriptions SET status = 'active', status_reason "
	"= NULL, key_id = ?, high_water_seq = ?, fanout_seq = ?, resumes = "
	"resumes + 1, updated_at = ? WHERE id = ? AND status <> 'active'",
    [STMT_SUB_REBIND] =
	"UPDATE webhook_subscriptions SET key_id = ?, updated_at = ? WHERE id "
	"= ? AND status = 'active'",
    [STMT_SUB_ROTATE] =
	"UPDATE webhook_subscriptions SET previous_secret_enc = secret_enc, "
	"previous_secret_until = ?, secret_enc = ?, updated_at = ? WHERE id "
	"= ?",
    /* Only as it was read (updated_at): a subscription resumed or bound
     * to another key since keeps its status. */
    [STMT_SUB_SET_STATUS] =
	"UPDATE webhook_subscriptions SET status = ?, status_reason = ?, "
	"updated_at = ? WHERE id = ? AND status = 'active' AND updated_at = ?",
    /* The subscription's pending deliveries, never to be sent (paused,
     * disabled or resumed past them): skipped. */
    [STMT_DELIVERY_FAIL_PENDING] =
	"UPDATE deliveries SET status = 'failed', skipped = 1, lease_owner = "
	"NULL, lease_until = 0, updated_at = ? WHERE subscription_id = ? AND "
	"status = 'pending'",
    [STMT_DELIVERY_PAGE] =
	"SELECT " DLV_COLS " FROM deliveries d WHERE d.subscription_id = ? "
	"AND (d.created_at > ? OR (d.created_at = ? AND d.id > ?)) ORDER BY "
	"d.created_at, d.id LIMIT ?",
    [STMT_DELIVERY_PAGE_STATUS] =
	"SELECT " DLV_COLS " FROM deliveries d WHERE d.subscription_id = ? "
	"AND d.status = ? AND (d.created_at > ? OR (d.created_at = ? AND "
	"d.id > ?)) ORDER BY d.created_at, d.id LIMIT ?",
    /* (kept: its event is still in the feed, so it can be sent.) */
    [STMT_DELIVERY_GET] = "SELECT " DLV_COLS ", d.tenant_id, d.skipped, "
			  "EXISTS (SELECT 1 FROM events e WHERE e.id = "
			  "d.event_id) FROM deliveries d WHERE d.id = ?",
    /* One more attempt now: of a pending delivery within its schedule,
     * of any other a single attempt (manual_retry is set before status
     * changes).  Not of a skipped one, nor while an attempt is in flight
     * (its lease is live), nor once its event has been purged. */
    [STMT_DELIVERY_RETRY] =
	"UPDATE deliveries SET manual_retry = (manual_retry = 1 OR status <> "
	"'pending'), status = 'pending', next_attempt_at = ?, lease_owner = "
	"NULL, lease_until = 0, updated_at = ? WHERE id = ? AND skipped = 0 "
	"AND lease_until < ? AND EXISTS (SELECT 1 FROM events e WHERE e.id = "
	"deliveries.event_id)",
    /* Subscriptions behind their tenant's events, and all a range of
     * them needs: filters, destination, secrets, bound key, tenant (see
     * RANGE_SUB_COLS in deliver.c). */
    [STMT_FANOUT_SUBS] = "SELECT " RANGE_SUB_COLS " FROM "
			 "webhook_subscriptions s JOIN tenant_counters c ON "
			 "c.tenant_id = s.tenant_id " RANGE_SUB_JOINS
			 " WHERE s.status = 'active' AND s.fanout_seq < "
			 "c.event_seq LIMIT 200",
    [STMT_RANGE_SUB] = "SELECT " RANGE_SUB_COLS " FROM "
		       "webhook_subscriptions s " RANGE_SUB_JOINS
		       " WHERE s.id = ?",
    [STMT_FANOUT_EVENTS] =
	"SELECT seq, id, type, business_id, queue_id, body FROM events WHERE "
	"tenant_id = ? AND seq > ? ORDER BY seq LIMIT ?",
    [STMT_FANOUT_ADVANCE] =
	"UPDATE webhook_subscriptions SET fanout_seq = ? WHERE id = ? AND "
	"fanout_seq = ? AND status = 'active'",
    [STMT_RANGE_INSERT] =
	"INSERT INTO delivery_ranges (subscription_id, first_seq, last_seq, "
	"lease_owner, lease_until) VALUES (?, ?, ?, ?, ?)",
    /* Ranges whose deliverer is gone: to this one, a few at a time. */
    [STMT_RANGE_TAKE] =
	"UPDATE delivery_ranges SET lease_owner = ?, lease_until = ? WHERE "
	"lease_until < ? LIMIT 20",
    [STMT_RANGE_TAKEN] =
	"SELECT subscription_id, first_seq, last_seq FROM delivery_ranges "
	"WHERE lease_owner = ? AND lease_until = ?",
    /* The events of a range taken over that have no record yet. */
    [STMT_RANGE_LEFT] =
	"SELECT e.seq, e.id, e.type, e.business_id, e.queue_id, e.body FROM "
	"events e WHERE e.tenant_id = ? AND e.seq BETWEEN ? AND ? AND NOT "
	"EXISTS (SELECT 1 FROM deliveries d WHERE d.subscription_id = ? AND "
	"d.event_id = e.id) ORDER BY e.seq",
    [STMT_RANGE_DONE] =
	"DELETE FROM delivery_ranges WHERE subscription_id = ? AND first_seq "
	"= ? AND lease_owner = ?",
    [STMT_RANGE_GIVE_BACK] =
	"UPDATE delivery_ranges SET lease_owner = NULL, lease_until = 0 "
	"WHERE subscription_id = ? AND first_seq = ? AND lease_owner = ?",
    [STMT_CLAIM] =
	"UPDATE deliveries SET lease_owner = ?, lease_until = ? WHERE status "
	"= 'pending' AND next_attempt_at <= ? AND lease_until < ? AND "
	"FIND_IN_SET(subscription_id, ?) = 0 ORDER BY next_attempt_at LIMIT "
	"?",
    /* Deliveries first, by lease: left to itself the optimizer may start
     * from the subscription and read every delivery it ever had.  A
     * delivery whose subscription is gone comes back too (s.status
     * NULL), to be failed rather than claimed again and again. */
    [STMT_CLAIMED] =
	"SELECT STRAIGHT_JOIN d.id, d.event_seq, d.event_id, d.attempt_count, "
	"d.manual_retry, d.attempts, d.created_at, d.subscription_id, s.url, "
	"s.status, s.secret_enc, s.previous_secret_enc, "
	"s.previous_secret_until, s.updated_at, s.resumes, k.id, "
	"k.revoked_at, "
	"k.expires_at, k.integration_type, e.body, " TENANT_COLS
	" FROM deliveries d FORCE INDEX (deliveries_lease) LEFT JOIN "
	"webhook_subscriptions s ON s.id = d.subscription_id LEFT JOIN "
	"api_keys k ON k.id = s.key_id JOIN tenants t ON t.id = d.tenant_id "
	"LEFT JOIN events e ON e.tenant_id = d.tenant_id AND e.seq = "
	"d.event_seq WHERE d.lease_owner = ? AND d.lease_until = ?",
    /* Every attempt of a batch at once, from a JSON array of [id, status,
     * attempt_count, next_attempt_at, last_attempt_at, attempts]; rows
     * whose lease is no longer ours are left as they are. */
    [STMT_RECORD] =
	"UPDATE deliveries d JOIN JSON_TABLE(?, '$[*]' COLUMNS (id "
	"VARCHAR(48) CHARACTER SET ascii PATH '$[0]', status VARCHAR(16) "
	"CHARACTER SET ascii PATH '$[1]', n INT PATH '$[2]', next BIGINT "
	"PATH '$[3]', at BIGINT PATH '$[4]', attempts MEDIUMTEXT PATH "
	"'$[5]')) j ON d.id = j.id SET d.status = j.status, d.attempt_count "
	"= j.n, d.next_attempt_at = j.next, d.last_attempt_at = j.at, "
	"d.attempts = j.attempts, d.manual_retry = 0, d.lease_owner = NULL, "
	"d.lease_until = 0, d.updated_at = ? WHERE d.lease_owner = ?",
    /* Of the ranges of a batch's first attempts, a JSON array of
     * [subscription_id, first_seq], those still ours, with their
     * subscription's tenant and whether it is active since before them:
     * their records may be written (STMT_RECORD_NEW; if not active since,
     * as given up with the pause, disabling or resume).  A consistent
     * read, as the INSERT
     * ... SELECT that did this before read them: a share lock on the
     * subscription until the commit would hold up its fan-out and turn
     * a 410's disabling of it into a lock upgrade.  The list first,
     * then each one's range and subscription by key: left to itself the
     * optimizer may start from every active subscription. */
    [STMT_RANGES_HELD] =
	"SELECT STRAIGHT_JOIN r.subscription_id, r.first_seq, s.tenant_id, "
	"s.status = 'active' AND s.high_water_seq < r.first_seq FROM "
	"JSON_TABLE(?, '$[*]' COLUMNS (sub VARCHAR(48) CHARACTER SET ascii "
	"PATH '$[0]', first BIGINT PATH '$[1]')) j JOIN delivery_ranges r ON "
	"r.subscription_id = j.sub AND r.first_seq = j.first AND "
	"r.lease_owner = ? JOIN webhook_subscriptions s ON s.id = "
	"r.subscription_id",
    /* First attempts, each a new record (see NEW_ROWS); a batch's last
     * statement fills its rows past the end with copies of its first,
     * which the first's key turns away. */
    [STMT_RECORD_NEW] =
	"INSERT IGNORE INTO deliveries (id, tenant_id, subscription_id, "
	"event_seq, event_id, event_type, status, skipped, attempt_count, "
	"next_attempt_at, last_attempt_at, attempts, created_at, updated_at) "
	"VALUES " NEW_ROWS,
    [STMT_RELEASE] = "UPDATE deliveries SET lease_owner = NULL, lease_until "
		     "= 0 WHERE id = ? AND lease_owner = ?",
    [STMT_DELIVERY_FAIL] =
	"UPDATE deliveries SET status = 'failed', skipped = ?, lease_owner = "
	"NULL, lease_until = 0, updated_at = ? WHERE id = ? AND lease_owner = "
	"?",
    /* A 410 to an attempt read since the subscription's last resume (its
     * count of resumes as read): an attempt in flight at a resume answers
     * for the endpoint before it. */
    [STMT_SUB_DISABLE] =
	"UPDATE webhook_subscriptions SET status = 'disabled', status_reason "
	"= 'endpoint_gone', updated_at = ? WHERE id = ? AND status = 'active' "
	"AND resumes = ?",
    /* The pending deliveries of a subscription disabled: skipped. */
    [STMT_DELIVERY_FAIL_DISABLED] =
	"UPDATE deliveries d JOIN webhook_subscriptions s ON s.id = "
	"d.subscription_id SET d.status = 'failed', d.skipped = 1, "
	"d.lease_owner = NULL, d.lease_until = 0, d.updated_at = ? WHERE "
	"d.subscription_id = ? AND d.status = 'pending' AND s.status = "
	"'disabled'",
    /* By the primary key: a delivery's id begins with the time it was
     * made (wl_id_at), before its record was last changed, so the ids
     * made before the cut hold every record last changed before it (as
     * far as the nodes' clocks agree: one changed by a node whose clock
     * is behind may go at a later purge). */
    [STMT_PURGE_DELIVERIES] =
	"DELETE FROM deliveries WHERE id < ? AND status <> 'pending' AND "
	"updated_at < ? LIMIT 1000",
    [STMT_ANALYTICS_ENTRIES] =
	"SELECT id, is_booking, status, created_at, first_in_service_at "
	"FROM entries WHERE queue_id = ? AND created_at >= ? AND created_at "
	"< ? ORDER BY id",
    [STMT_ANALYTICS_SERVICE] =
	"SELECT h.entry_id, h.status, h.at FROM entries e JOIN "
	"entry_status_history h ON h.entry_id = e.id WHERE e.queue_id = ? "
	"AND e.created_at >= ? AND e.created_at < ? AND h.status IN "
	"('in_service', 'completed') ORDER BY h.entry_id, h.version",
    [STMT_BOOKING_INTERVALS] =
	"SELECT scheduled_for, booking_end FROM entries WHERE queue_id = ? "
	"AND is_booking = 1 AND status IN " ACTIVE_STATUSES " AND "
	"scheduled_for < ? AND booking_end > ? AND id <> ?",
    /* Transaction control, sent inside compound statements (sql.c). */
    [STMT_TXN_START] = "START TRANSACTION",
    [STMT_TXN_COMMIT] = "COMMIT",
    [STMT_LAST_ID] = "SELECT LAST_INSERT_ID()",
};
