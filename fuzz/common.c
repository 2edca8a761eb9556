/*
 * What the fuzz targets share: one application over the fake database,
 * and the checks every answer must pass whatever the input.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "extern.h"
#include "fuzz.h"

static const char config_text[] =
    "[server]\n"
    "log_level = error\n"
    "fcgi_socket = /nonexistent/fcgi.sock\n"
    "[webhooks]\n"
    /* Nothing is allowed, so no destination is ever resolved. */
    "allowed_hosts =\n"
    "insecure_hosts =\n";

struct wl_app *
fuzz_app(void)
{
	static struct wl_app *app;
	struct wl_config *cfg;
	char err[256];

	if (app)
		return app;
	if ((cfg = wl_config_parse(config_text, err, sizeof(err))) == NULL ||
	    (app = calloc(1, sizeof(*app))) == NULL) {
		fprintf(stderr, "fuzz: %s\n", cfg ? "out of memory" : err);
		abort();
	}
	wl_log_set_level(cfg->log_level);
	app->cfg = cfg;
	memset(app->secret, 0x5a, sizeof(app->secret));
	app->db = wl_db_new(cfg, err, sizeof(err));
	app->rl = wl_ratelimit_new(4096);
	app->openapi = strdup("{\"openapi\":\"3.1.0\"}");
	app->openapi_len = strlen(app->openapi);
	if (app->db == NULL || app->rl == NULL || app->openapi == NULL)
		abort();
	return app;
}

static void
fail(const char *why, const struct wl_http_response *resp)
{
	fprintf(stderr, "fuzz: %s (status %d, body %.300s)\n", why,
	        resp->status, resp->body ? resp->body : "(none)");
	abort();
}

static int
header_ok(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 0;
	return 1;
}

void
fuzz_check(const struct wl_http_response *resp)
{
	cJSON *root;
	size_t i;

	/* The fake database never fails, so a 5xx is the service's fault. */
	if (resp->status < 200 || resp->status > 499)
		fail("status out of range", resp);
	for (i = 0; i < resp->nheaders; i++)
		if (!header_ok(resp->headers[i].name) ||
		    !header_ok(resp->headers[i].value))
			fail("control character in a response header", resp);
	if (resp->body == NULL)
		return;
	if (strlen(resp->body) != resp->body_len)
		fail("body length does not match", resp);
	if ((root = cJSON_Parse(resp->body)) == NULL)
		fail("body is not JSON", resp);
	if (resp->status >= 400 &&
	    (cJSON_GetArraySize(root) != 3 ||
	     !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(root, "error")) ||
	     !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(root, "code")) ||
	     !cJSON_IsString(
	         cJSON_GetObjectItemCaseSensitive(root, "requestId"))))
		fail("error body is not {error, code, requestId}", resp);
	cJSON_Delete(root);
}

char *
fuzz_str(const uint8_t *data, size_t n)
{
	char *s = malloc(n + 1);

	if (s == NULL)
		abort();
	memcpy(s, data, n);
	s[n] = '\0';
	return s;
}
