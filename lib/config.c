/*
 * The configuration file: INI-style sections of "key = value" lines.
 * One table lists every key with its type, default and place in struct
 * wl_config; the parser, the defaults and the error messages all follow
 * from it.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "extern.h"

#ifndef WL_SYSCONFDIR
#define WL_SYSCONFDIR "/etc"
#endif
#ifndef WL_DATADIR
#define WL_DATADIR "/usr/share"
#endif

enum opt_type { OPT_STR, OPT_UINT };

struct opt {
	const char *section;
	const char *name;
	enum opt_type type;
	size_t offset;
	const char *def;
	unsigned min, max; /* for OPT_UINT */
};

#define S(f) offsetof(struct wl_config, f)

static const struct opt opts[] = {
    {"database", "host", OPT_STR, S(db_host), "localhost", 0, 0},
    {"database", "port", OPT_UINT, S(db_port), "3306", 1, 65535},
    {"database", "socket", OPT_STR, S(db_socket), "", 0, 0},
    {"database", "user", OPT_STR, S(db_user), "waitlist", 0, 0},
    {"database", "password", OPT_STR, S(db_password), "", 0, 0},
    {"database", "name", OPT_STR, S(db_name), "waitlist", 0, 0},
    {"server", "workers", OPT_UINT, S(workers), "4", 1, 256},
    {"server", "fcgi_socket", OPT_STR, S(fcgi_socket),
     "/run/waitlist/fcgi.sock", 0, 0},
    {"server", "max_requests", OPT_UINT, S(max_requests), "10000", 0,
     100000000},
    {"server", "cluster_nodes", OPT_UINT, S(cluster_nodes), "1", 1, 64},
    {"server", "test_clock", OPT_UINT, S(test_clock), "0", 0, 1},
    {"server", "ratelimit_slots", OPT_UINT, S(ratelimit_slots), "65536",
     1024, 16777216},
    {"server", "key_cache_seconds", OPT_UINT, S(key_cache_seconds), "1", 0,
     60},
    {"server", "secret_key_file", OPT_STR, S(secret_key_file),
     WL_SYSCONFDIR "/waitlist/secret.key", 0, 0},
    {"server", "migrations_dir", OPT_STR, S(migrations_dir),
     WL_DATADIR "/waitlist/migrations", 0, 0},
    {"server", "openapi_file", OPT_STR, S(openapi_file),
     WL_DATADIR "/waitlist/openapi.json", 0, 0},
    {"server", "log_level", OPT_STR, S(log_level), "info", 0, 0},
    {"webhooks", "allowed_hosts", OPT_STR, S(allowed_hosts), "", 0, 0},
    {"webhooks", "insecure_hosts", OPT_STR, S(insecure_hosts), "", 0, 0},
    {"webhooks", "zapier_hosts", OPT_STR, S(zapier_hosts),
     "hooks.zapier.com", 0, 0},
    {"webhooks", "retry_base_seconds", OPT_UINT, S(retry_base_seconds), "30",
     1, 3600},
    {"webhooks", "retry_cap_seconds", OPT_UINT, S(retry_cap_seconds), "3600",
     1, 3600},
    {"webhooks", "max_attempts", OPT_UINT, S(max_attempts), "32", 1, 32},
    {"webhooks", "max_age_seconds", OPT_UINT, S(max_age_seconds), "86400",
     60, 86400},
    {"webhooks", "timeout_seconds", OPT_UINT, S(timeout_seconds), "10", 1,
     10},
    {"webhooks", "deliverer_concurrency", OPT_UINT,
     S(deliverer_concurrency), "64", 1, 1024},
    {"webhooks", "deliverer_per_endpoint", OPT_UINT,
     S(deliverer_per_endpoint), "8", 1, 256},
    {"webhooks", "deliverer_poll_ms", OPT_UINT, S(deliverer_poll_ms), "500",
     10, 60000},
};

#undef S

static const char *const log_levels[] = {"debug", "info", "warn", "error"};

/* Default path: $WAITLIST_CONFIG, else the system location. */
const char *
wl_config_default_path(void)
{
	const char *env = getenv("WAITLIST_CONFIG");

	return env && *env ? env : WL_SYSCONFDIR "/waitlist/waitlist.conf";
}

static int
set_value(struct wl_config *c, const struct opt *o, const char *v, char *err,
	  size_t errsz)
{
	char **sp, *end;
	unsigned long n;

	if (o->type == OPT_STR) {
		sp = (char **)((char *)c + o->offset);
		free(*sp);
		if ((*sp = strdup(v)) == NULL)
			return WL_ERR_NOMEM;
		return WL_OK;
	}
	errno = 0;
	n = strtoul(v, &end, 10);
	if (*v == '\0' || *end != '\0' || errno || !isdigit((unsigned char)*v) ||
	    n < o->min || n > o->max) {
		snprintf(err, errsz,
			 "[%s] %s: \"%s\" is not a whole number from %u to %u",
			 o->section, o->name, v, o->min, o->max);
		return WL_ERR_CONFIG;
	}
	*(unsigned *)((char *)c + o->offset) = (unsigned)n;
	return WL_OK;
}

static char *
trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

/* The keys that hold host lists (see wl_host_listed()). */
static const struct {
	const char *name;
	size_t offset;
} host_lists[] = {
    {"allowed_hosts", offsetof(struct wl_config, allowed_hosts)},
    {"insecure_hosts", offsetof(struct wl_config, insecure_hosts)},
    {"zapier_hosts", offsetof(struct wl_config, zapier_hosts)},
};

static int
check(const struct wl_config *c, char *err, size_t errsz)
{
	size_t i;

	for (i = 0; i < sizeof(log_levels) / sizeof(*log_levels); i++)
		if (strcmp(c->log_level, log_levels[i]) == 0)
			break;
	if (i == sizeof(log_levels) / sizeof(*log_levels)) {
		snprintf(err, errsz,
			 "[server] log_level: \"%s\" is not one of debug, "
			 "info, warn, error",
			 c->log_level);
		return WL_ERR_CONFIG;
	}
	if (*c->fcgi_socket != '/') {
		snprintf(err, errsz,
			 "[server] fcgi_socket: \"%s\" is not an absolute "
			 "path",
			 c->fcgi_socket);
		return WL_ERR_CONFIG;
	}
	for (i = 0; i < sizeof(host_lists) / sizeof(*host_lists); i++) {
		const char *list = *(char *const *)((const char *)c +
						     host_lists[i].offset);
		char bad[256];
		if (wl_host_list_check(list, bad, sizeof(bad)) < 0) {
			snprintf(err, errsz,
				 "[webhooks] %s: \"%s\" is not a host name "
				 "(name, *.name or IP address; comma-separated)",
				 host_lists[i].name, bad);
			return WL_ERR_CONFIG;
		}
	}
	if (c->retry_base_seconds > c->retry_cap_seconds) {
		snprintf(err, errsz,
			 "[webhooks] retry_base_seconds: %u exceeds "
			 "retry_cap_seconds %u",
			 c->retry_base_seconds, c->retry_cap_seconds);
		return WL_ERR_CONFIG;
	}
	return WL_OK;
}

/*
 * Parse configuration text.  Returns a new configuration, or NULL with a
 * message naming the line and key in err.
 */
struct wl_config *
wl_config_parse(const char *text, char *err, size_t errsz)
{
	struct wl_config *c;
	char section[64] = "", *copy = NULL, *line, *next, *eq, *k, *v;
	size_t i, lineno = 0;
	int rc = WL_OK;

	if ((c = calloc(1, sizeof(*c))) == NULL ||
	    (copy = strdup(text)) == NULL) {
		snprintf(err, errsz, "out of memory");
		goto fail;
	}
	for (i = 0; i < sizeof(opts) / sizeof(*opts); i++)
		if (set_value(c, &opts[i], opts[i].def, err, errsz) != WL_OK)
			goto fail;
	for (line = copy; line; line = next) {
		lineno++;
		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		line = trim(line);
		if (*line == '\0' || *line == '#' || *line == ';')
			continue;
		if (*line == '[') {
			char *close = strchr(line, ']');
			if (close == NULL || close[1] != '\0' ||
			    (size_t)(close - line) >= sizeof(section)) {
				snprintf(err, errsz, "line %zu: bad section "
					 "header", lineno);
				goto fail;
			}
			*close = '\0';
			snprintf(section, sizeof(section), "%s", trim(line + 1));
			for (i = 0; i < sizeof(opts) / sizeof(*opts); i++)
				if (strcmp(opts[i].section, section) == 0)
					break;
			if (i == sizeof(opts) / sizeof(*opts)) {
				snprintf(err, errsz, "line %zu: unknown "
					 "section [%s]", lineno, section);
				goto fail;
			}
			continue;
		}
		if ((eq = strchr(line, '=')) == NULL) {
			snprintf(err, errsz, "line %zu: expected key = value",
				 lineno);
			goto fail;
		}
		*eq = '\0';
		k = trim(line);
		v = trim(eq + 1);
		for (i = 0; i < sizeof(opts) / sizeof(*opts); i++)
			if (strcmp(opts[i].section, section) == 0 &&
			    strcmp(opts[i].name, k) == 0)
				break;
		if (i == sizeof(opts) / sizeof(*opts)) {
			snprintf(err, errsz, "line %zu: unknown key [%s] %s",
				 lineno, section, k);
			goto fail;
		}
		if ((rc = set_value(c, &opts[i], v, err, errsz)) != WL_OK)
			goto fail;
	}
	if (check(c, err, errsz) != WL_OK)
		goto fail;
	free(copy);
	return c;
fail:
	free(copy);
	wl_config_free(c);
	return NULL;
}

/* Read and parse the file at path (NULL: the default path). */
struct wl_config *
wl_config_load(const char *path, char *err, size_t errsz)
{
	struct wl_buf b = {.max = 1 << 20};
	struct wl_config *c;

	if (path == NULL)
		path = wl_config_default_path();
	if (wl_buf_read_file(&b, path, err, errsz) != WL_OK)
		return NULL;
	c = wl_config_parse(b.p, err, errsz);
	if (c == NULL) {
		char msg[512];
		snprintf(msg, sizeof(msg), "%s: %s", path, err);
		snprintf(err, errsz, "%s", msg);
	}
	wl_buf_free(&b);
	return c;
}

/* Free a configuration; NULL is a no-op. */
void
wl_config_free(struct wl_config *c)
{
	size_t i;

	if (c == NULL)
		return;
	for (i = 0; i < sizeof(opts) / sizeof(*opts); i++)
		if (opts[i].type == OPT_STR)
			free(*(char **)((char *)c + opts[i].offset));
	free(c);
}
