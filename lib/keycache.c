/*
 * A worker's cache of recent lookups, so that a request whose key or line
 * was looked up a moment ago does not ask the database again: the API
 * key's row joined with its tenant (auth.c), and a line's row, its
 * services and its public fields (queue.c, guest.c), which nothing but
 * waitlistctl seed writes and then only once.
 *
 * A cached result is used for at most [server] key_cache_seconds, and
 * only while the node's key epoch is the one read before the lookup.  The
 * epoch is a counter in a small file beside the FastCGI socket, mapped by
 * every worker; waitlistctl adds one to it after it revokes a key or
 * changes a tenant, so those changes reach this node's workers from the
 * next request on.  Other nodes, and changes made to the database by
 * hand, are seen once the cached lookup is key_cache_seconds old.  Key
 * expiry is checked on every request against the cached expiry time.
 * Empty results are kept only where the caller says so (a key or a line
 * that is not found may be created the next moment).
 */
#include "config.h"

#include <sys/mman.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "extern.h"

#define EPOCH_FILE "keys.epoch"

/* Four ways per set, so that the few lookups a client repeats (its key,
 * its line, the line's services and fields) do not push each other out. */
#define SETS 16
#define WAYS 4

struct kc_slot {
	char *name; /* the statement and its arguments; NULL when empty */
	size_t name_len;
	struct wl_rows *rows;
	uint64_t epoch; /* the node's epoch before the lookup */
	int64_t until;  /* monotonic ms */
};

struct wl_keycache {
	uint64_t *epoch; /* mapped from the epoch file */
	int64_t ttl_ms;
	struct kc_slot slot[SETS][WAYS];
};

/* The epoch file of cfg's node: keys.epoch in the FastCGI socket's
 * directory. */
static void
epoch_path(const struct wl_config *cfg, char *out, size_t outsz)
{
	char dir[4096];

	snprintf(dir, sizeof(dir), "%s", cfg->fcgi_socket);
	snprintf(out, outsz, "%s/" EPOCH_FILE, dirname(dir));
}

/* Map the epoch file at path, creating it when create is set.  Returns
 * NULL with errno set. */
static uint64_t *
epoch_map(const char *path, int create)
{
	struct stat st;
	void *p = MAP_FAILED;
	int fd, saved;

	if ((fd = open(path, O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0),
	               0644)) < 0)
		return NULL;
	if (fstat(fd, &st) == 0 && (st.st_size >= (off_t)sizeof(uint64_t) ||
	                            ftruncate(fd, sizeof(uint64_t)) == 0))
		p = mmap(NULL, sizeof(uint64_t), PROT_READ | PROT_WRITE,
		         MAP_SHARED, fd, 0);
	saved = errno;
	close(fd);
	errno = saved;
	return p == MAP_FAILED ? NULL : p;
}

/*
 * The cache of a worker of cfg's node, or NULL when key_cache_seconds is
 * 0 or the epoch file cannot be mapped (logged): every request then
 * looks its key up.
 */
struct wl_keycache *
wl_keycache_new(const struct wl_config *cfg)
{
	struct wl_keycache *kc;
	char path[4200];

	if (cfg->key_cache_seconds == 0)
		return NULL;
	epoch_path(cfg, path, sizeof(path));
	if ((kc = calloc(1, sizeof(*kc))) == NULL)
		return NULL;
	if ((kc->epoch = epoch_map(path, 1)) == NULL) {
		wl_log(WL_LOG_WARN,
		       "\"msg\":\"key and line lookups are not cached: cannot map "
		       "the key epoch file\",\"errno\":%d",
		       errno);
		free(kc);
		return NULL;
	}
	kc->ttl_ms = (int64_t)cfg->key_cache_seconds * 1000;
	return kc;
}

static void
slot_clear(struct kc_slot *s)
{
	free(s->name);
	wl_rows_free(s->rows);
	memset(s, 0, sizeof(*s));
}

void
wl_keycache_free(struct wl_keycache *kc)
{
	size_t i;

	if (kc == NULL)
		return;
	for (i = 0; i < SETS * WAYS; i++)
		slot_clear(&kc->slot[i / WAYS][i % WAYS]);
	munmap(kc->epoch, sizeof(uint64_t));
	free(kc);
}

/* The cache's name of a lookup: the statement, then each argument,
 * length first (so that no two lookups share a name). */
static int
lookup_name(enum wl_stmt stmt, const struct wl_sqlval *args, size_t nargs,
	    struct wl_buf *b)
{
	size_t i;
	int rc = wl_buf_printf(b, "%d", (int)stmt);

	for (i = 0; i < nargs && rc == WL_OK; i++) {
		if (args[i].type == WL_SQL_STR) {
			rc = wl_buf_printf(b, " s%zu:", args[i].len);
			if (rc == WL_OK)
				rc = wl_buf_append(b, args[i].s, args[i].len);
		} else if (args[i].type == WL_SQL_INT)
			rc = wl_buf_printf(b, " i%lld", args[i].i);
		else
			rc = wl_buf_printf(b, " n");
	}
	if (rc != WL_OK)
		wl_buf_free(b);
	return rc;
}

/* The set of the name. */
static struct kc_slot *
set_of(struct wl_keycache *kc, const struct wl_buf *name)
{
	return kc->slot[wl_fnv1a(name->p, name->len) % SETS];
}

/* The way of set that holds the lookup, or NULL. */
static struct kc_slot *
way_of(struct kc_slot *set, const struct wl_buf *name)
{
	size_t i;

	for (i = 0; i < WAYS; i++)
		if (set[i].rows && set[i].name_len == name->len &&
		    memcmp(set[i].name, name->p, name->len) == 0)
			return &set[i];
	return NULL;
}

/* Where a new lookup goes in set: an empty way, or the one that expires
 * first. */
static struct kc_slot *
way_free(struct kc_slot *set)
{
	struct kc_slot *v = &set[0];
	size_t i;

	for (i = 0; i < WAYS; i++) {
		if (set[i].rows == NULL)
			return &set[i];
		if (set[i].until < v->until)
			v = &set[i];
	}
	return v;
}

/*
 * The rows stmt gives for args: from the cache when a fresh copy is there,
 * else from the database, and then kept (an empty result only with
 * keep_empty).  The caller frees *rows either way.  Only for statements
 * whose rows change through waitlistctl or not at all (see above).
 */
int
wl_cached_exec(struct wl_keycache *kc, struct wl_db *db, enum wl_stmt stmt,
	       const struct wl_sqlval *args, size_t nargs, int keep_empty,
	       struct wl_rows **rows)
{
	struct wl_buf name = {0};
	struct kc_slot *set, *s;
	uint64_t epoch;
	int rc;

	if (kc == NULL)
		return wl_sql_exec(db, stmt, args, nargs, rows, NULL);
	if ((rc = lookup_name(stmt, args, nargs, &name)) != WL_OK)
		return rc;
	set = set_of(kc, &name);
	s = way_of(set, &name);
	epoch = __atomic_load_n(kc->epoch, __ATOMIC_ACQUIRE);
	if (s && s->epoch == epoch && wl_mono_ms() < s->until) {
		*rows = wl_rows_share(s->rows);
		wl_buf_free(&name);
		return WL_OK;
	}
	rc = wl_sql_exec(db, stmt, args, nargs, rows, NULL);
	if (rc != WL_OK || ((*rows)->nrows == 0 && !keep_empty)) {
		wl_buf_free(&name);
		return rc;
	}
	if (s == NULL)
		s = way_free(set);
	slot_clear(s);
	s->name = name.p;
	s->name_len = name.len;
	s->rows = wl_rows_share(*rows);
	s->epoch = epoch;
	s->until = wl_mono_ms() + kc->ttl_ms;
	return WL_OK;
}

/*
 * Tell the workers of this node that keys or tenants changed (after the
 * change has committed).  Returns WL_OK, also when no worker has run here
 * (neither the epoch file nor the socket exists), or WL_ERR_IO with errno
 * set.
 */
int
wl_keys_changed(const struct wl_config *cfg)
{
	char path[4200];
	uint64_t *epoch;

	epoch_path(cfg, path, sizeof(path));
	/* No file and no socket: no worker has run here. */
	if ((epoch = epoch_map(path, 0)) == NULL)
		return errno == ENOENT && access(cfg->fcgi_socket, F_OK) != 0
		           ? WL_OK
		           : WL_ERR_IO;
	__atomic_add_fetch(epoch, 1, __ATOMIC_RELEASE);
	munmap(epoch, sizeof(uint64_t));
	return WL_OK;
}
