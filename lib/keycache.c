/*
 * A worker's cache of API key lookups, so that a request with a key seen
 * a moment ago does not ask the database again.
 *
 * A cached lookup (the key's row joined with its tenant) is used for at
 * most [server] key_cache_seconds, and only while the node's key epoch is
 * the one read before the lookup.  The epoch is a counter in a small file
 * beside the FastCGI socket, mapped by every worker; waitlistctl adds one
 * to it after it revokes a key or changes a tenant, so those changes
 * reach this node's workers from the next request on.  Other nodes, and
 * changes made to the database by hand, are seen once the cached lookup
 * is key_cache_seconds old.  Expiry is checked on every request against
 * the cached expiry time.  Lookups that find no key are not cached.
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

struct kc_slot {
	char digest[65]; /* "" when empty */
	struct wl_rows *rows;
	uint64_t epoch; /* the node's epoch before the lookup */
	int64_t until;  /* monotonic ms */
};

struct wl_keycache {
	uint64_t *epoch; /* mapped from the epoch file */
	int64_t ttl_ms;
	struct kc_slot slot[32];
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
		       "\"msg\":\"API key lookups are not cached: cannot map "
		       "the key epoch file\",\"errno\":%d",
		       errno);
		free(kc);
		return NULL;
	}
	kc->ttl_ms = (int64_t)cfg->key_cache_seconds * 1000;
	return kc;
}

void
wl_keycache_free(struct wl_keycache *kc)
{
	size_t i;

	if (kc == NULL)
		return;
	for (i = 0; i < sizeof(kc->slot) / sizeof(kc->slot[0]); i++)
		wl_rows_free(kc->slot[i].rows);
	munmap(kc->epoch, sizeof(uint64_t));
	free(kc);
}

static struct kc_slot *
slot_of(struct wl_keycache *kc, const char *digest)
{
	/* The digest is uniformly distributed hex: its first characters
	 * are as good a hash as any. */
	size_t h =
	    strtoul((char[]){digest[0], digest[1], digest[2], 0}, NULL, 16);

	return &kc->slot[h % (sizeof(kc->slot) / sizeof(kc->slot[0]))];
}

/*
 * The row STMT_KEY_BY_DIGEST gives for digest: from the cache when it is
 * fresh, else from the database (and kept when a key was found).  *rows
 * is the cache's when *owned is 0, else the caller frees it.
 */
int
wl_keycache_lookup(struct wl_keycache *kc, struct wl_db *db, const char *digest,
                   struct wl_rows **rows, int *owned)
{
	struct kc_slot *s;
	uint64_t epoch;
	int rc;

	*owned = 1;
	if (kc == NULL)
		return wl_sql_exec(db, STMT_KEY_BY_DIGEST,
		                   SQL_ARGS(SQL_STR(digest)), rows, NULL);
	s = slot_of(kc, digest);
	epoch = __atomic_load_n(kc->epoch, __ATOMIC_ACQUIRE);
	if (s->rows && strcmp(s->digest, digest) == 0 && s->epoch == epoch &&
	    wl_mono_ms() < s->until) {
		*rows = s->rows;
		*owned = 0;
		return WL_OK;
	}
	rc = wl_sql_exec(db, STMT_KEY_BY_DIGEST, SQL_ARGS(SQL_STR(digest)),
	                 rows, NULL);
	if (rc != WL_OK || (*rows)->nrows != 1)
		return rc;
	wl_rows_free(s->rows);
	snprintf(s->digest, sizeof(s->digest), "%s", digest);
	s->rows = *rows;
	s->epoch = epoch;
	s->until = wl_mono_ms() + kc->ttl_ms;
	*owned = 0;
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
