/*
 * The request pipeline driven through wl_handle() with the database down:
 * routing, request ids, the error envelope, the key checks that come
 * before any query, and the 503 of a dead database.  Also query strings
 * and the error-code table.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <unistd.h>

#include "extern.h"
#include "tests.h"

#define OPENAPI_DOC "{\"openapi\":\"3.1.0\"}"

static char openapi_path[64], secret_path[64];
static struct wl_config *cfg;
static struct wl_app *app;
static struct wl_http_response resp;

static void
write_temp(char *path, const char *text)
{
	FILE *f;
	int fd;

	snprintf(path, 64, "/tmp/wl_check_router_XXXXXX");
	ck_assert_int_ge(fd = mkstemp(path), 0);
	ck_assert_ptr_nonnull(f = fdopen(fd, "w"));
	ck_assert_int_eq(fputs(text, f) >= 0, 1);
	ck_assert_int_eq(fclose(f), 0);
}

/* A configuration whose database cannot be reached. */
static struct wl_config *
config_with(const char *secret, const char *openapi)
{
	struct wl_config *c;
	char text[512], err[512];

	snprintf(text, sizeof(text),
		 "[database]\n"
		 "socket = /nonexistent/mysql.sock\n"
		 "[server]\n"
		 "secret_key_file = %s\n"
		 "openapi_file = %s\n"
		 "log_level = error\n",
		 secret, openapi);
	c = wl_config_parse(text, err, sizeof(err));
	ck_assert_msg(c != NULL, "config refused: %s", err);
	return c;
}

/* The files live for the whole test case, so that a failed test (whose
 * checked teardown does not run) leaves nothing behind. */
static void
setup_files(void)
{
	write_temp(openapi_path, OPENAPI_DOC);
	write_temp(secret_path, "0123456789abcdef0123456789abcdef"
				"0123456789abcdef0123456789abcdef\n");
}

static void
teardown_files(void)
{
	unlink(openapi_path);
	unlink(secret_path);
}

static void
setup_app(void)
{
	char err[512] = "";

	cfg = config_with(secret_path, openapi_path);
	app = wl_app_new(cfg, WL_APP_SERVE, err, sizeof(err));
	ck_assert_msg(app != NULL, "app refused: %s", err);
	memset(&resp, 0, sizeof(resp));
}

static void
teardown_app(void)
{
	wl_http_response_clear(&resp);
	wl_app_free(app);
	wl_config_free(cfg);
	app = NULL;
	cfg = NULL;
}

/* Answer a request into resp; returns the status. */
static int
request(const char *method, const char *path, const char *authorization,
	const char *request_id)
{
	struct wl_http_request req;

	memset(&req, 0, sizeof(req));
	req.method = method;
	req.path = path;
	req.query = "";
	req.authorization = authorization;
	req.request_id = request_id;
	req.body = "";
	wl_http_response_clear(&resp);
	wl_handle(app, &req, &resp);
	return resp.status;
}

static const char *
header(const char *name)
{
	size_t i;

	for (i = 0; i < resp.nheaders; i++)
		if (strcasecmp(resp.headers[i].name, name) == 0)
			return resp.headers[i].value;
	return NULL;
}

/*
 * The body of resp must be the error envelope: exactly error, code and
 * requestId, the id matching the response's and its X-Request-Id header.
 */
static void
assert_error(int status, const char *code)
{
	cJSON *o;
	const char *s;

	ck_assert_int_eq(resp.status, status);
	ck_assert_ptr_nonnull(resp.body);
	ck_assert_uint_eq(resp.body_len, strlen(resp.body));
	ck_assert_ptr_nonnull(o = cJSON_Parse(resp.body));
	ck_assert_int_eq(cJSON_GetArraySize(o), 3);
	ck_assert_int_eq(wl_json_get_string(o, "error", &s), 1);
	ck_assert_str_ne(s, "");
	ck_assert_int_eq(wl_json_get_string(o, "code", &s), 1);
	ck_assert_str_eq(s, code);
	ck_assert_int_eq(wl_json_get_string(o, "requestId", &s), 1);
	ck_assert_str_eq(s, resp.request_id);
	ck_assert_ptr_nonnull(header("X-Request-Id"));
	ck_assert_str_eq(header("X-Request-Id"), resp.request_id);
	cJSON_Delete(o);
}

START_TEST(app_starts_with_the_database_down)
{
	ck_assert_ptr_nonnull(app);
	ck_assert_ptr_nonnull(app->openapi);
	ck_assert_uint_eq(app->openapi_len, strlen(OPENAPI_DOC));
}
END_TEST

START_TEST(openapi_is_served_verbatim)
{
	ck_assert_int_eq(request("GET", "/v1/external/openapi.json", NULL,
				 NULL),
			 200);
	ck_assert_ptr_nonnull(resp.body);
	ck_assert_uint_eq(resp.body_len, strlen(OPENAPI_DOC));
	ck_assert_str_eq(resp.body, OPENAPI_DOC);
	ck_assert_ptr_nonnull(header("X-Request-Id"));
}
END_TEST

START_TEST(unknown_route_is_not_found)
{
	ck_assert_int_eq(request("GET", "/v1/external/nope", NULL, NULL), 404);
	assert_error(404, "not_found");
	ck_assert_int_eq(request("GET", "/v1/external/me/", NULL, NULL), 404);
	assert_error(404, "not_found");
	ck_assert_int_eq(request("GET", "/v1/external", NULL, NULL), 404);
	assert_error(404, "not_found");
	ck_assert_int_eq(request("GET", "/v1/external//me", NULL, NULL), 404);
	assert_error(404, "not_found");
}
END_TEST

START_TEST(path_filling_the_buffer_then_empty_segments_is_not_found)
{
	/* The long segment leaves one byte; the empty ones after it need a
	 * terminator each. */
	char path[2200];
	size_t n = strlen("/v1/external/");

	memcpy(path, "/v1/external/", n);
	memset(path + n, 'a', 2034);
	memset(path + n + 2034, '/', 13);
	path[n + 2034 + 13] = '\0';
	ck_assert_int_eq(request("GET", path, NULL, NULL), 404);
	assert_error(404, "not_found");
}
END_TEST

START_TEST(path_outside_the_base_is_not_found)
{
	ck_assert_int_eq(request("GET", "/v2/me", NULL, NULL), 404);
	assert_error(404, "not_found");
	ck_assert_int_eq(request("GET", "/v1/externalx/me", NULL, NULL), 404);
	assert_error(404, "not_found");
	ck_assert_int_eq(request("GET", "/me", NULL, NULL), 404);
	assert_error(404, "not_found");
	ck_assert_int_eq(request("GET", NULL, NULL, NULL), 404);
	assert_error(404, "not_found");
}
END_TEST

START_TEST(wrong_method_is_not_allowed_with_allow_header)
{
	ck_assert_int_eq(request("POST", "/v1/external/me", NULL, NULL), 405);
	assert_error(405, "method_not_allowed");
	ck_assert_ptr_nonnull(header("Allow"));
	ck_assert_str_eq(header("Allow"), "GET");
	ck_assert_int_eq(request("DELETE", "/v1/external/health", NULL, NULL),
			 405);
	assert_error(405, "method_not_allowed");
	ck_assert_str_eq(header("Allow"), "GET");
	/* A method the service does not know at all. */
	ck_assert_int_eq(request("PUT", "/v1/external/me", NULL, NULL), 405);
	assert_error(405, "method_not_allowed");
	ck_assert_str_eq(header("Allow"), "GET");
}
END_TEST

START_TEST(not_found_has_no_allow_header)
{
	request("POST", "/v1/external/nope", NULL, NULL);
	assert_error(404, "not_found");
	ck_assert_ptr_null(header("Allow"));
}
END_TEST

START_TEST(id_ending_in_a_space_is_not_found)
{
	/* MariaDB would match "x " to the id "x" (PAD SPACE). */
	ck_assert_int_eq(request("DELETE",
				 "/v1/external/webhooks/subscriptions/whs_x%20",
				 NULL, NULL),
			 404);
	assert_error(404, "not_found");
	ck_assert_int_eq(request("GET", "/v1/external/waitlist/entries/ent_x ",
				 NULL, NULL),
			 404);
	assert_error(404, "not_found");
	/* Inside an id a space is no id either, but routes like any. */
	ck_assert_int_eq(
	    request("GET", "/v1/external/waitlist/entries/ent%20x", NULL, NULL),
	    401);
}
END_TEST

START_TEST(me_without_authorization_is_missing_api_key)
{
	ck_assert_int_eq(request("GET", "/v1/external/me", NULL, NULL), 401);
	assert_error(401, "missing_api_key");
	ck_assert_int_eq(request("GET", "/v1/external/me", "", NULL), 401);
	assert_error(401, "missing_api_key");
	/* The scheme without a key. */
	ck_assert_int_eq(request("GET", "/v1/external/me", "Bearer ", NULL), 401);
	assert_error(401, "missing_api_key");
	ck_assert_int_eq(request("GET", "/v1/external/me", "bearer", NULL), 401);
	assert_error(401, "missing_api_key");
	ck_assert_str_eq(header("WWW-Authenticate"), "Bearer");
}
END_TEST

START_TEST(me_with_malformed_key_is_invalid_api_key)
{
	static const char *const bad[] = {
	    "Basic abc",
	    "Bearer notakey",
	    "Bearerwl_abc",
	    "Bearer wl_has space",
	    "Bearer wl_bad!char",
	    "wl_abc",
	    "Token wl_abc",
	};
	char longkey[200];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		ck_assert_msg(request("GET", "/v1/external/me", bad[i], NULL) ==
				  401,
			      "%s: %d", bad[i], resp.status);
		assert_error(401, "invalid_api_key");
	}
	/* Longer than any key the service issues. */
	snprintf(longkey, sizeof(longkey), "Bearer wl_");
	memset(longkey + 10, 'a', sizeof(longkey) - 11);
	longkey[sizeof(longkey) - 1] = '\0';
	ck_assert_int_eq(request("GET", "/v1/external/me", longkey, NULL), 401);
	assert_error(401, "invalid_api_key");
}
END_TEST

START_TEST(well_formed_key_with_database_down_is_unavailable)
{
	ck_assert_int_eq(request("GET", "/v1/external/me",
				 "Bearer wl_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
				 "AAAAAAAAAA",
				 NULL),
			 503);
	assert_error(503, "unavailable");
	/* The scheme is case-insensitive, so this one reaches the database
	 * too rather than being refused as malformed. */
	ck_assert_int_eq(request("GET", "/v1/external/me", "bearer wl_abc",
				 NULL),
			 503);
	assert_error(503, "unavailable");
}
END_TEST

START_TEST(health_with_database_down_is_unavailable)
{
	ck_assert_int_eq(request("GET", "/v1/external/health", NULL, NULL),
			 503);
	assert_error(503, "unavailable");
}
END_TEST

START_TEST(proposed_request_id_is_kept)
{
	char id63[64];

	request("GET", "/v1/external/nope", NULL, "abc-123");
	ck_assert_str_eq(resp.request_id, "abc-123");
	assert_error(404, "not_found");
	request("GET", "/v1/external/openapi.json", NULL, "A_b-9");
	ck_assert_int_eq(resp.status, 200);
	ck_assert_str_eq(header("X-Request-Id"), "A_b-9");
	/* The longest id that fits is kept too. */
	memset(id63, 'x', 63);
	id63[63] = '\0';
	request("GET", "/v1/external/nope", NULL, id63);
	ck_assert_str_eq(resp.request_id, id63);
	assert_error(404, "not_found");
}
END_TEST

/* The response id must be a fresh "req_" + 26 character id. */
static void
assert_generated_id(void)
{
	size_t i;

	ck_assert_int_eq(strncmp(resp.request_id, "req_", 4), 0);
	ck_assert_uint_eq(strlen(resp.request_id), 4 + 26);
	for (i = 4; resp.request_id[i]; i++)
		ck_assert_ptr_nonnull(strchr("0123456789abcdefghjkmnpqrstvwxyz",
					     resp.request_id[i]));
	ck_assert_str_eq(header("X-Request-Id"), resp.request_id);
}

START_TEST(bad_request_id_is_replaced)
{
	char id[101], first[64];

	request("GET", "/v1/external/nope", NULL, "abc 123");
	assert_generated_id();
	assert_error(404, "not_found");
	memset(id, 'a', 100);
	id[100] = '\0';
	request("GET", "/v1/external/nope", NULL, id);
	assert_generated_id();
	id[64] = '\0';
	request("GET", "/v1/external/nope", NULL, id);
	assert_generated_id();
	request("GET", "/v1/external/nope", NULL, "\"}injected");
	assert_generated_id();
	request("GET", "/v1/external/nope", NULL, "");
	assert_generated_id();
	request("GET", "/v1/external/nope", NULL, NULL);
	assert_generated_id();
	memcpy(first, resp.request_id, sizeof(first));
	request("GET", "/v1/external/nope", NULL, NULL);
	assert_generated_id();
	ck_assert_str_ne(first, resp.request_id);
}
END_TEST

START_TEST(app_without_serve_has_no_openapi)
{
	struct wl_app *bare;
	char err[256] = "";
	struct wl_app *saved = app;

	bare = wl_app_new(cfg, 0, err, sizeof(err));
	ck_assert_msg(bare != NULL, "refused: %s", err);
	app = bare;
	request("GET", "/v1/external/openapi.json", NULL, NULL);
	app = saved;
	wl_app_free(bare);
	assert_error(404, "not_found");
}
END_TEST

START_TEST(app_refuses_a_short_secret)
{
	struct wl_config *c;
	struct wl_app *app2;
	char path[64], err[512] = "";

	write_temp(path, "too short\n");
	c = config_with(path, openapi_path);
	app2 = wl_app_new(c, WL_APP_SERVE, err, sizeof(err));
	unlink(path);
	wl_app_free(app2);
	wl_config_free(c);
	ck_assert_ptr_null(app2);
	ck_assert_ptr_nonnull(strstr(err, "secret_key_file"));
}
END_TEST

START_TEST(app_names_the_key_of_a_missing_or_unnamed_secret_file)
{
	struct wl_config *c;
	struct wl_app *app2;
	char err[512] = "";

	c = config_with("/nonexistent/secret.key", openapi_path);
	app2 = wl_app_new(c, WL_APP_SERVE, err, sizeof(err));
	wl_app_free(app2);
	wl_config_free(c);
	ck_assert_ptr_null(app2);
	ck_assert_str_eq(err, "[server] secret_key_file: /nonexistent/secret.key: "
			      "No such file or directory");
	c = config_with("", openapi_path);
	app2 = wl_app_new(c, WL_APP_SERVE, err, sizeof(err));
	wl_app_free(app2);
	wl_config_free(c);
	ck_assert_ptr_null(app2);
	ck_assert_str_eq(err, "[server] secret_key_file: no file named");
}
END_TEST

START_TEST(app_refuses_a_missing_openapi_file)
{
	struct wl_config *c;
	struct wl_app *app2;
	char err[512] = "";

	c = config_with(secret_path, "/nonexistent/openapi.json");
	app2 = wl_app_new(c, WL_APP_SERVE, err, sizeof(err));
	wl_app_free(app2);
	wl_config_free(c);
	ck_assert_ptr_null(app2);
	ck_assert_ptr_nonnull(strstr(err, "/nonexistent/openapi.json"));
	wl_app_free(NULL);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Query strings. */

START_TEST(query_finds_a_parameter)
{
	char out[32];

	ck_assert_int_eq(wl_query_get("a=1&b=two&c=3", "b", out, sizeof(out)),
			 1);
	ck_assert_str_eq(out, "two");
	ck_assert_int_eq(wl_query_get("a=1&b=two&c=3", "a", out, sizeof(out)),
			 1);
	ck_assert_str_eq(out, "1");
	ck_assert_int_eq(wl_query_get("a=1&b=two&c=3", "c", out, sizeof(out)),
			 1);
	ck_assert_str_eq(out, "3");
	ck_assert_int_eq(wl_query_get("&&limit=5&", "limit", out, sizeof(out)),
			 1);
	ck_assert_str_eq(out, "5");
	ck_assert_int_eq(wl_query_get("a=", "a", out, sizeof(out)), 1);
	ck_assert_str_eq(out, "");
	ck_assert_int_eq(wl_query_get("flag&a=1", "flag", out, sizeof(out)),
			 1);
	ck_assert_str_eq(out, "");
}
END_TEST

START_TEST(query_reports_an_absent_parameter)
{
	char out[32];

	ck_assert_int_eq(wl_query_get("a=1&b=2", "c", out, sizeof(out)), 0);
	/* A name that merely starts with the one wanted is another. */
	ck_assert_int_eq(wl_query_get("ab=1&xa=2", "a", out, sizeof(out)), 0);
	ck_assert_int_eq(wl_query_get("a=1", "ab", out, sizeof(out)), 0);
	ck_assert_int_eq(wl_query_get("", "a", out, sizeof(out)), 0);
	ck_assert_int_eq(wl_query_get(NULL, "a", out, sizeof(out)), 0);
	/* Names are not decoded: a%62 is not ab. */
	ck_assert_int_eq(wl_query_get("a%62=1", "ab", out, sizeof(out)), 0);
}
END_TEST

START_TEST(query_repeated_parameter_is_refused)
{
	char out[32];

	ck_assert_int_eq(wl_query_get("a=1&a=2", "a", out, sizeof(out)), -1);
	ck_assert_int_eq(wl_query_get("a=1&b=0&a=1", "a", out, sizeof(out)),
			 -1);
	ck_assert_int_eq(wl_query_get("a&a", "a", out, sizeof(out)), -1);
}
END_TEST

START_TEST(query_values_are_percent_decoded)
{
	char out[32];

	ck_assert_int_eq(wl_query_get("q=a%20b%2Fc%3d", "q", out, sizeof(out)),
			 1);
	ck_assert_str_eq(out, "a b/c=");
	ck_assert_int_eq(wl_query_get("q=caf%C3%a9", "q", out, sizeof(out)), 1);
	ck_assert_str_eq(out, "caf\xc3\xa9");
	ck_assert_int_eq(wl_query_get("q=%26&r=1", "q", out, sizeof(out)), 1);
	ck_assert_str_eq(out, "&");
}
END_TEST

START_TEST(query_plus_is_a_space)
{
	char out[32];

	ck_assert_int_eq(wl_query_get("q=a+b++c", "q", out, sizeof(out)), 1);
	ck_assert_str_eq(out, "a b  c");
	ck_assert_int_eq(wl_query_get("q=1%2B1", "q", out, sizeof(out)), 1);
	ck_assert_str_eq(out, "1+1");
}
END_TEST

START_TEST(query_bad_escape_is_refused)
{
	static const char *const bad[] = {
	    "q=%", "q=%2", "q=%zz", "q=%2g", "q=%g2", "q=ab%", "q=%2&r=1",
	};
	char out[32];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		ck_assert_msg(wl_query_get(bad[i], "q", out, sizeof(out)) == -1,
			      "accepted %s", bad[i]);
}
END_TEST

START_TEST(query_too_long_is_refused)
{
	char out[4];

	ck_assert_int_eq(wl_query_get("q=abc", "q", out, sizeof(out)), 1);
	ck_assert_str_eq(out, "abc");
	ck_assert_int_eq(wl_query_get("q=abcd", "q", out, sizeof(out)), -1);
	/* Decoded length is what counts. */
	ck_assert_int_eq(wl_query_get("q=%41%42%43", "q", out, sizeof(out)),
			 1);
	ck_assert_str_eq(out, "ABC");
}
END_TEST

START_TEST(query_nul_and_invalid_utf8_are_refused)
{
	char out[32];

	ck_assert_int_eq(wl_query_get("q=a%00b", "q", out, sizeof(out)), -1);
	ck_assert_int_eq(wl_query_get("q=%00", "q", out, sizeof(out)), -1);
	ck_assert_int_eq(wl_query_get("q=%FF", "q", out, sizeof(out)), -1);
	ck_assert_int_eq(wl_query_get("q=%C0%AF", "q", out, sizeof(out)), -1);
	ck_assert_int_eq(wl_query_get("q=%ED%A0%80", "q", out, sizeof(out)),
			 -1);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Error codes. */

START_TEST(codes_have_their_statuses)
{
	ck_assert_str_eq(wl_code_name(WL_C_RATE_LIMITED), "rate_limited");
	ck_assert_int_eq(wl_code_status(WL_C_RATE_LIMITED), 429);
	ck_assert_str_eq(wl_code_name(WL_C_GUEST_ALLOWANCE_EXCEEDED),
			 "guest_allowance_exceeded");
	ck_assert_int_eq(wl_code_status(WL_C_GUEST_ALLOWANCE_EXCEEDED), 402);
	ck_assert_str_eq(wl_code_name(WL_C_PAYLOAD_TOO_LARGE),
			 "payload_too_large");
	ck_assert_int_eq(wl_code_status(WL_C_PAYLOAD_TOO_LARGE), 400);
	ck_assert_str_eq(wl_code_name(WL_C_INVALID_REQUEST), "invalid_request");
	ck_assert_int_eq(wl_code_status(WL_C_INVALID_REQUEST), 400);
	ck_assert_str_eq(wl_code_name(WL_C_MISSING_API_KEY), "missing_api_key");
	ck_assert_int_eq(wl_code_status(WL_C_MISSING_API_KEY), 401);
	ck_assert_str_eq(wl_code_name(WL_C_INSUFFICIENT_SCOPE),
			 "insufficient_scope");
	ck_assert_int_eq(wl_code_status(WL_C_INSUFFICIENT_SCOPE), 403);
	ck_assert_int_eq(wl_code_status(WL_C_NOT_FOUND), 404);
	ck_assert_int_eq(wl_code_status(WL_C_METHOD_NOT_ALLOWED), 405);
	ck_assert_str_eq(wl_code_name(WL_C_IDEMPOTENCY_CONFLICT),
			 "idempotency_conflict");
	ck_assert_int_eq(wl_code_status(WL_C_IDEMPOTENCY_CONFLICT), 409);
	ck_assert_int_eq(wl_code_status(WL_C_INTERNAL_ERROR), 500);
	ck_assert_str_eq(wl_code_name(WL_C_UNAVAILABLE), "unavailable");
	ck_assert_int_eq(wl_code_status(WL_C_UNAVAILABLE), 503);
}
END_TEST

START_TEST(every_code_has_a_name_and_a_known_status)
{
	static const int statuses[] = {400, 401, 402, 403, 404,
				       405, 409, 429, 500, 503};
	size_t i, j, k;
	int st;

	for (i = 0; i < WL_C__MAX; i++) {
		const char *name = wl_code_name((enum wl_code)i);
		ck_assert_msg(name != NULL && *name != '\0', "code %zu", i);
		for (k = 0; name[k]; k++)
			ck_assert_msg((name[k] >= 'a' && name[k] <= 'z') ||
					  name[k] == '_',
				      "code %zu: %s", i, name);
		st = wl_code_status((enum wl_code)i);
		for (j = 0; j < sizeof(statuses) / sizeof(*statuses); j++)
			if (statuses[j] == st)
				break;
		ck_assert_msg(j < sizeof(statuses) / sizeof(*statuses),
			      "%s: status %d", name, st);
		ck_assert_str_ne(wl_http_reason(st), "Unknown");
		/* Names are unique. */
		for (j = 0; j < i; j++)
			ck_assert_str_ne(name, wl_code_name((enum wl_code)j));
	}
	ck_assert_str_eq(wl_code_name(WL_C__MAX), "internal_error");
	ck_assert_int_eq(wl_code_status(WL_C__MAX), 500);
}
END_TEST

START_TEST(reasons_name_the_statuses)
{
	ck_assert_str_eq(wl_http_reason(200), "OK");
	ck_assert_str_eq(wl_http_reason(404), "Not Found");
	ck_assert_str_eq(wl_http_reason(429), "Too Many Requests");
	ck_assert_str_eq(wl_http_reason(503), "Service Unavailable");
	ck_assert_str_eq(wl_http_reason(418), "Unknown");
}
END_TEST

Suite *
suite_router(void)
{
	Suite *s = suite_create("router");
	TCase *th = tcase_create("handle");
	TCase *tq = tcase_create("query");
	TCase *tc = tcase_create("codes");

	tcase_add_unchecked_fixture(th, setup_files, teardown_files);
	tcase_add_checked_fixture(th, setup_app, teardown_app);
	tcase_add_test(th, app_starts_with_the_database_down);
	tcase_add_test(th, openapi_is_served_verbatim);
	tcase_add_test(th, unknown_route_is_not_found);
	tcase_add_test(th, path_outside_the_base_is_not_found);
	tcase_add_test(th,
		       path_filling_the_buffer_then_empty_segments_is_not_found);
	tcase_add_test(th, wrong_method_is_not_allowed_with_allow_header);
	tcase_add_test(th, not_found_has_no_allow_header);
	tcase_add_test(th, id_ending_in_a_space_is_not_found);
	tcase_add_test(th, me_without_authorization_is_missing_api_key);
	tcase_add_test(th, me_with_malformed_key_is_invalid_api_key);
	tcase_add_test(th, well_formed_key_with_database_down_is_unavailable);
	tcase_add_test(th, health_with_database_down_is_unavailable);
	tcase_add_test(th, proposed_request_id_is_kept);
	tcase_add_test(th, bad_request_id_is_replaced);
	tcase_add_test(th, app_without_serve_has_no_openapi);
	tcase_add_test(th, app_refuses_a_short_secret);
	tcase_add_test(th, app_names_the_key_of_a_missing_or_unnamed_secret_file);
	tcase_add_test(th, app_refuses_a_missing_openapi_file);
	tcase_set_timeout(th, 30);
	suite_add_tcase(s, th);
	tcase_add_test(tq, query_finds_a_parameter);
	tcase_add_test(tq, query_reports_an_absent_parameter);
	tcase_add_test(tq, query_repeated_parameter_is_refused);
	tcase_add_test(tq, query_values_are_percent_decoded);
	tcase_add_test(tq, query_plus_is_a_space);
	tcase_add_test(tq, query_bad_escape_is_refused);
	tcase_add_test(tq, query_too_long_is_refused);
	tcase_add_test(tq, query_nul_and_invalid_utf8_are_refused);
	suite_add_tcase(s, tq);
	tcase_add_test(tc, codes_have_their_statuses);
	tcase_add_test(tc, every_code_has_a_name_and_a_known_status);
	tcase_add_test(tc, reasons_name_the_statuses);
	suite_add_tcase(s, tc);
	return s;
}
