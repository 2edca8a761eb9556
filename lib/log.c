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
 * Log a line.  fmt must expand to the inner members of a JSON object
 * (e.g. "\"msg\":\"worker started\",\"pid\":%d"); strings coming from
 * outside must be escaped by the caller.
 */
void
wl_log(enum wl_log_level level, const char *fmt, ...)
{
	char ts[WL_TS_MAX];
	struct wl_buf b = {0};
	va_list ap;
	char inner[2048];

	if (level < min_level)
		return;
	wl_ms_to_iso(wl_now_ms(), ts);
	va_start(ap, fmt);
	vsnprintf(inner, sizeof(inner), fmt, ap);
	va_end(ap);
	if (wl_buf_printf(&b,
			  "{\"time\":\"%s\",\"level\":\"%s\",\"component\":"
			  "\"%s\",\"pid\":%d,%s}\n",
			  ts, level_names[level], component, (int)getpid(),
			  inner) == WL_OK)
		(void)!write(STDERR_FILENO, b.p, b.len);
	wl_buf_free(&b);
}
