/*
 * Opening hours: {enabled, start, end, days: {mon..sun: {enabled, start,
 * end}}}.  Stored normalized with all seven days, so readers never fill
 * gaps.
 */
#include "config.h"

#include <stdio.h>

#include "extern.h"

const char *const wl_day_names[7] = {"sun", "mon", "tue", "wed",
				     "thu", "fri", "sat"};

static int
check_span(const char *what, int enabled, const char *start, const char *end,
	   char *err, size_t errsz)
{
	int s, e;

	if (wl_hhmm_parse(start, &s) < 0 || s == 1440) {
		snprintf(err, errsz, "%s.start must be HH:MM", what);
		return -1;
	}
	if (wl_hhmm_parse(end, &e) < 0) {
		snprintf(err, errsz, "%s.end must be HH:MM (24:00 allowed)",
			 what);
		return -1;
	}
	if (enabled && e <= s) {
		snprintf(err, errsz, "%s.end must be after %s.start", what,
			 what);
		return -1;
	}
	return 0;
}

static int
get_span(const cJSON *o, const char *what, int *enabled, const char **start,
	 const char **end, char *err, size_t errsz)
{
	if (wl_json_get_bool(o, "enabled", enabled) < 0 ||
	    wl_json_get_string(o, "start", start) < 0 ||
	    wl_json_get_string(o, "end", end) < 0) {
		snprintf(err, errsz, "%s: enabled must be a boolean, start and "
			 "end strings", what);
		return -1;
	}
	return 0;
}

/*
 * Normalize hours given as in (may be NULL: then a copy of base, or when
 * base is NULL too, no schedule: enabled false, 00:00-24:00 every day).
 * Omitted days copy the top-level enabled/start/end.  Returns the new
 * object or NULL with a message in err.
 */
cJSON *
wl_hours_normalize(const cJSON *in, const cJSON *base, const char *what,
		   char *err, size_t errsz)
{
	const char *start = "00:00", *end = "24:00", *ds, *de;
	const cJSON *days = NULL, *d;
	cJSON *out, *od, *day;
	int enabled = base ? 1 : 0, de_on, i;
	char name[400];

	if (in == NULL && base != NULL)
		return cJSON_Duplicate(base, 1);
	if (in != NULL) {
		if (!cJSON_IsObject(in)) {
			snprintf(err, errsz, "%s must be an object", what);
			return NULL;
		}
		enabled = 1;
		if (get_span(in, what, &de_on, &ds, &de, err, errsz) < 0)
			return NULL;
		if (wl_json_get_bool(in, "enabled", &de_on) == 1)
			enabled = de_on;
		start = ds ? ds : start;
		end = de ? de : end;
		if (wl_json_get_object(in, "days", &days) < 0) {
			snprintf(err, errsz, "%s.days must be an object", what);
			return NULL;
		}
	}
	if (check_span(what, enabled, start, end, err, errsz) < 0)
		return NULL;
	out = cJSON_CreateObject();
	wl_json_add_bool(out, "enabled", enabled);
	wl_json_add_str(out, "start", start);
	wl_json_add_str(out, "end", end);
	od = cJSON_AddObjectToObject(out, "days");
	for (i = 0; i < 7; i++) {
		/* Output order mon..sun. */
		const char *dn = wl_day_names[(i + 1) % 7];
		int on = enabled;
		ds = start;
		de = end;
		d = days ? cJSON_GetObjectItemCaseSensitive(days, dn) : NULL;
		snprintf(name, sizeof(name), "%s.days.%s", what, dn);
		if (d && !cJSON_IsObject(d)) {
			snprintf(err, errsz, "%s must be an object", name);
			goto fail;
		}
		if (d) {
			const char *s2, *e2;
			int on2;
			if (get_span(d, name, &on2, &s2, &e2, err, errsz) < 0)
				goto fail;
			if (wl_json_get_bool(d, "enabled", &on2) == 1)
				on = on2;
			ds = s2 ? s2 : ds;
			de = e2 ? e2 : de;
		}
		if (check_span(name, on, ds, de, err, errsz) < 0)
			goto fail;
		day = cJSON_AddObjectToObject(od, dn);
		wl_json_add_bool(day, "enabled", on);
		wl_json_add_str(day, "start", ds);
		wl_json_add_str(day, "end", de);
	}
	return out;
fail:
	cJSON_Delete(out);
	return NULL;
}
