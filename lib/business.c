/*
 * GET /waitlist/businesses and GET /waitlist/businesses/{businessId}, and
 * the Service and Custom field objects that businesses and lines share.
 * These objects carry exactly the fields of the contract.
 */
#include "config.h"

#include <stdlib.h>

#include "extern.h"

/* Service from columns c0.. (id, service_name, duration, is_active). */
cJSON *
wl_service_json(const struct wl_rows *rows, size_t r, size_t c0)
{
	cJSON *o = cJSON_CreateObject();

	wl_json_add_str(o, "id", wl_rows_str(rows, r, c0));
	wl_json_add_str(o, "serviceName", wl_rows_str(rows, r, c0 + 1));
	wl_json_add_int(o, "baseDurationMinutes", wl_rows_int(rows, r, c0 + 2));
	wl_json_add_bool(o, "isActive", (int)wl_rows_int(rows, r, c0 + 3));
	return o;
}

/* Custom field from columns c0.. (id, label, type, required, options). */
cJSON *
wl_field_json(const struct wl_rows *rows, size_t r, size_t c0)
{
	const char *opts = wl_rows_str(rows, r, c0 + 4);
	cJSON *o = cJSON_CreateObject(), *a;

	wl_json_add_str(o, "id", wl_rows_str(rows, r, c0));
	wl_json_add_str(o, "label", wl_rows_str(rows, r, c0 + 1));
	wl_json_add_str(o, "type", wl_rows_str(rows, r, c0 + 2));
	wl_json_add_bool(o, "required", (int)wl_rows_int(rows, r, c0 + 3));
	if (opts && (a = cJSON_Parse(opts)) != NULL)
		cJSON_AddItemToObject(o, "options", a);
	return o;
}

/*
 * Add to obj an array name of the items of rows whose column 0 equals
 * owner, each made by make from column 1 on.
 */
void
wl_attach_children(cJSON *obj, const char *name, const struct wl_rows *rows,
		   const char *owner,
		   cJSON *(*make)(const struct wl_rows *, size_t, size_t))
{
	cJSON *a = cJSON_AddArrayToObject(obj, name);
	size_t r;

	for (r = 0; a && rows && r < rows->nrows; r++)
		if (strcmp(wl_rows_str(rows, r, 0), owner) == 0)
			cJSON_AddItemToArray(a, make(rows, r, 1));
}

/* JSON array text of column c of the first n rows (caller frees). */
char *
wl_rows_ids_json(const struct wl_rows *rows, size_t n, size_t c)
{
	cJSON *a = cJSON_CreateArray();
	char *text;
	size_t r;

	for (r = 0; a && r < n; r++)
		cJSON_AddItemToArray(a, cJSON_CreateString(wl_rows_str(rows, r, c)));
	text = a ? cJSON_PrintUnformatted(a) : NULL;
	cJSON_Delete(a);
	return text;
}

static cJSON *
business_json(const struct wl_rows *rows, size_t r,
	      const struct wl_rows *services, const struct wl_rows *fields)
{
	cJSON *o = cJSON_CreateObject();
	const char *id = wl_rows_str(rows, r, 0);

	wl_json_add_str(o, "id", id);
	wl_json_add_str(o, "name", wl_rows_str(rows, r, 1));
	wl_json_add_str(o, "slug", wl_rows_str(rows, r, 2));
	wl_json_add_str(o, "timeZone", wl_rows_str(rows, r, 3));
	wl_json_add_ts(o, "createdAt", wl_rows_int(rows, r, 4));
	wl_json_add_ts(o, "updatedAt", wl_rows_int(rows, r, 5));
	wl_attach_children(o, "services", services, id, wl_service_json);
	wl_attach_children(o, "customFields", fields, id, wl_field_json);
	return o;
}

/* Load the services and public fields of the first n businesses. */
static int
load_children(struct wl_ctx *ctx, const struct wl_rows *rows, size_t n,
	      struct wl_rows **services, struct wl_rows **fields)
{
	char *ids = wl_rows_ids_json(rows, n, 0);
	int rc;

	if (ids == NULL)
		return WL_ERR_NOMEM;
	rc = wl_sql_exec(ctx->app->db, STMT_BUSINESS_SERVICES,
			 SQL_ARGS(SQL_STR(ids)), services, NULL);
	if (rc == WL_OK)
		rc = wl_sql_exec(ctx->app->db, STMT_BUSINESS_FIELDS,
				 SQL_ARGS(SQL_STR(ids)), fields, NULL);
	free(ids);
	return rc;
}

struct children {
	struct wl_rows *services, *fields;
};

static cJSON *
business_item(const struct wl_ctx *ctx, const struct wl_rows *rows, size_t r,
	      void *arg)
{
	const struct children *c = arg;

	(void)ctx;
	return business_json(rows, r, c->services, c->fields);
}

/* GET /waitlist/businesses */
int
wl_h_business_list(struct wl_ctx *ctx)
{
	struct wl_rows *rows = NULL;
	struct children c = {NULL, NULL};
	const struct wl_key *k = &ctx->key;
	char pos[WL_ID_MAX * 2];
	int limit, rc;

	if (wl_page_params(ctx, "", &limit, pos, sizeof(pos)) < 0)
		return WL_OK;
	rc = wl_sql_exec(ctx->app->db, STMT_BUSINESS_PAGE,
			 SQL_ARGS(SQL_STR(k->tenant.id), SQL_STR(pos),
				  SQL_STR(k->biz_json), SQL_STR(k->biz_json),
				  SQL_STR(k->queue_json),
				  SQL_STR(k->queue_json), SQL_INT(limit + 1)),
			 &rows, NULL);
	if (rc == WL_OK)
		rc = load_children(ctx, rows,
				   rows->nrows > (size_t)limit ? (size_t)limit
							       : rows->nrows,
				   &c.services, &c.fields);
	if (rc == WL_OK)
		rc = wl_page_reply(ctx, rows, limit, "businesses", "", -1, 0,
				   business_item, &c);
	wl_rows_free(rows);
	wl_rows_free(c.services);
	wl_rows_free(c.fields);
	return rc;
}

/*
 * Look up a business of the key's tenant.  Returns 1 visible, 0 absent,
 * 2 present but outside the key's restrictions, or <0 (negated wl_err).
 * rows (may be NULL) receives the row.
 */
int
wl_business_find(struct wl_ctx *ctx, const char *id, struct wl_rows **out)
{
	const struct wl_key *k = &ctx->key;
	struct wl_rows *rows = NULL;
	int rc;

	if (out)
		*out = NULL;
	if (!wl_id_usable(id))
		return 0;
	rc = wl_sql_exec(ctx->app->db, STMT_BUSINESS_GET,
			 SQL_ARGS(SQL_STR(k->biz_json), SQL_STR(k->biz_json),
				  SQL_STR(k->queue_json),
				  SQL_STR(k->queue_json),
				  SQL_STR(k->tenant.id), SQL_STR(id)),
			 &rows, NULL);
	if (rc != WL_OK)
		return -rc;
	rc = rows->nrows == 0 ? 0 : wl_rows_int(rows, 0, 6) ? 1 : 2;
	if (out)
		*out = rows;
	else
		wl_rows_free(rows);
	return rc;
}

/* A business id parameter: 1 to 160 characters. */
int
wl_business_id_valid(const char *id)
{
	return id && *id && wl_utf8_valid(id, strlen(id)) &&
	       wl_utf8_len(id) <= 160;
}

/* GET /waitlist/businesses/{businessId} */
int
wl_h_business_get(struct wl_ctx *ctx)
{
	struct wl_rows *rows = NULL, *services = NULL, *fields = NULL;
	const char *id = ctx->param[0];
	cJSON *root;
	int rc;

	if (!wl_business_id_valid(id))
		return wl_reply_error(ctx, WL_C_VALIDATION_FAILED,
				      "businessId must be 1 to 160 "
				      "characters");
	if ((rc = wl_business_find(ctx, id, &rows)) < 0)
		return -rc;
	if (rc != 1) {
		wl_rows_free(rows);
		return wl_reply_error(ctx, WL_C_NOT_FOUND,
				      "business not found");
	}
	if ((rc = load_children(ctx, rows, 1, &services, &fields)) == WL_OK) {
		root = cJSON_CreateObject();
		cJSON_AddItemToObject(root, "business",
				      business_json(rows, 0, services, fields));
		rc = wl_reply_json(ctx, 200, root);
	}
	wl_rows_free(rows);
	wl_rows_free(services);
	wl_rows_free(fields);
	return rc;
}
