/*
 * Time: ISO 8601 in and out, HH:MM, IANA zones across DST changes, and
 * opening hours.  Expected instants were worked out by hand: Paris is CET
 * (+1) and CEST (+2) from 2026-03-29T01:00Z to 2026-10-25T01:00Z; New York
 * is EST (-5) and EDT (-4) from 2026-03-08T07:00Z to 2026-11-01T06:00Z.
 */
#include "config.h"

#include <stdlib.h>

#include "extern.h"
#include "tests.h"

/* 2026-03-29T01:30:00Z: 20541 days after the epoch, plus 90 minutes. */
#define T_20260329_0130Z 1774747800000LL

static const char *
iso(int64_t ms)
{
	static char buf[WL_TS_MAX];

	wl_ms_to_iso(ms, buf);
	return buf;
}

/* The instant of a local wall time, as ISO text. */
static const char *
instant(const char *tz, int y, int m, int d, int minute)
{
	int64_t ms = -1;

	ck_assert_int_eq(wl_tz_instant(tz, y, m, d, minute, &ms), 0);
	return iso(ms);
}

static int64_t
parsed(const char *s)
{
	int64_t ms = -1;

	ck_assert_msg(wl_iso_to_ms(s, &ms) == 0, "refused %s", s);
	return ms;
}

START_TEST(ms_to_iso_formats_the_epoch)
{
	ck_assert_str_eq(iso(0), "1970-01-01T00:00:00.000Z");
}
END_TEST

START_TEST(ms_to_iso_formats_a_leap_day)
{
	ck_assert_str_eq(iso(1709210096789LL), "2024-02-29T12:34:56.789Z");
	ck_assert_str_eq(iso(951782400000LL), "2000-02-29T00:00:00.000Z");
	ck_assert_str_eq(iso(T_20260329_0130Z), "2026-03-29T01:30:00.000Z");
}
END_TEST

START_TEST(ms_to_iso_pads_every_field)
{
	ck_assert_str_eq(iso(5), "1970-01-01T00:00:00.005Z");
	ck_assert_str_eq(iso(60001), "1970-01-01T00:01:00.001Z");
	ck_assert_str_eq(iso(3723040), "1970-01-01T01:02:03.040Z");
	ck_assert_str_eq(iso(253402300799999LL), "9999-12-31T23:59:59.999Z");
	ck_assert_str_eq(iso(253402300800000LL), "10000-01-01T00:00:00.000Z");
	ck_assert_str_eq(iso(-1), "1969-12-31T23:59:59.999Z");
}
END_TEST

START_TEST(iso_with_z_is_parsed)
{
	ck_assert_int_eq(parsed("2026-03-29T01:30:00Z"), T_20260329_0130Z);
	ck_assert_int_eq(parsed("2026-03-29t01:30:00z"), T_20260329_0130Z);
	ck_assert_int_eq(parsed("2026-03-29T01:30Z"), T_20260329_0130Z);
	ck_assert_int_eq(parsed("1970-01-01T00:00:00Z"), 0);
	/* The basic format, without separators. */
	ck_assert_int_eq(parsed("20260329T013000Z"), T_20260329_0130Z);
	ck_assert_int_eq(parsed("20260329T0130Z"), T_20260329_0130Z);
	ck_assert_int_eq(parsed("20260329T033000.000+0200"),
			 T_20260329_0130Z);
	ck_assert_int_eq(parsed("20260329T0330+02"), T_20260329_0130Z);
	ck_assert_int_eq(parsed("2024-02-29T12:34:56.789Z"), 1709210096789LL);
}
END_TEST

START_TEST(iso_offsets_are_applied)
{
	ck_assert_int_eq(parsed("2026-03-29T03:30:00+02:00"),
			 T_20260329_0130Z);
	ck_assert_int_eq(parsed("2026-03-29T03:30:00+0200"), T_20260329_0130Z);
	ck_assert_int_eq(parsed("2026-03-29T03:30:00+02"), T_20260329_0130Z);
	ck_assert_int_eq(parsed("2026-03-29T01:30:00+00"), T_20260329_0130Z);
	ck_assert_int_eq(parsed("2026-03-28T20:00:00-05:30"),
			 T_20260329_0130Z);
	ck_assert_int_eq(parsed("2026-03-29T01:30:00+00:00"),
			 T_20260329_0130Z);
	ck_assert_int_eq(parsed("2026-03-29T01:30:00-00:00"),
			 T_20260329_0130Z);
	/* The offset moves the instant, not the other way round. */
	ck_assert_int_eq(parsed("2026-03-29T01:30:00+02:00"),
			 T_20260329_0130Z - 2 * 3600000);
	ck_assert_int_eq(parsed("2026-03-29T01:30:00-05:30"),
			 T_20260329_0130Z + 5 * 3600000 + 30 * 60000);
}
END_TEST

START_TEST(iso_zero_offsets_are_utc)
{
	static const char *const utc[] = {
	    "2026-03-29T01:30:00Z", "2026-03-29T01:30:00+00:00",
	    "2026-03-29T01:30:00-00:00", "2026-03-29T01:30:00+0000",
	    "2026-03-29T01:30:00+00", "20260329T013000Z",
	};
	size_t i;
	int64_t ms;

	for (i = 0; i < sizeof(utc) / sizeof(*utc); i++) {
		ms = 0;
		ck_assert_msg(wl_iso_to_ms(utc[i], &ms) == 0, "refused %s",
			      utc[i]);
		ck_assert_int_eq(ms, T_20260329_0130Z);
	}
	ck_assert_int_eq(wl_iso_to_ms("2026-03-29T01:30:00", &ms), -1);
}
END_TEST

START_TEST(iso_fraction_is_milliseconds)
{
	ck_assert_int_eq(parsed("2026-03-29T01:30:00.5Z"),
			 T_20260329_0130Z + 500);
	ck_assert_int_eq(parsed("2026-03-29T01:30:00.05Z"),
			 T_20260329_0130Z + 50);
	ck_assert_int_eq(parsed("2026-03-29T01:30:00.123456Z"),
			 T_20260329_0130Z + 123);
	ck_assert_int_eq(parsed("2026-03-29T01:30:00.999999Z"),
			 T_20260329_0130Z + 999);
	ck_assert_int_eq(parsed("2026-03-29T01:30:00,250+00:00"),
			 T_20260329_0130Z + 250);
}
END_TEST

START_TEST(iso_over_64_characters_is_refused)
{
	char s[80];
	int64_t ms = 42;

	/* 2026-03-29T01:30:00. is 20 characters, Z one. */
	snprintf(s, sizeof(s), "2026-03-29T01:30:00.%043dZ", 5);
	ck_assert_int_eq(strlen(s), 64);
	ck_assert_int_eq(wl_iso_to_ms(s, &ms), 0);
	ck_assert_int_eq(ms, T_20260329_0130Z);
	snprintf(s, sizeof(s), "2026-03-29T01:30:00.%044dZ", 5);
	ck_assert_int_eq(wl_iso_to_ms(s, &ms), -1);
}
END_TEST

START_TEST(iso_without_offset_is_refused)
{
	int64_t ms = 42;

	ck_assert_int_eq(wl_iso_to_ms("2026-03-29T01:30:00", &ms), -1);
	ck_assert_int_eq(wl_iso_to_ms("2026-03-29T01:30:00.000", &ms), -1);
	ck_assert_int_eq(wl_iso_to_ms("2026-03-29", &ms), -1);
	ck_assert_int_eq(ms, 42);
}
END_TEST

START_TEST(iso_bad_fields_are_refused)
{
	static const char *const bad[] = {
	    "",
	    "2026-02-30T00:00:00Z",
	    "2025-02-29T00:00:00Z",
	    "2026-04-31T00:00:00Z",
	    "2026-03-00T00:00:00Z",
	    "2026-13-01T00:00:00Z",
	    "2026-00-01T00:00:00Z",
	    "2026-03-29T24:00:00Z",
	    "2026-03-29T23:60:00Z",
	    "2026-03-29T23:59:60Z",
	    "2026-03-29T01:30:00Zjunk",
	    "2026-03-29T01:30:00Z ",
	    " 2026-03-29T01:30:00Z",
	    "2026-03-29 01:30:00Z",
	    "2026-3-29T01:30:00Z",
	    "2026-03-29T1:30:00Z",
	    "2026-03-29T01:30:00.Z",
	    "2026-03-29T01:30:00+2",
	    "2026-03-29T01:30:00+02:",
	    "2026-03-29T01:30:00+021",
	    "2026-03-29T0130Z",
	    "20260329T01:30Z",
	    "2026032T0130Z",
	    "20260329T013Z",
	    "20260329T01300Z",
	    "2026-03-29T01:30:00+02:0",
	    "2026-03-29T01:30:00+24:00",
	    "2026-03-29T01:30:00+02:60",
	    "1969-12-31T23:59:59Z",
	    "1900-01-01T00:00:00Z",
	    "9999-12-31T23:59:59.999-00:01", /* past the 4-digit years */
	    "abcd-ef-ghTij:klZ",
	};
	size_t i;
	int64_t ms;

	for (i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		ck_assert_msg(wl_iso_to_ms(bad[i], &ms) == -1, "accepted %s",
			      bad[i]);
}
END_TEST

START_TEST(iso_round_trips)
{
	static const int64_t v[] = {
	    0, 1, 999, 86399999, 951782400000LL, 1709210096789LL,
	    T_20260329_0130Z, 4102444800000LL, 253402300799999LL,
	};
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(*v); i++)
		ck_assert_int_eq(parsed(iso(v[i])), v[i]);
}
END_TEST

START_TEST(hhmm_parses_the_day_range)
{
	int m = -1;

	ck_assert_int_eq(wl_hhmm_parse("00:00", &m), 0);
	ck_assert_int_eq(m, 0);
	ck_assert_int_eq(wl_hhmm_parse("09:05", &m), 0);
	ck_assert_int_eq(m, 545);
	ck_assert_int_eq(wl_hhmm_parse("23:59", &m), 0);
	ck_assert_int_eq(m, 1439);
	ck_assert_int_eq(wl_hhmm_parse("24:00", &m), 0);
	ck_assert_int_eq(m, 1440);
}
END_TEST

START_TEST(hhmm_refuses_bad_text)
{
	static const char *const bad[] = {
	    "24:01", "25:00", "9:00", "09:0", "12:60", "aa:bb", "",
	    "1200",  "12:00 ", " 12:00", "12.00", "-1:00", "12:00:00",
	};
	size_t i;
	int m = 42;

	for (i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		ck_assert_msg(wl_hhmm_parse(bad[i], &m) == -1, "accepted %s",
			      bad[i]);
	ck_assert_int_eq(wl_hhmm_parse(NULL, &m), -1);
	ck_assert_int_eq(m, 42);
}
END_TEST

START_TEST(tz_valid_knows_real_zones)
{
	ck_assert_int_eq(wl_tz_valid("Europe/Paris"), 1);
	ck_assert_int_eq(wl_tz_valid("America/New_York"), 1);
	ck_assert_int_eq(wl_tz_valid("UTC"), 1);
}
END_TEST

START_TEST(tz_valid_refuses_paths_and_unknown_names)
{
	ck_assert_int_eq(wl_tz_valid("../etc/passwd"), 0);
	ck_assert_int_eq(wl_tz_valid("Europe/../../../etc/passwd"), 0);
	ck_assert_int_eq(wl_tz_valid("/etc/localtime"), 0);
	/* Names that would reach a real zone file through the database
	 * directory are still refused: the C library reads TZ differently. */
	ck_assert_int_eq(wl_tz_valid("../zoneinfo/Europe/Paris"), 0);
	ck_assert_int_eq(wl_tz_valid("Europe/../Europe/Paris"), 0);
	ck_assert_int_eq(wl_tz_valid("/Europe/Paris"), 0);
	ck_assert_int_eq(wl_tz_valid("Nowhere/City"), 0);
	ck_assert_int_eq(wl_tz_valid(""), 0);
	ck_assert_int_eq(wl_tz_valid(NULL), 0);
	ck_assert_int_eq(wl_tz_valid("Europe/Paris "), 0);
	ck_assert_int_eq(wl_tz_valid("europe/paris"), 0);
	/* A directory of the database is not a zone. */
	ck_assert_int_eq(wl_tz_valid("Europe"), 0);
	/* Nor are its files that are not IANA zones. */
	ck_assert_int_eq(wl_tz_valid("right/UTC"), 0);
	ck_assert_int_eq(wl_tz_valid("right/Europe/Paris"), 0);
	ck_assert_int_eq(wl_tz_valid("posix/Europe/Paris"), 0);
	ck_assert_int_eq(wl_tz_valid("localtime"), 0);
	ck_assert_int_eq(wl_tz_valid("posixrules"), 0);
	ck_assert_int_eq(wl_tz_valid("Factory"), 0);
	/* Nor another spelling of a zone's name. */
	ck_assert_int_eq(wl_tz_valid("America//New_York"), 0);
	ck_assert_int_eq(wl_tz_valid("Etc/UTC/"), 0);
	ck_assert_int_eq(wl_tz_valid("Etc/UTC"), 1);
	ck_assert_int_eq(wl_tz_valid("America/Argentina/Buenos_Aires"), 1);
}
END_TEST

START_TEST(tz_local_follows_paris_into_summer_time)
{
	struct wl_local l;

	/* 00:30Z is 01:30 CET; an hour later DST has begun: 03:30 CEST. */
	ck_assert_int_eq(wl_tz_local("Europe/Paris",
				     T_20260329_0130Z - 3600000, &l),
			 0);
	ck_assert_int_eq(l.year, 2026);
	ck_assert_int_eq(l.month, 3);
	ck_assert_int_eq(l.day, 29);
	ck_assert_int_eq(l.wday, 0);
	ck_assert_int_eq(l.minute, 90);
	ck_assert_int_eq(wl_tz_local("Europe/Paris", T_20260329_0130Z, &l), 0);
	ck_assert_int_eq(l.day, 29);
	ck_assert_int_eq(l.wday, 0);
	ck_assert_int_eq(l.minute, 3 * 60 + 30);
}
END_TEST

START_TEST(tz_local_crosses_the_date_line_of_the_zone)
{
	struct wl_local l;

	/* 2026-03-28T23:30Z is already Sunday 00:30 in Paris... */
	ck_assert_int_eq(wl_tz_local("Europe/Paris",
				     T_20260329_0130Z - 2 * 3600000, &l),
			 0);
	ck_assert_int_eq(l.day, 29);
	ck_assert_int_eq(l.wday, 0);
	ck_assert_int_eq(l.minute, 30);
	/* ...and still Saturday 19:30 in New York (EDT since March 8, -4). */
	ck_assert_int_eq(wl_tz_local("America/New_York",
				     T_20260329_0130Z - 2 * 3600000, &l),
			 0);
	ck_assert_int_eq(l.month, 3);
	ck_assert_int_eq(l.day, 28);
	ck_assert_int_eq(l.wday, 6);
	ck_assert_int_eq(l.minute, 19 * 60 + 30);
	/* 2026-01-01T03:00Z is Wednesday 2025-12-31 22:00 in New York. */
	ck_assert_int_eq(wl_tz_local("America/New_York", 1767236400000LL, &l),
			 0);
	ck_assert_int_eq(l.year, 2025);
	ck_assert_int_eq(l.month, 12);
	ck_assert_int_eq(l.day, 31);
	ck_assert_int_eq(l.wday, 3);
	ck_assert_int_eq(l.minute, 22 * 60);
	ck_assert_int_eq(wl_tz_local("UTC", 1767236400000LL, &l), 0);
	ck_assert_int_eq(l.year, 2026);
	ck_assert_int_eq(l.day, 1);
	ck_assert_int_eq(l.wday, 4);
	ck_assert_int_eq(l.minute, 180);
}
END_TEST

START_TEST(tz_instant_of_paris_midnights_around_spring_change)
{
	ck_assert_str_eq(instant("Europe/Paris", 2026, 3, 29, 0),
			 "2026-03-28T23:00:00.000Z");
	ck_assert_str_eq(instant("Europe/Paris", 2026, 3, 29, 119),
			 "2026-03-29T00:59:00.000Z");
	ck_assert_str_eq(instant("Europe/Paris", 2026, 3, 29, 180),
			 "2026-03-29T01:00:00.000Z");
	/* 1440 is the next local midnight, already in CEST. */
	ck_assert_str_eq(instant("Europe/Paris", 2026, 3, 29, 1440),
			 "2026-03-29T22:00:00.000Z");
	ck_assert_str_eq(instant("Europe/Paris", 2026, 3, 30, 0),
			 "2026-03-29T22:00:00.000Z");
}
END_TEST

START_TEST(tz_instant_in_the_spring_gap_moves_forward)
{
	/* 02:30 does not exist on 2026-03-29 in Paris: shifted forward by
	 * the hour of the gap, to 03:30 CEST = 01:30Z. */
	ck_assert_str_eq(instant("Europe/Paris", 2026, 3, 29, 150),
			 "2026-03-29T01:30:00.000Z");
	ck_assert_str_eq(instant("Europe/Paris", 2026, 3, 29, 120),
			 "2026-03-29T01:00:00.000Z");
	/* 02:30 does not exist on 2026-03-08 in New York: 03:30 EDT. */
	ck_assert_str_eq(instant("America/New_York", 2026, 3, 8, 150),
			 "2026-03-08T07:30:00.000Z");
}
END_TEST

START_TEST(tz_instant_when_ambiguous_takes_the_earlier)
{
	/* 02:30 happens twice on 2026-10-25 in Paris: 00:30Z (CEST) and
	 * 01:30Z (CET). */
	ck_assert_str_eq(instant("Europe/Paris", 2026, 10, 25, 150),
			 "2026-10-25T00:30:00.000Z");
	ck_assert_str_eq(instant("Europe/Paris", 2026, 10, 25, 180),
			 "2026-10-25T02:00:00.000Z");
	/* 01:30 happens twice on 2026-11-01 in New York: 05:30Z (EDT) and
	 * 06:30Z (EST). */
	ck_assert_str_eq(instant("America/New_York", 2026, 11, 1, 90),
			 "2026-11-01T05:30:00.000Z");
}
END_TEST

START_TEST(tz_instant_of_days_around_autumn_change)
{
	ck_assert_str_eq(instant("Europe/Paris", 2026, 10, 25, 0),
			 "2026-10-24T22:00:00.000Z");
	ck_assert_str_eq(instant("Europe/Paris", 2026, 10, 25, 1440),
			 "2026-10-25T23:00:00.000Z");
	ck_assert_str_eq(instant("America/New_York", 2026, 3, 8, 0),
			 "2026-03-08T05:00:00.000Z");
	ck_assert_str_eq(instant("America/New_York", 2026, 3, 8, 1440),
			 "2026-03-09T04:00:00.000Z");
	ck_assert_str_eq(instant("America/New_York", 2026, 11, 1, 0),
			 "2026-11-01T04:00:00.000Z");
	ck_assert_str_eq(instant("America/New_York", 2026, 11, 1, 1440),
			 "2026-11-02T05:00:00.000Z");
	ck_assert_str_eq(instant("UTC", 2026, 3, 29, 90),
			 "2026-03-29T01:30:00.000Z");
}
END_TEST

START_TEST(tz_instant_and_local_agree_all_day)
{
	static const struct {
		const char *tz;
		int y, m, d;
		int gap_from, gap_to; /* local minutes that do not exist */
	} days[] = {
	    {"Europe/Paris", 2026, 3, 29, 120, 180},
	    {"Europe/Paris", 2026, 10, 25, 0, 0},
	    {"America/New_York", 2026, 3, 8, 120, 180},
	    {"America/New_York", 2026, 11, 1, 0, 0},
	};
	struct wl_local l;
	int64_t ms, prev;
	size_t i;
	int min, want, gap;

	for (i = 0; i < sizeof(days) / sizeof(*days); i++) {
		prev = -1;
		for (min = 0; min < 1440; min++) {
			ck_assert_int_eq(wl_tz_instant(days[i].tz, days[i].y,
						       days[i].m, days[i].d,
						       min, &ms),
					 0);
			ck_assert_int_eq(wl_tz_local(days[i].tz, ms, &l), 0);
			gap = min >= days[i].gap_from && min < days[i].gap_to;
			want = gap ? min + 60 : min;
			/* Outside the gap, later wall times are later instants
			 * (inside it, 02:59 becomes 03:59, after 03:00). */
			if (!gap) {
				ck_assert_int_gt(ms, prev);
				prev = ms;
			}
			ck_assert_msg(l.day == days[i].d && l.minute == want,
				      "%s %d-%d minute %d -> day %d minute %d",
				      days[i].tz, days[i].m, days[i].d, min,
				      l.day, l.minute);
		}
	}
}
END_TEST

/* ------------------------------------------------------------------ */
/* Opening hours. */

static char herr[256];

static cJSON *
hours(const char *in_text, const cJSON *base)
{
	cJSON *in = NULL, *out;

	if (in_text)
		ck_assert_ptr_nonnull(in = cJSON_Parse(in_text));
	herr[0] = '\0';
	out = wl_hours_normalize(in, base, "hours", herr, sizeof(herr));
	cJSON_Delete(in);
	return out;
}

/* Normalize text that must be refused; returns the message. */
static const char *
hours_refused(const char *in_text)
{
	cJSON *out = hours(in_text, NULL);

	if (out != NULL) {
		cJSON_Delete(out);
		ck_abort_msg("accepted %s", in_text);
	}
	ck_assert_str_ne(herr, "");
	return herr;
}

static void
assert_span(const cJSON *o, int enabled, const char *start, const char *end)
{
	const char *s;
	int b;

	ck_assert_int_eq(wl_json_get_bool(o, "enabled", &b), 1);
	ck_assert_int_eq(b, enabled);
	ck_assert_int_eq(wl_json_get_string(o, "start", &s), 1);
	ck_assert_str_eq(s, start);
	ck_assert_int_eq(wl_json_get_string(o, "end", &s), 1);
	ck_assert_str_eq(s, end);
}

static const cJSON *
day(const cJSON *h, const char *name)
{
	const cJSON *days, *d;

	ck_assert_int_eq(wl_json_get_object(h, "days", &days), 1);
	ck_assert_int_eq(wl_json_get_object(days, name, &d), 1);
	return d;
}

START_TEST(hours_default_is_disabled_all_day_with_every_day)
{
	static const char *const order[] = {"mon", "tue", "wed", "thu",
					    "fri", "sat", "sun"};
	const cJSON *days, *d;
	cJSON *h = hours(NULL, NULL);
	const char *s;
	int b, i = 0;

	ck_assert_ptr_nonnull(h);
	ck_assert_int_eq(wl_json_get_bool(h, "enabled", &b), 1);
	ck_assert_int_eq(b, 0);
	ck_assert_int_eq(wl_json_get_string(h, "start", &s), 1);
	ck_assert_str_eq(s, "00:00");
	ck_assert_int_eq(wl_json_get_string(h, "end", &s), 1);
	ck_assert_str_eq(s, "24:00");
	ck_assert_int_eq(wl_json_get_object(h, "days", &days), 1);
	cJSON_ArrayForEach(d, days) {
		ck_assert_int_lt(i, 7);
		ck_assert_str_eq(d->string, order[i]);
		ck_assert_int_eq(wl_json_get_bool(d, "enabled", &b), 1);
		ck_assert_int_eq(wl_json_get_string(d, "start", &s), 1);
		ck_assert_str_eq(s, "00:00");
		ck_assert_int_eq(wl_json_get_string(d, "end", &s), 1);
		ck_assert_str_eq(s, "24:00");
		i++;
	}
	ck_assert_int_eq(i, 7);
	cJSON_Delete(h);
}
END_TEST

START_TEST(hours_absent_copies_the_base)
{
	cJSON *base = hours("{\"start\":\"09:00\",\"end\":\"18:00\","
			    "\"days\":{\"sun\":{\"enabled\":false}}}",
			    NULL);
	cJSON *h;

	ck_assert_ptr_nonnull(base);
	h = hours(NULL, base);
	ck_assert_ptr_nonnull(h);
	ck_assert_ptr_ne(h, base);
	ck_assert_int_eq(cJSON_Compare(h, base, 1), 1);
	cJSON_Delete(base);
	/* A deep copy: it outlives the base. */
	assert_span(day(h, "sun"), 0, "09:00", "18:00");
	cJSON_Delete(h);
}
END_TEST

START_TEST(hours_top_level_only_is_copied_to_every_day)
{
	cJSON *h = hours("{\"enabled\":true,\"start\":\"09:00\","
			 "\"end\":\"18:00\"}",
			 NULL);
	size_t i;

	ck_assert_ptr_nonnull(h);
	assert_span(h, 1, "09:00", "18:00");
	for (i = 0; i < 7; i++)
		assert_span(day(h, wl_day_names[i]), 1, "09:00", "18:00");
	cJSON_Delete(h);
}
END_TEST

START_TEST(hours_given_without_enabled_are_enabled)
{
	cJSON *h = hours("{\"start\":\"08:30\"}", NULL);

	ck_assert_ptr_nonnull(h);
	assert_span(h, 1, "08:30", "24:00");
	assert_span(day(h, "wed"), 1, "08:30", "24:00");
	cJSON_Delete(h);
}
END_TEST

START_TEST(hours_day_with_only_enabled_keeps_top_level_span)
{
	cJSON *h = hours("{\"start\":\"09:00\",\"end\":\"18:00\",\"days\":{"
			 "\"sun\":{\"enabled\":false},"
			 "\"sat\":{\"end\":\"13:00\"},"
			 "\"mon\":{\"start\":\"10:00\",\"end\":\"24:00\"}}}",
			 NULL);

	ck_assert_msg(h != NULL, "refused: %s", herr);
	assert_span(h, 1, "09:00", "18:00");
	assert_span(day(h, "sun"), 0, "09:00", "18:00");
	assert_span(day(h, "sat"), 1, "09:00", "13:00");
	assert_span(day(h, "mon"), 1, "10:00", "24:00");
	assert_span(day(h, "tue"), 1, "09:00", "18:00");
	cJSON_Delete(h);
}
END_TEST

START_TEST(hours_bad_time_is_refused_naming_the_field)
{
	ck_assert_str_eq(hours_refused("{\"start\":\"25:00\"}"),
			 "hours.start must be HH:MM");
	ck_assert_ptr_nonnull(
	    strstr(hours_refused("{\"end\":\"25:00\"}"), "hours.end"));
	ck_assert_ptr_nonnull(strstr(
	    hours_refused("{\"days\":{\"wed\":{\"end\":\"25:00\"}}}"),
	    "hours.days.wed.end"));
	ck_assert_ptr_nonnull(strstr(
	    hours_refused("{\"days\":{\"fri\":{\"start\":\"9:00\"}}}"),
	    "hours.days.fri.start"));
	/* 24:00 ends a day but cannot start one, even a closed one. */
	ck_assert_str_eq(hours_refused("{\"start\":\"24:00\"}"),
			 "hours.start must be HH:MM");
	ck_assert_str_eq(
	    hours_refused("{\"days\":{\"mon\":{\"enabled\":false,"
			  "\"start\":\"24:00\"}}}"),
	    "hours.days.mon.start must be HH:MM");
}
END_TEST

START_TEST(hours_end_before_start_is_refused_when_enabled)
{
	cJSON *h;

	ck_assert_ptr_nonnull(
	    strstr(hours_refused("{\"start\":\"18:00\",\"end\":\"09:00\"}"),
		   "hours.end must be after hours.start"));
	ck_assert_ptr_nonnull(
	    strstr(hours_refused("{\"start\":\"09:00\",\"end\":\"09:00\"}"),
		   "hours.end"));
	ck_assert_ptr_nonnull(strstr(
	    hours_refused("{\"days\":{\"tue\":{\"start\":\"12:00\","
			  "\"end\":\"11:00\"}}}"),
	    "hours.days.tue.end must be after hours.days.tue.start"));
	/* A closed day may hold any span. */
	h = hours("{\"days\":{\"tue\":{\"enabled\":false,\"start\":\"12:00\","
		  "\"end\":\"11:00\"}}}",
		  NULL);
	ck_assert_msg(h != NULL, "refused: %s", herr);
	assert_span(day(h, "tue"), 0, "12:00", "11:00");
	cJSON_Delete(h);
}
END_TEST

START_TEST(hours_wrong_types_are_refused)
{
	ck_assert_ptr_nonnull(strstr(hours_refused("[]"), "hours"));
	ck_assert_ptr_nonnull(
	    strstr(hours_refused("{\"enabled\":\"yes\"}"), "enabled"));
	ck_assert_ptr_nonnull(strstr(hours_refused("{\"start\":900}"), "hours"));
	ck_assert_ptr_nonnull(
	    strstr(hours_refused("{\"days\":[]}"), "hours.days"));
	ck_assert_ptr_nonnull(
	    strstr(hours_refused("{\"days\":{\"mon\":true}}"), "hours.days.mon"));
	ck_assert_ptr_nonnull(strstr(
	    hours_refused("{\"days\":{\"mon\":{\"enabled\":1}}}"),
	    "hours.days.mon"));
}
END_TEST

Suite *
suite_time(void)
{
	Suite *s = suite_create("time");
	TCase *ti = tcase_create("iso");
	TCase *tz = tcase_create("zones");
	TCase *th = tcase_create("hours");

	tcase_add_test(ti, ms_to_iso_formats_the_epoch);
	tcase_add_test(ti, ms_to_iso_formats_a_leap_day);
	tcase_add_test(ti, ms_to_iso_pads_every_field);
	tcase_add_test(ti, iso_with_z_is_parsed);
	tcase_add_test(ti, iso_offsets_are_applied);
	tcase_add_test(ti, iso_zero_offsets_are_utc);
	tcase_add_test(ti, iso_fraction_is_milliseconds);
	tcase_add_test(ti, iso_over_64_characters_is_refused);
	tcase_add_test(ti, iso_without_offset_is_refused);
	tcase_add_test(ti, iso_bad_fields_are_refused);
	tcase_add_test(ti, iso_round_trips);
	tcase_add_test(ti, hhmm_parses_the_day_range);
	tcase_add_test(ti, hhmm_refuses_bad_text);
	suite_add_tcase(s, ti);
	tcase_add_test(tz, tz_valid_knows_real_zones);
	tcase_add_test(tz, tz_valid_refuses_paths_and_unknown_names);
	tcase_add_test(tz, tz_local_follows_paris_into_summer_time);
	tcase_add_test(tz, tz_local_crosses_the_date_line_of_the_zone);
	tcase_add_test(tz, tz_instant_of_paris_midnights_around_spring_change);
	tcase_add_test(tz, tz_instant_in_the_spring_gap_moves_forward);
	tcase_add_test(tz, tz_instant_when_ambiguous_takes_the_earlier);
	tcase_add_test(tz, tz_instant_of_days_around_autumn_change);
	tcase_add_test(tz, tz_instant_and_local_agree_all_day);
	suite_add_tcase(s, tz);
	tcase_add_test(th, hours_default_is_disabled_all_day_with_every_day);
	tcase_add_test(th, hours_absent_copies_the_base);
	tcase_add_test(th, hours_top_level_only_is_copied_to_every_day);
	tcase_add_test(th, hours_given_without_enabled_are_enabled);
	tcase_add_test(th, hours_day_with_only_enabled_keeps_top_level_span);
	tcase_add_test(th, hours_bad_time_is_refused_naming_the_field);
	tcase_add_test(th, hours_end_before_start_is_refused_when_enabled);
	tcase_add_test(th, hours_wrong_types_are_refused);
	suite_add_tcase(s, th);
	return s;
}
