/*
 * Tenants: their settings as read from the database, eligibility for the
 * API, and the limits object of GET /me.
 */
#include "config.h"

#include <stdlib.h>

#include "extern.h"

/* Plans that include the integration API.  "none" (or empty) means no
 * subscription at all; any other plan name needs an upgrade. */
static const char *const api_plans[] = {"pro", "business", "enterprise",
					"premium"};

/*
 * Fill t from the 18 tenant columns starting at column c0 of row r (see
 * TENANT_COLS in stmt.c).  Returns WL_OK or WL_ERR_NOMEM; clear with
 * wl_tenant_clear().
 */
int
wl_tenant_from_row(const struct wl_rows *rows, size_t r, size_t c0,
		   struct wl_tenant *t)
{
	const char *state = wl_rows_str(rows, r, c0 + 6);
	size_t i;
	int st;

	memset(t, 0, sizeof(*t));
	snprintf(t->id, sizeof(t->id), "%s", wl_rows_str(rows, r, c0));
	t->name = strdup(wl_rows_str(rows, r, c0 + 1));
	t->plan = strdup(wl_rows_str(rows, r, c0 + 2));
	if (t->name == NULL || t->plan == NULL) {
		wl_tenant_clear(t);
		return WL_ERR_NOMEM;
	}
	t->public_api = (int)wl_rows_int(rows, r, c0 + 3);
	t->webhooks = (int)wl_rows_int(rows, r, c0 + 4);
	t->zapier = (int)wl_rows_int(rows, r, c0 + 5);
	/* A state the service does not know (written by hand) closes the
	 * account rather than open it. */
	st = wl_name_index(wl_state_names, WL_STATE__MAX, state);
	t->state = st < 0 ? WL_STATE_DISABLED : (enum wl_state)st;
	t->email_verified = (int)wl_rows_int(rows, r, c0 + 7);
	t->billing = (int)wl_rows_int(rows, r, c0 + 8);
	t->guest_allowance = wl_rows_int(rows, r, c0 + 9);
	for (i = 0; i < WL_LIMIT__MAX; i++)
		t->limits[i] = wl_rows_int(rows, r, c0 + 10 + i);
	return WL_OK;
}

void
wl_tenant_clear(struct wl_tenant *t)
{
	free(t->name);
	free(t->plan);
	t->name = t->plan = NULL;
}

/*
 * Why the API is unavailable, checked in order: launch flag, account
 * state, email verification, billing, plan.  WL_C__MAX when available.
 */
enum wl_code
wl_tenant_unavailable(const struct wl_tenant *t)
{
	size_t i;

	if (!t->public_api)
		return WL_C_LAUNCH_DISABLED;
	if (t->state == WL_STATE_DISABLED)
		return WL_C_DISABLED_ACCOUNT;
	if (t->state == WL_STATE_DEMO)
		return WL_C_DEMO_ACCOUNT;
	if (!t->email_verified)
		return WL_C_EMAIL_VERIFICATION_REQUIRED;
	if (!t->billing)
		return WL_C_BILLING_UNAVAILABLE;
	if (t->plan[0] == '\0' || strcmp(t->plan, "none") == 0)
		return WL_C_SUBSCRIPTION_REQUIRED;
	for (i = 0; i < sizeof(api_plans) / sizeof(*api_plans); i++)
		if (strcmp(t->plan, api_plans[i]) == 0)
			return WL_C__MAX;
	return WL_C_UPGRADE_REQUIRED;
}

/*
 * The rate limits are at least 1: the rate limiter reads 0 as no limit at
 * all, which GET /me would show as none allowed.  So are the key expiry
 * limits: a key that expires at its creation is no key.  (activeKeys and
 * webhookSubscriptions may be 0: none allowed.  A default expiry above
 * the maximum is allowed: keys get the maximum.)  With before, only the
 * limits that differ from it are checked, so that settings stored before
 * these rules can still be changed.  Returns 0 or -1 with a message.
 */
int
wl_limits_check(const long long *before, const long long *l, char *err,
		size_t errsz)
{
	static const enum wl_limit least_one[] = {
	    WL_LIMIT_READS,	     WL_LIMIT_WRITES,
	    WL_LIMIT_TENANT_READS,   WL_LIMIT_TENANT_WRITES,
	    WL_LIMIT_DEFAULT_EXPIRY, WL_LIMIT_MAX_EXPIRY};
	size_t i;

	for (i = 0; i < sizeof(least_one) / sizeof(*least_one); i++)
		if (l[least_one[i]] < 1 &&
		    (before == NULL || before[least_one[i]] != l[least_one[i]])) {
			snprintf(err, errsz, "limit %s must be at least 1",
				 wl_limit_names[least_one[i]]);
			return -1;
		}
	return 0;
}

/* The limits object: the eight numbers by their public names. */
cJSON *
wl_limits_json(const struct wl_tenant *t)
{
	cJSON *o = cJSON_CreateObject();
	size_t i;

	for (i = 0; o && i < WL_LIMIT__MAX; i++)
		wl_json_add_int(o, wl_limit_names[i], t->limits[i]);
	return o;
}
