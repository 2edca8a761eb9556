/*
 * The request pipeline: route table, then the checks every request passes
 * in order (route, key, eligibility, scope, body), then the handler, then
 * one log line.  Nothing here knows about FastCGI.
 */
#include "config.h"

#include <ctype.h>
#include <stdlib.h>
#include <strings.h>
#include <time.h>

#include "extern.h"

#define F_PUBLIC 0x1	 /* no key needed */
#define F_ANY_STATE 0x2	 /* answers whatever the tenant's eligibility */
#define F_MUTATION 0x4	 /* runs under an Idempotency-Key */
#define F_NO_BODY 0x8	 /* takes no body: empty, or {} at most */

enum wl_route {
	R_HEALTH,
	R_OPENAPI,
	R_ME,
	R_BUSINESS_LIST,
	R_BUSINESS_GET,
	R_QUEUE_LIST,
	R_QUEUE_GET,
	R_QUEUE_AVAILABILITY,
	R_ENTRY_CREATE,
	R_ENTRY_LIST,
	R_ENTRY_GET,
	R_ENTRY_EDIT,
	R_ENTRY_STATUS,
	R_BOOKING_RESCHEDULE,
	R_BOOKING_CANCEL,
	R_EVENTS,
	R_SUB_CREATE,
	R_SUB_LIST,
	R_SUB_GET,
	R_SUB_DELETE,
	R_SUB_RESUME,
	R_SUB_ROTATE,
	R_DELIVERY_LIST,
	R_DELIVERY_RETRY,
	R_ANALYTICS,
	R__MAX
};

/* A list's number is part of every cursor it has issued (cursor.c): a
 * new route goes last, or clients' stored cursors (an event feed's,
 * kept for days) would become invalid_cursor. */
_Static_assert(R_BUSINESS_LIST == 3 && R_QUEUE_LIST == 5 &&
		   R_ENTRY_LIST == 9 && R_EVENTS == 15 && R_SUB_LIST == 17 &&
		   R_DELIVERY_LIST == 22,
	       "the numbers of list routes are in issued cursors");

static const struct route {
	enum wl_method method;
	const char *pattern; /* "{}" matches one path segment */
	enum wl_scope scope; /* WL_SCOPE_NONE: no scope needed */
	unsigned flags;
	wl_handler handler;
} routes[R__MAX] = {
    [R_HEALTH] = {WL_GET, "/health", WL_SCOPE_NONE, F_PUBLIC, wl_h_health},
    [R_OPENAPI] = {WL_GET, "/openapi.json", WL_SCOPE_NONE, F_PUBLIC,
		   wl_h_openapi},
    [R_ME] = {WL_GET, "/me", WL_SCOPE_NONE, F_ANY_STATE, wl_h_me},
    [R_BUSINESS_LIST] = {WL_GET, "/waitlist/businesses",
			 WL_SCOPE_WAITLIST_READ, 0, wl_h_business_list},
    [R_BUSINESS_GET] = {WL_GET, "/waitlist/businesses/{}",
			WL_SCOPE_WAITLIST_READ, 0, wl_h_business_get},
    [R_QUEUE_LIST] = {WL_GET, "/waitlist/queues", WL_SCOPE_WAITLIST_READ, 0,
		      wl_h_queue_list},
    [R_QUEUE_GET] = {WL_GET, "/waitlist/queues/{}", WL_SCOPE_WAITLIST_READ,
		     0, wl_h_queue_get},
    [R_QUEUE_AVAILABILITY] = {WL_GET, "/waitlist/queues/{}/availability",
			      WL_SCOPE_WAITLIST_READ, 0,
			      wl_h_queue_availability},
    [R_ENTRY_CREATE] = {WL_POST, "/waitlist/entries", WL_SCOPE_WAITLIST_WRITE,
			F_MUTATION, wl_h_entry_create},
    [R_ENTRY_LIST] = {WL_GET, "/waitlist/entries", WL_SCOPE_WAITLIST_READ, 0,
		      wl_h_entry_list},
    [R_ENTRY_GET] = {WL_GET, "/waitlist/entries/{}", WL_SCOPE_WAITLIST_READ,
		     0, wl_h_entry_get},
    [R_ENTRY_EDIT] = {WL_PATCH, "/waitlist/entries/{}",
		      WL_SCOPE_WAITLIST_WRITE, F_MUTATION, wl_h_entry_edit},
    [R_ENTRY_STATUS] = {WL_PATCH, "/waitlist/entries/{}/status",
			WL_SCOPE_WAITLIST_WRITE, F_MUTATION,
			wl_h_entry_status},
    [R_BOOKING_RESCHEDULE] = {WL_POST, "/bookings/{}/reschedule",
			      WL_SCOPE_WAITLIST_WRITE, F_MUTATION,
			      wl_h_booking_reschedule},
    [R_BOOKING_CANCEL] = {WL_POST, "/bookings/{}/cancel",
			  WL_SCOPE_WAITLIST_WRITE, F_MUTATION,
			  wl_h_booking_cancel},
    [R_EVENTS] = {WL_GET, "/events", WL_SCOPE_EVENTS_READ, 0, wl_h_events},
    [R_SUB_CREATE] = {WL_POST, "/webhooks/subscriptions",
		      WL_SCOPE_WEBHOOKS_WRITE, F_MUTATION, wl_h_sub_create},
    [R_SUB_LIST] = {WL_GET, "/webhooks/subscriptions", WL_SCOPE_WEBHOOKS_READ,
		    0, wl_h_sub_list},
    [R_SUB_GET] = {WL_GET, "/webhooks/subscriptions/{}",
		   WL_SCOPE_WEBHOOKS_READ, 0, wl_h_sub_get},
    [R_SUB_DELETE] = {WL_DELETE, "/webhooks/subscriptions/{}",
		      WL_SCOPE_WEBHOOKS_WRITE, F_MUTATION | F_NO_BODY,
		      wl_h_sub_delete},
    [R_SUB_RESUME] = {WL_POST, "/webhooks/subscriptions/{}/resume",
		      WL_SCOPE_WEBHOOKS_WRITE, F_MUTATION | F_NO_BODY,
		      wl_h_sub_resume},
    [R_SUB_ROTATE] = {WL_POST, "/webhooks/subscriptions/{}/rotate-secret",
		      WL_SCOPE_WEBHOOKS_WRITE, F_MUTATION | F_NO_BODY,
		      wl_h_sub_rotate},
    [R_DELIVERY_LIST] = {WL_GET, "/webhooks/subscriptions/{}/deliveries",
			 WL_SCOPE_WEBHOOKS_READ, 0, wl_h_delivery_list},
    [R_DELIVERY_RETRY] = {WL_POST, "/webhooks/deliveries/{}/retry",
			  WL_SCOPE_WEBHOOKS_WRITE, F_MUTATION | F_NO_BODY,
			  wl_h_delivery_retry},
    [R_ANALYTICS] = {WL_GET, "/analytics/queues/{}/summary",
		     WL_SCOPE_ANALYTICS_READ, 0, wl_h_analytics_summary},
};

#define MAX_SEGMENTS 16

/* A request path split into percent-decoded segments. */
struct segments {
	size_t n;
	char *seg[MAX_SEGMENTS];
	char buf[2048];
};

static int
hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * Split a raw request URI (as the client sent it, before any decoding or
 * normalization; a query string ends it) on "/" and only then
 * percent-decode each segment, so an
 * encoded slash or a dot-segment can never reach another route or id.
 * A segment that decodes to a slash, a control character or invalid
 * UTF-8 makes the whole path unroutable.  Returns 0 or -1.
 */
static int
split_path(const char *path, struct segments *out)
{
	const char *p = path;
	size_t o = 0;
	int hi, lo;

	out->n = 0;
	if (*p++ != '/')
		return -1;
	for (;;) {
		char *start = out->buf + o;
		/* (A segment's terminator needs room too, an empty one's.) */
		if (out->n == MAX_SEGMENTS || o >= sizeof(out->buf))
			return -1;
		for (; *p && *p != '/' && *p != '?' && *p != '#'; p++) {
			int c = (unsigned char)*p;
			if (c == '%') {
				if ((hi = hexval(p[1])) < 0 ||
				    (lo = hexval(p[2])) < 0)
					return -1;
				c = hi * 16 + lo;
				p += 2;
			}
			if (c < 0x20 || c == 0x7f || c == '/' ||
			    o + 2 >= sizeof(out->buf))
				return -1;
			out->buf[o++] = (char)c;
		}
		out->buf[o++] = '\0';
		if (!wl_utf8_valid(start, strlen(start)) ||
		    strcmp(start, ".") == 0 || strcmp(start, "..") == 0)
			return -1;
		out->seg[out->n++] = start;
		if (*p != '/')
			return 0; /* end, or the query string */
		p++;
	}
}

/*
 * Match segments from index `from` against pattern ("{}" matches one
 * non-empty segment), pointing ctx's parameters at the matched segments.
 * Returns 1 on a match.
 */
static int
match(const char *pattern, const struct segments *sg, size_t from,
      struct wl_ctx *ctx)
{
	const char *p = pattern;
	size_t i = from, np = 0, n;

	while (*p == '/') {
		p++;
		n = strcspn(p, "/");
		if (i == sg->n)
			return 0;
		if (n == 2 && strncmp(p, "{}", 2) == 0) {
			size_t len = strlen(sg->seg[i]);
			/* The id columns compare PAD SPACE: "x " would find
			 * the id "x", so it names nothing. */
			if (len == 0 || sg->seg[i][len - 1] == ' ' ||
			    np == WL_MAX_PARAMS)
				return 0;
			ctx->param[np++] = sg->seg[i];
		} else if (strlen(sg->seg[i]) != n ||
			   strncmp(p, sg->seg[i], n) != 0)
			return 0;
		p += n;
		i++;
	}
	return *p == '\0' && i == sg->n;
}

static int
parse_method(const char *m)
{
	return wl_name_index(wl_method_names, WL_METHOD__MAX, m);
}

/*
 * Find the route.  Returns the route index, or -1 with *code set to 404
 * or 405 (and the Allow header added for 405).
 */
static int
find_route(struct wl_ctx *ctx, const struct segments *sg, enum wl_code *code)
{
	int method = parse_method(ctx->http->method), i, any = 0;
	char allow[64] = "";

	for (i = 0; i < R__MAX; i++) {
		if (!match(routes[i].pattern, sg, 2, ctx))
			continue;
		if ((int)routes[i].method == method)
			return i;
		any = 1;
		if (*allow)
			strcat(allow, ", ");
		strcat(allow, wl_method_names[routes[i].method]);
	}
	*code = WL_C_NOT_FOUND;
	if (any) {
		*code = WL_C_METHOD_NOT_ALLOWED;
		wl_resp_header(ctx->resp, "Allow", allow);
	}
	return -1;
}

static void
set_request_id(const struct wl_http_request *req,
	       struct wl_http_response *resp)
{
	const char *p = req->request_id;
	size_t n = p ? strlen(p) : 0, i;
	int ok = n > 0 && n < sizeof(resp->request_id);

	for (i = 0; ok && i < n; i++)
		if (!isalnum((unsigned char)p[i]) && p[i] != '-' && p[i] != '_')
			ok = 0;
	if (ok)
		memcpy(resp->request_id, p, n + 1);
	else if (wl_id_new("req_", resp->request_id) != WL_OK)
		snprintf(resp->request_id, sizeof(resp->request_id), "req_0");
}

static int
is_json_type(const char *ct)
{
	size_t n = strlen("application/json");

	return ct && strncasecmp(ct, "application/json", n) == 0 &&
	       (ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ');
}

/*
 * Count the request against the key's and the tenant's per-minute limits
 * (reads are GET, writes everything else), add the RateLimit-Policy and
 * RateLimit fields, and answer 429 when a limit is used up.  Returns 0
 * to go on, -1 after replying.
 */
static int
rate_limit(struct wl_ctx *ctx, const struct route *rt)
{
	const struct wl_tenant *t = &ctx->key.tenant;
	int write = rt->method != WL_GET;
	unsigned share = ctx->app->cfg->cluster_nodes;
	long long kl = t->limits[write ? WL_LIMIT_WRITES : WL_LIMIT_READS];
	long long tl = t->limits[write ? WL_LIMIT_TENANT_WRITES
				       : WL_LIMIT_TENANT_READS];
	struct wl_rl_result r;
	char v[160];

	if (ctx->app->rl == NULL)
		return 0;
	wl_ratelimit_take(ctx->app->rl, ctx->key.id, t->id,
			  write ? WL_RL_WRITE : WL_RL_READ, kl, tl, share,
			  wl_now_ms(), &r);
	snprintf(v, sizeof(v), "\"key\";q=%lld;w=60, \"tenant\";q=%lld;w=60",
		 kl, tl);
	wl_resp_header(ctx->resp, "RateLimit-Policy", v);
	if (r.limit >= 0) {
		snprintf(v, sizeof(v), "\"%s\";r=%lld;t=%d",
			 r.tenant_bound ? "tenant" : "key", r.remaining,
			 r.reset);
		wl_resp_header(ctx->resp, "RateLimit", v);
	}
	if (r.allowed)
		return 0;
	snprintf(v, sizeof(v), "%d", r.retry_after > 0 ? r.retry_after : 1);
	wl_resp_header(ctx->resp, "Retry-After", v);
	wl_reply_error(ctx, WL_C_RATE_LIMITED,
		       "%s %s limit of %lld per minute reached; retry in %s s",
		       r.tenant_bound ? "the account's" : "this key's",
		       write ? "write" : "read", r.limit, v);
	return -1;
}

/* A body sent to a route that takes none must be at most {}: a
 * malformed one is not ignored.  0 to go on, -1 after a 400 reply. */
static int
no_body(struct wl_ctx *ctx)
{
	static const char *const none[] = {NULL};
	cJSON *body;
	int rc;

	if (ctx->http->body_len == 0)
		return 0;
	if ((body = wl_body_json(ctx)) == NULL)
		return -1;
	rc = wl_body_only(ctx, body, none);
	cJSON_Delete(body);
	return rc;
}

/* The checks of an authenticated request, in order; 0 to go on, else the
 * reply has been made. */
static int
gate(struct wl_ctx *ctx, const struct route *rt)
{
	enum wl_code code;
	int rc;

	rc = wl_key_authenticate(ctx->app, ctx->http->authorization,
				 &ctx->key, &code);
	if (rc < 0)
		return -rc;
	if (rc == 0) {
		/* RFC 6750: the scheme the 401 asks for. */
		wl_resp_header(ctx->resp, "WWW-Authenticate", "Bearer");
		wl_reply_error(ctx, code, "%s",
			       code == WL_C_MISSING_API_KEY
				   ? "an Authorization: Bearer key is required"
			       : code == WL_C_EXPIRED_API_KEY
				   ? "the API key has expired"
			       : code == WL_C_REVOKED_API_KEY
				   ? "the API key has been revoked"
				   : "the API key is not valid");
		return -1;
	}
	ctx->authenticated = 1;
	if (rate_limit(ctx, rt) < 0)
		return -1;
	if (!(rt->flags & F_ANY_STATE) &&
	    (code = wl_tenant_unavailable(&ctx->key.tenant)) != WL_C__MAX) {
		wl_reply_error(ctx, code,
			       "the integration API is unavailable for this "
			       "account: %s",
			       wl_code_name(code));
		return -1;
	}
	if (rt->scope != WL_SCOPE_NONE &&
	    !(ctx->key.scopes & (1u << rt->scope))) {
		wl_reply_error(ctx, WL_C_INSUFFICIENT_SCOPE,
			       "this operation needs the scope %s",
			       wl_scope_names[rt->scope]);
		return -1;
	}
	if (ctx->http->body_len > 0 && !is_json_type(ctx->http->content_type)) {
		wl_reply_error(ctx, WL_C_INVALID_REQUEST,
			       "Content-Type must be application/json");
		return -1;
	}
	if ((rt->flags & F_NO_BODY) && no_body(ctx) < 0)
		return -1;
	return 0;
}

static void
log_request(const struct wl_ctx *ctx, int route, long long us)
{
	enum wl_log_level lvl = ctx->resp->status >= 500 ? WL_LOG_ERROR
							 : WL_LOG_INFO;
	const char *method = parse_method(ctx->http->method) >= 0
				 ? ctx->http->method
				 : "OTHER";

	wl_log(lvl,
	       "\"msg\":\"request\",\"requestId\":\"%s\",\"tenantId\":%s%s%s,"
	       "\"keyId\":%s%s%s,\"method\":\"%s\",\"route\":\"%s\","
	       "\"status\":%d,\"durationMs\":%lld.%03lld",
	       ctx->resp->request_id, ctx->authenticated ? "\"" : "",
	       ctx->authenticated ? ctx->key.tenant.id : "null",
	       ctx->authenticated ? "\"" : "", ctx->authenticated ? "\"" : "",
	       ctx->authenticated ? ctx->key.id : "null",
	       ctx->authenticated ? "\"" : "", method,
	       route >= 0 ? routes[route].pattern : "unmatched",
	       ctx->resp->status, us / 1000, us % 1000);
}

/* A handler's failure (an error; not -1, already answered) as a 503 or
 * 500 and a log line. */
static void
reply_failure(struct wl_ctx *ctx, int rc)
{
	const char *request_id = ctx->resp->request_id;

	if (rc == WL_ERR_DB_GONE || rc == WL_ERR_DB_RETRY ||
	    rc == WL_ERR_BUSY) {
		wl_log(WL_LOG_WARN, "\"msg\":\"database unavailable\","
		       "\"requestId\":\"%s\"", request_id);
		wl_reply_error(ctx, WL_C_UNAVAILABLE,
			       "the service is temporarily unavailable; retry "
			       "later");
	} else if (rc > 0) {
		/* A database error names the server's error number only:
		 * its message may quote guest values. */
		wl_log(WL_LOG_ERROR, "\"msg\":\"handler failed\","
		       "\"requestId\":\"%s\",\"error\":\"%s\","
		       "\"dbErrno\":%u",
		       request_id, wl_strerror((enum wl_err)rc),
		       rc == WL_ERR_DB ? wl_db_errno(ctx->app->db) : 0);
		wl_reply_error(ctx, WL_C_INTERNAL_ERROR, "internal error");
	}
}

/* Answer one request; see waitlist.h. */
void
wl_handle(struct wl_app *app, const struct wl_http_request *req,
	  struct wl_http_response *resp)
{
	struct wl_ctx ctx;
	struct timespec t0, t1;
	struct segments sg;
	enum wl_code code;
	int route = -1, rc = WL_OK;
	int64_t pinned;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	memset(resp, 0, sizeof(*resp));
	/* Test stacks may pin the request's clock to script a day. */
	if (app->cfg->test_clock && req->test_now &&
	    wl_iso_to_ms(req->test_now, &pinned) == 0)
		wl_clock_pin(pinned);
	memset(&ctx, 0, sizeof(ctx));
	ctx.app = app;
	ctx.http = req;
	ctx.resp = resp;
	set_request_id(req, resp);
	wl_resp_header(resp, "X-Request-Id", resp->request_id);

	/* WL_BASE_PATH is /v1/external: the first two segments. */
	if (split_path(req->path ? req->path : "", &sg) < 0 || sg.n < 2 ||
	    strcmp(sg.seg[0], "v1") != 0 || strcmp(sg.seg[1], "external") != 0) {
		wl_reply_error(&ctx, WL_C_NOT_FOUND, "no such route");
		goto out;
	}
	if (req->body_too_large) {
		wl_reply_error(&ctx, WL_C_PAYLOAD_TOO_LARGE,
			       "request body exceeds %d bytes", WL_BODY_MAX);
		goto out;
	}
	/* A client gone mid-body (a web server that streams bodies passes
	 * that on): never handled, so nothing is stored under its
	 * Idempotency-Key and its retry runs as the first. */
	if (req->body_cut) {
		wl_reply_error(&ctx, WL_C_INVALID_REQUEST,
			       "request body ended before its Content-Length");
		goto out;
	}
	if ((route = find_route(&ctx, &sg, &code)) < 0) {
		wl_reply_error(&ctx, code,
			       code == WL_C_NOT_FOUND
				   ? "no such route"
				   : "method not allowed on this route");
		goto out;
	}
	ctx.route = route;
	if (!(routes[route].flags & F_PUBLIC) &&
	    (rc = gate(&ctx, &routes[route])) != 0)
		goto done;
	if (routes[route].flags & F_MUTATION)
		rc = wl_idempotent(&ctx, routes[route].handler);
	else
		rc = routes[route].handler(&ctx);
done:
	if (rc != WL_OK)
		reply_failure(&ctx, rc);
out:
	if (resp->status == 0)
		wl_reply_error(&ctx, WL_C_INTERNAL_ERROR, "no response");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	log_request(&ctx, route,
		    (long long)(t1.tv_sec - t0.tv_sec) * 1000000 +
			(t1.tv_nsec - t0.tv_nsec) / 1000);
	if (ctx.authenticated)
		wl_key_clear(&ctx.key);
	wl_clock_pin(0);
}
