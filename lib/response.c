/*
 * Responses: JSON bodies, the error envelope {error, code, requestId},
 * headers, and query-string access.
 */
#include "config.h"

#include <ctype.h>
#include <stdlib.h>

#include "extern.h"

/* Add a header (copied).  Returns WL_OK, WL_ERR_LIMIT or WL_ERR_NOMEM. */
int
wl_resp_header(struct wl_http_response *r, const char *name,
	       const char *value)
{
	struct wl_http_header *h;

	if (r->nheaders == WL_MAX_HEADERS)
		return WL_ERR_LIMIT;
	h = &r->headers[r->nheaders];
	h->name = strdup(name);
	h->value = strdup(value);
	if (h->name == NULL || h->value == NULL) {
		free(h->name);
		free(h->value);
		return WL_ERR_NOMEM;
	}
	r->nheaders++;
	return WL_OK;
}

static void
set_body(struct wl_http_response *r, char *body)
{
	free(r->body);
	r->body = body;
	r->body_len = body ? strlen(body) : 0;
}

/*
 * Reply with status and the JSON tree root (consumed).  A tree that cannot
 * be printed (out of memory while building it) becomes a 500.
 */
int
wl_reply_json(struct wl_ctx *ctx, int status, cJSON *root)
{
	char *text = root ? cJSON_PrintUnformatted(root) : NULL;

	cJSON_Delete(root);
	if (text == NULL)
		return wl_reply_error(ctx, WL_C_INTERNAL_ERROR,
				      "out of memory");
	ctx->resp->status = status;
	set_body(ctx->resp, text);
	return WL_OK;
}

/* Reply with the error envelope for code; the message is formatted. */
int
wl_reply_error(struct wl_ctx *ctx, enum wl_code code, const char *fmt, ...)
{
	static const char fallback[] =
	    "{\"error\":\"out of memory\",\"code\":\"internal_error\","
	    "\"requestId\":\"unknown\"}";
	char msg[1024];
	cJSON *root;
	char *text;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n >= (int)sizeof(msg))
		wl_utf8_trim(msg); /* the cut may fall inside a character */
	ctx->resp->status = wl_code_status(code);
	root = cJSON_CreateObject();
	if (root) {
		cJSON_AddStringToObject(root, "error", msg);
		cJSON_AddStringToObject(root, "code", wl_code_name(code));
		cJSON_AddStringToObject(root, "requestId",
					ctx->resp->request_id);
	}
	text = root ? cJSON_PrintUnformatted(root) : NULL;
	cJSON_Delete(root);
	if (text == NULL) {
		ctx->resp->status = 500;
		text = strdup(fallback);
	}
	set_body(ctx->resp, text);
	return WL_OK;
}

/* Reply with a status and no body (204). */
int
wl_reply_empty(struct wl_ctx *ctx, int status)
{
	ctx->resp->status = status;
	set_body(ctx->resp, NULL);
	return WL_OK;
}

/* Drop the body and status of a response, keeping its headers. */
void
wl_resp_clear_body(struct wl_http_response *r)
{
	set_body(r, NULL);
	r->status = 0;
}

/* Free what a response holds and reset it. */
void
wl_http_response_clear(struct wl_http_response *r)
{
	size_t i;

	for (i = 0; i < r->nheaders; i++) {
		free(r->headers[i].name);
		free(r->headers[i].value);
	}
	free(r->body);
	memset(r, 0, sizeof(*r));
}

/* Reason phrase of the statuses the service sends. */
const char *
wl_http_reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 201: return "Created";
	case 202: return "Accepted";
	case 204: return "No Content";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 402: return "Payment Required";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 409: return "Conflict";
	case 429: return "Too Many Requests";
	case 500: return "Internal Server Error";
	case 503: return "Service Unavailable";
	default: return "Unknown";
	}
}

static int
hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/*
 * Find parameter name in a raw query string and percent-decode its value
 * into out.  Returns 1 found, 0 absent, -1 malformed, too long for out,
 * or repeated.
 */
int
wl_query_get(const char *query, const char *name, char *out, size_t outsz)
{
	size_t nlen = strlen(name), o;
	const char *p = query, *v, *end;
	int found = 0, hi, lo;

	while (p && *p) {
		end = strchr(p, '&');
		if (end == NULL)
			end = p + strlen(p);
		if ((size_t)(end - p) >= nlen && strncmp(p, name, nlen) == 0 &&
		    (p[nlen] == '=' || p + nlen == end)) {
			if (found)
				return -1;
			found = 1;
			v = p + nlen + (p[nlen] == '=');
			for (o = 0; v < end; v++) {
				int c = (unsigned char)*v;
				if (c == '+')
					c = ' ';
				else if (c == '%') {
					if (end - v < 3 ||
					    (hi = hexval(v[1])) < 0 ||
					    (lo = hexval(v[2])) < 0)
						return -1;
					c = hi * 16 + lo;
					v += 2;
				}
				if (c == 0 || o + 1 >= outsz)
					return -1;
				out[o++] = (char)c;
			}
			out[o] = '\0';
			if (!wl_utf8_valid(out, o))
				return -1;
		}
		p = *end ? end + 1 : end;
	}
	return found;
}
