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
    [STMT_KEY_LIST] =
	"SELECT id, tenant_id, scopes, business_ids, queue_ids, "
	"integration_type, created_at, expires_at, revoked_at FROM api_keys "
	"WHERE tenant_id = ? ORDER BY created_at, id",
    [STMT_KEY_COUNT_ACTIVE] =
	"SELECT COUNT(*) FROM api_keys WHERE tenant_id = ? AND revoked_at "
	"IS NULL AND expires_at > ?",
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
    [STMT_QUEUE_STATS] =
	"SELECT (SELECT COUNT(*) FROM entries WHERE queue_id = ? AND status "
	"IN ('waiting', 'ready', 'confirmed')), (SELECT "
	"AVG(first_in_service_at - created_at) FROM entries WHERE queue_id "
	"= ? AND is_booking = 0 AND first_in_service_at >= ? AND "
	"first_in_service_at < ?)",
};
