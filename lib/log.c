/*
 * Structured logs: one JSON object per line on stderr, which journald or a
 * file collects.  Callers pass identifiers and states only, never guest
 * values or secrets.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "extern.h"

/* The most bytes of members a line carries; the rest is cut. */
#define MEMBERS_MAX 2048

static enum wl_log_level min_level = WL_LOG_INFO;
static const char *component = "waitlist";
static const char *const level_names[] = {"debug", "info", "warn", "error"};

/* Set the minimum level by name; unknown names leave it unchanged. */
void
wl_log_set_level(const char *level)
{
	size_t i;

	for (i = 0; level && i < sizeof(level_names) / sizeof(*level_names); i++)
		if (strcmp(level, level_names[i]) == 0)
			min_level = (enum wl_log_level)i;
}

/* Name the process in every line ("fcgi", "deliverer", "ctl"). */
void
wl_log_set_component(const char *name)
{
	component = name;
}

/*
 * Log a line, formatted in place and written at once.  fmt must expand to
 * the inner members of a JSON object (e.g. "\"msg\":\"reloaded\",
 * \"workers\":%u"), less than MEMBERS_MAX bytes of them; strings
 * coming from outside must be escaped by the caller.
 */
void
wl_log(enum wl_log_level level, const char *fmt, ...)
{
	char ts[WL_TS_MAX], line[256 + MEMBERS_MAX];
	size_t len;
	va_list ap;
	int n;

	if (level < min_level)
		return;
	wl_ms_to_iso(wl_now_ms(), ts);
	n = snprintf(line, sizeof(line),
		     "{\"time\":\"%s\",\"level\":\"%s\",\"component\":\"%s\","
		     "\"pid\":%d,",
		     ts, level_names[level], component, (int)getpid());
	if (n < 0 || (size_t)n >= sizeof(line) - MEMBERS_MAX)
		return;
	len = (size_t)n;
	va_start(ap, fmt);
	n = vsnprintf(line + len, MEMBERS_MAX, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	/* The prefix took under 256 bytes, the members under MEMBERS_MAX:
	 * the closing brace and newline fit. */
	len += (size_t)n < MEMBERS_MAX ? (size_t)n : MEMBERS_MAX - 1;
	line[len++] = '}';
	line[len++] = '\n';
	(void)!write(STDERR_FILENO, line, len);
}
