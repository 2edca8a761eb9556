/*
 * waitlistctl seed: load a fixture (OPERATIONS.md) in one transaction and
 * print {"refs": {ref: id or plaintext key}}.  Omitted fields take the
 * service's defaults.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "extern.h"

struct seed {
	struct wl_db *db;
	const cJSON *fixture;
	cJSON *refs;	/* ref -> id (keys: plaintext) */
	cJSON *local;	/* ref -> id of businesses, services, fields, queues */
	cJSON *owner;	/* ref -> id of its business (services, fields) or
			 * tenant (businesses, queues, keys) */
	char *err;
	size_t errsz;
	int64_t now;
};

static int
bad(struct seed *s, const char *path, const char *what)
{
	snprintf(s->err, s->errsz, "%s: %s", path, what);
	return WL_ERR_INVALID;
}

static int
add_ref(struct seed *s, const cJSON *o, const char *id, const char *plain,
	const char *owner, const char *path)
{
	const char *ref;

	if (wl_json_get_string(o, "ref", &ref) < 0)
		return bad(s, path, "ref must be a string");
	if (ref == NULL)
		return WL_OK;
	if (cJSON_GetObjectItemCaseSensitive(s->refs, ref))
		return bad(s, path, "duplicate ref");
	cJSON_AddStringToObject(s->refs, ref, plain ? plain : id);
	cJSON_AddStringToObject(s->local, ref, id);
	cJSON_AddStringToObject(s->owner, ref, owner ? owner : "");
	return WL_OK;
}

/* The id of a ref of this fixture whose id has the prefix (an object of
 * that kind) and that belongs to owner (a business or a tenant), or
 * NULL. */
static const char *
resolve(struct seed *s, const char *ref, const char *prefix,
	const char *owner)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(s->local, ref);
	const cJSON *w = cJSON_GetObjectItemCaseSensitive(s->owner, ref);

	if (!cJSON_IsString(v) || !cJSON_IsString(w) ||
	    strncmp(v->valuestring, prefix, strlen(prefix)) != 0 ||
	    strcmp(w->valuestring, owner) != 0)
		return NULL;
	return v->valuestring;
}

/* The error for a ref that names nothing of its kind in the fixture
 * within whose (a line's business, a key's tenant). */
static int
unknown_ref(struct seed *s, const char *path, const char *name,
	    const char *ref, const char *whose)
{
	char msg[200];

	snprintf(msg, sizeof(msg), "%s: \"%.*s\" is not the ref of one of "
		 "the fixture's %s of %s", name, (int)wl_utf8_prefix(ref, 60),
		 ref, name, whose);
	return bad(s, path, msg);
}

static int
get_flag(struct seed *s, const cJSON *o, const char *name, int def, int *out,
	 const char *path)
{
	int rc = wl_json_get_bool(o, name, out);
	char msg[96];

	if (rc < 0) {
		snprintf(msg, sizeof(msg), "%s must be a boolean", name);
		return bad(s, path, msg);
	}
	if (rc == 0)
		*out = def;
	return WL_OK;
}

static int
get_num(struct seed *s, const cJSON *o, const char *name, long long def,
	long long min, long long max, long long *out, const char *path)
{
	int rc = wl_json_get_int(o, name, out);
	char msg[128];

	if (rc == 0)
		*out = def;
	if (rc < 0 || *out < min || *out > max) {
		snprintf(msg, sizeof(msg), "%s must be a whole number from %lld "
			 "to %lld", name, min, max);
		return bad(s, path, msg);
	}
	return WL_OK;
}

static int
get_text(struct seed *s, const cJSON *o, const char *name, const char *def,
	 size_t maxlen, const char **out, const char *path)
{
	int rc = wl_json_get_string(o, name, out);
	char msg[96];

	if (rc == 0)
		*out = def;
	if (rc < 0 || *out == NULL || **out == '\0' ||
	    wl_utf8_len(*out) > maxlen) {
		snprintf(msg, sizeof(msg), "%s must be a non-empty string of at "
			 "most %zu characters", name, maxlen);
		return bad(s, path, msg);
	}
	return WL_OK;
}

/* A name or label, which no decision gives a default: when omitted, the
 * object's ref, or else what (say "Business"). */
static int
get_name(struct seed *s, const cJSON *o, const char *name, const char *what,
	 const char **out, const char *path)
{
	const char *ref;

	if (wl_json_get_string(o, "ref", &ref) == 1 && *ref != '\0' &&
	    wl_utf8_len(ref) <= 200)
		what = ref;
	return get_text(s, o, name, what, 200, out, path);
}

static int
get_zone(struct seed *s, const cJSON *o, const char **tz, const char *path)
{
	if (wl_json_get_string(o, "timeZone", tz) < 0 ||
	    (*tz && !wl_tz_valid(*tz)))
		return bad(s, path, "timeZone must be an IANA zone or null");
	return WL_OK;
}

static int
seed_service(struct seed *s, const cJSON *o, const char *tenant,
	     const char *biz, const char *path)
{
	const char *name;
	long long dur;
	int active, rc;
	char id[WL_ID_MAX];

	if ((rc = get_name(s, o, "serviceName", "Service", &name, path)) ||
	    (rc = get_num(s, o, "baseDurationMinutes", 30, 1, 1440, &dur,
			  path)) ||
	    (rc = get_flag(s, o, "isActive", 1, &active, path)))
		return rc;
	if (wl_id_new("svc_", id) != WL_OK)
		return WL_ERR_CRYPTO;
	if ((rc = wl_sql_do(s->db, STMT_SERVICE_INSERT,
			    SQL_ARGS(SQL_STR(id), SQL_STR(tenant),
				     SQL_STR(biz), SQL_STR(name), SQL_INT(dur),
				     SQL_INT(active)))) != WL_OK)
		return rc;
	return add_ref(s, o, id, NULL, biz, path);
}

static int
seed_field(struct seed *s, const cJSON *o, const char *tenant,
	   const char *biz, const char *path)
{
	const char *label, *type;
	const cJSON *opts, *it;
	cJSON *kept = NULL, *one;
	char id[WL_ID_MAX], *otext = NULL;
	int req, pub, rc;

	if ((rc = get_name(s, o, "label", "Field", &label, path)) ||
	    (rc = get_text(s, o, "type", "text", 16, &type, path)) ||
	    (rc = get_flag(s, o, "required", 0, &req, path)) ||
	    (rc = get_flag(s, o, "public", 1, &pub, path)))
		return rc;
	if (strcmp(type, "text") && strcmp(type, "number") &&
	    strcmp(type, "select"))
		return bad(s, path, "type must be text, number or select");
	if (wl_json_get_array(o, "options", &opts) < 0)
		return bad(s, path, "options must be an array");
	if (strcmp(type, "select") == 0 &&
	    (opts == NULL || cJSON_GetArraySize(opts) == 0))
		return bad(s, path, "a select field needs options");
	/* Each option as the API shows it: value and label, nothing else
	 * (other members are warned of and dropped). */
	if (opts && (kept = cJSON_CreateArray()) == NULL)
		return WL_ERR_NOMEM;
	cJSON_ArrayForEach(it, opts) {
		const char *v, *l;
		if (!cJSON_IsObject(it) || wl_json_get_string(it, "value", &v) != 1 ||
		    wl_json_get_string(it, "label", &l) != 1) {
			cJSON_Delete(kept);
			return bad(s, path, "each option needs value and label "
				   "strings");
		}
		if ((one = cJSON_CreateObject()) == NULL ||
		    !cJSON_AddItemToArray(kept, one) ||
		    cJSON_AddStringToObject(one, "value", v) == NULL ||
		    cJSON_AddStringToObject(one, "label", l) == NULL) {
			cJSON_Delete(kept);
			return WL_ERR_NOMEM;
		}
	}
	if (kept) {
		otext = cJSON_PrintUnformatted(kept);
		cJSON_Delete(kept);
		if (otext == NULL)
			return WL_ERR_NOMEM;
	}
	if (wl_id_new("cf_", id) != WL_OK) {
		free(otext);
		return WL_ERR_CRYPTO;
	}
	rc = wl_sql_do(s->db, STMT_FIELD_INSERT,
		       SQL_ARGS(SQL_STR(id), SQL_STR(tenant), SQL_STR(biz),
				SQL_STR(label), SQL_STR(type), SQL_INT(req),
				SQL_INT(pub), SQL_STR(otext)));
	free(otext);
	return rc ? rc : add_ref(s, o, id, NULL, biz, path);
}

static int
link_all(struct seed *s, const cJSON *o, const char *name, const char *biz,
	 const char *qid, enum wl_stmt stmt, const char *path)
{
	const char *prefix = strcmp(name, "services") == 0 ? "svc_" : "cf_";
	const cJSON *a, *it;
	int pos = 0, rc;

	if (wl_json_get_array(o, name, &a) < 0)
		return bad(s, path, "services and customFields must be arrays "
			   "of refs");
	cJSON_ArrayForEach(it, a) {
		const char *id;
		if (!cJSON_IsString(it))
			return bad(s, path, "services and customFields must "
				   "be arrays of refs");
		if ((id = resolve(s, it->valuestring, prefix, biz)) == NULL)
			return unknown_ref(s, path, name, it->valuestring,
					   "the line's business");
		rc = wl_sql_do(s->db, stmt,
			       SQL_ARGS(SQL_STR(qid), SQL_STR(id),
					SQL_INT(pos++)));
		if (rc == WL_ERR_CONFLICT)
			return bad(s, path, "a service or field is listed twice");
		if (rc != WL_OK)
			return rc;
	}
	return WL_OK;
}

static int
seed_queue(struct seed *s, const cJSON *o, const char *tenant,
	   const char *biz, const char *path)
{
	const char *name, *tz;
	const cJSON *av = NULL, *wh = NULL, *bh = NULL;
	cJSON *work = NULL, *book = NULL;
	char id[WL_ID_MAX], *wtext = NULL, *btext = NULL, what[300];
	int wi_on, wi_p, b_on, b_p, sreq, rc;
	long long slot, cap;

	if ((rc = get_name(s, o, "name", "Line", &name, path)) ||
	    (rc = get_zone(s, o, &tz, path)))
		return rc;
	if (wl_json_get_object(o, "workingHours", &wh) < 0 ||
	    wl_json_get_object(o, "availability", &av) < 0 ||
	    (av && wl_json_get_object(av, "bookingHours", &bh) < 0))
		return bad(s, path, "workingHours, availability and "
			   "bookingHours must be objects");
	if (bh && bh->child == NULL)
		bh = NULL; /* {} means "same as workingHours" */
	if ((rc = get_flag(s, av, "walkInsEnabled", 1, &wi_on, path)) ||
	    (rc = get_flag(s, av, "walkInsPaused", 0, &wi_p, path)) ||
	    (rc = get_flag(s, av, "bookingsEnabled", 1, &b_on, path)) ||
	    (rc = get_flag(s, av, "bookingsPaused", 0, &b_p, path)) ||
	    (rc = get_flag(s, av, "serviceRequired", 0, &sreq, path)) ||
	    (rc = get_num(s, av, "bookingSlotMinutes", 15, 1, 1440, &slot,
			  path)) ||
	    (rc = get_num(s, av, "bookingCapacity", 1, 1, 100000, &cap, path)))
		return rc;
	if (snprintf(what, sizeof(what), "%s.workingHours", path) < 0)
		return WL_ERR_INVALID;
	if ((work = wl_hours_normalize(wh, NULL, what, s->err, s->errsz)) ==
	    NULL)
		return WL_ERR_INVALID;
	rc = WL_ERR_INVALID;
	if (snprintf(what, sizeof(what), "%s.availability.bookingHours",
		     path) < 0)
		goto out;
	if ((book = wl_hours_normalize(bh, work, what, s->err, s->errsz)) ==
	    NULL)
		goto out;
	wtext = cJSON_PrintUnformatted(work);
	btext = cJSON_PrintUnformatted(book);
	rc = WL_ERR_NOMEM;
	if (wtext == NULL || btext == NULL)
		goto out;
	rc = WL_ERR_CRYPTO;
	if (wl_id_new("que_", id) != WL_OK)
		goto out;
	rc = wl_sql_do(s->db, STMT_QUEUE_INSERT,
		       SQL_ARGS(SQL_STR(id), SQL_STR(tenant), SQL_STR(biz),
				SQL_STR(name), SQL_STR(tz), SQL_STR(wtext),
				SQL_INT(wi_on), SQL_INT(wi_p), SQL_INT(b_on),
				SQL_INT(b_p), SQL_INT(slot), SQL_STR(btext),
				SQL_INT(cap), SQL_INT(sreq), SQL_INT(s->now),
				SQL_INT(s->now)));
	if (rc == WL_OK)
		rc = link_all(s, o, "services", biz, id,
			      STMT_QUEUE_SERVICE_INSERT, path);
	if (rc == WL_OK)
		rc = link_all(s, o, "customFields", biz, id,
			      STMT_QUEUE_FIELD_INSERT, path);
	if (rc == WL_OK)
		rc = add_ref(s, o, id, NULL, tenant, path);
out:
	cJSON_Delete(work);
	cJSON_Delete(book);
	free(wtext);
	free(btext);
	return rc;
}

/* Run fn over each object of array o[name], with a path for messages. */
#define EACH(s, o, name, path, fn, ...)                                     \
	do {                                                                \
		const cJSON *arr_, *it_;                                    \
		char p_[400];                                               \
		int i_ = 0, rc_;                                            \
		if (wl_json_get_array((o), (name), &arr_) < 0)              \
			return bad((s), (path), name " must be an array");  \
		cJSON_ArrayForEach(it_, arr_) {                             \
			if (snprintf(p_, sizeof(p_), "%s." name "[%d]",     \
				     (path), i_++) < 0)                     \
				return WL_ERR_INVALID;                      \
			if (!cJSON_IsObject(it_))                           \
				return bad((s), p_, "must be an object");   \
			if ((rc_ = fn((s), it_, __VA_ARGS__, p_)) != WL_OK) \
				return rc_;                                 \
		}                                                           \
	} while (0)

static int
seed_business(struct seed *s, const cJSON *o, const char *tenant,
	      const char *path)
{
	const char *name, *slug, *tz;
	char id[WL_ID_MAX];
	int rc;

	if ((rc = get_name(s, o, "name", "Business", &name, path)) ||
	    (rc = get_text(s, o, "slug", name, 200, &slug, path)) ||
	    (rc = get_zone(s, o, &tz, path)))
		return rc;
	if (wl_id_new("biz_", id) != WL_OK)
		return WL_ERR_CRYPTO;
	if ((rc = wl_sql_do(s->db, STMT_BUSINESS_INSERT,
			    SQL_ARGS(SQL_STR(id), SQL_STR(tenant),
				     SQL_STR(name), SQL_STR(slug), SQL_STR(tz),
				     SQL_INT(s->now), SQL_INT(s->now)))) !=
	    WL_OK)
		return rc;
	if ((rc = add_ref(s, o, id, NULL, tenant, path)) != WL_OK)
		return rc;
	EACH(s, o, "services", path, seed_service, tenant, id);
	EACH(s, o, "customFields", path, seed_field, tenant, id);
	EACH(s, o, "queues", path, seed_queue, tenant, id);
	return WL_OK;
}

/* The ids of a key's refs (businesses or queues of its tenant), as its
 * restriction text in *out; WL_ERR_INVALID after bad(). */
static int
ids_json(struct seed *s, const cJSON *a, const char *name,
	 const char *prefix, const char *tenant, const char *path, char **out)
{
	const cJSON *it;
	cJSON *ids = cJSON_CreateArray();
	const char *id;

	*out = NULL;
	cJSON_ArrayForEach(it, a) {
		if ((id = resolve(s, it->valuestring, prefix, tenant)) ==
		    NULL) {
			cJSON_Delete(ids);
			return unknown_ref(s, path, name, it->valuestring,
					   "the key's tenant");
		}
		cJSON_AddItemToArray(ids, cJSON_CreateString(id));
	}
	*out = cJSON_PrintUnformatted(ids);
	cJSON_Delete(ids);
	return *out ? WL_OK : WL_ERR_NOMEM;
}

static int
all_strings(const cJSON *a)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, a) if (!cJSON_IsString(it)) return 0;
	return 1;
}

static int
seed_key(struct seed *s, const cJSON *o, const struct wl_tenant *t,
	 const char *path)
{
	const cJSON *scopes, *biz, *queues, *it;
	const char *type;
	char id[WL_ID_MAX], plain[128];
	char *bj = NULL, *qj = NULL;
	struct wl_buf csv = {0};
	long long days;
	int rc;

	if (wl_json_get_array(o, "scopes", &scopes) < 0 ||
	    wl_json_get_array(o, "businesses", &biz) < 0 ||
	    wl_json_get_array(o, "queues", &queues) < 0 ||
	    (scopes && !all_strings(scopes)) || (biz && !all_strings(biz)) ||
	    (queues && !all_strings(queues)))
		return bad(s, path, "scopes, businesses and queues must be "
			   "arrays of strings");
	if ((rc = get_num(s, o, "expiresInDays", 0, 0, 36500, &days, path)) ||
	    (rc = get_text(s, o, "integrationType", "api", 16, &type, path)))
		return rc;
	if (scopes == NULL)
		wl_buf_printf(&csv, "waitlist:read,waitlist:write");
	cJSON_ArrayForEach(it, scopes)
		wl_buf_printf(&csv, "%s%s", csv.len ? "," : "", it->valuestring);
	if ((rc = ids_json(s, biz, "businesses", "biz_", t->id, path, &bj)) ||
	    (rc = ids_json(s, queues, "queues", "que_", t->id, path, &qj)))
		goto out;
	rc = wl_key_insert(s->db, t, csv.p ? csv.p : "", bj, qj, days, type,
			   id, plain, sizeof(plain), s->err, s->errsz);
	if (rc == WL_ERR_INVALID || rc == WL_ERR_LIMIT) {
		char msg[512];
		snprintf(msg, sizeof(msg), "%s", s->err);
		bad(s, path, msg);
	}
	if (rc == WL_OK)
		rc = add_ref(s, o, id, plain, t->id, path);
out:
	free(bj);
	free(qj);
	wl_buf_free(&csv);
	return rc;
}

static int
seed_tenant(struct seed *s, const cJSON *o, int unused, const char *path)
{
	struct wl_tenant t = {0};
	const char *name, *plan, *state;
	const cJSON *limits = NULL;
	long long *l = t.limits;
	size_t i;
	int rc, st;

	(void)unused;
	if ((rc = get_name(s, o, "name", "Tenant", &name, path)) ||
	    (rc = get_text(s, o, "plan", "pro", 64, &plan, path)) ||
	    (rc = get_text(s, o, "state", "active", 16, &state, path)) ||
	    (rc = get_flag(s, o, "publicApi", 1, &t.public_api, path)) ||
	    (rc = get_flag(s, o, "webhooks", 1, &t.webhooks, path)) ||
	    (rc = get_flag(s, o, "zapier", 0, &t.zapier, path)) ||
	    (rc = get_flag(s, o, "emailVerified", 1, &t.email_verified, path)) ||
	    (rc = get_flag(s, o, "billingAvailable", 1, &t.billing, path)) ||
	    (rc = get_num(s, o, "guestAllowance", 10000, 0, 1000000000,
			  &t.guest_allowance, path)))
		return rc;
	if ((st = wl_name_index(wl_state_names, WL_STATE__MAX, state)) < 0)
		return bad(s, path, "state must be active, disabled or demo");
	t.state = (enum wl_state)st;
	if (wl_json_get_object(o, "limits", &limits) < 0)
		return bad(s, path, "limits must be an object");
	for (const cJSON *it = limits ? limits->child : NULL; it; it = it->next)
		if (wl_name_index(wl_limit_names, WL_LIMIT__MAX,
				  it->string) < 0) {
			char msg[160];
			snprintf(msg, sizeof(msg), "unknown limit %.*s in limits",
				 (int)wl_utf8_prefix(it->string, 100),
				 it->string);
			return bad(s, path, msg);
		}
	for (i = 0; i < WL_LIMIT__MAX; i++)
		if ((rc = get_num(s, limits, wl_limit_names[i],
				  wl_limit_defaults[i], 0, 1000000000, &l[i],
				  path)))
			return rc;
	{
		char msg[160];
		if (wl_limits_check(NULL, l, msg, sizeof(msg)) < 0)
			return bad(s, path, msg);
	}
	if (wl_id_new("ten_", t.id) != WL_OK)
		return WL_ERR_CRYPTO;
	t.name = (char *)name;
	t.plan = (char *)plan;
	rc = wl_sql_do(s->db, STMT_TENANT_INSERT,
		       SQL_ARGS(SQL_STR(t.id), SQL_STR(name), SQL_STR(plan),
				SQL_INT(t.public_api), SQL_INT(t.webhooks),
				SQL_INT(t.zapier), SQL_STR(state),
				SQL_INT(t.email_verified), SQL_INT(t.billing),
				SQL_INT(t.guest_allowance), SQL_INT(l[0]),
				SQL_INT(l[1]), SQL_INT(l[2]), SQL_INT(l[3]),
				SQL_INT(l[4]), SQL_INT(l[5]), SQL_INT(l[6]),
				SQL_INT(l[7]), SQL_INT(s->now),
				SQL_INT(s->now)));
	if (rc == WL_OK)
		rc = wl_sql_do(s->db, STMT_COUNTER_INSERT,
			       SQL_ARGS(SQL_STR(t.id)));
	if (rc == WL_OK)
		rc = add_ref(s, o, t.id, NULL, NULL, path);
	if (rc != WL_OK)
		return rc;
	EACH(s, o, "businesses", path, seed_business, t.id);
	EACH(s, o, "keys", path, seed_key, &t);
	return WL_OK;
}

/*
 * The fixture's members, level by level (OPERATIONS.md).  A member of no
 * level is named on stderr and otherwise ignored: a misspelt setting
 * ("billing" for "billingAvailable") would silently take the default.
 */
static const char *const top_k[] = {"tenants", NULL};
static const char *const tenant_k[] = {
    "ref", "name", "plan", "publicApi", "webhooks", "zapier", "state",
    "emailVerified", "billingAvailable", "guestAllowance", "limits",
    "businesses", "keys", NULL};
static const char *const business_k[] = {
    "ref", "name", "slug", "timeZone", "services", "customFields", "queues",
    NULL};
static const char *const service_k[] = {
    "ref", "serviceName", "baseDurationMinutes", "isActive", NULL};
static const char *const field_k[] = {
    "ref", "label", "type", "required", "public", "options", NULL};
static const char *const option_k[] = {"value", "label", NULL};
static const char *const queue_k[] = {
    "ref", "name", "timeZone", "services", "customFields", "workingHours",
    "availability", NULL};
static const char *const hours_k[] = {"enabled", "start", "end", "days",
				      NULL};
static const char *const days_k[] = {"mon", "tue", "wed", "thu", "fri",
				     "sat", "sun", NULL};
static const char *const day_k[] = {"enabled", "start", "end", NULL};
static const char *const avail_k[] = {
    "walkInsEnabled", "walkInsPaused", "bookingsEnabled", "bookingsPaused",
    "bookingSlotMinutes", "bookingHours", "bookingCapacity",
    "serviceRequired", NULL};
static const char *const key_k[] = {
    "ref", "scopes", "businesses", "queues", "expiresInDays",
    "integrationType", NULL};

/* Name o's members that are not in known (o may be anything). */
static void
warn_unknown(const cJSON *o, const char *const *known, const char *path)
{
	const cJSON *it;
	size_t i;

	if (!cJSON_IsObject(o))
		return;
	cJSON_ArrayForEach(it, o) {
		for (i = 0; known[i] && strcmp(known[i], it->string); i++)
			;
		if (known[i] == NULL)
			fprintf(stderr, "waitlistctl: seed: %s: unknown member "
				"\"%.*s\" ignored\n", path,
				(int)wl_utf8_prefix(it->string, 60), it->string);
	}
}

/* The objects of the array o[name], each checked against known. */
static void
warn_each(const cJSON *o, const char *name, const char *const *known,
	  const char *path, void (*deeper)(const cJSON *, const char *))
{
	const cJSON *a = cJSON_IsObject(o)
			     ? cJSON_GetObjectItemCaseSensitive(o, name)
			     : NULL, *it;
	char p[400];
	int i = 0;

	if (!cJSON_IsArray(a))
		return;
	cJSON_ArrayForEach(it, a) {
		snprintf(p, sizeof(p), "%s.%s[%d]", path, name, i++);
		warn_unknown(it, known, p);
		if (deeper)
			deeper(it, p);
	}
}

static void
warn_hours(const cJSON *h, const char *path)
{
	const cJSON *days = cJSON_IsObject(h)
				? cJSON_GetObjectItemCaseSensitive(h, "days")
				: NULL, *it;
	char p[460];

	warn_unknown(h, hours_k, path);
	snprintf(p, sizeof(p), "%s.days", path);
	warn_unknown(days, days_k, p);
	if (cJSON_IsObject(days))
		cJSON_ArrayForEach(it, days) {
			snprintf(p, sizeof(p), "%s.days.%.*s", path,
				 (int)wl_utf8_prefix(it->string, 10),
				 it->string);
			warn_unknown(it, day_k, p);
		}
}

static void
warn_queue(const cJSON *q, const char *path)
{
	const cJSON *av = cJSON_GetObjectItemCaseSensitive(q, "availability");
	char p[460];

	snprintf(p, sizeof(p), "%s.workingHours", path);
	warn_hours(cJSON_GetObjectItemCaseSensitive(q, "workingHours"), p);
	snprintf(p, sizeof(p), "%s.availability", path);
	warn_unknown(av, avail_k, p);
	if (cJSON_IsObject(av)) {
		snprintf(p, sizeof(p), "%s.availability.bookingHours", path);
		warn_hours(cJSON_GetObjectItemCaseSensitive(av, "bookingHours"),
			   p);
	}
}

static void
warn_field(const cJSON *f, const char *path)
{
	warn_each(f, "options", option_k, path, NULL);
}

static void
warn_business(const cJSON *b, const char *path)
{
	warn_each(b, "services", service_k, path, NULL);
	warn_each(b, "customFields", field_k, path, warn_field);
	warn_each(b, "queues", queue_k, path, warn_queue);
}

static void
warn_tenant(const cJSON *t, const char *path)
{
	warn_each(t, "businesses", business_k, path, warn_business);
	warn_each(t, "keys", key_k, path, NULL);
}

static int
seed_all(struct wl_db *db, void *arg)
{
	struct seed *s = arg;

	(void)db;
	cJSON_Delete(s->refs);
	cJSON_Delete(s->local);
	cJSON_Delete(s->owner);
	s->refs = cJSON_CreateObject();
	s->local = cJSON_CreateObject();
	s->owner = cJSON_CreateObject();
	if (s->refs == NULL || s->local == NULL || s->owner == NULL)
		return WL_ERR_NOMEM;
	EACH(s, s->fixture, "tenants", "fixture", seed_tenant, 0);
	return WL_OK;
}

/* Load fixture_json; see the top of this file. */
int
wl_admin_seed(struct wl_app *app, const char *fixture_json, FILE *out,
	      char *err, size_t errsz)
{
	struct seed s = {0};
	cJSON *root = NULL;
	char *text;
	int rc;

	*err = '\0';
	s.db = app->db;
	s.err = err;
	s.errsz = errsz;
	s.now = wl_now_ms();
	if ((s.fixture = cJSON_Parse(fixture_json)) == NULL ||
	    !cJSON_IsObject(s.fixture)) {
		snprintf(err, errsz, "the fixture is not a JSON object");
		rc = WL_ERR_INVALID;
		goto out;
	}
	warn_unknown(s.fixture, top_k, "fixture");
	warn_each(s.fixture, "tenants", tenant_k, "fixture", warn_tenant);
	rc = wl_db_txn(app->db, seed_all, &s);
	if (rc != WL_OK) {
		if (*err == '\0')
			snprintf(err, errsz, "database: %s",
				 wl_db_error(app->db));
		goto out;
	}
	root = cJSON_CreateObject();
	cJSON_AddItemToObject(root, "refs", s.refs);
	s.refs = NULL;
	text = cJSON_PrintUnformatted(root);
	if (text == NULL) {
		rc = WL_ERR_NOMEM;
		goto out;
	}
	fprintf(out, "%s\n", text);
	free(text);
out:
	cJSON_Delete(root);
	cJSON_Delete(s.refs);
	cJSON_Delete(s.local);
	cJSON_Delete(s.owner);
	cJSON_Delete((cJSON *)s.fixture);
	return rc;
}
