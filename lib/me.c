/*
 * GET /me (the Connection object), GET /health and GET /openapi.json.
 */
#include "config.h"

#include <stdlib.h>

#include "extern.h"

/* GET /me: the authenticated connection, whatever its eligibility. */
int
wl_h_me(struct wl_ctx *ctx)
{
	const struct wl_key *k = &ctx->key;
	enum wl_code why = wl_tenant_unavailable(&k->tenant);
	int ok = why == WL_C__MAX;
	cJSON *root = cJSON_CreateObject(), *o, *a;
	size_t i;

	wl_json_add_str(root, "integrationType", wl_itype_names[k->itype]);
	o = cJSON_AddObjectToObject(root, "tenant");
	wl_json_add_str(o, "id", k->tenant.id);
	wl_json_add_str(o, "name", k->tenant.name);
	a = cJSON_AddArrayToObject(root, "scopes");
	for (i = 0; a && i < WL_SCOPE__MAX; i++)
		if (k->scopes & (1u << i))
			cJSON_AddItemToArray(a,
					     cJSON_CreateString(wl_scope_names[i]));
	o = cJSON_AddObjectToObject(root, "restrictions");
	cJSON_AddItemToObject(o, "businessIds",
			      wl_json_str_array(k->businesses, k->nbusinesses));
	cJSON_AddItemToObject(o, "queueIds",
			      wl_json_str_array(k->queues, k->nqueues));
	o = cJSON_AddObjectToObject(root, "capabilities");
	wl_json_add_bool(o, "publicApiEnabled", ok);
	wl_json_add_bool(o, "zapierEnabled", ok && k->tenant.zapier);
	wl_json_add_bool(o, "webhooksEnabled", ok && k->tenant.webhooks);
	wl_json_add_bool(o, "canManageIntegrations",
			 ok && (k->scopes & (1u << WL_SCOPE_WEBHOOKS_WRITE)));
	wl_json_add_str(o, "unavailableReason", ok ? NULL : wl_code_name(why));
	cJSON_AddItemToObject(o, "limits", wl_limits_json(&k->tenant));
	cJSON_AddItemToObject(root, "limits", wl_limits_json(&k->tenant));
	return wl_reply_json(ctx, 200, root);
}

/* GET /health: 200 {"status":"ok"} when the database answers, else 503. */
int
wl_h_health(struct wl_ctx *ctx)
{
	cJSON *root;

	if (wl_sql_do(ctx->app->db, STMT_PING, SQL_NOARGS) != WL_OK)
		return wl_reply_error(ctx, WL_C_UNAVAILABLE,
				      "the database is not answering");
	root = cJSON_CreateObject();
	wl_json_add_str(root, "status", "ok");
	return wl_reply_json(ctx, 200, root);
}

/* GET /openapi.json: the description installed with the service. */
int
wl_h_openapi(struct wl_ctx *ctx)
{
	char *copy;

	if (ctx->app->openapi == NULL)
		return wl_reply_error(ctx, WL_C_NOT_FOUND,
				      "the OpenAPI description is not "
				      "installed");
	if ((copy = malloc(ctx->app->openapi_len + 1)) == NULL)
		return WL_ERR_NOMEM;
	memcpy(copy, ctx->app->openapi, ctx->app->openapi_len + 1);
	ctx->resp->status = 200;
	free(ctx->resp->body);
	ctx->resp->body = copy;
	ctx->resp->body_len = ctx->app->openapi_len;
	return WL_OK;
}
