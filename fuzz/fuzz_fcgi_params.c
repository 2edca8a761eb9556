/*
 * The FastCGI glue: a PARAMS stream as the web server (or anyone who can
 * reach the socket) sends it, mapped by wl_fcgi_request() exactly as the
 * worker does, then answered.  Input: 2 bytes giving the length of the
 * name-value pairs (FastCGI encoding: 1-byte lengths, or 4 bytes with the
 * top bit set), the pairs, then the body stream.
 */
#include "config.h"

#include <stdlib.h>

#include "extern.h"
#include "fcgi.h"
#include "fuzz.h"

#define MAX_PARAMS 64

static size_t
length(const uint8_t **p, const uint8_t *end)
{
	size_t v;

	if (*p >= end)
		return 0;
	if (!(**p & 0x80))
		return *(*p)++;
	if (end - *p < 4) {
		*p = end;
		return 0;
	}
	v = (size_t)((*p)[0] & 0x7f) << 24 | (size_t)(*p)[1] << 16 |
	    (size_t)(*p)[2] << 8 | (*p)[3];
	*p += 4;
	return v;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	struct wl_http_request req;
	struct wl_http_response resp;
	char *envp[MAX_PARAMS + 1];
	const uint8_t *p, *end, *in;
	size_t plen, np = 0, nl, vl, want, have, i;
	char *body = NULL;

	if (n < 2 || n > 200000)
		return 0;
	plen = (size_t)data[0] << 8 | data[1];
	if (plen > n - 2)
		plen = n - 2;
	p = data + 2;
	end = p + plen;
	while (p < end && np < MAX_PARAMS) {
		nl = length(&p, end);
		vl = length(&p, end);
		/* libfcgi would wait for the rest of the record. */
		if (nl > (size_t)(end - p) || vl > (size_t)(end - p) - nl)
			break;
		/* libfcgi's layout: name '=' value NUL. */
		if ((envp[np] = malloc(nl + vl + 2)) == NULL)
			abort();
		memcpy(envp[np], p, nl);
		envp[np][nl] = '=';
		memcpy(envp[np] + nl + 1, p + nl, vl);
		envp[np][nl + vl + 1] = '\0';
		np++;
		p += nl + vl;
	}
	envp[np] = NULL;

	want = wl_fcgi_request(envp, &req);
	if (want > WL_BODY_MAX || (req.body_too_large && want != 0))
		abort();
	in = data + 2 + plen;
	have = n - 2 - plen;
	if (want > 0) {
		/* FCGX_GetStr gives what arrived, up to want. */
		size_t got = want < have ? want : have;
		if ((body = malloc(want + 1)) == NULL)
			abort();
		memcpy(body, in, got);
		body[got] = '\0';
		req.body = body;
		req.body_len = got;
	}
	wl_handle(fuzz_app(), &req, &resp);
	fuzz_check(&resp);
	wl_http_response_clear(&resp);
	free(body);
	for (i = 0; i < np; i++)
		free(envp[i]);
	return 0;
}
