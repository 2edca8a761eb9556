/*
 * Pagination shared by every list: the limit parameter and opaque cursors.
 * A cursor is base64url(payload || mac), where payload names the route,
 * the tenant, a digest of the filters and the position after the last
 * item served, and mac is HMAC-SHA256 of the payload under the server
 * secret, truncated to 16 bytes.  A cursor cannot be forged, moved to
 * another route or tenant, or reused with other filters.
 */
#include "config.h"

#include <stdlib.h>

#include "extern.h"

#define MAC_LEN 16
#define CURSOR_MAX 1024

static void
filter_digest(const char *filters, char out[17])
{
	char hex[65];

	wl_sha256_hex(filters ? filters : "", filters ? strlen(filters) : 0,
		      hex);
	memcpy(out, hex, 16);
	out[16] = '\0';
}

/*
 * Encode a cursor for position into out (WL_CURSOR_BUF bytes).  Returns
 * WL_OK, WL_ERR_LIMIT when the position is too long, or WL_ERR_CRYPTO.
 */
int
wl_cursor_encode(const struct wl_ctx *ctx, const char *filters,
		 const char *position, char *out)
{
	unsigned char raw[768];
	char fd[17];
	int n;

	filter_digest(filters, fd);
	n = snprintf((char *)raw, sizeof(raw) - MAC_LEN, "c1\n%d\n%s\n%s\n%s",
		     ctx->route, ctx->key.tenant.id, fd, position);
	if (n < 0 || (size_t)n >= sizeof(raw) - MAC_LEN)
		return WL_ERR_LIMIT;
	{
		unsigned char mac[32];
		if (wl_hmac_sha256(ctx->app->secret, WL_SECRET_LEN, raw,
				   (size_t)n, mac) != WL_OK)
			return WL_ERR_CRYPTO;
		memcpy(raw + n, mac, MAC_LEN);
	}
	if (4 * (((size_t)n + MAC_LEN + 2) / 3) + 1 > WL_CURSOR_BUF)
		return WL_ERR_LIMIT;
	wl_b64url_encode(raw, (size_t)n + MAC_LEN, out);
	return WL_OK;
}

/*
 * Decode cursor and check its binding.  On success copies the position
 * into pos and returns 0; returns -1 for anything tampered, foreign or
 * mismatched.
 */
int
wl_cursor_decode(const struct wl_ctx *ctx, const char *filters,
		 const char *cursor, char *pos, size_t possz)
{
	unsigned char raw[CURSOR_MAX], mac[32];
	char expect[256], fd[17];
	size_t clen = strlen(cursor), plen, elen;
	long n;
	int e;

	if (clen == 0 || clen > CURSOR_MAX)
		return -1;
	n = wl_b64url_decode(cursor, clen, raw, sizeof(raw) - 1);
	if (n <= MAC_LEN)
		return -1;
	plen = (size_t)n - MAC_LEN;
	if (wl_hmac_sha256(ctx->app->secret, WL_SECRET_LEN, raw, plen, mac) !=
		WL_OK ||
	    !wl_ct_equal(mac, raw + plen, MAC_LEN))
		return -1;
	raw[plen] = '\0';
	filter_digest(filters, fd);
	e = snprintf(expect, sizeof(expect), "c1\n%d\n%s\n%s\n", ctx->route,
		     ctx->key.tenant.id, fd);
	if (e < 0 || (size_t)e >= sizeof(expect))
		return -1;
	elen = (size_t)e;
	if (plen < elen || memcmp(raw, expect, elen) != 0 ||
	    plen - elen >= possz)
		return -1;
	memcpy(pos, raw + elen, plen - elen + 1);
	return 0;
}

/*
 * Read limit (1..100, default 100) and cursor from the query.  On success
 * returns 0 with *limit set and pos holding the decoded position ("" when
 * there is no cursor).  Otherwise the 400 reply is made and -1 returned.
 */
int
wl_page_params(struct wl_ctx *ctx, const char *filters, int *limit,
	       char *pos, size_t possz)
{
	char buf[CURSOR_MAX + 2];
	const char *p;
	int rc;

	*limit = 100;
	*pos = '\0';
	rc = wl_query_get(ctx->http->query, "limit", buf, 8);
	if (rc < 0) {
		wl_reply_error(ctx, WL_C_VALIDATION_FAILED,
			       "limit must be an integer from 1 to 100");
		return -1;
	}
	if (rc > 0) {
		for (p = buf; *p >= '0' && *p <= '9'; p++)
			;
		if (*buf == '\0' || *p != '\0' || atoi(buf) < 1 ||
		    atoi(buf) > 100) {
			wl_reply_error(ctx, WL_C_VALIDATION_FAILED,
				       "limit must be an integer from 1 to "
				       "100");
			return -1;
		}
		*limit = atoi(buf);
	}
	rc = wl_query_get(ctx->http->query, "cursor", buf, sizeof(buf));
	if (rc < 0 || (rc > 0 && (strlen(buf) > CURSOR_MAX ||
				  wl_cursor_decode(ctx, filters, buf, pos,
						   possz) < 0))) {
		wl_reply_error(ctx, WL_C_INVALID_CURSOR,
			       "cursor is not valid for this request");
		return -1;
	}
	return 0;
}

/* Add "nextCursor" to root: a cursor for position, or null when last. */
int
wl_page_next(const struct wl_ctx *ctx, cJSON *root, const char *filters,
	     const char *position)
{
	char cur[WL_CURSOR_BUF];
	int rc;

	if (position == NULL) {
		cJSON_AddNullToObject(root, "nextCursor");
		return WL_OK;
	}
	if ((rc = wl_cursor_encode(ctx, filters, position, cur)) != WL_OK)
		return rc;
	cJSON_AddStringToObject(root, "nextCursor", cur);
	return WL_OK;
}

/*
 * Reply with one page of a list: the first `limit` rows of rows (fetched
 * with limit + 1, so that one more tells there is a next page) made into
 * items by make (NULL skips a row), as the array name, and nextCursor
 * after the last row shown: its column id_col, prefixed by column ts_col
 * and "|" when ts_col >= 0.
 */
int
wl_page_reply(struct wl_ctx *ctx, const struct wl_rows *rows, int limit,
	      const char *name, const char *filters, int ts_col, int id_col,
	      wl_page_item make, void *arg)
{
	size_t n = rows->nrows > (size_t)limit ? (size_t)limit : rows->nrows, r;
	cJSON *root = cJSON_CreateObject(), *a, *item;
	char next[2 * WL_ID_MAX + 32];
	int rc;

	a = cJSON_AddArrayToObject(root, name);
	for (r = 0; r < n; r++)
		if ((item = make(ctx, rows, r, arg)) != NULL)
			cJSON_AddItemToArray(a, item);
	if (rows->nrows > n && ts_col >= 0)
		snprintf(next, sizeof(next), "%s|%s",
			 wl_rows_str(rows, n - 1, (size_t)ts_col),
			 wl_rows_str(rows, n - 1, (size_t)id_col));
	else if (rows->nrows > n)
		snprintf(next, sizeof(next), "%s",
			 wl_rows_str(rows, n - 1, (size_t)id_col));
	rc = wl_page_next(ctx, root, filters, rows->nrows > n ? next : NULL);
	if (rc != WL_OK) {
		cJSON_Delete(root);
		return rc;
	}
	return wl_reply_json(ctx, 200, root);
}

/* Split a "ts|id" position in place; an empty one starts before every
 * row (ts -1, id ""). */
void
wl_page_after(char *pos, long long *ts, const char **id)
{
	char *bar = strchr(pos, '|');

	*ts = -1;
	*id = "";
	if (bar == NULL)
		return;
	*bar = '\0';
	*ts = strtoll(pos, NULL, 10);
	*id = bar + 1;
}
