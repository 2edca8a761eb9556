/*
 * Paths, methods and query strings through the router and the read
 * handlers over the fake database, and the query parser on its own.
 * Input: a method byte, a flags byte, then "path?query".  The path is
 * the raw request URI, with or without its query (flag 0x40).
 */
#include "config.h"

#include <stdlib.h>

#include "extern.h"
#include "fuzz.h"

static const char *const methods[] = {"GET", "POST", "PATCH", "DELETE",
                                      "PUT", "HEAD", "",      "get"};
static const char *const names[] = {"limit",
                                    "cursor",
                                    "status",
                                    "types",
                                    "businessId",
                                    "queueId",
                                    "date",
                                    "externalReference",
                                    ""};
static const size_t sizes[] = {1, 2, 8, 64, 1100};

static void
query_parser(const char *q)
{
	char out[1100];
	size_t i, j;
	int rc;

	for (i = 0; i < sizeof(names) / sizeof(*names); i++)
		for (j = 0; j < sizeof(sizes) / sizeof(*sizes); j++) {
			rc = wl_query_get(q, names[i], out, sizes[j]);
			if (rc < -1 || rc > 1)
				abort();
			if (rc == 1 && (strlen(out) >= sizes[j] ||
			                !wl_utf8_valid(out, strlen(out))))
				abort();
		}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	struct wl_http_request req;
	struct wl_http_response resp;
	char *text, *full, *q, *path = NULL;
	unsigned flags;

	if (n < 2 || n > 16384)
		return 0;
	flags = data[1];
	text = fuzz_str(data + 2, n - 2);
	full = fuzz_str(data + 2, n - 2);
	q = strchr(text, '?');
	if (q)
		*q++ = '\0';
	query_parser(q ? q : "");
	if (flags & 2) {
		const char *rest = flags & 0x40 ? full : text;
		size_t len = strlen(WL_BASE_PATH) + strlen(rest) + 1;
		if ((path = malloc(len)) == NULL)
			abort();
		snprintf(path, len, "%s%s", WL_BASE_PATH, rest);
	}
	memset(&req, 0, sizeof(req));
	req.method = methods[data[0] % (sizeof(methods) / sizeof(*methods))];
	req.path = path ? path : flags & 0x40 ? full : text;
	req.query = q ? q : "";
	if (flags & 1)
		req.authorization = "Bearer " FUZZ_KEY;
	req.content_type = flags & 4 ? "application/json" : NULL;
	req.idempotency_key = flags & 8 ? "fuzz" : NULL;
	req.body = flags & 4 ? "{}" : "";
	req.body_len = flags & 4 ? 2 : 0;
	req.body_too_large = (flags & 0x30) == 0x30;
	wl_handle(fuzz_app(), &req, &resp);
	fuzz_check(&resp);
	wl_http_response_clear(&resp);
	free(path);
	free(full);
	free(text);
	return 0;
}
