/*
 * Structured logs: one JSON object per line on stderr, which journald or a
 * file collects.  Callers pass identifiers and states only, never guest
 * values or secrets.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "extern.h"

/* The most bytes of members a line carries; the rest is cut. */
#define MEMBERS_MAX 2048

static enum wl_log_level min_level = WL_LOG_INFO;
static const char *component = "waitlist";
static const char *const level_names[] = {"debug", "info", "warn", "error"};

/*
 * The process id every line carries, asked of the kernel once per
 * process rather than once per line (glibc keeps no copy).  A child
 * made by fork() asks anew (pthread_atfork): it has one thread then,
 * so none reads the id while it changes.
 */
static int pid;
static pthread_once_t pid_once = PTHREAD_ONCE_INIT;

static void
pid_learn(void)
{
	pid = (int)getpid();
}

static void
pid_register(void)
{
	pid_learn();
	pthread_atfork(NULL, NULL, pid_learn);
}

static int
log_pid(void)
{
	pthread_once(&pid_once, pid_register);
	return pid;
}

/*
 * Write n bytes of whole lines to stderr, all of them, one writer of
 * this process at a time: a batch of lines (wl_log_flush()) is larger
 * than a pipe or a stream socket to journald takes at once, and another
 * thread's line must not land in the middle of it.
 */
static void
out(const char *p, size_t n)
{
	static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	ssize_t w;

	pthread_mutex_lock(&mu);
	while (n > 0) {
		if ((w = write(STDERR_FILENO, p, n)) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		p += w;
		n -= (size_t)w;
	}
	pthread_mutex_unlock(&mu);
}

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

/* Format a line of level (members fmt, ap) into line, which holds
 * 256 + MEMBERS_MAX bytes; its length, 0 when it is not logged. */
static size_t
format(char *line, enum wl_log_level level, const char *fmt, va_list ap)
{
	char ts[WL_TS_MAX];
	size_t len;
	int n;

	if (level < min_level)
		return 0;
	wl_ms_to_iso(wl_now_ms(), ts);
	n = snprintf(line, 256 + MEMBERS_MAX,
		     "{\"time\":\"%s\",\"level\":\"%s\",\"component\":\"%s\","
		     "\"pid\":%d,",
		     ts, level_names[level], component, log_pid());
	if (n < 0 || n >= 256)
		return 0;
	len = (size_t)n;
	n = vsnprintf(line + len, MEMBERS_MAX, fmt, ap);
	if (n < 0)
		return 0;
	/* The prefix took under 256 bytes, the members under MEMBERS_MAX:
	 * the closing brace and newline fit. */
	len += (size_t)n < MEMBERS_MAX ? (size_t)n : MEMBERS_MAX - 1;
	line[len++] = '}';
	line[len++] = '\n';
	return len;
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
	char line[256 + MEMBERS_MAX];
	size_t len;
	va_list ap;

	va_start(ap, fmt);
	len = format(line, level, fmt, ap);
	va_end(ap);
	if (len > 0)
		out(line, len);
}

/* A line naming what failed (msg, a literal) and why (any text). */
void
wl_log_error(enum wl_log_level level, const char *msg, const char *why)
{
	cJSON *s = cJSON_CreateString(why ? why : "");
	char *quoted = s ? cJSON_PrintUnformatted(s) : NULL;

	wl_log(level, "\"msg\":\"%s\",\"error\":%s", msg,
	       quoted ? quoted : "null");
	free(quoted);
	cJSON_Delete(s);
}

/*
 * The same line, added to lines to be written together by
 * wl_log_flush() (many lines, one write).  A line that does not fit in
 * memory is written at once.
 */
void
wl_log_add(struct wl_loglines *l, enum wl_log_level level, const char *fmt,
	   ...)
{
	char line[256 + MEMBERS_MAX];
	size_t len;
	va_list ap;

	va_start(ap, fmt);
	len = format(line, level, fmt, ap);
	va_end(ap);
	if (len > 0 && wl_buf_append(&l->buf, line, len) != WL_OK)
		out(line, len);
}

void
wl_log_flush(struct wl_loglines *l)
{
	if (l->buf.len > 0)
		out(l->buf.p, l->buf.len);
	wl_buf_free(&l->buf);
}
