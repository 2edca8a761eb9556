/*
 * libwaitlist: the public interface used by the FastCGI workers, the
 * webhook deliverer and waitlistctl.  Everything the service knows lives
 * behind this header; callers only move bytes in and out.
 */
#ifndef WAITLIST_H
#define WAITLIST_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define WL_EXPORT __attribute__((visibility("default")))

#define WL_BASE_PATH "/v1/external"
#define WL_BODY_MAX (64 * 1024) /* request bodies above this are refused */

enum wl_err {
	WL_OK = 0,
	WL_ERR_NOMEM,
	WL_ERR_CONFIG,
	WL_ERR_DB,	    /* database error that is not worth retrying */
	WL_ERR_DB_GONE,	    /* connection lost: reconnect, answer 503 */
	WL_ERR_DB_RETRY,    /* deadlock or certification failure: retry */
	WL_ERR_BUSY,	    /* lock wait timeout */
	WL_ERR_INVALID,	    /* caller input is invalid */
	WL_ERR_NOTFOUND,
	WL_ERR_CONFLICT,
	WL_ERR_LIMIT,
	WL_ERR_IO,
	WL_ERR_CRYPTO,
	WL_ERR_REFUSED,	    /* a check in SQL refused the transaction */
	WL_ERR__MAX
};

WL_EXPORT const char *wl_strerror(enum wl_err);

/*
 * Configuration: one INI-style file.  Every value has a default; unknown
 * keys and bad values are refused with a message naming the key.
 */
struct wl_config {
	/* [database] */
	char *db_host;
	unsigned db_port;
	char *db_socket;
	char *db_user;
	char *db_password;
	char *db_name;
	/* [server] */
	unsigned workers;
	char *fcgi_socket;
	unsigned max_requests;	/* recycle a worker after this many */
	unsigned cluster_nodes;	/* nodes sharing the rate limits */
	unsigned test_clock;	/* honour X-Test-Now (test stacks only) */
	unsigned ratelimit_slots;
	unsigned key_cache_seconds; /* 0: look every key and line up */
	char *secret_key_file;
	char *migrations_dir;
	char *openapi_file;
	char *log_level;	/* debug, info, warn, error */
	/* [webhooks] */
	char *allowed_hosts;	/* comma-separated; empty: any public host */
	char *insecure_hosts;	/* hosts allowed over plain http/private addr */
	char *zapier_hosts;
	unsigned retry_base_seconds;
	unsigned retry_cap_seconds;
	unsigned max_attempts;
	unsigned max_age_seconds;
	unsigned timeout_seconds;
	unsigned deliverer_concurrency;
	unsigned deliverer_per_endpoint;
	unsigned deliverer_poll_ms;
};

/*
 * Load the configuration at path (NULL: $WAITLIST_CONFIG, else the
 * default path).  Returns NULL and writes a message naming the offending
 * key into err on failure.  Free with wl_config_free().
 */
WL_EXPORT struct wl_config *wl_config_load(const char *path, char *err,
					   size_t errsz);
WL_EXPORT struct wl_config *wl_config_parse(const char *text, char *err,
					    size_t errsz);
WL_EXPORT void wl_config_free(struct wl_config *);
WL_EXPORT const char *wl_config_default_path(void);

/* Logging: one JSON object per line on stderr. */
enum wl_log_level { WL_LOG_DEBUG, WL_LOG_INFO, WL_LOG_WARN, WL_LOG_ERROR };
WL_EXPORT void wl_log_set_level(const char *level);
WL_EXPORT void wl_log_set_component(const char *name);
WL_EXPORT void wl_log(enum wl_log_level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A line {"msg": msg, "error": why}, with why escaped (it must hold no
 * secret or guest value). */
WL_EXPORT void wl_log_error(enum wl_log_level, const char *msg,
			     const char *why);

/*
 * The application: configuration, secret and one database connection.
 * One per process (each worker has its own).
 */
struct wl_app;

#define WL_APP_SECRET 0x1  /* needs the secret key file */
#define WL_APP_OPENAPI 0x2 /* needs the OpenAPI file */
#define WL_APP_SERVE (WL_APP_SECRET | WL_APP_OPENAPI)
#define WL_APP_KEYCACHE 0x4 /* caches key lookups (a FastCGI worker) */
WL_EXPORT struct wl_app *wl_app_new(const struct wl_config *, unsigned flags,
				    char *err, size_t errsz);
WL_EXPORT void wl_app_free(struct wl_app *);

/*
 * Per-minute rate limits shared by all workers of a node: the master
 * creates the table before forking (room for `slots` counters, NULL on
 * failure) and hands it to each worker's application.
 */
struct wl_ratelimit; /* opaque; lives in shared memory */
WL_EXPORT struct wl_ratelimit *wl_ratelimit_new(size_t slots);
WL_EXPORT void wl_ratelimit_free(struct wl_ratelimit *);
WL_EXPORT void wl_app_set_ratelimit(struct wl_app *, struct wl_ratelimit *);

/* An HTTP request as the web server hands it over. */
struct wl_http_request {
	const char *method;
	const char *path;	   /* raw request URI as sent (a query ends it) */
	const char *query;	   /* raw query string, "" when none */
	const char *authorization; /* may be NULL */
	const char *content_type;  /* may be NULL */
	const char *idempotency_key; /* may be NULL */
	const char *request_id;	   /* proposed by the proxy, may be NULL */
	const char *test_now;	   /* X-Test-Now, used with [server] test_clock */
	const char *body;
	size_t body_len;
	int body_too_large;	   /* the body exceeded WL_BODY_MAX: not read */
	int body_cut;		   /* less of it came than CONTENT_LENGTH said */
};

#define WL_MAX_HEADERS 12

struct wl_http_header {
	char *name;
	char *value;
};

struct wl_http_response {
	int status;
	size_t nheaders;
	struct wl_http_header headers[WL_MAX_HEADERS];
	char *body;		/* JSON text, or NULL for no body */
	size_t body_len;
	char request_id[64];
};

/*
 * Answer one request.  Always fills resp (errors become JSON error
 * bodies) and writes one log line.  Release resp with
 * wl_http_response_clear().
 */
WL_EXPORT void wl_handle(struct wl_app *, const struct wl_http_request *,
			 struct wl_http_response *);
WL_EXPORT void wl_http_response_clear(struct wl_http_response *);
WL_EXPORT const char *wl_http_reason(int status);

/*
 * The webhook deliverer's side of the library.  A deliverer leases new
 * events in ranges per subscription and due retries one by one (owner
 * token), sends them, and records each attempt; everything about policy
 * (what to retry, when, what pauses a subscription) is decided here.
 */
struct wl_send {
	char delivery_id[48];
	char subscription_id[48];
	char host[256];
	char *url;
	char *body;
	size_t body_len;
	char *headers[8];	/* "Name: value", NULL-terminated */
	int insecure_ok;	/* private and loopback addresses allowed */
	/* state carried to wl_deliver_record() */
	char *attempts;
	int attempt_count;
	int manual;
	int64_t created_at;
	int64_t resumes;	/* its subscription's count of resumes, as read */
	/* A first attempt, whose record does not exist yet: the range it
	 * was leased in (0: a retry of a recorded delivery), its event. */
	int64_t range_first;
	int64_t event_seq;
	char event_id[48];
	char event_type[64];
};

struct wl_send_result {
	int http_status;	/* 0: no HTTP response */
	int timed_out;
	long duration_ms;
	long retry_after;	/* seconds from a Retry-After header, -1: none */
	int64_t attempted_at;	/* ms */
};

/* A finished attempt, for wl_deliver_record(). */
struct wl_attempt {
	const struct wl_send *send;
	struct wl_send_result res;
};

/* The ranges of events a deliverer holds (one per wl_deliver_claim()
 * that leased some): how many of their sends are still to be recorded or
 * given back.  Claims and records may run on two threads at once.  Set
 * up with wl_ranges_init(), free with wl_ranges_free(). */
struct wl_range {
	char subscription_id[48];
	int64_t first_seq;
	unsigned left;
	int given_back;		/* one of its sends was given back unsent */
};
struct wl_ranges {
	pthread_mutex_t mu;
	struct wl_range *v;
	size_t n, cap;
};

WL_EXPORT void wl_deliver_owner(char out[48]);
/* Claim up to about max sends: due retries, ranges of new events, ranges
 * whose deliverer is gone; none for the subscriptions in held (ids
 * separated by commas, or NULL).  *n: the sends to make; *taken: the
 * deliveries claimed, those failed at once (access lost, destination
 * refused) included. */
WL_EXPORT int wl_deliver_claim(struct wl_app *, const char *owner,
			       struct wl_ranges *, unsigned max,
			       const char *held, struct wl_send **out,
			       size_t *n, unsigned long long *taken);
WL_EXPORT int wl_deliver_held(const char *held, const char *subscription_id);
WL_EXPORT int wl_deliver_record(struct wl_app *, const char *owner,
				struct wl_ranges *,
				const struct wl_attempt *, size_t n);
WL_EXPORT int wl_deliver_release(struct wl_app *, const char *owner,
				 struct wl_ranges *, const struct wl_send *);
WL_EXPORT void wl_ranges_init(struct wl_ranges *);
WL_EXPORT void wl_ranges_free(struct wl_ranges *);
WL_EXPORT void wl_sends_free(struct wl_send *, size_t n);
WL_EXPORT int wl_deliver_address_ok(const struct wl_send *, const char *ip);
WL_EXPORT long wl_retry_after_parse(const char *value, int64_t now_ms);
WL_EXPORT int64_t wl_backoff_ms(const struct wl_config *, int attempt,
				long retry_after, unsigned random);
WL_EXPORT int wl_app_db_ok(struct wl_app *);
WL_EXPORT int64_t wl_clock_ms(void);
/* A monotonic clock in milliseconds, for intervals. */
WL_EXPORT int64_t wl_mono_ms(void);

/* Administration, used by waitlistctl.  Each prints JSON on out. */
WL_EXPORT int wl_admin_schema_current(struct wl_app *, char *err,
				      size_t errsz);
WL_EXPORT int wl_admin_migrate(struct wl_app *, FILE *out, char *err,
			       size_t errsz);
WL_EXPORT int wl_admin_seed(struct wl_app *, const char *fixture_json,
			    FILE *out, char *err, size_t errsz);
struct wl_key_spec {
	const char *tenant_id;
	const char *scopes;	/* comma-separated */
	const char *businesses; /* comma-separated ids, may be NULL */
	const char *queues;	/* comma-separated ids, may be NULL */
	int expires_in_days;	/* <= 0: the tenant's default */
	const char *type;	/* api or zapier, NULL: api */
};
WL_EXPORT int wl_admin_key_create(struct wl_app *, const struct wl_key_spec *,
				  FILE *out, char *err, size_t errsz);
WL_EXPORT int wl_admin_key_revoke(struct wl_app *, const char *key_id,
				  FILE *out, char *err, size_t errsz);
WL_EXPORT int wl_admin_key_list(struct wl_app *, const char *tenant_id,
				FILE *out, char *err, size_t errsz);
/* settings: NULL-terminated list of "name=value" (see waitlistctl). */
WL_EXPORT int wl_admin_tenant_set(struct wl_app *, const char *tenant_id,
				  const char *const *settings, FILE *out,
				  char *err, size_t errsz);
WL_EXPORT int wl_admin_purge(struct wl_app *, FILE *out, char *err,
			     size_t errsz);

#endif
