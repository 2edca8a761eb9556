/*
 * Administration behind waitlistctl: migrations, keys, tenant settings and
 * retention.  Each prints its JSON result on out and reports failures
 * with a message in err (returning non-zero).
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>

#include "extern.h"

static int
print_json(FILE *out, cJSON *root)
{
	char *text = root ? cJSON_PrintUnformatted(root) : NULL;

	cJSON_Delete(root);
	if (text == NULL)
		return WL_ERR_NOMEM;
	fprintf(out, "%s\n", text);
	free(text);
	return WL_OK;
}

static int
db_fail(struct wl_app *app, int rc, char *err, size_t errsz)
{
	snprintf(err, errsz, "database: %s", wl_db_error(app->db));
	return rc;
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Migration files are "<digits>_<name>.sql". */
static int
is_migration(const char *name)
{
	size_t n = strlen(name), i;

	for (i = 0; name[i] >= '0' && name[i] <= '9'; i++)
		;
	return i > 0 && name[i] == '_' && n > 4 &&
	       strcmp(name + n - 4, ".sql") == 0;
}

static int
apply_file(struct wl_app *app, const char *dir, const char *name, char *err,
	   size_t errsz)
{
	char path[4096];
	struct wl_buf b = {.max = 4 << 20};
	int rc;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if ((rc = wl_buf_read_file(&b, path, err, errsz)) != WL_OK)
		return rc;
	rc = wl_sql_raw(app->db, b.p);
	wl_buf_free(&b);
	if (rc != WL_OK) {
		snprintf(err, errsz, "%s: %s", name, wl_db_error(app->db));
		return rc;
	}
	rc = wl_sql_do(app->db, STMT_MIGRATION_ADD,
		       SQL_ARGS(SQL_STR(name), SQL_INT(wl_now_ms())));
	if (rc != WL_OK)
		return db_fail(app, rc, err, errsz);
	return WL_OK;
}

/*
 * The migrations of migrations_dir not yet recorded in schema_migrations,
 * in name order (*names: free with wl_strv_free()).
 */
static int
pending(struct wl_app *app, char ***names, size_t *n, char *err,
	size_t errsz)
{
	const char *dir = app->cfg->migrations_dir;
	struct wl_rows *done = NULL;
	char **nn;
	size_t i, r, kept = 0;
	struct dirent *de;
	DIR *d;
	int rc;

	*names = NULL;
	*n = 0;
	if ((rc = wl_sql_exec(app->db, STMT_MIGRATION_LIST, SQL_NOARGS, &done,
			      NULL)) != WL_OK)
		return db_fail(app, rc, err, errsz);
	if ((d = opendir(dir)) == NULL) {
		snprintf(err, errsz, "%s: %s", dir, strerror(errno));
		wl_rows_free(done);
		return WL_ERR_IO;
	}
	while ((de = readdir(d)) != NULL) {
		if (!is_migration(de->d_name))
			continue;
		if ((nn = realloc(*names, (*n + 1) * sizeof(**names))) ==
			NULL ||
		    (nn[*n] = strdup(de->d_name)) == NULL) {
			*names = nn ? nn : *names;
			snprintf(err, errsz, "out of memory");
			rc = WL_ERR_NOMEM;
			break;
		}
		*names = nn;
		(*n)++;
	}
	closedir(d);
	if (rc == WL_OK && *n > 0)
		qsort(*names, *n, sizeof(**names), cmp_str);
	for (i = 0; rc == WL_OK && i < *n; i++) {
		for (r = 0; r < done->nrows; r++)
			if (strcmp(wl_rows_str(done, r, 0), (*names)[i]) == 0)
				break;
		if (r < done->nrows)
			free((*names)[i]);
		else
			(*names)[kept++] = (*names)[i];
	}
	if (rc == WL_OK)
		*n = kept;
	wl_rows_free(done);
	return rc;
}

/*
 * Apply every migrations_dir/NNN_*.sql not yet recorded in
 * schema_migrations, in name order.  Prints {"applied": [...]}.
 */
int
wl_admin_migrate(struct wl_app *app, FILE *out, char *err, size_t errsz)
{
	char **names = NULL;
	size_t n = 0, i;
	cJSON *root = NULL, *applied;
	int rc;

	wl_db_unhurried(app->db);

	rc = wl_sql_raw(app->db,
			"CREATE TABLE IF NOT EXISTS schema_migrations ("
			"version VARCHAR(255) NOT NULL PRIMARY KEY, "
			"applied_at BIGINT NOT NULL) ENGINE=InnoDB");
	if (rc != WL_OK) {
		db_fail(app, rc, err, errsz);
		goto out;
	}
	if ((rc = pending(app, &names, &n, err, errsz)) != WL_OK)
		goto out;
	root = cJSON_CreateObject();
	applied = cJSON_AddArrayToObject(root, "applied");
	for (i = 0; i < n; i++) {
		if ((rc = apply_file(app, app->cfg->migrations_dir, names[i],
				     err, errsz)) != WL_OK)
			goto out;
		cJSON_AddItemToArray(applied, cJSON_CreateString(names[i]));
	}
	rc = print_json(out, root);
	root = NULL;
out:
	wl_strv_free(names, n);
	cJSON_Delete(root);
	return rc;
}

/*
 * Is the database's schema as new as the migrations installed with the
 * programs?  After an upgrade, the new programs (a timer's run, a
 * restart after a crash) must not run before `waitlistctl migrate`.
 * 1 yes; 0 no, err names what is not applied; -1 unknown (the database
 * is unreachable, or the migrations cannot be read), which is logged.
 */
int
wl_admin_schema_current(struct wl_app *app, char *err, size_t errsz)
{
	char **names;
	size_t n;
	int rc = pending(app, &names, &n, err, errsz);

	if (rc == WL_OK && n > 0)
		snprintf(err, errsz,
			 "%zu migration%s of %s not applied (%s%s): run "
			 "waitlistctl migrate",
			 n, n == 1 ? "" : "s", app->cfg->migrations_dir,
			 names[0], n == 1 ? "" : ", ...");
	wl_strv_free(names, n);
	if (rc == WL_ERR_DB && wl_db_errno(app->db) == 1146 /* ER_NO_SUCH_TABLE */) {
		snprintf(err, errsz, "the database has no schema: run "
				     "waitlistctl migrate");
		return 0;
	}
	if (rc != WL_OK) {
		wl_log_error(WL_LOG_WARN, "schema not checked", err);
		return -1;
	}
	return n == 0;
}

static int
load_tenant(struct wl_app *app, const char *id, struct wl_tenant *t,
	    char *err, size_t errsz)
{
	struct wl_rows *rows = NULL;
	int rc;

	rc = wl_sql_exec(app->db, STMT_TENANT_GET, SQL_ARGS(SQL_STR(id)),
			 &rows, NULL);
	if (rc != WL_OK)
		return db_fail(app, rc, err, errsz);
	if (rows->nrows == 0) {
		snprintf(err, errsz, "tenant %s not found", id);
		rc = WL_ERR_NOTFOUND;
	} else
		rc = wl_tenant_from_row(rows, 0, 0, t);
	wl_rows_free(rows);
	return rc;
}

/* JSON array text of a comma list. */
static char *
list_json(const char *csv)
{
	char **v = NULL, *text;
	size_t n = 0;
	cJSON *a;

	if (wl_split_list(csv ? csv : "", &v, &n) < 0)
		return NULL;
	a = wl_json_str_array(v, n);
	text = a ? cJSON_PrintUnformatted(a) : NULL;
	cJSON_Delete(a);
	wl_strv_free(v, n);
	return text;
}

/*
 * Insert a key for tenant t (settings already loaded).  Enforces the
 * activeKeys limit and the expiry bounds; writes the plaintext into plain
 * and the id into id.  Shared by key create and seeding; run it in a
 * transaction: it first writes the tenant's counter row, so that keys
 * created at once, on one node or several, cannot pass the limit
 * together.
 */
int
wl_key_insert(struct wl_db *db, const struct wl_tenant *t,
	      const char *scopes_csv, const char *biz_json,
	      const char *queue_json, long long days, const char *type,
	      char *id, char *plain, size_t plainsz, char *err, size_t errsz)
{
	struct wl_rows *rows = NULL;
	char digest[65], scopes[256] = "";
	unsigned mask;
	int64_t now = wl_now_ms();
	int rc;
	size_t i;

	if (wl_scopes_parse(scopes_csv, &mask) < 0) {
		snprintf(err, errsz, "unknown scope in \"%s\"", scopes_csv);
		return WL_ERR_INVALID;
	}
	/* Stored as the mask reads: each scope once, in the usual order. */
	for (i = 0; i < WL_SCOPE__MAX; i++)
		if (mask & (1u << i))
			snprintf(scopes + strlen(scopes),
				 sizeof(scopes) - strlen(scopes), "%s%s",
				 *scopes ? "," : "", wl_scope_names[i]);
	if (strcmp(type, "api") != 0 && strcmp(type, "zapier") != 0) {
		snprintf(err, errsz, "key type must be api or zapier");
		return WL_ERR_INVALID;
	}
	/* The default, within the maximum. */
	if (days <= 0)
		days = t->limits[WL_LIMIT_DEFAULT_EXPIRY] <
			       t->limits[WL_LIMIT_MAX_EXPIRY]
			   ? t->limits[WL_LIMIT_DEFAULT_EXPIRY]
			   : t->limits[WL_LIMIT_MAX_EXPIRY];
	if (days > t->limits[WL_LIMIT_MAX_EXPIRY]) {
		snprintf(err, errsz,
			 "expiry of %lld days exceeds the tenant's maximum of "
			 "%lld",
			 days, t->limits[WL_LIMIT_MAX_EXPIRY]);
		return WL_ERR_INVALID;
	}
	rc = wl_sql_do(db, STMT_KEY_LOCK, SQL_ARGS(SQL_STR(t->id)));
	if (rc == WL_OK)
		rc = wl_sql_exec(db, STMT_KEY_COUNT_ACTIVE,
				 SQL_ARGS(SQL_STR(t->id), SQL_INT(now)), &rows,
				 NULL);
	if (rc != WL_OK)
		return rc;
	if (wl_rows_int(rows, 0, 0) >= t->limits[WL_LIMIT_ACTIVE_KEYS]) {
		snprintf(err, errsz, "tenant %s already has %lld active keys "
			 "(limit activeKeys)",
			 t->id, wl_rows_int(rows, 0, 0));
		wl_rows_free(rows);
		return WL_ERR_LIMIT;
	}
	wl_rows_free(rows);
	if (wl_id_new("key_", id) != WL_OK ||
	    wl_key_generate(plain, plainsz, digest) != WL_OK)
		return WL_ERR_CRYPTO;
	return wl_sql_do(db, STMT_KEY_INSERT,
			 SQL_ARGS(SQL_STR(id), SQL_STR(t->id), SQL_STR(digest),
				  SQL_STR(scopes), SQL_STR(biz_json),
				  SQL_STR(queue_json), SQL_STR(type),
				  SQL_INT(now), SQL_INT(now + days * DAY_MS)));
}

/* Every id of the comma list csv is one of the tenant's (stmt: its
 * businesses or its lines); else err names the first that is not. */
static int
owned_ids(struct wl_db *db, enum wl_stmt stmt, const char *what,
	  const char *tenant, const char *csv, char *err, size_t errsz)
{
	struct wl_rows *rows = NULL;
	char **v = NULL;
	size_t n = 0, i;
	int rc = WL_OK;

	if (wl_split_list(csv ? csv : "", &v, &n) < 0)
		return WL_ERR_NOMEM;
	for (i = 0; rc == WL_OK && i < n; i++) {
		rc = wl_sql_exec(db, stmt,
				 SQL_ARGS(SQL_STR(v[i]), SQL_STR(tenant)),
				 &rows, NULL);
		if (rc == WL_OK && rows->nrows == 0) {
			snprintf(err, errsz, "%s %.*s is not one of tenant "
				 "%s's", what, (int)wl_utf8_prefix(v[i], 100),
				 v[i], tenant);
			rc = WL_ERR_INVALID;
		}
		wl_rows_free(rows);
		rows = NULL;
	}
	wl_strv_free(v, n);
	return rc;
}

struct key_create {
	struct wl_app *app;
	const struct wl_key_spec *spec;
	const char *biz, *queues;
	char id[WL_ID_MAX], plain[128];
	char *err;
	size_t errsz;
};

/* The tenant's settings are read inside the transaction, after its
 * counter row is written, so a concurrent tenant set is seen whole. */
static int
key_create_txn(struct wl_db *db, void *arg)
{
	struct key_create *k = arg;
	struct wl_tenant t = {0};
	int rc;

	if ((rc = wl_sql_do(db, STMT_KEY_LOCK,
			    SQL_ARGS(SQL_STR(k->spec->tenant_id)))) != WL_OK ||
	    (rc = load_tenant(k->app, k->spec->tenant_id, &t, k->err,
			      k->errsz)) != WL_OK)
		return rc;
	if ((rc = owned_ids(db, STMT_KEY_BUSINESS_OWNED, "business", t.id,
			    k->spec->businesses, k->err, k->errsz)) == WL_OK &&
	    (rc = owned_ids(db, STMT_KEY_QUEUE_OWNED, "line", t.id,
			    k->spec->queues, k->err, k->errsz)) == WL_OK)
		rc = wl_key_insert(db, &t, k->spec->scopes, k->biz, k->queues,
				   k->spec->expires_in_days,
				   k->spec->type ? k->spec->type : "api", k->id,
				   k->plain, sizeof(k->plain), k->err,
				   k->errsz);
	wl_tenant_clear(&t);
	return rc;
}

/* waitlistctl key create: prints {"id", "key"}. */
int
wl_admin_key_create(struct wl_app *app, const struct wl_key_spec *spec,
		    FILE *out, char *err, size_t errsz)
{
	struct key_create k = {app, spec, NULL, NULL, "", "", err, errsz};
	char *biz = NULL, *queues = NULL;
	cJSON *root;
	int rc;

	*err = '\0';
	biz = list_json(spec->businesses);
	queues = list_json(spec->queues);
	if (biz == NULL || queues == NULL) {
		rc = WL_ERR_NOMEM;
		goto out;
	}
	k.biz = biz;
	k.queues = queues;
	rc = wl_db_txn(app->db, key_create_txn, &k);
	if ((rc == WL_ERR_DB || rc == WL_ERR_DB_GONE || rc == WL_ERR_DB_RETRY ||
	     rc == WL_ERR_BUSY) &&
	    *err == '\0')
		db_fail(app, rc, err, errsz);
	if (rc != WL_OK)
		goto out;
	root = cJSON_CreateObject();
	wl_json_add_str(root, "id", k.id);
	wl_json_add_str(root, "key", k.plain);
	rc = print_json(out, root);
out:
	explicit_bzero(k.plain, sizeof(k.plain));
	free(biz);
	free(queues);
	return rc;
}

/* After a committed change to a key or a tenant: the workers of this
 * node drop the lookups they cached (other nodes' expire on their own). */
static void
tell_workers(struct wl_app *app)
{
	if (wl_keys_changed(app->cfg) != WL_OK)
		wl_log(WL_LOG_WARN,
		       "\"msg\":\"cannot reach the key epoch file; the "
		       "workers see the change within key_cache_seconds\","
		       "\"errno\":%d",
		       errno);
}

/* waitlistctl key revoke: prints {"id", "revoked": true}. */
int
wl_admin_key_revoke(struct wl_app *app, const char *key_id, FILE *out,
		    char *err, size_t errsz)
{
	unsigned long long n = 0;
	cJSON *root;
	int rc;

	rc = wl_sql_exec(app->db, STMT_KEY_REVOKE,
			 SQL_ARGS(SQL_INT(wl_now_ms()), SQL_STR(key_id)), NULL,
			 &n);
	if (rc != WL_OK)
		return db_fail(app, rc, err, errsz);
	/* Also when nothing changed: the revoke may have committed in an
	 * earlier run (or before a lost reply) whose word did not reach the
	 * workers. */
	tell_workers(app);
	if (n == 0) {
		snprintf(err, errsz, "key %s not found or already revoked",
			 key_id);
		return WL_ERR_NOTFOUND;
	}
	root = cJSON_CreateObject();
	wl_json_add_str(root, "id", key_id);
	wl_json_add_bool(root, "revoked", 1);
	return print_json(out, root);
}

/* waitlistctl key list: prints {"keys": [...]} without any secret. */
int
wl_admin_key_list(struct wl_app *app, const char *tenant_id, FILE *out,
		  char *err, size_t errsz)
{
	struct wl_rows *rows = NULL;
	struct wl_tenant t = {0};
	cJSON *root, *a, *o;
	int64_t now = wl_now_ms();
	size_t r;
	int rc;

	if ((rc = load_tenant(app, tenant_id, &t, err, errsz)) != WL_OK)
		return rc;
	wl_tenant_clear(&t);
	rc = wl_sql_exec(app->db, STMT_KEY_LIST, SQL_ARGS(SQL_STR(tenant_id)),
			 &rows, NULL);
	if (rc != WL_OK)
		return db_fail(app, rc, err, errsz);
	root = cJSON_CreateObject();
	a = cJSON_AddArrayToObject(root, "keys");
	for (r = 0; r < rows->nrows; r++) {
		int revoked = wl_rows_str(rows, r, 8) != NULL;
		int64_t exp = wl_rows_int(rows, r, 7);
		char **v = NULL;
		size_t n = 0;

		o = cJSON_CreateObject();
		cJSON_AddItemToArray(a, o);
		wl_json_add_str(o, "id", wl_rows_str(rows, r, 0));
		wl_json_add_str(o, "tenantId", wl_rows_str(rows, r, 1));
		wl_split_list(wl_rows_str(rows, r, 2), &v, &n);
		cJSON_AddItemToObject(o, "scopes", wl_json_str_array(v, n));
		wl_strv_free(v, n);
		cJSON_AddItemToObject(o, "businessIds",
				      cJSON_Parse(wl_rows_str(rows, r, 3)));
		cJSON_AddItemToObject(o, "queueIds",
				      cJSON_Parse(wl_rows_str(rows, r, 4)));
		wl_json_add_str(o, "integrationType", wl_rows_str(rows, r, 5));
		wl_json_add_ts(o, "createdAt", wl_rows_int(rows, r, 6));
		wl_json_add_ts(o, "expiresAt", exp);
		wl_json_add_ts(o, "revokedAt",
			       revoked ? wl_rows_int(rows, r, 8) : -1);
		wl_json_add_str(o, "status", revoked	  ? "revoked"
					     : exp <= now ? "expired"
							  : "active");
	}
	wl_rows_free(rows);
	return print_json(out, root);
}

static int
parse_onoff(const char *v, int *out)
{
	if (strcmp(v, "on") == 0 || strcmp(v, "true") == 0 ||
	    strcmp(v, "1") == 0)
		*out = 1;
	else if (strcmp(v, "off") == 0 || strcmp(v, "false") == 0 ||
		 strcmp(v, "0") == 0)
		*out = 0;
	else
		return -1;
	return 0;
}

static int
parse_count(const char *v, long long *out)
{
	char *end;

	if (*v < '0' || *v > '9')
		return -1;
	errno = 0;
	*out = strtoll(v, &end, 10);
	return *end || errno || *out > 1000000000LL ? -1 : 0;
}

/* Apply one limit (by its public name) to t: 0, or -1 with a message. */
static int
apply_limit(struct wl_tenant *t, const char *name, const char *v, char *err,
	    size_t errsz)
{
	int l = wl_name_index(wl_limit_names, WL_LIMIT__MAX, name);
	size_t i, n;

	if (l >= 0) {
		if (parse_count(v, &t->limits[l]) < 0) {
			snprintf(err, errsz, "limit %s must be a whole number",
				 name);
			return -1;
		}
		return 0;
	}
	n = (size_t)snprintf(err, errsz, "unknown limit %s; the limits are",
			     name);
	for (i = 0; i < WL_LIMIT__MAX && n < errsz; i++)
		n += (size_t)snprintf(err + n, errsz - n, " %s",
				      wl_limit_names[i]);
	return -1;
}

/*
 * Apply one "name=value" setting to t.  Names: plan, publicApi, webhooks,
 * zapier, state, emailVerified, billing, guestAllowance, and "limits."
 * followed by one of the eight limit names.  Returns 0 or -1 with a
 * message.
 */
int
wl_tenant_apply(struct wl_tenant *t, const char *name, const char *v,
		char *err, size_t errsz)
{
	int *flag = NULL;

	if (strncmp(name, "limits.", 7) == 0)
		return apply_limit(t, name + 7, v, err, errsz);

	if (strcmp(name, "plan") == 0) {
		char *p;
		if (strlen(v) > 64 || (p = strdup(v)) == NULL)
			goto bad;
		free(t->plan);
		t->plan = p;
		return 0;
	}
	if (strcmp(name, "publicApi") == 0)
		flag = &t->public_api;
	else if (strcmp(name, "webhooks") == 0)
		flag = &t->webhooks;
	else if (strcmp(name, "zapier") == 0)
		flag = &t->zapier;
	else if (strcmp(name, "emailVerified") == 0)
		flag = &t->email_verified;
	else if (strcmp(name, "billing") == 0 ||
		 strcmp(name, "billingAvailable") == 0)
		flag = &t->billing;
	if (flag)
		return parse_onoff(v, flag) < 0 ? (snprintf(err, errsz,
				"%s must be on or off", name), -1) : 0;
	if (strcmp(name, "state") == 0) {
		int st = wl_name_index(wl_state_names, WL_STATE__MAX, v);
		if (st < 0) {
			snprintf(err, errsz,
				 "state must be active, disabled or demo");
			return -1;
		}
		t->state = (enum wl_state)st;
		return 0;
	}
	if (strcmp(name, "guestAllowance") == 0)
		return parse_count(v, &t->guest_allowance) < 0 ? (snprintf(
			err, errsz, "guestAllowance must be a whole number"),
			-1) : 0;
	snprintf(err, errsz, "unknown setting %s", name);
	return -1;
bad:
	snprintf(err, errsz, "bad value for %s", name);
	return -1;
}

/* Write all settings of t back. */
int
wl_tenant_store(struct wl_db *db, const struct wl_tenant *t)
{
	const long long *l = t->limits;

	return wl_sql_do(
	    db, STMT_TENANT_UPDATE,
	    SQL_ARGS(SQL_STR(t->plan), SQL_INT(t->public_api),
		     SQL_INT(t->webhooks), SQL_INT(t->zapier),
		     SQL_STR(wl_state_names[t->state]),
		     SQL_INT(t->email_verified), SQL_INT(t->billing),
		     SQL_INT(t->guest_allowance), SQL_INT(l[0]), SQL_INT(l[1]),
		     SQL_INT(l[2]), SQL_INT(l[3]), SQL_INT(l[4]), SQL_INT(l[5]),
		     SQL_INT(l[6]), SQL_INT(l[7]), SQL_INT(wl_now_ms()),
		     SQL_STR(t->id)));
}

struct tenant_set {
	struct wl_app *app;
	const char *id;
	const char *const *settings;
	struct wl_tenant t;
	char *err;
	size_t errsz;
};

/* Read, change and write back the tenant's settings under the lock of
 * its counter row, which key creation takes too: two at once would each
 * write back the whole row, the second undoing the first. */
static int
tenant_set_txn(struct wl_db *db, void *arg)
{
	struct tenant_set *s = arg;
	long long before[WL_LIMIT__MAX];
	size_t i;
	int rc;

	wl_tenant_clear(&s->t); /* (run again after a deadlock) */
	if ((rc = wl_sql_do(db, STMT_KEY_LOCK, SQL_ARGS(SQL_STR(s->id)))) !=
		WL_OK ||
	    (rc = load_tenant(s->app, s->id, &s->t, s->err, s->errsz)) !=
		WL_OK)
		return rc;
	memcpy(before, s->t.limits, sizeof(before));
	for (i = 0; s->settings[i]; i++) {
		char name[64];
		const char *eq = strchr(s->settings[i], '=');
		if (eq == NULL ||
		    (size_t)(eq - s->settings[i]) >= sizeof(name)) {
			snprintf(s->err, s->errsz, "expected NAME=VALUE: %s",
				 s->settings[i]);
			return WL_ERR_INVALID;
		}
		snprintf(name, sizeof(name), "%.*s",
			 (int)(eq - s->settings[i]), s->settings[i]);
		if (wl_tenant_apply(&s->t, name, eq + 1, s->err, s->errsz) < 0)
			return WL_ERR_INVALID;
	}
	if (wl_limits_check(before, s->t.limits, s->err, s->errsz) < 0)
		return WL_ERR_INVALID;
	return wl_tenant_store(db, &s->t);
}

/* waitlistctl tenant set: prints the tenant's settings afterwards. */
int
wl_admin_tenant_set(struct wl_app *app, const char *tenant_id,
		    const char *const *settings, FILE *out, char *err,
		    size_t errsz)
{
	struct tenant_set s = {.app = app, .id = tenant_id,
			       .settings = settings, .err = err,
			       .errsz = errsz};
	struct wl_tenant t;
	cJSON *root;
	int rc;

	*err = '\0';
	rc = wl_db_txn(app->db, tenant_set_txn, &s);
	t = s.t;
	if (rc != WL_OK) {
		if (*err == '\0')
			db_fail(app, rc, err, errsz);
		goto out;
	}
	tell_workers(app);
	root = cJSON_CreateObject();
	wl_json_add_str(root, "id", t.id);
	wl_json_add_str(root, "plan", t.plan);
	wl_json_add_bool(root, "publicApi", t.public_api);
	wl_json_add_bool(root, "webhooks", t.webhooks);
	wl_json_add_bool(root, "zapier", t.zapier);
	wl_json_add_str(root, "state", wl_state_names[t.state]);
	wl_json_add_bool(root, "emailVerified", t.email_verified);
	wl_json_add_bool(root, "billingAvailable", t.billing);
	wl_json_add_int(root, "guestAllowance", t.guest_allowance);
	cJSON_AddItemToObject(root, "limits", wl_limits_json(&t));
	rc = print_json(out, root);
out:
	wl_tenant_clear(&t);
	return rc;
}

/* waitlistctl purge: apply retention; prints what was removed. */
int
wl_admin_purge(struct wl_app *app, FILE *out, char *err, size_t errsz)
{
	struct wl_purged p;
	cJSON *root;
	int rc;

	if ((rc = wl_purge(app->db, wl_now_ms(), &p)) != WL_OK)
		return db_fail(app, rc, err, errsz);
	root = cJSON_CreateObject();
	wl_json_add_int(root, "events", p.events);
	wl_json_add_int(root, "idempotencyRecords", p.idempotency);
	wl_json_add_int(root, "deliveryRecords", p.deliveries);
	return print_json(out, root);
}
