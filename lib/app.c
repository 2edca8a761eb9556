/*
 * The application handle: configuration, the server secret, the OpenAPI
 * document and the database connection of this process.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "extern.h"

/* Read the file that [server] key names; err names the key, and b is
 * left empty on failure. */
static int
read_file(const char *key, const char *path, size_t max, struct wl_buf *b,
	  char *err, size_t errsz)
{
	char why[480];
	int rc;

	if (*path == '\0') {
		snprintf(err, errsz, "[server] %s: no file named", key);
		return WL_ERR_CONFIG;
	}
	b->max = max;
	if ((rc = wl_buf_read_file(b, path, why, sizeof(why))) != WL_OK)
		snprintf(err, errsz, "[server] %s: %s", key, why);
	return rc;
}

/*
 * The secret that signs cursors and encrypts webhook secrets is derived
 * from the operator's key file (at least 32 characters, e.g. from
 * `openssl rand -hex 32`), so its exact format does not matter.
 */
static int
load_secret(struct wl_app *app, const char *path, char *err, size_t errsz)
{
	struct wl_buf b = {0};
	size_t n;
	int rc;

	if ((rc = read_file("secret_key_file", path, 4096, &b, err, errsz)) !=
	    WL_OK)
		return rc;
	n = b.len;
	while (n > 0 && (b.p[n - 1] == '\n' || b.p[n - 1] == '\r' ||
			 b.p[n - 1] == ' '))
		n--;
	if (n < 32) {
		snprintf(err, errsz,
			 "[server] secret_key_file: %s holds fewer than 32 "
			 "characters",
			 path);
		wl_buf_free(&b);
		return WL_ERR_CONFIG;
	}
	wl_sha256(b.p, n, app->secret);
	wl_buf_free(&b);
	return WL_OK;
}

/*
 * A new application for cfg (which must outlive it).  With WL_APP_SERVE
 * the secret key file and the OpenAPI file must be readable.  The
 * database need not be up yet: every request reconnects as needed.
 * Returns NULL with a message in err.
 */
struct wl_app *
wl_app_new(const struct wl_config *cfg, unsigned flags, char *err,
	   size_t errsz)
{
	struct wl_app *app;
	struct wl_buf doc = {0};
	char dberr[512] = "";

	if ((app = calloc(1, sizeof(*app))) == NULL) {
		snprintf(err, errsz, "out of memory");
		return NULL;
	}
	app->cfg = cfg;
	/* X-Test-Now moves the clock before authentication: a config line
	 * alone must not turn it on in production. */
	if (cfg->test_clock && (getenv("WAITLIST_TEST_CLOCK") == NULL ||
				strcmp(getenv("WAITLIST_TEST_CLOCK"), "1") != 0)) {
		snprintf(err, errsz,
			 "[server] test_clock: 1 also needs WAITLIST_TEST_CLOCK=1 "
			 "in the environment (test stacks only)");
		goto fail;
	}
	if ((flags & WL_APP_SECRET) &&
	    load_secret(app, cfg->secret_key_file, err, errsz) != WL_OK)
		goto fail;
	if (flags & WL_APP_OPENAPI) {
		if (read_file("openapi_file", cfg->openapi_file, 4 << 20, &doc,
			      err, errsz) != WL_OK)
			goto fail;
		app->openapi = doc.p;
		app->openapi_len = doc.len;
	}
	if (flags & WL_APP_KEYCACHE)
		app->keys = wl_keycache_new(cfg);
	if ((app->db = wl_db_new(cfg, dberr, sizeof(dberr))) == NULL) {
		snprintf(err, errsz, "out of memory");
		goto fail;
	}
	if (*dberr)
		wl_log(WL_LOG_WARN,
		       "\"msg\":\"database not reachable yet; will retry\"");
	return app;
fail:
	wl_app_free(app);
	return NULL;
}

/* Use the node's shared rate limit table (owned by the caller). */
void
wl_app_set_ratelimit(struct wl_app *app, struct wl_ratelimit *rl)
{
	app->rl = rl;
}

/* Is the database answering? */
int
wl_app_db_ok(struct wl_app *app)
{
	return wl_sql_do(app->db, STMT_PING, SQL_NOARGS) == WL_OK;
}

/* The service clock in milliseconds (see wl_now_ms()). */
int64_t
wl_clock_ms(void)
{
	return wl_now_ms();
}

/* Free the application; NULL is a no-op. */
void
wl_app_free(struct wl_app *app)
{
	if (app == NULL)
		return;
	wl_db_free(app->db);
	wl_keycache_free(app->keys);
	free(app->openapi);
	explicit_bzero(app->secret, sizeof(app->secret));
	free(app);
}
