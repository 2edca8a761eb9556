/*
 * The webhook subscription API: create, list, get, delete, resume,
 * rotate-secret, the delivery records and their manual retry.  A
 * subscription is bound to the key that created (or resumed) it, and its
 * event types and filters must stay within that key's scopes and
 * restrictions.
 */
#include "config.h"

#include <stdlib.h>

#include "extern.h"

#define ROTATION_MS (24LL * 3600 * 1000)

enum { S_ID, S_URL, S_TYPES, S_BIZ, S_QUEUES, S_DESC, S_STATUS, S_REASON,
       S_CREATED, S_UPDATED, S_KEY };
enum { D_ID, D_SUB, D_EVENT, D_TYPE, D_STATUS, D_COUNT, D_NEXT, D_LAST,
       D_ATTEMPTS, D_CREATED, D_TENANT, D_SKIPPED, D_KEPT };

static int
subset(char *const *a, size_t na, char *const *b, size_t nb)
{
	size_t i, j;

	for (i = 0; i < na; i++) {
		for (j = 0; j < nb; j++)
			if (strcmp(a[i], b[j]) == 0)
				break;
		if (j == nb)
			return 0;
	}
	return 1;
}

/*
 * Do the key's restrictions cover these filters?  A business-restricted
 * key covers a filter of lines alone when it may see each of them: all
 * the filter can match lies in its businesses.  Returns 1 or 0, or a
 * negated wl_err.
 */
static int
covered(struct wl_ctx *ctx, char *const *biz, size_t nbiz,
	char *const *queues, size_t nq)
{
	const struct wl_key *k = &ctx->key;
	size_t i;
	int rc;

	if (k->nqueues && (nq == 0 || !subset(queues, nq, k->queues, k->nqueues)))
		return 0;
	if (k->nbusinesses == 0 ||
	    (nbiz && subset(biz, nbiz, k->businesses, k->nbusinesses)))
		return 1;
	if (nbiz || nq == 0)
		return 0;
	for (i = 0; i < nq; i++)
		if ((rc = wl_queue_find(ctx, queues[i], NULL)) != 1)
			return rc < 0 ? rc : 0;
	return 1;
}

static int
row_covered(struct wl_ctx *ctx, const struct wl_rows *rows, size_t r)
{
	char **biz = NULL, **q = NULL;
	size_t nb = 0, nq = 0;
	int ok;

	wl_strv_from_json(wl_rows_str(rows, r, S_BIZ), &biz, &nb);
	wl_strv_from_json(wl_rows_str(rows, r, S_QUEUES), &q, &nq);
	ok = covered(ctx, biz, nb, q, nq);
	wl_strv_free(biz, nb);
	wl_strv_free(q, nq);
	return ok;
}

static cJSON *
sub_json(const struct wl_rows *rows, size_t r, const char *secret)
{
	cJSON *o = cJSON_CreateObject();

	wl_json_add_str(o, "id", wl_rows_str(rows, r, S_ID));
	wl_json_add_str(o, "url", wl_rows_str(rows, r, S_URL));
	cJSON_AddItemToObject(o, "eventTypes",
			      cJSON_Parse(wl_rows_str(rows, r, S_TYPES)));
	cJSON_AddItemToObject(o, "businessIds",
			      cJSON_Parse(wl_rows_str(rows, r, S_BIZ)));
	cJSON_AddItemToObject(o, "queueIds",
			      cJSON_Parse(wl_rows_str(rows, r, S_QUEUES)));
	wl_json_add_str(o, "description", wl_rows_str(rows, r, S_DESC));
	wl_json_add_str(o, "status", wl_rows_str(rows, r, S_STATUS));
	wl_json_add_str(o, "statusReason", wl_rows_str(rows, r, S_REASON));
	wl_json_add_ts(o, "createdAt", wl_rows_int(rows, r, S_CREATED));
	wl_json_add_ts(o, "updatedAt", wl_rows_int(rows, r, S_UPDATED));
	if (secret)
		wl_json_add_str(o, "secret", secret);
	return o;
}

/* Reply {"subscription": S} of the first row (with secret if given);
 * frees rows. */
static int
reply_row(struct wl_ctx *ctx, struct wl_rows *rows, int status,
	  const char *secret)
{
	cJSON *root = cJSON_CreateObject();

	cJSON_AddItemToObject(root, "subscription", sub_json(rows, 0, secret));
	wl_rows_free(rows);
	return wl_reply_json(ctx, status, root);
}

/* Reply {"subscription": S} for subscription id (with secret if given),
 * which this request has just written: if it is gone, what wrote it was
 * rolled back, and the request is retried. */
static int
sub_reply(struct wl_ctx *ctx, const char *id, int status, const char *secret)
{
	struct wl_rows *rows = NULL;
	int rc;

	rc = wl_sql_exec(ctx->app->db, STMT_SUB_GET,
			 SQL_ARGS(SQL_STR(ctx->key.tenant.id), SQL_STR(id)),
			 &rows, NULL);
	if (rc != WL_OK)
		return rc;
	if (rows->nrows != 1) {
		wl_rows_free(rows);
		return WL_ERR_DB_RETRY;
	}
	return reply_row(ctx, rows, status, secret);
}

/* Load subscription id visible to the key: 0 with rows, -1 after 404, or
 * a wl_err. */
static int
sub_load(struct wl_ctx *ctx, const char *id, struct wl_rows **rows)
{
	int rc;

	rc = wl_sql_exec(ctx->app->db, STMT_SUB_GET,
			 SQL_ARGS(SQL_STR(ctx->key.tenant.id), SQL_STR(id)),
			 rows, NULL);
	if (rc != WL_OK)
		return rc;
	rc = (*rows)->nrows == 1 ? row_covered(ctx, *rows, 0) : 0;
	if (rc == 1)
		return 0;
	wl_rows_free(*rows);
	*rows = NULL;
	if (rc < 0)
		return -rc;
	wl_reply_error(ctx, WL_C_NOT_FOUND, "subscription not found");
	return -1;
}

/* A filter names at most this many businesses (or lines). */
#define FILTER_IDS_MAX 100

/* Read an optional array of at most FILTER_IDS_MAX id strings, each kept
 * once (as eventTypes are); -1 after a 400 reply. */
static int
id_array(struct wl_ctx *ctx, const cJSON *body, const char *name,
	 char ***out, size_t *n)
{
	const cJSON *a, *it;
	char **v;

	*out = NULL;
	*n = 0;
	if (wl_json_get_array(body, name, &a) < 0)
		goto bad;
	if (a == NULL)
		return 0;
	if (cJSON_GetArraySize(a) > FILTER_IDS_MAX)
		goto bad;
	if ((v = calloc((size_t)cJSON_GetArraySize(a) + 1, sizeof(*v))) == NULL)
		return WL_ERR_NOMEM;
	*out = v;
	cJSON_ArrayForEach(it, a) {
		if (!cJSON_IsString(it) || !wl_business_id_valid(it->valuestring))
			goto bad;
		if (subset(&it->valuestring, 1, v, *n)) /* kept already */
			continue;
		if ((v[*n] = strdup(it->valuestring)) == NULL)
			return WL_ERR_NOMEM;
		(*n)++;
	}
	return 0;
bad:
	wl_reply_error(ctx, WL_C_VALIDATION_FAILED,
		       "%s must be an array of at most %d ids", name,
		       FILTER_IDS_MAX);
	return -1;
}

/* Every id names a business (or line) of the tenant (else 400) that the
 * key may see (else 403), and the lines lie in the businesses named (else
 * 400); -1 after the reply. */
static int
ids_exist(struct wl_ctx *ctx, char *const *biz, size_t nb,
	  char *const *queues, size_t nq)
{
	size_t i;
	int rc;

	for (i = 0; i < nb; i++) {
		if ((rc = wl_business_find(ctx, biz[i], NULL)) < 0)
			return -rc;
		if (rc == 0)
			return wl_reply_error(ctx, WL_C_VALIDATION_FAILED,
					      "businessIds: %s is not a "
					      "business of this account",
					      biz[i]), -1;
		/* (A key restricted to lines sees their businesses only.) */
		if (rc == 2)
			return wl_reply_error(ctx, WL_C_RESOURCE_FORBIDDEN,
					      "businessIds: %s lies outside "
					      "this key's restrictions",
					      biz[i]), -1;
	}
	/* covered() has held the lines to the key's own line list, so a
	 * line outside its restrictions lies in a business it may not see. */
	for (i = 0; i < nq; i++) {
		char owner[WL_ID_MAX], *o = owner;
		if ((rc = wl_queue_find(ctx, queues[i], owner)) < 0)
			return -rc;
		if (rc == 0)
			return wl_reply_error(ctx, WL_C_VALIDATION_FAILED,
					      "queueIds: %s is not a line of "
					      "this account",
					      queues[i]), -1;
		if (rc == 2)
			return wl_reply_error(ctx, WL_C_RESOURCE_FORBIDDEN,
					      "queueIds: %s lies outside this "
					      "key's restrictions",
					      queues[i]), -1;
		/* With businesses named too, the line must be of one of
		 * them: else the filter could never match, and would show
		 * the line to keys of those businesses. */
		if (nb && !subset(&o, 1, biz, nb))
			return wl_reply_error(ctx, WL_C_VALIDATION_FAILED,
					      "queueIds: %s is not a line of "
					      "the businesses in businessIds",
					      queues[i]), -1;
	}
	return 0;
}

/* eventTypes: a non-empty array of known types, as JSON text. */
static char *
event_types(struct wl_ctx *ctx, const cJSON *body)
{
	const cJSON *a, *it;
	unsigned seen = 0;
	cJSON *out;
	char *text;
	int t;

	if (wl_json_get_array(body, "eventTypes", &a) != 1 ||
	    cJSON_GetArraySize(a) == 0)
		goto bad;
	out = cJSON_CreateArray();
	cJSON_ArrayForEach(it, a) {
		t = wl_name_index(wl_event_type_names, WL_EV__MAX,
				  cJSON_GetStringValue(it));
		if (t < 0) {
			cJSON_Delete(out);
			goto bad;
		}
		if (!((seen >> t) & 1))
			cJSON_AddItemToArray(out,
					     cJSON_CreateString(wl_event_type_names[t]));
		seen |= 1u << t;
	}
	text = cJSON_PrintUnformatted(out);
	cJSON_Delete(out);
	return text;
bad:
	wl_reply_error(ctx, WL_C_VALIDATION_FAILED,
		       "eventTypes must be a non-empty array of event types");
	return NULL;
}

/* Access checks every subscription change shares; -1 after a reply. */
static int
may_manage(struct wl_ctx *ctx)
{
	if (!((ctx->key.scopes >> WL_SCOPE_EVENTS_READ) & 1))
		return wl_reply_error(ctx, WL_C_INSUFFICIENT_SCOPE,
				      "subscriptions need a key with the "
				      "events:read scope"), -1;
	if (!ctx->key.tenant.webhooks)
		return wl_reply_error(ctx, WL_C_RESOURCE_FORBIDDEN,
				      "webhooks are not enabled for this "
				      "account"), -1;
	return 0;
}

static int
strv_dup(char *const *v, size_t n, char ***out, size_t *nout)
{
	if ((*out = calloc(n + 1, sizeof(**out))) == NULL)
		return WL_ERR_NOMEM;
	for (*nout = 0; *nout < n; (*nout)++)
		if (((*out)[*nout] = strdup(v[*nout])) == NULL)
			return WL_ERR_NOMEM;
	return WL_OK;
}

static char *
strv_json(char *const *v, size_t n)
{
	cJSON *a = wl_json_str_array(v, n);
	char *text = a ? cJSON_PrintUnformatted(a) : NULL;

	cJSON_Delete(a);
	return text;
}

/* The current event sequence of the tenant, writing its counter row so
 * that concurrent subscription changes of the tenant serialize, on one
 * node (row lock) and across Galera nodes (certification conflict; a
 * locking read would not conflict there).  See migrations/006. */
static int
lock_seq(struct wl_ctx *ctx, long long *seq)
{
	unsigned long long v;
	int rc;

	/* The tenant's counter row exists from its creation on. */
	rc = wl_sql_do_id(ctx->app->db, STMT_COUNTER_LOCK,
			  SQL_ARGS(SQL_STR(ctx->key.tenant.id)), &v);
	*seq = (long long)v;
	return rc;
}

/* Refuse a new subscription past the tenant's limit; -1 after 409. */
static int
within_limit(struct wl_ctx *ctx)
{
	struct wl_rows *rows = NULL;
	long long n, max = ctx->key.tenant.limits[WL_LIMIT_WEBHOOK_SUBS];
	int rc;

	rc = wl_sql_exec(ctx->app->db, STMT_SUB_COUNT,
			 SQL_ARGS(SQL_STR(ctx->key.tenant.id)), &rows, NULL);
	if (rc != WL_OK)
		return rc;
	n = wl_rows_int(rows, 0, 0);
	wl_rows_free(rows);
	if (n < max)
		return 0;
	wl_reply_error(ctx, WL_C_LIMIT_REACHED,
		       "this account already has %lld webhook subscriptions "
		       "(limit webhookSubscriptions)",
		       n);
	return -1;
}

/*
 * A restricted key's subscription is filtered to its restrictions, and
 * the filters it names must lie within them.  0, -1 when answered, or an
 * error.
 */
static int
key_filters(struct wl_ctx *ctx, char ***biz, size_t *nb, char ***queues,
	    size_t *nq)
{
	const struct wl_key *k = &ctx->key;
	int rc;

	if (*nb == 0 && k->nbusinesses) {
		free(*biz);
		if ((rc = strv_dup(k->businesses, k->nbusinesses, biz, nb)))
			return rc;
	}
	if (*nq == 0 && k->nqueues) {
		free(*queues);
		if ((rc = strv_dup(k->queues, k->nqueues, queues, nq)))
			return rc;
	}
	if ((rc = covered(ctx, *biz, *nb, *queues, *nq)) < 0)
		return -rc;
	if (rc == 0) {
		wl_reply_error(ctx, WL_C_RESOURCE_FORBIDDEN,
			       "businessIds and queueIds must lie within this "
			       "key's restrictions");
		return -1;
	}
	return 0;
}

/* POST /webhooks/subscriptions */
int
wl_h_sub_create(struct wl_ctx *ctx)
{
	static const char *const keys[] = {"url", "eventTypes", "businessIds",
					   "queueIds", "description", NULL};
	const struct wl_key *k = &ctx->key;
	char **biz = NULL, **queues = NULL, *types = NULL, *bj = NULL,
	     *qj = NULL;
	char host[256], why[256], id[WL_ID_MAX], secret[64], sealed[256];
	const char *url, *desc;
	size_t nb = 0, nq = 0;
	long long seq;
	int64_t now = wl_now_ms();
	cJSON *body;
	int rc = WL_OK;

	if ((body = wl_body_json(ctx)) == NULL)
		return WL_OK;
	if (wl_body_only(ctx, body, keys) < 0 ||
	    wl_field_string(ctx, body, "description", 0, 500, 1, &desc) < 0 ||
	    wl_field_string(ctx, body, "url", 1, 2048, 0, &url) < 0)
		goto out;
	if (url == NULL) {
		wl_reply_error(ctx, WL_C_VALIDATION_FAILED, "url is required");
		goto out;
	}
	if ((types = event_types(ctx, body)) == NULL ||
	    (rc = id_array(ctx, body, "businessIds", &biz, &nb)) != 0 ||
	    (rc = id_array(ctx, body, "queueIds", &queues, &nq)) != 0 ||
	    (rc = may_manage(ctx)) != 0)
		goto done;
	if ((rc = key_filters(ctx, &biz, &nb, &queues, &nq)) != 0 ||
	    (rc = ids_exist(ctx, biz, nb, queues, nq)) != 0)
		goto done;
	if (wl_dest_check(ctx->app->cfg, k->itype, url, host, sizeof(host),
			  why, sizeof(why)) < 0) {
		wl_reply_error(ctx, WL_C_DESTINATION_NOT_ALLOWED, "%s", why);
		goto out;
	}
	if ((rc = lock_seq(ctx, &seq)) != WL_OK ||
	    (rc = within_limit(ctx)) != 0)
		goto done;
	bj = strv_json(biz, nb);
	qj = strv_json(queues, nq);
	if (bj == NULL || qj == NULL) {
		rc = WL_ERR_NOMEM;
		goto out;
	}
	if (wl_id_new("whs_", id) || wl_whsec_new(secret) ||
	    wl_secret_seal(ctx->app->secret, secret, sealed)) {
		rc = WL_ERR_CRYPTO;
		goto out;
	}
	rc = wl_sql_do(ctx->app->db, STMT_SUB_INSERT,
		       SQL_ARGS(SQL_STR(id), SQL_STR(k->tenant.id),
				SQL_STR(k->id), SQL_STR(url), SQL_STR(types),
				SQL_STR(bj), SQL_STR(qj), SQL_STR(desc),
				SQL_STR(sealed), SQL_INT(seq), SQL_INT(seq),
				SQL_INT(now), SQL_INT(now)));
	if (rc == WL_OK)
		rc = sub_reply(ctx, id, 201, secret);
	goto out;
done:
	if (rc < 0)
		rc = WL_OK;
out:
	wl_strv_free(biz, nb);
	wl_strv_free(queues, nq);
	free(types);
	free(bj);
	free(qj);
	cJSON_Delete(body);
	return rc;
}

/* Subscriptions read per page of GET /webhooks/subscriptions: a tenant
 * has few (limits.webhookSubscriptions). */
#define SUB_SCAN 1000

/* GET /webhooks/subscriptions: the page holds the subscriptions the key's
 * restrictions cover, read past those they do not (no empty pages). */
int
wl_h_sub_list(struct wl_ctx *ctx)
{
	struct wl_rows *rows = NULL;
	char pos[WL_ID_MAX * 2];
	const char *next = NULL;
	cJSON *root, *a;
	int limit, rc, n = 0;
	size_t r;

	if (wl_page_params(ctx, "", &limit, pos, sizeof(pos)) < 0)
		return WL_OK;
	rc = wl_sql_exec(ctx->app->db, STMT_SUB_PAGE,
			 SQL_ARGS(SQL_STR(ctx->key.tenant.id), SQL_STR(pos),
				  SQL_INT(SUB_SCAN)),
			 &rows, NULL);
	if (rc != WL_OK)
		return rc;
	root = cJSON_CreateObject();
	a = cJSON_AddArrayToObject(root, "subscriptions");
	for (r = 0, rc = 0; r < rows->nrows; r++) {
		if ((rc = row_covered(ctx, rows, r)) <= 0) {
			if (rc < 0)
				break;
			continue;
		}
		if (n == limit) { /* one more: the page ends before it */
			next = wl_rows_str(rows, r - 1, S_ID);
			break;
		}
		cJSON_AddItemToArray(a, sub_json(rows, r, NULL));
		n++;
	}
	/* A full scan without a page's worth: go on from its last row. */
	if (next == NULL && rows->nrows == SUB_SCAN)
		next = wl_rows_str(rows, rows->nrows - 1, S_ID);
	rc = rc < 0 ? -rc : wl_page_next(ctx, root, "", next);
	wl_rows_free(rows);
	if (rc != WL_OK) {
		cJSON_Delete(root);
		return rc;
	}
	return wl_reply_json(ctx, 200, root);
}

/* GET /webhooks/subscriptions/{id} */
int
wl_h_sub_get(struct wl_ctx *ctx)
{
	struct wl_rows *rows = NULL;
	int rc;

	if ((rc = sub_load(ctx, ctx->param[0], &rows)) != 0)
		return rc < 0 ? WL_OK : rc;
	return reply_row(ctx, rows, 200, NULL);
}

/* DELETE /webhooks/subscriptions/{id} */
int
wl_h_sub_delete(struct wl_ctx *ctx)
{
	struct wl_rows *rows = NULL;
	unsigned long long gone = 0;
	int rc;

	if ((rc = sub_load(ctx, ctx->param[0], &rows)) != 0)
		return rc < 0 ? WL_OK : rc;
	wl_rows_free(rows);
	/* The subscription first: a fan-out that has not advanced it yet
	 * then finds it gone and leases nothing.  A record of an attempt in
	 * flight may still come after the deliveries are deleted (its check
	 * of the subscription is a read, not a lock): such a row is not
	 * reachable (its subscription is gone), a pending one is failed when
	 * claimed, and the purge takes them.  A DELETE racing this one may
	 * have taken it since it was read: 404. */
	rc = wl_sql_exec(ctx->app->db, STMT_SUB_DELETE,
			 SQL_ARGS(SQL_STR(ctx->param[0])), NULL, &gone);
	if (rc == WL_OK && gone == 0)
		return wl_reply_error(ctx, WL_C_NOT_FOUND,
				      "subscription not found");
	if (rc == WL_OK)
		rc = wl_sql_do(ctx->app->db, STMT_SUB_DELETE_DELIVERIES,
			       SQL_ARGS(SQL_STR(ctx->param[0])));
	return rc == WL_OK ? wl_reply_empty(ctx, 204) : rc;
}

/*
 * POST /webhooks/subscriptions/{id}/resume: bind to the calling key.  A
 * paused or disabled subscription also moves its high-water mark to the
 * newest event, so that nothing of the paused period goes out; an active
 * one keeps its pending deliveries and its place in the feed.
 */
int
wl_h_sub_resume(struct wl_ctx *ctx)
{
	struct wl_rows *rows = NULL;
	const char *id = ctx->param[0];
	int64_t now = wl_now_ms();
	unsigned long long resumed = 0;
	char host[256], why[160];
	long long seq;
	int rc;

	if ((rc = sub_load(ctx, id, &rows)) != 0)
		return rc < 0 ? WL_OK : rc;
	if ((rc = may_manage(ctx)) != 0) {
		wl_rows_free(rows);
		return rc < 0 ? WL_OK : rc;
	}
	/* Bound to this key from now on: its kind must be allowed there
	 * (a Zapier key, the Zapier hosts only), as on creation. */
	rc = wl_dest_check(ctx->app->cfg, ctx->key.itype,
			   wl_rows_str(rows, 0, S_URL), host, sizeof(host), why,
			   sizeof(why));
	wl_rows_free(rows);
	if (rc < 0)
		return wl_reply_error(ctx, WL_C_DESTINATION_NOT_ALLOWED, "%s",
				      why);
	if ((rc = lock_seq(ctx, &seq)) != WL_OK)
		return rc;
	rc = wl_sql_exec(ctx->app->db, STMT_SUB_RESUME,
			 SQL_ARGS(SQL_STR(ctx->key.id), SQL_INT(seq),
				  SQL_INT(seq), SQL_INT(now), SQL_STR(id)),
			 NULL, &resumed);
	if (rc == WL_OK && resumed)
		rc = wl_sql_do(ctx->app->db, STMT_DELIVERY_FAIL_PENDING,
			       SQL_ARGS(SQL_INT(now), SQL_STR(id)));
	else if (rc == WL_OK)
		rc = wl_sql_do(ctx->app->db, STMT_SUB_REBIND,
			       SQL_ARGS(SQL_STR(ctx->key.id), SQL_INT(now),
					SQL_STR(id)));
	return rc == WL_OK ? sub_reply(ctx, id, 200, NULL) : rc;
}

/* POST /webhooks/subscriptions/{id}/rotate-secret */
int
wl_h_sub_rotate(struct wl_ctx *ctx)
{
	struct wl_rows *rows = NULL;
	const char *id = ctx->param[0];
	char secret[64], sealed[256];
	int64_t now = wl_now_ms();
	int rc;

	if ((rc = sub_load(ctx, id, &rows)) != 0)
		return rc < 0 ? WL_OK : rc;
	wl_rows_free(rows);
	if (wl_whsec_new(secret) ||
	    wl_secret_seal(ctx->app->secret, secret, sealed))
		return WL_ERR_CRYPTO;
	rc = wl_sql_do(ctx->app->db, STMT_SUB_ROTATE,
		       SQL_ARGS(SQL_INT(now + ROTATION_MS), SQL_STR(sealed),
				SQL_INT(now), SQL_STR(id)));
	return rc == WL_OK ? sub_reply(ctx, id, 200, secret) : rc;
}

static cJSON *
delivery_json(const struct wl_rows *rows, size_t r)
{
	cJSON *o = cJSON_CreateObject(), *a;
	int pending = strcmp(wl_rows_str(rows, r, D_STATUS), "pending") == 0;

	wl_json_add_str(o, "id", wl_rows_str(rows, r, D_ID));
	wl_json_add_str(o, "subscriptionId", wl_rows_str(rows, r, D_SUB));
	wl_json_add_str(o, "eventId", wl_rows_str(rows, r, D_EVENT));
	wl_json_add_str(o, "eventType", wl_rows_str(rows, r, D_TYPE));
	wl_json_add_str(o, "status", wl_rows_str(rows, r, D_STATUS));
	wl_json_add_int(o, "attemptCount", wl_rows_int(rows, r, D_COUNT));
	wl_json_add_ts(o, "nextAttemptAt",
		       pending ? wl_rows_int(rows, r, D_NEXT) : -1);
	wl_json_add_ts(o, "lastAttemptAt", wl_rows_str(rows, r, D_LAST)
					       ? wl_rows_int(rows, r, D_LAST)
					       : -1);
	a = cJSON_Parse(wl_rows_str(rows, r, D_ATTEMPTS));
	cJSON_AddItemToObject(o, "attempts", a ? a : cJSON_CreateArray());
	wl_json_add_ts(o, "createdAt", wl_rows_int(rows, r, D_CREATED));
	return o;
}

static cJSON *
delivery_item(const struct wl_ctx *ctx, const struct wl_rows *rows, size_t r,
	      void *arg)
{
	(void)ctx;
	(void)arg;
	return delivery_json(rows, r);
}

/* GET /webhooks/subscriptions/{id}/deliveries?status=&cursor=&limit= */
int
wl_h_delivery_list(struct wl_ctx *ctx)
{
	struct wl_rows *rows = NULL;
	char status[16] = "", filters[96], pos[128];
	const char *id = ctx->param[0], *after_id;
	long long after;
	int limit, rc, has;

	has = wl_query_get(ctx->http->query, "status", status, sizeof(status));
	if (has < 0 || (has && strcmp(status, "pending") &&
			strcmp(status, "succeeded") && strcmp(status, "failed")))
		return wl_reply_error(ctx, WL_C_VALIDATION_FAILED,
				      "status must be pending, succeeded or "
				      "failed");
	/* A page's cursor holds to this subscription and status. */
	snprintf(filters, sizeof(filters), "sub=%.60s&status=%s", id, status);
	if (wl_page_params(ctx, filters, &limit, pos, sizeof(pos)) < 0)
		return WL_OK;
	if ((rc = sub_load(ctx, id, &rows)) != 0)
		return rc < 0 ? WL_OK : rc;
	wl_rows_free(rows);
	wl_page_after(pos, &after, &after_id);
	if (has)
		rc = wl_sql_exec(ctx->app->db, STMT_DELIVERY_PAGE_STATUS,
				 SQL_ARGS(SQL_STR(id), SQL_STR(status),
					  SQL_INT(after), SQL_INT(after),
					  SQL_STR(after_id), SQL_INT(limit + 1)),
				 &rows, NULL);
	else
		rc = wl_sql_exec(ctx->app->db, STMT_DELIVERY_PAGE,
				 SQL_ARGS(SQL_STR(id), SQL_INT(after),
					  SQL_INT(after), SQL_STR(after_id),
					  SQL_INT(limit + 1)),
				 &rows, NULL);
	if (rc == WL_OK)
		rc = wl_page_reply(ctx, rows, limit, "deliveries", filters,
				   D_CREATED, D_ID, delivery_item, NULL);
	wl_rows_free(rows);
	return rc;
}

/* POST /webhooks/deliveries/{deliveryId}/retry: one more attempt now,
 * with a new timestamp and the same webhook-id (an attempt in flight is
 * that attempt). */
int
wl_h_delivery_retry(struct wl_ctx *ctx)
{
	struct wl_rows *d = NULL, *sub = NULL;
	const char *id = ctx->param[0];
	unsigned long long changed = 0;
	int64_t now = wl_now_ms();
	cJSON *root;
	int rc;

	rc = wl_sql_exec(ctx->app->db, STMT_DELIVERY_GET,
			 SQL_ARGS(SQL_STR(id)), &d, NULL);
	if (rc != WL_OK)
		return rc;
	if (d->nrows == 0 ||
	    strcmp(wl_rows_str(d, 0, D_TENANT), ctx->key.tenant.id) != 0) {
		wl_rows_free(d);
		return wl_reply_error(ctx, WL_C_NOT_FOUND,
				      "delivery not found");
	}
	rc = sub_load(ctx, wl_rows_str(d, 0, D_SUB), &sub);
	wl_rows_free(d);
	if (rc != 0) {
		if (rc < 0) /* hide the delivery like its subscription */
			wl_reply_error(ctx, WL_C_NOT_FOUND,
				       "delivery not found");
		return rc < 0 ? WL_OK : rc;
	}
	rc = strcmp(wl_rows_str(sub, 0, S_STATUS), "active");
	wl_rows_free(sub);
	if (rc != 0)
		return wl_reply_error(ctx, WL_C_INVALID_REQUEST,
				      "the subscription is not active; resume "
				      "it first");
	rc = wl_sql_exec(ctx->app->db, STMT_DELIVERY_RETRY,
			 SQL_ARGS(SQL_INT(now), SQL_INT(now), SQL_STR(id),
				  SQL_INT(now)),
			 NULL, &changed);
	if (rc == WL_OK)
		rc = wl_sql_exec(ctx->app->db, STMT_DELIVERY_GET,
				 SQL_ARGS(SQL_STR(id)), &d, NULL);
	if (rc != WL_OK)
		return rc;
	if (d->nrows == 0) /* deleted meanwhile, with its subscription */
		rc = wl_reply_error(ctx, WL_C_NOT_FOUND, "delivery not found");
	else if (changed == 0 && wl_rows_int(d, 0, D_SKIPPED))
		rc = wl_reply_error(ctx, WL_C_INVALID_REQUEST,
				    "this delivery was given up when its "
				    "subscription was paused, disabled or "
				    "resumed; it is not sent again");
	else if (changed == 0 && !wl_rows_int(d, 0, D_KEPT))
		rc = wl_reply_error(ctx, WL_C_INVALID_REQUEST,
				    "the event of this delivery has left the "
				    "feed's seven-day window; it is not sent "
				    "again");
	else {
		root = cJSON_CreateObject();
		cJSON_AddItemToObject(root, "delivery", delivery_json(d, 0));
		rc = wl_reply_json(ctx, 202, root);
	}
	wl_rows_free(d);
	return rc;
}
