/*
 * Validation of the guest fields an entry carries: each check names the
 * offending field in its 400 answer.  Used by creation and by edits.
 */
#include "config.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>

#include "extern.h"

/* Is every member of obj named in allowed (NULL-terminated)?  Replies 400
 * naming the first stranger and returns -1 if not. */
int
wl_body_only(struct wl_ctx *ctx, const cJSON *obj, const char *const *allowed)
{
	const cJSON *it;
	size_t i;

	for (it = obj->child; it; it = it->next) {
		for (i = 0; allowed[i]; i++)
			if (strcmp(it->string, allowed[i]) == 0)
				break;
		if (allowed[i] == NULL) {
			wl_reply_error(ctx, WL_C_VALIDATION_FAILED,
				       "%.*s is not a field this operation "
				       "accepts",
				       (int)wl_utf8_prefix(it->string, 100),
				       it->string);
			return -1;
		}
	}
	return 0;
}

/* The request body as a JSON object, or NULL after replying 400. */
cJSON *
wl_body_json(struct wl_ctx *ctx)
{
	cJSON *root;

	if (ctx->http->body_len == 0) {
		wl_reply_error(ctx, WL_C_INVALID_JSON,
			       "a JSON object body is required");
		return NULL;
	}
	root = wl_json_parse_object(ctx->http->body, ctx->http->body_len);
	if (root == NULL)
		wl_reply_error(ctx, WL_C_INVALID_JSON,
			       "the body is not a valid JSON object (UTF-8, "
			       "no duplicate members)");
	return root;
}

/* No control characters but tabs, and line breaks when multiline. */
static int
no_controls(const char *s, int multiline)
{
	unsigned char c;

	for (; (c = (unsigned char)*s) != '\0'; s++)
		if ((c < 0x20 || c == 0x7f) && c != '\t' &&
		    !(multiline && (c == '\n' || c == '\r')))
			return 0;
	return 1;
}

/*
 * A string member: absent or null gives 0 (with *out NULL), present and
 * valid gives 1, otherwise replies 400 and returns -1.  min/max count
 * characters; control characters are refused unless multiline.
 */
int
wl_field_string(struct wl_ctx *ctx, const cJSON *obj, const char *name,
		size_t min, size_t max, int multiline, const char **out)
{
	int rc = wl_json_get_string(obj, name, out);
	size_t n;

	if (rc == 0)
		return 0;
	if (rc < 0) {
		wl_reply_error(ctx, WL_C_VALIDATION_FAILED,
			       "%s must be a string", name);
		return -1;
	}
	n = wl_utf8_len(*out);
	if (n < min || n > max) {
		wl_reply_error(ctx, WL_C_VALIDATION_FAILED,
			       "%s must be %zu to %zu characters", name, min,
			       max);
		return -1;
	}
	if (!no_controls(*out, multiline)) {
		wl_reply_error(ctx, WL_C_VALIDATION_FAILED,
			       multiline ? "%s must not contain control "
					   "characters other than line breaks "
					   "and tabs"
					 : "%s must not contain control "
					   "characters other than tabs",
			       name);
		return -1;
	}
	return 1;
}

/* A non-blank guest name. */
int
wl_field_name(struct wl_ctx *ctx, const cJSON *obj, const char **out)
{
	int rc = wl_field_string(ctx, obj, "fullName", 1, 200, 0, out);

	if (rc <= 0)
		return rc;
	if (wl_utf8_blank(*out)) {
		wl_reply_error(ctx, WL_C_VALIDATION_FAILED,
			       "fullName must not be blank");
		return -1;
	}
	return 1;
}

/* An E.164 phone number: "+" then 7 to 15 digits, not starting with 0. */
int
wl_field_phone(struct wl_ctx *ctx, const cJSON *obj, const char **out)
{
	int rc = wl_field_string(ctx, obj, "phone", 1, 16, 0, out);
	const char *p;

	if (rc <= 0)
		return rc;
	p = *out;
	if (p[0] != '+' || p[1] < '1' || p[1] > '9' || strlen(p) < 8)
		goto bad;
	for (p++; *p; p++)
		if (!isdigit((unsigned char)*p))
			goto bad;
	return 1;
bad:
	wl_reply_error(ctx, WL_C_VALIDATION_FAILED,
		       "phone must be an E.164 number such as +33612345678");
	return -1;
}

/* An integer member within [min, max]; same returns as wl_field_string. */
int
wl_field_int(struct wl_ctx *ctx, const cJSON *obj, const char *name,
	     long long min, long long max, long long *out)
{
	int rc = wl_json_get_int(obj, name, out);

	if (rc == 0)
		return 0;
	if (rc < 0 || *out < min || *out > max) {
		wl_reply_error(ctx, WL_C_VALIDATION_FAILED,
			       "%s must be an integer from %lld to %lld", name,
			       min, max);
		return -1;
	}
	return 1;
}

/* The required expectedVersion (an integer >= 1); 0 or -1 after a 400. */
int
wl_field_version(struct wl_ctx *ctx, const cJSON *obj, long long *version)
{
	int rc = wl_field_int(ctx, obj, "expectedVersion", 1, 2147483647,
			      version);

	if (rc == 0)
		wl_reply_error(ctx, WL_C_VALIDATION_FAILED,
			       "expectedVersion is required");
	return rc == 1 ? 0 : -1;
}

/*
 * smsConsent {source, consentedAt, disclosureVersion}.  consentedAt takes
 * any offset, as every timestamp sent does, and is kept in UTC.  Returns
 * 0 absent, 1 with *out a normalized copy (caller frees), -1 after 400.
 */
int
wl_field_consent(struct wl_ctx *ctx, const cJSON *obj, cJSON **out)
{
	static const char *const keys[] = {"source", "consentedAt",
					   "disclosureVersion", NULL};
	const char *src, *at, *ver;
	const cJSON *c;
	int64_t ms;
	int rc;

	*out = NULL;
	if ((rc = wl_json_get_object(obj, "smsConsent", &c)) == 0)
		return 0;
	if (rc < 0) {
		wl_reply_error(ctx, WL_C_VALIDATION_FAILED,
			       "smsConsent must be an object");
		return -1;
	}
	if (wl_body_only(ctx, c, keys) < 0)
		return -1;
	if (wl_json_get_string(c, "source", &src) != 1 || *src == '\0' ||
	    wl_utf8_len(src) > 100 || !no_controls(src, 0) ||
	    wl_json_get_string(c, "disclosureVersion", &ver) != 1 ||
	    *ver == '\0' || wl_utf8_len(ver) > 100 || !no_controls(ver, 0)) {
		wl_reply_error(ctx, WL_C_VALIDATION_FAILED,
			       "smsConsent.source and "
			       "smsConsent.disclosureVersion must be strings "
			       "of 1 to 100 characters");
		return -1;
	}
	if (wl_json_get_string(c, "consentedAt", &at) != 1 ||
	    wl_iso_to_ms(at, &ms) < 0) {
		wl_reply_error(ctx, WL_C_VALIDATION_FAILED,
			       "smsConsent.consentedAt must be an ISO 8601 "
			       "timestamp with an offset, such as "
			       "2026-01-31T12:00:00Z");
		return -1;
	}
	*out = cJSON_CreateObject();
	wl_json_add_str(*out, "source", src);
	wl_json_add_ts(*out, "consentedAt", ms);
	wl_json_add_str(*out, "disclosureVersion", ver);
	return 1;
}

/* The public custom fields of one line, in display order. */
int
wl_queue_fields(struct wl_ctx *ctx, const char *queue_id,
		struct wl_rows **rows)
{
	return wl_cached_exec(ctx->app->keys, ctx->app->db, STMT_LINE_FIELDS,
			      SQL_ARGS(SQL_STR(queue_id)), 1, rows);
}

static int
value_ok(struct wl_ctx *ctx, const struct wl_rows *f, size_t r,
	 const cJSON *v)
{
	const char *id = wl_rows_str(f, r, 1), *type = wl_rows_str(f, r, 3);
	cJSON *opts, *it;
	int ok = 0;

	if (strcmp(type, "number") == 0) {
		if (cJSON_IsNumber(v) && isfinite(v->valuedouble))
			return 0;
		wl_reply_error(ctx, WL_C_VALIDATION_FAILED,
			       "customData.%s must be a number", id);
		return -1;
	}
	if (!cJSON_IsString(v) || wl_utf8_len(v->valuestring) > 1000) {
		wl_reply_error(ctx, WL_C_VALIDATION_FAILED,
			       "customData.%s must be a string of at most 1000 "
			       "characters",
			       id);
		return -1;
	}
	if (!no_controls(v->valuestring, 1)) {
		wl_reply_error(ctx, WL_C_VALIDATION_FAILED,
			       "customData.%s must not contain control "
			       "characters other than line breaks and tabs",
			       id);
		return -1;
	}
	if (wl_rows_int(f, r, 4) && wl_utf8_blank(v->valuestring)) {
		wl_reply_error(ctx, WL_C_VALIDATION_FAILED,
			       "customData.%s is required on this line and "
			       "must not be blank",
			       id);
		return -1;
	}
	if (strcmp(type, "select") != 0)
		return 0;
	opts = cJSON_Parse(wl_rows_str(f, r, 5) ? wl_rows_str(f, r, 5) : "[]");
	cJSON_ArrayForEach(it, opts) {
		const char *val;
		if (wl_json_get_string(it, "value", &val) == 1 &&
		    strcmp(val, v->valuestring) == 0)
			ok = 1;
	}
	cJSON_Delete(opts);
	if (!ok) {
		wl_reply_error(ctx, WL_C_VALIDATION_FAILED,
			       "customData.%s must be one of the field's option "
			       "values",
			       id);
		return -1;
	}
	return 0;
}

/*
 * Merge patch (customData of a request: field id -> value, null removes)
 * into data (the entry's current object, modified in place) and check the
 * result against the line's public fields: known ids, types, options and
 * required fields.  Returns 0, -1 after a 400 reply, or a wl_err (>0).
 */
int
wl_custom_data_merge(struct wl_ctx *ctx, const char *queue_id, cJSON *data,
		     const cJSON *patch)
{
	struct wl_rows *f = NULL;
	const cJSON *it;
	size_t r;
	int rc;

	if ((rc = wl_queue_fields(ctx, queue_id, &f)) != WL_OK)
		return rc;
	rc = -1;
	for (it = patch ? patch->child : NULL; it; it = it->next) {
		for (r = 0; r < f->nrows; r++)
			if (strcmp(wl_rows_str(f, r, 1), it->string) == 0)
				break;
		if (r == f->nrows) {
			wl_reply_error(ctx, WL_C_VALIDATION_FAILED,
				       "customData.%.*s is not a public field "
				       "of this line",
				       (int)wl_utf8_prefix(it->string, 60),
				       it->string);
			goto out;
		}
		cJSON_DeleteItemFromObjectCaseSensitive(data, it->string);
		if (cJSON_IsNull(it))
			continue;
		if (value_ok(ctx, f, r, it) < 0)
			goto out;
		cJSON_AddItemToObject(data, it->string,
				      cJSON_Duplicate(it, 1));
	}
	for (r = 0; r < f->nrows; r++)
		if (wl_rows_int(f, r, 4) &&
		    !cJSON_GetObjectItemCaseSensitive(data,
						      wl_rows_str(f, r, 1))) {
			wl_reply_error(ctx, WL_C_VALIDATION_FAILED,
				       "customData.%s is required on this line",
				       wl_rows_str(f, r, 1));
			goto out;
		}
	/* Stored and answered as the double the client's number reads as,
	 * in the shortest form that reads back as it (not cJSON's 15
	 * digits). */
	rc = wl_json_exact_numbers(data) < 0 ? WL_ERR_NOMEM : 0;
out:
	wl_rows_free(f);
	return rc;
}

/*
 * Check serviceTypeId against the line: attached and active.  Returns 0
 * with *minutes its duration, -1 after a 400 reply, or a wl_err (>0).
 */
int
wl_service_check(struct wl_ctx *ctx, const char *queue_id,
		 const char *service_id, long long *minutes)
{
	struct wl_rows *rows = NULL;
	int rc;

	rc = wl_cached_exec(ctx->app->keys, ctx->app->db,
			    STMT_QUEUE_HAS_SERVICE,
			    SQL_ARGS(SQL_STR(queue_id), SQL_STR(service_id)), 0,
			    &rows);
	if (rc != WL_OK)
		return rc;
	if (rows->nrows == 0 || !wl_rows_int(rows, 0, 1) ||
	    !wl_id_usable(service_id)) {
		wl_rows_free(rows);
		wl_reply_error(ctx, WL_C_VALIDATION_FAILED,
			       "serviceTypeId is not an active service of "
			       "this line");
		return -1;
	}
	*minutes = wl_rows_int(rows, 0, 0);
	wl_rows_free(rows);
	return 0;
}
