/*
 * The service's enumerations and their string tables: error codes with
 * their HTTP statuses, scopes, limits, account states and key types.
 * Adding a value is one line here and one in extern.h.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "extern.h"

static const struct {
	const char *name;
	int status;
} codes[WL_C__MAX] = {
    [WL_C_INVALID_REQUEST] = {"invalid_request", 400},
    [WL_C_INVALID_JSON] = {"invalid_json", 400},
    [WL_C_VALIDATION_FAILED] = {"validation_failed", 400},
    [WL_C_INVALID_CURSOR] = {"invalid_cursor", 400},
    [WL_C_CURSOR_EXPIRED] = {"cursor_expired", 400},
    [WL_C_IDEMPOTENCY_KEY_REQUIRED] = {"idempotency_key_required", 400},
    [WL_C_INVALID_TRANSITION] = {"invalid_transition", 400},
    [WL_C_DESTINATION_NOT_ALLOWED] = {"destination_not_allowed", 400},
    [WL_C_PAYLOAD_TOO_LARGE] = {"payload_too_large", 400},
    [WL_C_MISSING_API_KEY] = {"missing_api_key", 401},
    [WL_C_INVALID_API_KEY] = {"invalid_api_key", 401},
    [WL_C_EXPIRED_API_KEY] = {"expired_api_key", 401},
    [WL_C_REVOKED_API_KEY] = {"revoked_api_key", 401},
    [WL_C_SUBSCRIPTION_REQUIRED] = {"subscription_required", 402},
    [WL_C_UPGRADE_REQUIRED] = {"upgrade_required", 402},
    [WL_C_BILLING_UNAVAILABLE] = {"billing_unavailable", 402},
    [WL_C_GUEST_ALLOWANCE_EXCEEDED] = {"guest_allowance_exceeded", 402},
    [WL_C_INSUFFICIENT_SCOPE] = {"insufficient_scope", 403},
    [WL_C_RESOURCE_FORBIDDEN] = {"resource_forbidden", 403},
    [WL_C_LAUNCH_DISABLED] = {"launch_disabled", 403},
    [WL_C_DISABLED_ACCOUNT] = {"disabled_account", 403},
    [WL_C_DEMO_ACCOUNT] = {"demo_account", 403},
    [WL_C_EMAIL_VERIFICATION_REQUIRED] = {"email_verification_required", 403},
    [WL_C_MANAGEMENT_FORBIDDEN] = {"management_forbidden", 403},
    [WL_C_NOT_FOUND] = {"not_found", 404},
    [WL_C_METHOD_NOT_ALLOWED] = {"method_not_allowed", 405},
    [WL_C_VERSION_CONFLICT] = {"version_conflict", 409},
    [WL_C_STATUS_CONFLICT] = {"status_conflict", 409},
    [WL_C_BOOKING_UNAVAILABLE] = {"booking_unavailable", 409},
    [WL_C_QUEUE_UNAVAILABLE] = {"queue_unavailable", 409},
    [WL_C_IDEMPOTENCY_CONFLICT] = {"idempotency_conflict", 409},
    [WL_C_IDEMPOTENCY_IN_PROGRESS] = {"idempotency_in_progress", 409},
    [WL_C_LIMIT_REACHED] = {"limit_reached", 409},
    [WL_C_RATE_LIMITED] = {"rate_limited", 429},
    [WL_C_INTERNAL_ERROR] = {"internal_error", 500},
    [WL_C_UNAVAILABLE] = {"unavailable", 503},
};

const char *
wl_code_name(enum wl_code c)
{
	return c < WL_C__MAX ? codes[c].name : "internal_error";
}

int
wl_code_status(enum wl_code c)
{
	return c < WL_C__MAX ? codes[c].status : 500;
}

const char *const wl_scope_names[WL_SCOPE__MAX] = {
    [WL_SCOPE_WAITLIST_READ] = "waitlist:read",
    [WL_SCOPE_WAITLIST_WRITE] = "waitlist:write",
    [WL_SCOPE_GUEST_READ] = "guest:read",
    [WL_SCOPE_EVENTS_READ] = "events:read",
    [WL_SCOPE_WEBHOOKS_READ] = "webhooks:read",
    [WL_SCOPE_WEBHOOKS_WRITE] = "webhooks:write",
    [WL_SCOPE_ANALYTICS_READ] = "analytics:read",
};

const char *const wl_limit_names[WL_LIMIT__MAX] = {
    [WL_LIMIT_READS] = "readsPerMinute",
    [WL_LIMIT_WRITES] = "writesPerMinute",
    [WL_LIMIT_TENANT_READS] = "tenantReadsPerMinute",
    [WL_LIMIT_TENANT_WRITES] = "tenantWritesPerMinute",
    [WL_LIMIT_ACTIVE_KEYS] = "activeKeys",
    [WL_LIMIT_WEBHOOK_SUBS] = "webhookSubscriptions",
    [WL_LIMIT_DEFAULT_EXPIRY] = "defaultKeyExpiryDays",
    [WL_LIMIT_MAX_EXPIRY] = "maximumKeyExpiryDays",
};

const long wl_limit_defaults[WL_LIMIT__MAX] = {
    600, 120, 3000, 600, 10, 10, 90, 365,
};

/* The index of s among the n names of one of these tables, or -1 (also
 * for NULL). */
int
wl_name_index(const char *const *names, int n, const char *s)
{
	int i;

	for (i = 0; s && i < n; i++)
		if (strcmp(s, names[i]) == 0)
			return i;
	return -1;
}

const char *const wl_state_names[WL_STATE__MAX] = {"active", "disabled",
						   "demo"};
const char *const wl_itype_names[WL_ITYPE__MAX] = {"api", "zapier"};
const char *const wl_method_names[WL_METHOD__MAX] = {"GET", "POST", "PATCH",
						     "DELETE"};

static const char *const errstrs[WL_ERR__MAX] = {
    [WL_OK] = "success",
    [WL_ERR_NOMEM] = "out of memory",
    [WL_ERR_CONFIG] = "configuration error",
    [WL_ERR_DB] = "database error",
    [WL_ERR_DB_GONE] = "database connection lost",
    [WL_ERR_DB_RETRY] = "transaction conflict",
    [WL_ERR_BUSY] = "lock wait timeout",
    [WL_ERR_INVALID] = "invalid input",
    [WL_ERR_NOTFOUND] = "not found",
    [WL_ERR_CONFLICT] = "conflict",
    [WL_ERR_LIMIT] = "limit reached",
    [WL_ERR_IO] = "input/output error",
    [WL_ERR_CRYPTO] = "cryptographic failure",
    [WL_ERR_REFUSED] = "refused by the database",
};

/* A message for an error value. */
const char *
wl_strerror(enum wl_err e)
{
	return e < WL_ERR__MAX && errstrs[e] ? errstrs[e] : "unknown error";
}

/* Parse "a,b" into a scope bit mask.  Returns 0, or -1 on an unknown
 * scope.  Empty items are ignored. */
int
wl_scopes_parse(const char *s, unsigned *mask)
{
	char **v = NULL;
	size_t n = 0, i, j;
	int rc = 0;

	*mask = 0;
	if (wl_split_list(s, &v, &n) < 0)
		return -1;
	for (i = 0; i < n; i++) {
		for (j = 0; j < WL_SCOPE__MAX; j++)
			if (strcmp(v[i], wl_scope_names[j]) == 0)
				break;
		if (j == WL_SCOPE__MAX) {
			rc = -1;
			break;
		}
		*mask |= 1u << j;
	}
	wl_strv_free(v, n);
	return rc;
}

/* Split a comma-separated list, trimming nothing and dropping empty
 * items.  Returns the count or -1. */
int
wl_split_list(const char *s, char ***out, size_t *n)
{
	const char *p = s, *e;
	char **v = NULL, **nv;

	*out = NULL;
	*n = 0;
	while (p && *p) {
		e = strchr(p, ',');
		if (e == NULL)
			e = p + strlen(p);
		if (e > p) {
			if ((nv = realloc(v, (*n + 1) * sizeof(*v))) == NULL)
				goto fail;
			v = nv;
			if ((v[*n] = strndup(p, (size_t)(e - p))) == NULL)
				goto fail;
			(*n)++;
		}
		p = *e ? e + 1 : e;
	}
	*out = v;
	return (int)*n;
fail:
	wl_strv_free(v, *n);
	*n = 0;
	return -1;
}

void
wl_strv_free(char **v, size_t n)
{
	size_t i;

	for (i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

/* A JSON array of strings (as stored in the database) into a vector.
 * Returns 0 or -1. */
int
wl_strv_from_json(const char *text, char ***out, size_t *n)
{
	cJSON *a, *it;
	char **v = NULL;
	size_t i = 0;

	*out = NULL;
	*n = 0;
	if (text == NULL || *text == '\0')
		return 0;
	if ((a = cJSON_Parse(text)) == NULL || !cJSON_IsArray(a))
		goto fail;
	if ((v = calloc((size_t)cJSON_GetArraySize(a) + 1, sizeof(*v))) == NULL)
		goto fail;
	cJSON_ArrayForEach(it, a) {
		if (!cJSON_IsString(it) ||
		    (v[i] = strdup(it->valuestring)) == NULL)
			goto fail;
		i++;
	}
	cJSON_Delete(a);
	*out = v;
	*n = i;
	return 0;
fail:
	wl_strv_free(v, i);
	cJSON_Delete(a);
	return -1;
}
