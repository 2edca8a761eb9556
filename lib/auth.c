/*
 * Bearer keys: "wl_" + base64url of 32 random bytes, stored only as a
 * SHA-256 digest and compared in constant time; restrictions to business
 * and line ids.
 */
#include "config.h"

#include <ctype.h>
#include <stdlib.h>
#include <strings.h>

#include "extern.h"

#define KEY_PREFIX "wl_"
#define KEY_MAX 128
#define OWS " \t" /* RFC 9110's optional whitespace */

/* A new plaintext key and the hex digest that is stored.  Returns WL_OK or
 * WL_ERR_CRYPTO. */
int
wl_key_generate(char *plain, size_t plainsz, char digest_hex[65])
{
	unsigned char raw[32];
	char enc[48];

	if (wl_random_bytes(raw, sizeof(raw)) != WL_OK)
		return WL_ERR_CRYPTO;
	wl_b64url_encode(raw, sizeof(raw), enc);
	snprintf(plain, plainsz, KEY_PREFIX "%s", enc);
	wl_sha256_hex(plain, strlen(plain), digest_hex);
	return WL_OK;
}

void
wl_key_clear(struct wl_key *k)
{
	wl_strv_free(k->businesses, k->nbusinesses);
	wl_strv_free(k->queues, k->nqueues);
	free(k->biz_json);
	free(k->queue_json);
	wl_tenant_clear(&k->tenant);
	memset(k, 0, sizeof(*k));
}

/* What follows the Bearer scheme and its spaces in h ("" for the scheme
 * alone), or NULL when h is not of that scheme. */
static const char *
after_bearer(const char *h)
{
	if (h == NULL || strncasecmp(h, "Bearer", 6) != 0 ||
	    (h[6] != ' ' && h[6] != '\t' && h[6] != '\0'))
		return NULL;
	return h + 6 + strspn(h + 6, OWS);
}

/* p, what follows the scheme, without the spaces after it, into out
 * (KEY_MAX + 1 bytes) when it is a key as issued; else -1. */
static int
key_token(const char *p, char *out)
{
	size_t n = p ? strlen(p) : 0, i;

	while (n > 0 && strchr(OWS, p[n - 1]) != NULL)
		n--;
	if (n == 0 || n > KEY_MAX ||
	    strncmp(p, KEY_PREFIX, strlen(KEY_PREFIX)) != 0)
		return -1;
	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)p[i]) && p[i] != '-' && p[i] != '_')
			return -1;
	memcpy(out, p, n);
	out[n] = '\0';
	return 0;
}

/*
 * Authenticate the Authorization header value (may be NULL).  Returns 1
 * with key filled (clear it with wl_key_clear()), 0 with *code set to the
 * 401 code, or a negative enum wl_err on a database failure.
 */
int
wl_key_authenticate(struct wl_app *app, const char *authorization,
		    struct wl_key *key, enum wl_code *code)
{
	struct wl_rows *rows = NULL;
	const char *rest, *stored;
	char digest[65], token[KEY_MAX + 1];
	int rc, ret = 0;

	memset(key, 0, sizeof(*key));
	/* No header, an empty one, or the scheme without a key. */
	rest = after_bearer(authorization);
	if (authorization == NULL ||
	    authorization[strspn(authorization, OWS)] == '\0' ||
	    (rest && *rest == '\0')) {
		*code = WL_C_MISSING_API_KEY;
		return 0;
	}
	*code = WL_C_INVALID_API_KEY;
	if (key_token(rest, token) < 0)
		return 0;
	wl_sha256_hex(token, strlen(token), digest);
	explicit_bzero(token, sizeof(token));
	rc = wl_cached_exec(app->keys, app->db, STMT_KEY_BY_DIGEST,
			    SQL_ARGS(SQL_STR(digest)), 0, &rows);
	if (rc != WL_OK)
		return -rc;
	if (rows->nrows != 1)
		goto out;
	stored = wl_rows_str(rows, 0, 1);
	if (stored == NULL || strlen(stored) != 64 ||
	    !wl_ct_equal(stored, digest, 64))
		goto out;
	if (wl_rows_str(rows, 0, 7) != NULL) {
		*code = WL_C_REVOKED_API_KEY;
		goto out;
	}
	key->expires_at = wl_rows_int(rows, 0, 6);
	if (key->expires_at && key->expires_at <= wl_now_ms()) {
		*code = WL_C_EXPIRED_API_KEY;
		goto out;
	}
	snprintf(key->id, sizeof(key->id), "%s", wl_rows_str(rows, 0, 0));
	if (wl_scopes_parse(wl_rows_str(rows, 0, 2), &key->scopes) < 0)
		key->scopes = 0;
	key->itype = strcmp(wl_rows_str(rows, 0, 5), "zapier") == 0
			 ? WL_ITYPE_ZAPIER
			 : WL_ITYPE_API;
	if (wl_strv_from_json(wl_rows_str(rows, 0, 3), &key->businesses,
			      &key->nbusinesses) < 0 ||
	    wl_strv_from_json(wl_rows_str(rows, 0, 4), &key->queues,
			      &key->nqueues) < 0 ||
	    (key->biz_json = strdup(wl_rows_str(rows, 0, 3))) == NULL ||
	    (key->queue_json = strdup(wl_rows_str(rows, 0, 4))) == NULL ||
	    wl_tenant_from_row(rows, 0, 8, &key->tenant) != WL_OK) {
		wl_key_clear(key);
		ret = -WL_ERR_NOMEM;
		goto out;
	}
	ret = 1;
out:
	wl_rows_free(rows);
	return ret;
}

static int
in_list(char *const *v, size_t n, const char *id)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(v[i], id) == 0)
			return 1;
	return 0;
}

/* May the key see this business?  Empty restrictions allow all; a key
 * restricted to lines only sees those lines' businesses (checked by the
 * caller through the line), so businesses are open then. */
int
wl_key_allows_business(const struct wl_key *k, const char *business_id)
{
	return k->nbusinesses == 0 ||
	       in_list(k->businesses, k->nbusinesses, business_id);
}

/* May the key see this line of that business? */
int
wl_key_allows_queue(const struct wl_key *k, const char *business_id,
		    const char *queue_id)
{
	if (!wl_key_allows_business(k, business_id))
		return 0;
	return k->nqueues == 0 || in_list(k->queues, k->nqueues, queue_id);
}
