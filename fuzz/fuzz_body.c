/*
 * Request bodies of every mutating route, through the whole pipeline
 * (routing, key, scopes, idempotency, the handler's validation) over the
 * fake database.  The first byte picks the route, the rest is the body.
 */
#include "config.h"

#include <stdlib.h>

#include "extern.h"
#include "fuzz.h"

static const struct {
	const char *method, *path;
} routes[] = {
    {"POST", WL_BASE_PATH "/waitlist/entries"},
    {"PATCH", WL_BASE_PATH "/waitlist/entries/ent_fuzz"},
    {"PATCH", WL_BASE_PATH "/waitlist/entries/ent_fuzz/status"},
    {"POST", WL_BASE_PATH "/bookings/ent_fuzz/reschedule"},
    {"POST", WL_BASE_PATH "/bookings/ent_fuzz/cancel"},
    {"POST", WL_BASE_PATH "/webhooks/subscriptions"},
    {"DELETE", WL_BASE_PATH "/webhooks/subscriptions/whs_fuzz"},
    {"POST", WL_BASE_PATH "/webhooks/subscriptions/whs_fuzz/resume"},
    {"POST", WL_BASE_PATH "/webhooks/subscriptions/whs_fuzz/rotate-secret"},
    {"POST", WL_BASE_PATH "/webhooks/deliveries/dlv_fuzz/retry"},
};

/* The typed getters on every member, as handlers use them. */
static void
walk(const cJSON *obj)
{
	const cJSON *it, *sub;
	const char *s;
	long long ll;
	int b;

	for (it = obj->child; it; it = it->next) {
		if (wl_json_get_string(obj, it->string, &s) == 1)
			(void)wl_utf8_len(s);
		(void)wl_json_get_int(obj, it->string, &ll);
		(void)wl_json_get_bool(obj, it->string, &b);
		if (wl_json_get_object(obj, it->string, &sub) == 1)
			walk(sub);
		(void)wl_json_get_array(obj, it->string, &sub);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	struct wl_http_request req;
	struct wl_http_response resp;
	cJSON *root;
	char *body;
	size_t r;

	if (n < 1 || n > WL_BODY_MAX + 1)
		return 0;
	r = data[0] % (sizeof(routes) / sizeof(*routes));
	body = fuzz_str(data + 1, n - 1);
	if ((root = wl_json_parse_object(body, n - 1)) != NULL) {
		walk(root);
		cJSON_Delete(root);
	}
	memset(&req, 0, sizeof(req));
	req.method = routes[r].method;
	req.path = routes[r].path;
	req.query = "";
	req.authorization = "Bearer " FUZZ_KEY;
	req.content_type = "application/json";
	req.idempotency_key = "fuzz";
	req.body = body;
	req.body_len = n - 1;
	wl_handle(fuzz_app(), &req, &resp);
	fuzz_check(&resp);
	wl_http_response_clear(&resp);
	free(body);
	return 0;
}
