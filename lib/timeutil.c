/*
 * Time: the clock, ISO 8601 in and out, and local time in IANA zones.
 * Zone conversions use the C library's tz database through TZ; a worker is
 * single-threaded and remembers the zone it last selected, so switching is
 * rare and cheap.
 */
#include "config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "extern.h"

static int64_t pinned; /* 0: the real clock */

/* Pin the clock for the request in hand (see [server] test_clock). */
void
wl_clock_pin(int64_t ms)
{
	pinned = ms;
}

/* Current time in milliseconds since the epoch. */
int64_t
wl_now_ms(void)
{
	struct timespec ts;

	if (pinned)
		return pinned;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A monotonic clock in milliseconds, for intervals; never pinned. */
int64_t
wl_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Days since 1970-01-01 of a proleptic Gregorian date. */
static int64_t
days_from_civil(int64_t y, unsigned m, unsigned d)
{
	int64_t era;
	unsigned yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = (unsigned)(y - era * 400);
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

static void
civil_from_days(int64_t z, int *y, int *m, int *d)
{
	int64_t era, yy;
	unsigned doe, yoe, doy, mp;

	z += 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = (unsigned)(z - era * 146097);
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	yy = (int64_t)yoe + era * 400;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = (int)(doy - (153 * mp + 2) / 5 + 1);
	*m = (int)(mp < 10 ? mp + 3 : mp - 9);
	*y = (int)(yy + (*m <= 2));
}

static int
days_in_month(int y, int m)
{
	static const int dm[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

	if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
		return 29;
	return dm[m - 1];
}

/* Write v as n decimal digits, zero-padded, at p; returns p + n. */
static char *
put_digits(char *p, int v, int n)
{
	int i;

	for (i = n - 1; i >= 0; i--, v /= 10)
		p[i] = (char)('0' + v % 10);
	return p + n;
}

/* Format ms as YYYY-MM-DDTHH:MM:SS.mmmZ, without printf for years 0 to
 * 9999. */
void
wl_ms_to_iso(int64_t ms, char out[WL_TS_MAX])
{
	int64_t days = ms >= 0 ? ms / 86400000 : (ms - 86399999) / 86400000;
	int rem = (int)(ms - days * 86400000);
	char *p = out;
	int y, m, d;

	civil_from_days(days, &y, &m, &d);
	if (y < 0 || y > 9999) {
		if (snprintf(out, WL_TS_MAX, "%04d-%02d-%02dT%02d:%02d:%02d."
			     "%03dZ", y, m, d, rem / 3600000, rem / 60000 % 60,
			     rem / 1000 % 60, rem % 1000) < 0)
			out[0] = '\0';
		return;
	}
	p = put_digits(p, y, 4);
	*p++ = '-';
	p = put_digits(p, m, 2);
	*p++ = '-';
	p = put_digits(p, d, 2);
	*p++ = 'T';
	p = put_digits(p, rem / 3600000, 2);
	*p++ = ':';
	p = put_digits(p, rem / 60000 % 60, 2);
	*p++ = ':';
	p = put_digits(p, rem / 1000 % 60, 2);
	*p++ = '.';
	p = put_digits(p, rem % 1000, 3);
	*p++ = 'Z';
	*p = '\0';
}

static int
digits(const char **p, int n, int *out)
{
	int v = 0, i;

	for (i = 0; i < n; i++) {
		if (!isdigit((unsigned char)(*p)[i]))
			return -1;
		v = v * 10 + ((*p)[i] - '0');
	}
	*p += n;
	*out = v;
	return 0;
}

/* An optional separator: in the extended format (ext) it must be there,
 * in the basic format it must not. */
static int
sep(const char **p, int ext, char c)
{
	if (!ext)
		return **p == c ? -1 : 0;
	if (**p != c)
		return -1;
	(*p)++;
	return 0;
}

/*
 * Parse an ISO 8601 date and time of day with an explicit offset: the
 * extended format YYYY-MM-DDTHH:MM[:SS[.fff...]] or the basic format
 * YYYYMMDDTHHMM[SS[.fff...]], then Z or +hh:mm, +hhmm or +hh (or -).
 * A timestamp without an offset is refused, as is one longer than
 * WL_ISO_INPUT_MAX.  Sets *ms.  Returns 0 or -1.
 */
int
wl_iso_to_ms(const char *s, int64_t *ms)
{
	int y, mo, d, h, mi, sec = 0, frac = 0, fd = 0, oh = 0, om = 0, sign;
	const char *p = s;
	int ext;

	if (strnlen(s, WL_ISO_INPUT_MAX + 1) > WL_ISO_INPUT_MAX ||
	    digits(&p, 4, &y))
		return -1;
	ext = *p == '-';
	if (sep(&p, ext, '-') || digits(&p, 2, &mo) || sep(&p, ext, '-') ||
	    digits(&p, 2, &d))
		return -1;
	if (*p != 'T' && *p != 't')
		return -1;
	p++;
	if (digits(&p, 2, &h) || sep(&p, ext, ':') || digits(&p, 2, &mi))
		return -1;
	if (ext ? *p == ':' : isdigit((unsigned char)*p)) {
		p += ext;
		if (digits(&p, 2, &sec))
			return -1;
		if (*p == '.' || *p == ',') {
			p++;
			if (!isdigit((unsigned char)*p))
				return -1;
			while (isdigit((unsigned char)*p)) {
				if (fd < 3) {
					frac = frac * 10 + (*p - '0');
					fd++;
				}
				p++;
			}
			while (fd < 3) {
				frac *= 10;
				fd++;
			}
		}
	}
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		sign = *p++ == '-' ? -1 : 1;
		if (digits(&p, 2, &oh))
			return -1;
		/* Minutes after a colon, or directly, or none (+hh). */
		if (*p == ':' ? (p++, digits(&p, 2, &om))
			      : *p != '\0' && digits(&p, 2, &om))
			return -1;
		if (oh > 23 || om > 59)
			return -1;
		oh *= sign;
		om *= sign;
	} else
		return -1;
	if (*p != '\0')
		return -1;
	if (y < 1970 || y > 9999 || mo < 1 || mo > 12 || d < 1 ||
	    d > days_in_month(y, mo) || h > 23 || mi > 59 || sec > 59)
		return -1;
	*ms = (days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 +
	       h * 3600 + mi * 60 + sec - oh * 3600 - om * 60) *
		  1000 +
	      frac;
	/* Both ends print back in the four-digit-year response format. */
	return *ms < 0 || *ms > 253402300799999LL ? -1 : 0;
}

/* "HH:MM" in 00:00..24:00; sets *minutes.  Returns 0 or -1. */
int
wl_hhmm_parse(const char *s, int *minutes)
{
	int h, m;
	const char *p = s;

	if (s == NULL || digits(&p, 2, &h) || *p++ != ':' ||
	    digits(&p, 2, &m) || *p != '\0')
		return -1;
	if (m > 59 || h > 24 || (h == 24 && m != 0))
		return -1;
	*minutes = h * 60 + m;
	return 0;
}

/* Select zone tz for localtime_r(), remembering the last one. */
static void
tz_select(const char *tz)
{
	static char current[128];
	char spec[136];

	if (strcmp(current, tz) == 0)
		return;
	snprintf(current, sizeof(current), "%s", tz);
	snprintf(spec, sizeof(spec), ":%s", tz);
	setenv("TZ", spec, 1);
	tzset();
}

/*
 * 1 when name is an IANA zone of the system tz database, else 0.  The
 * database's other files are not zones: the machine's own (localtime,
 * posixrules), the placeholder Factory, and the right/ and posix/ copies
 * (right/ counts leap seconds, which puts its clock 27 s behind).
 */
int
wl_tz_valid(const char *name)
{
	static const char *const not_zones[] = {"localtime", "posixrules",
						"Factory", NULL};
	char path[256], magic[4];
	const char *p;
	FILE *f;
	int ok, i;

	if (name == NULL || *name == '\0' || strlen(name) > 64 ||
	    name[0] == '/' || strstr(name, "..") != NULL ||
	    strstr(name, "//") != NULL || name[strlen(name) - 1] == '/' ||
	    strncmp(name, "right/", 6) == 0 || strncmp(name, "posix/", 6) == 0)
		return 0;
	for (i = 0; not_zones[i]; i++)
		if (strcmp(name, not_zones[i]) == 0)
			return 0;
	for (p = name; *p; p++)
		if (!isalnum((unsigned char)*p) && strchr("/_+-", *p) == NULL)
			return 0;
	snprintf(path, sizeof(path), "/usr/share/zoneinfo/%s", name);
	if ((f = fopen(path, "rb")) == NULL)
		return 0;
	ok = fread(magic, 1, 4, f) == 4 && memcmp(magic, "TZif", 4) == 0;
	fclose(f);
	return ok;
}

/* Local calendar fields of instant ms in zone tz.  Returns 0 or -1. */
int
wl_tz_local(const char *tz, int64_t ms, struct wl_local *out)
{
	time_t t = (time_t)(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
	struct tm tm;

	tz_select(tz);
	if (localtime_r(&t, &tm) == NULL)
		return -1;
	out->year = tm.tm_year + 1900;
	out->month = tm.tm_mon + 1;
	out->day = tm.tm_mday;
	out->wday = tm.tm_wday;
	out->minute = tm.tm_hour * 60 + tm.tm_min;
	return 0;
}

static long
utc_offset_s(int64_t sec)
{
	time_t t = (time_t)sec;
	struct tm tm;

	if (localtime_r(&t, &tm) == NULL)
		return 0;
	return tm.tm_gmtoff;
}

/*
 * The spans of instants of a local day at which zone tz's local time of
 * day lies in minutes [from, to), the test walk-ins make of one instant.
 * The day runs from day_start to day_end (whole seconds).  On a day the
 * zone changes its offset, an edge inside a gap moves to the change, and
 * hours that reach across a repeated hour are cut in two around it.
 */
int
wl_tz_day_spans(const char *tz, const struct wl_local *day,
		int64_t day_start, int64_t day_end, int from, int to,
		struct wl_span span[2])
{
	int64_t s0 = day_start / 1000, s1 = day_end / 1000, change = s1;
	int64_t midnight = days_from_civil(day->year, (unsigned)day->month,
					   (unsigned)day->day) *
			   86400;
	long off[2];
	int n = 0, i;

	tz_select(tz);
	off[0] = utc_offset_s(s0);
	off[1] = utc_offset_s(s1 - 1);
	if (off[0] != off[1]) {
		/* The first second of the new offset. */
		int64_t lo = s0, hi = s1 - 1, mid;
		while (hi - lo > 1) {
			mid = lo + (hi - lo) / 2;
			if (utc_offset_s(mid) == off[0])
				lo = mid;
			else
				hi = mid;
		}
		change = hi;
	}
	for (i = 0; i < 2; i++) {
		int64_t a = i ? change : s0, b = i ? s1 : change;
		int64_t x = midnight + from * 60 - off[i];
		int64_t y = midnight + to * 60 - off[i];

		if (x > a)
			a = x;
		if (y < b)
			b = y;
		if (a >= b)
			continue;
		if (n > 0 && span[n - 1].end == a * 1000) {
			span[n - 1].end = b * 1000;
			continue;
		}
		span[n].start = a * 1000;
		span[n].end = b * 1000;
		n++;
	}
	return n;
}

/*
 * The instant of local wall time (y-m-d, minute of day; 1440 is the next
 * midnight) in zone tz.  Tries the offsets in force a day before and a day
 * after; an ambiguous time (fall back) takes the earlier instant, a
 * non-existent one (spring forward) is shifted forward by the gap.
 */
int
wl_tz_instant(const char *tz, int y, int m, int d, int minute, int64_t *ms)
{
	int64_t wall, cand[2], best = 0;
	int i, found = 0;

	tz_select(tz);
	wall = days_from_civil(y, (unsigned)m, (unsigned)d) * 86400 +
	       (int64_t)minute * 60;
	cand[0] = wall - utc_offset_s(wall - 86400);
	cand[1] = wall - utc_offset_s(wall + 86400);
	for (i = 0; i < 2; i++) {
		int64_t back = cand[i] + utc_offset_s(cand[i]);
		if (back != wall)
			continue;
		if (!found || cand[i] < best)
			best = cand[i];
		found = 1;
	}
	if (!found)
		best = cand[0];
	*ms = best * 1000;
	return 0;
}
