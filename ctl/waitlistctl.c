/*
 * waitlistctl: the administration command line.  JSON on stdout for
 * anything a script reads; a message on stderr and a non-zero exit on
 * errors (2 for usage errors).
 */
#include "config.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../lib/waitlist.h"

static const char usage_text[] =
    "usage: waitlistctl [--config FILE] COMMAND\n"
    "  migrate\n"
    "  seed FILE|-\n"
    "  key create --tenant ID --scopes a,b [--businesses ID,..]\n"
    "             [--queues ID,..] [--expires-in-days N] [--type api|zapier]\n"
    "  key revoke KEY_ID\n"
    "  key list --tenant ID\n"
    "  tenant set ID [--plan P] [--public-api on|off] [--webhooks on|off]\n"
    "             [--zapier on|off] [--state active|disabled|demo]\n"
    "             [--email-verified on|off] [--billing on|off]\n"
    "             [--guest-allowance N] [--limit NAME=N ...]\n"
    "  purge\n"
    "  config check\n"
    "  help, --help, -h\n";

static void
usage(const char *why)
{
	if (why)
		fprintf(stderr, "waitlistctl: %s\n", why);
	fputs(usage_text, stderr);
	exit(2);
}

static char *
slurp(const char *path)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
	size_t len = 0, cap = 0, n;
	char *buf = NULL, *nb;

	if (f == NULL)
		return NULL;
	do {
		if (len + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 8192;
			if ((nb = realloc(buf, cap)) == NULL) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = nb;
		}
		n = fread(buf + len, 1, 4096, f);
		len += n;
	} while (n > 0);
	if (buf)
		buf[len] = '\0';
	if (f != stdin)
		fclose(f);
	return buf;
}

/* The value after flag argv[*i], advancing *i. */
static const char *
arg_value(int argc, char **argv, int *i)
{
	if (*i + 1 >= argc)
		usage("missing value after an option");
	return argv[++*i];
}

static int
cmd_key(struct wl_app *app, int argc, char **argv, char *err, size_t errsz)
{
	struct wl_key_spec spec;
	int i;

	if (argc < 1)
		usage("key needs create, revoke or list");
	if (strcmp(argv[0], "revoke") == 0) {
		if (argc != 2)
			usage("key revoke KEY_ID");
		return wl_admin_key_revoke(app, argv[1], stdout, err, errsz);
	}
	memset(&spec, 0, sizeof(spec));
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--tenant") == 0)
			spec.tenant_id = arg_value(argc, argv, &i);
		else if (strcmp(argv[i], "--scopes") == 0)
			spec.scopes = arg_value(argc, argv, &i);
		else if (strcmp(argv[i], "--businesses") == 0)
			spec.businesses = arg_value(argc, argv, &i);
		else if (strcmp(argv[i], "--queues") == 0)
			spec.queues = arg_value(argc, argv, &i);
		else if (strcmp(argv[i], "--expires-in-days") == 0) {
			char *end;
			const char *v = arg_value(argc, argv, &i);
			long d = strtol(v, &end, 10);
			if (*v == '\0' || *end || d < 1 || d > 36500)
				usage("--expires-in-days takes a number of "
				      "days");
			spec.expires_in_days = (int)d;
		} else if (strcmp(argv[i], "--type") == 0)
			spec.type = arg_value(argc, argv, &i);
		else
			usage("unknown option");
	}
	if (spec.tenant_id == NULL)
		usage("--tenant is required");
	if (strcmp(argv[0], "list") == 0)
		return wl_admin_key_list(app, spec.tenant_id, stdout, err,
					 errsz);
	if (strcmp(argv[0], "create") != 0)
		usage("key needs create, revoke or list");
	if (spec.scopes == NULL)
		usage("--scopes is required");
	return wl_admin_key_create(app, &spec, stdout, err, errsz);
}

/* --limit NAME=N as the setting "limits.NAME=N": a limit, nothing else. */
static char *
limit_setting(const char *v)
{
	char *s;

	if (strchr(v, '=') == NULL)
		usage("--limit takes NAME=N");
	s = malloc(strlen("limits.") + strlen(v) + 1);
	if (s)
		sprintf(s, "limits.%s", v);
	return s;
}

static int
cmd_tenant(struct wl_app *app, int argc, char **argv, char *err,
	   size_t errsz)
{
	static const struct {
		const char *flag, *name;
	} map[] = {
	    {"--plan", "plan"},
	    {"--public-api", "publicApi"},
	    {"--webhooks", "webhooks"},
	    {"--zapier", "zapier"},
	    {"--state", "state"},
	    {"--email-verified", "emailVerified"},
	    {"--billing", "billing"},
	    {"--guest-allowance", "guestAllowance"},
	};
	char **settings;
	size_t n = 0, j;
	int i, rc;

	if (argc < 2 || strcmp(argv[0], "set") != 0)
		usage("tenant set ID [options]");
	if ((settings = calloc((size_t)argc + 1, sizeof(*settings))) == NULL)
		return 1;
	for (i = 2; i < argc; i++) {
		const char *v;
		if (strcmp(argv[i], "--limit") == 0) {
			/* --limit a=1 --limit b=2, or --limit a=1 b=2 */
			settings[n++] = limit_setting(arg_value(argc, argv, &i));
			while (i + 1 < argc && strncmp(argv[i + 1], "--", 2) &&
			       strchr(argv[i + 1], '='))
				settings[n++] = limit_setting(argv[++i]);
			continue;
		}
		for (j = 0; j < sizeof(map) / sizeof(*map); j++)
			if (strcmp(argv[i], map[j].flag) == 0)
				break;
		if (j == sizeof(map) / sizeof(*map))
			usage("unknown option");
		v = arg_value(argc, argv, &i);
		if ((settings[n] = malloc(strlen(map[j].name) + strlen(v) + 2)))
			sprintf(settings[n], "%s=%s", map[j].name, v);
		n++;
	}
	rc = wl_admin_tenant_set(app, argv[1], (const char *const *)settings,
				 stdout, err, errsz);
	for (j = 0; j < n; j++)
		free(settings[j]);
	free(settings);
	return rc;
}

/*
 * Without --config or WAITLIST_CONFIG, and without the system file, a
 * waitlistctl run from a development tree uses the tree's
 * var/waitlist.conf, the one script/server writes.
 */
static const char *
tree_config(char *buf, size_t bufsz)
{
	const char *env = getenv("WAITLIST_CONFIG");
	char exe[PATH_MAX], *slash;
	ssize_t n;

	if ((env && *env) || access(wl_config_default_path(), R_OK) == 0)
		return NULL;
	if ((n = readlink("/proc/self/exe", exe, sizeof(exe) - 1)) <= 0)
		return NULL;
	exe[n] = '\0';
	/* ctl/waitlistctl, or ctl/.libs/waitlistctl under libtool */
	if ((slash = strrchr(exe, '/')) == NULL)
		return NULL;
	*slash = '\0';
	if ((slash = strrchr(exe, '/')) != NULL && strcmp(slash, "/.libs") == 0)
		*slash = '\0';
	snprintf(buf, bufsz, "%s/../var/waitlist.conf", exe);
	return access(buf, R_OK) == 0 ? buf : NULL;
}

/*
 * --config FILE, or --config=FILE, wherever it stands (before the command
 * or among its options), taken out of argv.  Returns the arguments left,
 * or -1 when FILE is missing.
 */
static int
take_config(int argc, char *argv[], const char **config)
{
	int i, left = 1;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--config") == 0) {
			if (i + 1 >= argc)
				return -1;
			*config = argv[++i];
		} else if (strncmp(argv[i], "--config=", 9) == 0)
			*config = argv[i] + 9;
		else
			argv[left++] = argv[i];
	}
	argv[left] = NULL;
	return left;
}

int
main(int argc, char *argv[])
{
	const char *config = NULL;
	char treebuf[PATH_MAX + 32];
	struct wl_config *cfg;
	struct wl_app *app;
	char err[1024] = "";
	int i = 1, rc;

	wl_log_set_component("ctl");
	if ((argc = take_config(argc, argv, &config)) < 0)
		usage("--config needs a file");
	if (i >= argc)
		usage(NULL);
	/* Help needs no configuration and is no error. */
	if (argc == i + 1 && (strcmp(argv[i], "--help") == 0 ||
			      strcmp(argv[i], "-h") == 0 ||
			      strcmp(argv[i], "help") == 0)) {
		fputs(usage_text, stdout);
		return 0;
	}
	if (config == NULL)
		config = tree_config(treebuf, sizeof(treebuf));
	if ((cfg = wl_config_load(config, err, sizeof(err))) == NULL) {
		fprintf(stderr, "waitlistctl: %s\n", err);
		return 1;
	}
	wl_log_set_level("warn");
	if (strcmp(argv[i], "config") == 0) {
		if (i + 1 >= argc || strcmp(argv[i + 1], "check") != 0)
			usage("config check");
		app = wl_app_new(cfg, WL_APP_SERVE, err, sizeof(err));
		rc = app == NULL;
		if (rc == 0)
			printf("{\"ok\":true}\n");
		goto done;
	}
	if ((app = wl_app_new(cfg, 0, err, sizeof(err))) == NULL) {
		rc = 1;
		goto done;
	}
	/* The rest work on the schema of this build's migrations (what
	 * cannot be told is left to the command to find). */
	if (strcmp(argv[i], "migrate") != 0 &&
	    wl_admin_schema_current(app, err, sizeof(err)) == 0) {
		rc = 1;
		goto done;
	}
	err[0] = '\0';
	if (strcmp(argv[i], "migrate") == 0 && argc == i + 1)
		rc = wl_admin_migrate(app, stdout, err, sizeof(err));
	else if (strcmp(argv[i], "seed") == 0 && argc == i + 2) {
		char *text = slurp(argv[i + 1]);
		if (text == NULL) {
			snprintf(err, sizeof(err), "%s: cannot read",
				 argv[i + 1]);
			rc = 1;
		} else
			rc = wl_admin_seed(app, text, stdout, err, sizeof(err));
		free(text);
	} else if (strcmp(argv[i], "key") == 0)
		rc = cmd_key(app, argc - i - 1, argv + i + 1, err, sizeof(err));
	else if (strcmp(argv[i], "tenant") == 0)
		rc = cmd_tenant(app, argc - i - 1, argv + i + 1, err,
				sizeof(err));
	else if (strcmp(argv[i], "purge") == 0 && argc == i + 1)
		rc = wl_admin_purge(app, stdout, err, sizeof(err));
	else
		usage("unknown command");
done:
	if (rc != 0)
		fprintf(stderr, "waitlistctl: %s\n",
			*err ? err : "command failed");
	wl_app_free(app);
	wl_config_free(cfg);
	return rc == 0 ? 0 : 1;
}
