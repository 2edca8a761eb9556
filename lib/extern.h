/*
 * Internals of libwaitlist, shared by its source files only.
 */
#ifndef WL_EXTERN_H
#define WL_EXTERN_H

#include <stdarg.h>
#include <stdint.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "waitlist.h"
#include "ratelimit.h"

#define WL_ID_MAX 48	  /* prefix + 26 characters, with room to spare */
#define WL_TS_MAX 32	  /* YYYY-MM-DDTHH:MM:SS.mmmZ */
#define WL_SECRET_LEN 32
#define DAY_MS (86400LL * 1000) /* milliseconds in a day */

/* ------------------------------------------------------------------ */
/* Growable buffers with a hard cap. */

struct wl_buf {
	char *p;
	size_t len;
	size_t cap;
	size_t max; /* 0: no cap */
};

int wl_buf_append(struct wl_buf *, const void *, size_t);
int wl_buf_printf(struct wl_buf *, const char *, ...)
    __attribute__((format(printf, 2, 3)));
void wl_buf_free(struct wl_buf *);
int wl_buf_read_file(struct wl_buf *, const char *path, char *err,
		     size_t errsz);

/* Log lines written together (log.c); start zeroed. */
struct wl_loglines {
	struct wl_buf buf;
};
void wl_log_add(struct wl_loglines *, enum wl_log_level, const char *, ...)
    __attribute__((format(printf, 3, 4)));
void wl_log_flush(struct wl_loglines *);

/* ------------------------------------------------------------------ */
/* Crypto, identifiers and encodings (crypto.c). */

int wl_random_bytes(void *, size_t);
int wl_random_public(void *, size_t);
/* Public id: prefix + 26 Crockford base32 chars (48-bit ms time, 80 random
 * bits).  out must hold WL_ID_MAX bytes. */
int wl_id_new(const char *prefix, char *out);
/* The least id wl_id_new could make at ms: those made before ms sort
 * (as bytes) before it.  out must hold WL_ID_MAX bytes.  WL_OK, or
 * WL_ERR_INVALID for a prefix too long. */
int wl_id_at(const char *prefix, int64_t ms, char *out);
void wl_sha256(const void *, size_t, unsigned char out[32]);
void wl_sha256_hex(const void *, size_t, char out[65]);
int wl_hmac_sha256(const void *key, size_t keylen, const void *msg,
		    size_t msglen, unsigned char out[32]);
int wl_ct_equal(const void *, const void *, size_t);
uint32_t wl_fnv1a(const void *, size_t);
/* base64url without padding; out needs 4 * ((n + 2) / 3) + 1 bytes. */
size_t wl_b64url_encode(const unsigned char *, size_t, char *out);
/* Returns decoded length, or -1 on bad input or when it exceeds outsz. */
long wl_b64url_decode(const char *, size_t, unsigned char *out, size_t outsz);
size_t wl_b64_encode(const unsigned char *, size_t, char *out);
/* Padded or not; returns like wl_b64url_decode(). */
long wl_b64_decode(const char *, size_t, unsigned char *out, size_t outsz);

/* ------------------------------------------------------------------ */
/* Time (timeutil.c).  Timestamps are int64 milliseconds since the epoch. */

int64_t wl_now_ms(void);
/* Pin the clock to ms for the current request (tests); 0 unpins. */
void wl_clock_pin(int64_t ms);
void wl_ms_to_iso(int64_t ms, char out[WL_TS_MAX]);
/* Parse ISO 8601 (extended or basic format) with an explicit offset ("Z",
 * +hh:mm, +hhmm or +hh).  Returns 0 and sets *ms, or -1 (including when
 * the offset is missing). */
/* The longest timestamp input taken (openapi.json's TimestampInput). */
#define WL_ISO_INPUT_MAX 64
int wl_iso_to_ms(const char *, int64_t *ms);
/* Is s a valid "HH:MM" (00:00..24:00)?  Sets minutes since midnight. */
int wl_hhmm_parse(const char *s, int *minutes);
/* Is name an IANA zone known to this system? */
int wl_tz_valid(const char *name);
/* Local calendar fields of ms in zone tz. */
struct wl_local {
	int year, month, day; /* month 1..12 */
	int wday;	      /* 0 = Sunday */
	int minute;	      /* minutes since local midnight */
};
int wl_tz_local(const char *tz, int64_t ms, struct wl_local *);
/* ms of local wall time (y, m, d, minute of day) in tz; minute may be 1440.
 * For a non-existent wall time (DST gap) the later instant is used. */
int wl_tz_instant(const char *tz, int y, int m, int d, int minute,
		  int64_t *ms);
/* Instants [start, end), ms. */
struct wl_span {
	int64_t start, end;
};
/* The spans of local day (from day_start to day_end, as wl_tz_instant()
 * gives them) at which tz's local time of day lies in minutes [from, to):
 * returns how many (0 to 2) were written. */
int wl_tz_day_spans(const char *tz, const struct wl_local *day,
		    int64_t day_start, int64_t day_end, int from, int to,
		    struct wl_span span[2]);

/* ------------------------------------------------------------------ */
/* JSON helpers (json.c).  Getters return 1 found, 0 absent or null,
 * -1 present with the wrong type. */

int wl_json_get_string(const cJSON *, const char *, const char **);
int wl_json_get_bool(const cJSON *, const char *, int *);
int wl_json_get_int(const cJSON *, const char *, long long *);
int wl_json_get_object(const cJSON *, const char *, const cJSON **);
int wl_json_get_array(const cJSON *, const char *, const cJSON **);
/* Add helpers that tolerate allocation failure at the root's free. */
cJSON *wl_json_add_str(cJSON *, const char *, const char *); /* NULL: null */
cJSON *wl_json_drop(cJSON *); /* deletes it; NULL */
cJSON *wl_json_int(long long);
cJSON *wl_json_add_int(cJSON *, const char *, long long);
cJSON *wl_json_add_bool(cJSON *, const char *, int);
int wl_json_exact_numbers(cJSON *);
int wl_json_fill(cJSON *to, const cJSON *from);
cJSON *wl_json_add_ts(cJSON *, const char *, int64_t ms); /* <0: null */
/* Valid UTF-8 without NUL? */
int wl_utf8_valid(const char *, size_t);
int wl_json_strict(const char *, size_t);
size_t wl_utf8_len(const char *); /* code points */
size_t wl_utf8_prefix(const char *, size_t max);
void wl_utf8_trim(char *);
int wl_utf8_blank(const char *); /* white space or drawn as nothing */
/* Parse text that must be a JSON object; NULL when it is not. */
cJSON *wl_json_parse_object(const char *, size_t);
/* Strings array -> cJSON array. */
cJSON *wl_json_str_array(char *const *, size_t);

/* ------------------------------------------------------------------ */
/* Database (sql.c, stmt.c). */

enum wl_stmt {
	STMT_KEY_BY_DIGEST,
	STMT_PING,
	STMT_MIGRATION_LIST,
	STMT_MIGRATION_ADD,
	STMT_TENANT_INSERT,
	STMT_TENANT_GET,
	STMT_TENANT_UPDATE,
	STMT_COUNTER_INSERT,
	STMT_KEY_INSERT,
	STMT_KEY_REVOKE,
	STMT_KEY_BUSINESS_OWNED,
	STMT_KEY_QUEUE_OWNED,
	STMT_KEY_LIST,
	STMT_KEY_COUNT_ACTIVE,
	STMT_KEY_LOCK,
	STMT_BUSINESS_INSERT,
	STMT_SERVICE_INSERT,
	STMT_FIELD_INSERT,
	STMT_QUEUE_INSERT,
	STMT_QUEUE_SERVICE_INSERT,
	STMT_QUEUE_FIELD_INSERT,
	STMT_BUSINESS_PAGE,
	STMT_BUSINESS_GET,
	STMT_BUSINESS_SERVICES,
	STMT_BUSINESS_FIELDS,
	STMT_QUEUE_PAGE,
	STMT_QUEUE_GET,
	STMT_QUEUE_SERVICES,
	STMT_QUEUE_FIELDS,
	STMT_LINE_FIELDS,
	STMT_QUEUE_STATS,
	STMT_SEQ_RESERVE,
	STMT_EVENT_INSERT,
	STMT_IDEM_GET,
	STMT_IDEM_INSERT,
	STMT_IDEM_CLAIM,
	STMT_IDEM_CLAIM_WAIT,
	STMT_IDEM_MARK,
	STMT_IDEM_MARK_GET,
	STMT_IDEM_ANSWER,
	STMT_IDEM_ANSWER_PATCHED,
	STMT_IDEM_PATCH_GET,
	STMT_USAGE_BUMP,
	STMT_USAGE_CHECK,
	STMT_ENTRY_GET,
	STMT_ENTRY_GET_COUNTED,
	STMT_ENTRY_LIST,
	STMT_ENTRY_LIST_COUNTED,
	STMT_ENTRY_LIST_EXTREF,
	STMT_ENTRY_LIST_EXTREF_COUNTED,
	STMT_ENTRY_LOCK,
	STMT_ENTRY_INSERT,
	STMT_ENTRY_NUMBERS,
	STMT_TICKET_ISSUE,
	STMT_LINE_MOVE,
	STMT_ENTRY_SET_STATUS,
	STMT_ENTRY_EDIT,
	STMT_ENTRY_RESCHEDULE,
	STMT_HISTORY_INSERT,
	STMT_QUEUE_HAS_SERVICE,
	STMT_QUEUE_BOOKING_LOCK,
	STMT_ANALYTICS_ENTRIES,
	STMT_ANALYTICS_SERVICE,
	STMT_EVENT_SCAN,
	STMT_COUNTER_GET,
	STMT_PURGE_EVENT_TENANTS,
	STMT_PURGE_FIRST_KEPT,
	STMT_PURGE_MARK,
	STMT_PURGE_FANOUT,
	STMT_PURGE_EVENTS,
	STMT_PURGE_IDEMPOTENCY,
	STMT_COUNTER_LOCK,
	STMT_SUB_COUNT,
	STMT_SUB_INSERT,
	STMT_SUB_GET,
	STMT_SUB_PAGE,
	STMT_SUB_DELETE,
	STMT_SUB_DELETE_DELIVERIES,
	STMT_SUB_RESUME,
	STMT_SUB_REBIND,
	STMT_SUB_ROTATE,
	STMT_SUB_SET_STATUS,
	STMT_DELIVERY_FAIL_PENDING,
	STMT_DELIVERY_PAGE,
	STMT_DELIVERY_PAGE_STATUS,
	STMT_DELIVERY_GET,
	STMT_DELIVERY_RETRY,
	STMT_FANOUT_SUBS,
	STMT_RANGE_SUB,
	STMT_FANOUT_EVENTS,
	STMT_FANOUT_ADVANCE,
	STMT_RANGE_INSERT,
	STMT_RANGE_TAKE,
	STMT_RANGE_TAKEN,
	STMT_RANGE_LEFT,
	STMT_RANGE_DONE,
	STMT_RANGE_GIVE_BACK,
	STMT_CLAIM,
	STMT_CLAIMED,
	STMT_RECORD,
	STMT_RANGES_HELD,
	STMT_RECORD_NEW,
	STMT_RELEASE,
	STMT_DELIVERY_FAIL,
	STMT_SUB_DISABLE,
	STMT_DELIVERY_FAIL_DISABLED,
	STMT_PURGE_DELIVERIES,
	STMT_BOOKING_INTERVALS,
	STMT_TXN_START,
	STMT_TXN_COMMIT,
	STMT_LAST_ID,
	STMT__MAX
};

struct wl_db;

enum wl_sql_type { WL_SQL_NULL, WL_SQL_STR, WL_SQL_INT };

struct wl_sqlval {
	enum wl_sql_type type;
	const char *s;
	size_t len;
	long long i;
};

static inline struct wl_sqlval
wl_sql_str(const char *s)
{
	struct wl_sqlval v = {s ? WL_SQL_STR : WL_SQL_NULL, s,
			      s ? strlen(s) : 0, 0};
	return v;
}

#define SQL_STR(x) wl_sql_str(x) /* NULL binds SQL NULL */
#define SQL_STRN(x, n) ((struct wl_sqlval){WL_SQL_STR, (x), (n), 0})
#define SQL_INT(x) ((struct wl_sqlval){WL_SQL_INT, NULL, 0, (long long)(x)})
#define SQL_NULL ((struct wl_sqlval){WL_SQL_NULL, NULL, 0, 0})
#define SQL_ARGS(...)                                                     \
	(const struct wl_sqlval[]){__VA_ARGS__},                           \
	    sizeof((const struct wl_sqlval[]){__VA_ARGS__}) /                  \
		sizeof(struct wl_sqlval)
#define SQL_NOARGS NULL, 0

/* Rows of a result, every cell as text; NULL cell = SQL NULL. */
struct wl_rows {
	size_t nrows;
	size_t ncols;
	char **cell;
	unsigned long *len;
	unsigned shared; /* holders besides the first: see wl_rows_share() */
};

const char *wl_rows_str(const struct wl_rows *, size_t r, size_t c);
long long wl_rows_int(const struct wl_rows *, size_t r, size_t c);
void wl_rows_free(struct wl_rows *);
struct wl_rows *wl_rows_share(struct wl_rows *);

struct wl_db *wl_db_new(const struct wl_config *, char *err, size_t errsz);
void wl_db_free(struct wl_db *);
/*
 * Run a prepared statement.  rows (may be NULL) receives the result set,
 * affected (may be NULL) the affected row count.  Outside a transaction a
 * lost connection is reconnected and the statement tried once more.
 * Returns WL_OK, WL_ERR_DB_GONE, WL_ERR_DB_RETRY, WL_ERR_CONFLICT
 * (duplicate key) or WL_ERR_DB.
 */
int wl_sql_exec(struct wl_db *, enum wl_stmt, const struct wl_sqlval *,
		size_t nargs, struct wl_rows **rows, unsigned long long *affected);
/* Like wl_sql_exec for statements without a result. */
int wl_sql_do(struct wl_db *, enum wl_stmt, const struct wl_sqlval *,
	      size_t nargs);
/*
 * In a transaction: queue a write whose outcome is not needed at once; it
 * is sent with the next statement that needs an answer (or the commit) in
 * one round trip, and that call reports its failure.
 */
int wl_sql_later(struct wl_db *, enum wl_stmt, const struct wl_sqlval *,
		 size_t nargs);
/*
 * In a transaction: queue read id (no parameters), last before the
 * commit; its result set goes to the server with the commit and comes
 * back in *rows when the commit succeeds (NULL otherwise).
 */
int wl_sql_at_commit(struct wl_db *, enum wl_stmt, struct wl_rows **rows);
/* Run a statement that sets LAST_INSERT_ID() and give that value. */
int wl_sql_do_id(struct wl_db *, enum wl_stmt, const struct wl_sqlval *,
		 size_t nargs, unsigned long long *value);
/* Plain SQL text without parameters (migrations, session set-up). */
int wl_sql_raw(struct wl_db *, const char *sql);
int wl_db_begin(struct wl_db *);
int wl_db_commit(struct wl_db *);
int wl_db_rollback(struct wl_db *);
/* Run fn inside a transaction; retried whole with jittered backoff while
 * it or the commit fails with WL_ERR_DB_RETRY.  fn returning non-zero
 * rolls back and that value is returned. */
int wl_db_txn(struct wl_db *, int (*fn)(struct wl_db *, void *), void *arg);
const char *wl_db_error(struct wl_db *);
unsigned wl_db_errno(struct wl_db *); /* server error number of the last failure */
/* How many connections this handle has lost so far. */
unsigned long wl_db_lost(const struct wl_db *);
void wl_db_unhurried(struct wl_db *);
extern const char *const wl_stmt_sql[STMT__MAX];
/* The rows of one STMT_RECORD_NEW, and the columns of each (NEW_ROWS and
 * NEW_ROW in stmt.c). */
#define WL_RECORD_NEW_ROWS 32
#define WL_RECORD_NEW_COLS 14

/* ------------------------------------------------------------------ */
/* Scopes, error codes, tenants, keys (auth.c, error.c). */

enum wl_scope {
	WL_SCOPE_WAITLIST_READ,
	WL_SCOPE_WAITLIST_WRITE,
	WL_SCOPE_GUEST_READ,
	WL_SCOPE_EVENTS_READ,
	WL_SCOPE_WEBHOOKS_READ,
	WL_SCOPE_WEBHOOKS_WRITE,
	WL_SCOPE_ANALYTICS_READ,
	WL_SCOPE__MAX,
	WL_SCOPE_NONE = WL_SCOPE__MAX
};
extern const char *const wl_scope_names[WL_SCOPE__MAX];
/* Parse "a,b,c" into a bit mask; -1 on an unknown scope. */
int wl_scopes_parse(const char *, unsigned *mask);

enum wl_code {
	WL_C_INVALID_REQUEST,
	WL_C_INVALID_JSON,
	WL_C_VALIDATION_FAILED,
	WL_C_INVALID_CURSOR,
	WL_C_CURSOR_EXPIRED,
	WL_C_IDEMPOTENCY_KEY_REQUIRED,
	WL_C_INVALID_TRANSITION,
	WL_C_DESTINATION_NOT_ALLOWED,
	WL_C_PAYLOAD_TOO_LARGE,
	WL_C_MISSING_API_KEY,
	WL_C_INVALID_API_KEY,
	WL_C_EXPIRED_API_KEY,
	WL_C_REVOKED_API_KEY,
	WL_C_SUBSCRIPTION_REQUIRED,
	WL_C_UPGRADE_REQUIRED,
	WL_C_BILLING_UNAVAILABLE,
	WL_C_GUEST_ALLOWANCE_EXCEEDED,
	WL_C_INSUFFICIENT_SCOPE,
	WL_C_RESOURCE_FORBIDDEN,
	WL_C_LAUNCH_DISABLED,
	WL_C_DISABLED_ACCOUNT,
	WL_C_DEMO_ACCOUNT,
	WL_C_EMAIL_VERIFICATION_REQUIRED,
	WL_C_MANAGEMENT_FORBIDDEN,
	WL_C_NOT_FOUND,
	WL_C_METHOD_NOT_ALLOWED,
	WL_C_VERSION_CONFLICT,
	WL_C_STATUS_CONFLICT,
	WL_C_BOOKING_UNAVAILABLE,
	WL_C_QUEUE_UNAVAILABLE,
	WL_C_IDEMPOTENCY_CONFLICT,
	WL_C_IDEMPOTENCY_IN_PROGRESS,
	WL_C_LIMIT_REACHED,
	WL_C_RATE_LIMITED,
	WL_C_INTERNAL_ERROR,
	WL_C_UNAVAILABLE,
	WL_C__MAX
};
const char *wl_code_name(enum wl_code);
int wl_code_status(enum wl_code);
/* The index of s among the n names of a table below, or -1. */
int wl_name_index(const char *const *names, int n, const char *s);

enum wl_limit {
	WL_LIMIT_READS,
	WL_LIMIT_WRITES,
	WL_LIMIT_TENANT_READS,
	WL_LIMIT_TENANT_WRITES,
	WL_LIMIT_ACTIVE_KEYS,
	WL_LIMIT_WEBHOOK_SUBS,
	WL_LIMIT_DEFAULT_EXPIRY,
	WL_LIMIT_MAX_EXPIRY,
	WL_LIMIT__MAX
};
extern const char *const wl_limit_names[WL_LIMIT__MAX];
extern const long wl_limit_defaults[WL_LIMIT__MAX];

enum wl_state { WL_STATE_ACTIVE, WL_STATE_DISABLED, WL_STATE_DEMO,
		WL_STATE__MAX };
extern const char *const wl_state_names[WL_STATE__MAX];

struct wl_tenant {
	char id[WL_ID_MAX];
	char *name;
	char *plan;
	int public_api;
	int webhooks;
	int zapier;
	enum wl_state state;
	int email_verified;
	int billing;
	long long guest_allowance;
	long long limits[WL_LIMIT__MAX];
};

/* Why the API is unavailable to this tenant; WL_C__MAX when it is. */
enum wl_code wl_tenant_unavailable(const struct wl_tenant *);

enum wl_itype { WL_ITYPE_API, WL_ITYPE_ZAPIER, WL_ITYPE__MAX };
extern const char *const wl_itype_names[WL_ITYPE__MAX];

struct wl_key {
	char id[WL_ID_MAX];
	unsigned scopes;
	enum wl_itype itype;
	char **businesses; /* restrictions; empty: all */
	size_t nbusinesses;
	char **queues;
	size_t nqueues;
	char *biz_json;	    /* the same restrictions as JSON arrays, */
	char *queue_json;   /* bound into visibility filters */
	int64_t expires_at; /* ms; 0: never */
	struct wl_tenant tenant;
};

void wl_key_clear(struct wl_key *);
/* Look up the bearer key.  Returns 1 and fills key, or 0 with *code set to
 * the 401 code, or <0 on a database error (enum wl_err negated). */
int wl_key_authenticate(struct wl_app *, const char *authorization,
			struct wl_key *key, enum wl_code *code);

/* keycache.c: a worker's recent lookups of keys and lines (see there). */
struct wl_keycache;
struct wl_keycache *wl_keycache_new(const struct wl_config *);
void wl_keycache_free(struct wl_keycache *);
/* wl_sql_exec() of a lookup, through the cache; the caller frees *rows. */
int wl_cached_exec(struct wl_keycache *, struct wl_db *, enum wl_stmt,
		   const struct wl_sqlval *, size_t nargs, int keep_empty,
		   struct wl_rows **rows);
int wl_keys_changed(const struct wl_config *);
int wl_key_allows_business(const struct wl_key *, const char *business_id);
int wl_key_allows_queue(const struct wl_key *, const char *business_id,
			const char *queue_id);
/* Generate a new plaintext key "wl_..." and its digest (hex). */
int wl_key_generate(char *plain, size_t plainsz, char digest_hex[65]);
/* Split "a,b" into a NULL-free array; returns count or -1. */
int wl_split_list(const char *, char ***out, size_t *n);
void wl_strv_free(char **, size_t);
/* JSON array text -> string vector. */
int wl_strv_from_json(const char *, char ***, size_t *);

/* ------------------------------------------------------------------ */
/* The request pipeline (router.c, response.c). */

#define WL_DEPARTED_SLOTS 64

struct wl_app {
	const struct wl_config *cfg;
	struct wl_db *db;
	unsigned char secret[WL_SECRET_LEN];
	struct wl_ratelimit *rl; /* shared by the node's workers; may be NULL */
	struct wl_keycache *keys; /* this worker's lookups; may be NULL */
	char *openapi; /* the OpenAPI document, loaded once */
	size_t openapi_len;
	/* Whether the last walk-in read for a tenant (by wl_fnv1a of its
	 * id) was in a line left out of turn (entry.c). */
	unsigned char departed[WL_DEPARTED_SLOTS];
};

enum wl_method { WL_GET, WL_POST, WL_PATCH, WL_DELETE, WL_METHOD__MAX };
extern const char *const wl_method_names[WL_METHOD__MAX];

#define WL_MAX_PARAMS 3

struct wl_ctx {
	struct wl_app *app;
	const struct wl_http_request *http;
	struct wl_http_response *resp;
	int route;	   /* enum wl_route */
	int authenticated; /* key is filled */
	struct wl_key key;
	const char *param[WL_MAX_PARAMS]; /* decoded path parameters */
	const char *tenant_id_for_log;
	/*
	 * Set by a mutation for wl_idempotent(): its 4xx answer should the
	 * server refuse the transaction (a check in SQL that SIGNALs,
	 * WL_ERR_REFUSED), and whether its answer awaits numbers that the
	 * transaction leaves in @wl_patch (see idempotency.c).
	 */
	enum wl_code refusal;
	char refusal_msg[160];
	int patched;
};

typedef int (*wl_handler)(struct wl_ctx *);

/* Reply helpers.  Each returns WL_OK so handlers can `return reply(...)`. */
int wl_reply_json(struct wl_ctx *, int status, cJSON *root); /* frees root */
int wl_reply_error(struct wl_ctx *, enum wl_code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int wl_reply_empty(struct wl_ctx *, int status);
void wl_resp_clear_body(struct wl_http_response *);
int wl_resp_header(struct wl_http_response *, const char *name,
		   const char *value);

/* Query string: find a parameter (decoded into out).  Returns 1 found,
 * 0 absent, -1 malformed or too long. */
int wl_query_get(const char *query, const char *name, char *out,
		 size_t outsz);

/* Pagination (cursor.c). */
#define WL_CURSOR_BUF 1025
int wl_cursor_encode(const struct wl_ctx *, const char *filters,
		     const char *position, char *out);
int wl_cursor_decode(const struct wl_ctx *, const char *filters,
		     const char *cursor, char *pos, size_t possz);
int wl_page_params(struct wl_ctx *, const char *filters, int *limit,
		   char *pos, size_t possz);
int wl_page_next(const struct wl_ctx *, cJSON *root, const char *filters,
		 const char *position);
typedef cJSON *(*wl_page_item)(const struct wl_ctx *, const struct wl_rows *,
			       size_t r, void *arg);
int wl_page_reply(struct wl_ctx *, const struct wl_rows *, int limit,
		  const char *name, const char *filters, int ts_col,
		  int id_col, wl_page_item, void *arg);
void wl_page_after(char *pos, long long *ts, const char **id);

/* Handlers. */
int wl_h_me(struct wl_ctx *);
int wl_h_health(struct wl_ctx *);
int wl_h_openapi(struct wl_ctx *);

/* Tenants (tenant.c). */
int wl_tenant_from_row(const struct wl_rows *, size_t r, size_t c0,
		       struct wl_tenant *);
void wl_tenant_clear(struct wl_tenant *);
cJSON *wl_limits_json(const struct wl_tenant *);
int wl_limits_check(const long long *before, const long long *limits,
		    char *err, size_t errsz);

/* Keys and tenant settings (admin.c), shared with seeding. */
int wl_key_insert(struct wl_db *, const struct wl_tenant *,
		  const char *scopes_csv, const char *biz_json,
		  const char *queue_json, long long days, const char *type,
		  char *id, char *plain, size_t plainsz, char *err,
		  size_t errsz);
int wl_tenant_apply(struct wl_tenant *, const char *name, const char *value,
		    char *err, size_t errsz);
int wl_tenant_store(struct wl_db *, const struct wl_tenant *);

/* Businesses and lines (business.c, queue.c). */
struct wl_queue {
	char id[WL_ID_MAX];
	char business_id[WL_ID_MAX];
	char tz[72];		/* resolved: own, else business's, else UTC */
	char *name;
	cJSON *working_hours;
	cJSON *booking_hours;
	int walk_ins_enabled;
	int walk_ins_paused;
	int bookings_enabled;
	int bookings_paused;
	int slot_minutes;
	int capacity;
	int service_required;
};

cJSON *wl_service_json(const struct wl_rows *, size_t r, size_t c0);
cJSON *wl_field_json(const struct wl_rows *, size_t r, size_t c0);
void wl_attach_children(cJSON *, const char *name, const struct wl_rows *,
			const char *owner,
			cJSON *(*make)(const struct wl_rows *, size_t, size_t));
char *wl_rows_ids_json(const struct wl_rows *, size_t n, size_t c);
int wl_business_find(struct wl_ctx *, const char *id, struct wl_rows **);
/* Id columns compare PAD SPACE ("x " equals "x"), so a client's id with a
 * trailing space, or an empty one, must match nothing: 1 when usable. */
static inline int
wl_id_usable(const char *id)
{
	size_t n = id ? strlen(id) : 0;

	return n > 0 && id[n - 1] != ' ';
}
int wl_business_id_valid(const char *);
/* Bytes of a business or line id parameter: 160 characters of up to 4
 * bytes each, and the terminator. */
#define WL_ID_PARAM_BYTES (4 * 160 + 1)
int wl_queue_load(struct wl_ctx *, const char *id, struct wl_queue *);
int wl_queue_find(struct wl_ctx *, const char *id, char *business);
void wl_queue_clear(struct wl_queue *);
int wl_business_day(const char *tz, int64_t now, int64_t *start,
		    int64_t *end, struct wl_local *day);
int wl_hours_span(const cJSON *hours, int wday, int *from, int *to);
int wl_queue_open_now(const struct wl_queue *, int64_t now);
int wl_h_business_list(struct wl_ctx *);
int wl_h_business_get(struct wl_ctx *);
int wl_h_queue_list(struct wl_ctx *);
int wl_h_queue_get(struct wl_ctx *);

/* Entries (entry.c, entry_write.c, booking.c). */
enum wl_status {
	WL_ST_WAITING,
	WL_ST_READY,
	WL_ST_CONFIRMED,
	WL_ST_IN_SERVICE,
	WL_ST_COMPLETED,
	WL_ST_CANCELLED,
	WL_ST_NO_SHOW,
	WL_ST__MAX
};
extern const char *const wl_status_names[WL_ST__MAX];
int wl_status_parse(const char *);
int wl_status_allowed(enum wl_status from, enum wl_status to);
int wl_status_active(enum wl_status);
cJSON *wl_entry_json(const struct wl_ctx *, const struct wl_rows *, size_t r);
int wl_entry_fetch(struct wl_ctx *, const char *id, struct wl_rows **);
int wl_entry_reply(struct wl_ctx *, const char *id, int status);
int wl_entry_reply_row(struct wl_ctx *, const struct wl_rows *, int status);
int wl_h_entry_get(struct wl_ctx *);
int wl_h_entry_list(struct wl_ctx *);
int wl_h_entry_create(struct wl_ctx *);
int wl_h_entry_edit(struct wl_ctx *);
int wl_h_entry_status(struct wl_ctx *);
int wl_h_booking_reschedule(struct wl_ctx *);
int wl_h_booking_cancel(struct wl_ctx *);
int wl_h_queue_availability(struct wl_ctx *);
int wl_h_analytics_summary(struct wl_ctx *);
int wl_entry_lock(struct wl_ctx *, const char *id, struct wl_rows **);
int wl_entry_change_status(struct wl_ctx *, const struct wl_rows *locked,
			   int expected_status, long long expected_version,
			   enum wl_status to);
/* The booking window of the business day containing an instant. */
struct wl_booking_window {
	int64_t now;
	int64_t day_start, day_end; /* the local business day */
	int64_t open, close;	    /* bookingHours of that day */
	/* The same in local time (open is the grid's origin): one span,
	 * or two around a repeated hour. */
	struct wl_span span[2];
	int nspans;
	struct wl_local day;
};
int wl_booking_window(const struct wl_queue *, int64_t now,
		      struct wl_booking_window *);
int wl_booking_slot_ok(const struct wl_queue *,
		       const struct wl_booking_window *, int64_t at,
		       long long minutes);
int wl_booking_within(const struct wl_booking_window *, int64_t at,
		      int64_t end);
int wl_booking_place(struct wl_ctx *, const struct wl_queue *, int64_t at,
		     long long minutes, const char *exclude, int64_t *end);
int wl_booking_capacity(struct wl_ctx *, const struct wl_queue *,
			int64_t at, int64_t end, const char *exclude);

/* Request bodies and guest fields (guest.c). */
cJSON *wl_body_json(struct wl_ctx *);
int wl_body_only(struct wl_ctx *, const cJSON *, const char *const *allowed);
int wl_field_string(struct wl_ctx *, const cJSON *, const char *name,
		    size_t min, size_t max, int multiline, const char **out);
int wl_field_name(struct wl_ctx *, const cJSON *, const char **out);
int wl_field_phone(struct wl_ctx *, const cJSON *, const char **out);
int wl_field_int(struct wl_ctx *, const cJSON *, const char *name,
		 long long min, long long max, long long *out);
int wl_field_consent(struct wl_ctx *, const cJSON *, cJSON **out);
int wl_field_version(struct wl_ctx *, const cJSON *, long long *version);
int wl_queue_fields(struct wl_ctx *, const char *queue_id, struct wl_rows **);
int wl_custom_data_merge(struct wl_ctx *, const char *queue_id, cJSON *data,
			 const cJSON *patch);
int wl_service_check(struct wl_ctx *, const char *queue_id,
		     const char *service_id, long long *minutes);

/* Events and the outbox (outbox.c). */
enum wl_event_type {
	WL_EV_ENTRY_CREATED,
	WL_EV_ENTRY_UPDATED,
	WL_EV_ENTRY_STATUS_CHANGED,
	WL_EV_BOOKING_CREATED,
	WL_EV_BOOKING_RESCHEDULED,
	WL_EV_BOOKING_CANCELLED,
	WL_EV__MAX
};
extern const char *const wl_event_type_names[WL_EV__MAX];

#define WL_EVENTS_MAX 4

/* The events one change emits, written together by wl_outbox_write(). */
struct wl_events {
	size_t n;
	enum wl_event_type type[WL_EVENTS_MAX];
	cJSON *data[WL_EVENTS_MAX];
	int err; /* an event that could not be added: the write fails */
};

int wl_events_add(struct wl_events *, enum wl_event_type, cJSON *data);
void wl_events_clear(struct wl_events *);
int wl_outbox_write(struct wl_db *, struct wl_events *, const char *tenant,
		    const char *business, const char *queue,
		    const char *resource, long long version, int64_t now);

/* Idempotent mutations (idempotency.c). */
int wl_idempotent(struct wl_ctx *, wl_handler);

/* The event feed and retention (events.c). */
#define WL_EVENT_RETENTION_MS (7LL * 86400 * 1000)
#define WL_IDEMPOTENCY_KEEP_MS (24LL * 3600 * 1000)
int wl_h_events(struct wl_ctx *);
/* What a purge deleted. */
struct wl_purged {
	long long events, idempotency, deliveries;
};
int wl_purge(struct wl_db *, int64_t now, struct wl_purged *);

/* Webhooks: secrets and signatures (signing.c), destinations
 * (netpolicy.c), the subscription API (webhook.c). */
#define WL_SEALED_MAX 256
int wl_whsec_new(char *out);
char *wl_seal(const unsigned char *server, const void *plain, size_t n);
char *wl_unseal(const unsigned char *server, const char *sealed, size_t *n);
int wl_secret_seal(const unsigned char *server, const char *plain,
		   char *out);
int wl_secret_open(const unsigned char *server, const char *sealed,
		   char *plain);
int wl_webhook_sign(const char *secret, const char *id, long long ts,
		    const char *body, size_t len, char *out);
int wl_host_listed(const char *list, const char *host);
int wl_host_list_check(const char *list, char *bad, size_t badsz);
int wl_addr_private(const char *ip);
int wl_dest_check(const struct wl_config *, enum wl_itype, const char *url,
		  char *host, size_t hostsz, char *why, size_t whysz);
/* deliver_record.c, for deliver.c */
int wl_ranges_add(struct wl_ranges *, const char *sub, int64_t first,
		  unsigned left);
int wl_deliver_fail_unsent(struct wl_app *, const char *owner,
			   struct wl_ranges *, const struct wl_send *,
			   size_t n);
int wl_h_sub_create(struct wl_ctx *);
int wl_h_sub_list(struct wl_ctx *);
int wl_h_sub_get(struct wl_ctx *);
int wl_h_sub_delete(struct wl_ctx *);
int wl_h_sub_resume(struct wl_ctx *);
int wl_h_sub_rotate(struct wl_ctx *);
int wl_h_delivery_list(struct wl_ctx *);
int wl_h_delivery_retry(struct wl_ctx *);

/* Opening hours (hours.c). */
extern const char *const wl_day_names[7]; /* indexed by tm_wday */
cJSON *wl_hours_normalize(const cJSON *in, const cJSON *base,
			  const char *what, char *err, size_t errsz);

#endif
