/*
 * Per-minute request limits shared by all worker processes of a node.
 *
 * The master maps one anonymous shared region before it forks: a robust,
 * process-shared mutex and an open-addressing table of fixed-window
 * counters.  Windows are aligned to the minute, so every counter of a node
 * resets at the same instant and a counter last touched in an older window
 * is simply zero: its slot is reused in place, and nothing ever sweeps the
 * table.  Slots are never emptied, so a never-used slot ends a probe path.
 *
 * Everything that can be done outside the lock (building the identities,
 * hashing them, the arithmetic of the answer) is; the critical section is
 * a few probes and two increments, with no system call and no allocation.
 */
#include "config.h"

#include <sys/mman.h>

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "extern.h"
#include "ratelimit.h"

#define RL_WINDOW_MS 60000
#define RL_ID_MAX 64    /* "k:" + id + ":r" + NUL */
#define RL_PROBE_MAX 64 /* slots looked at before giving up (fail open) */

struct rl_slot {
	char id[RL_ID_MAX]; /* identity; "" never used */
	int64_t window;     /* the window count belongs to */
	long long count;
};

/* The shared region; nslots and maplen are written once, before fork. */
struct wl_ratelimit {
	pthread_mutex_t lock;
	size_t nslots;
	size_t maplen;
	struct rl_slot slot[];
};

/* One counter a request is checked against, prepared outside the lock. */
struct rl_ctr {
	char id[RL_ID_MAX];
	size_t len;      /* of id, without the NUL */
	size_t home;     /* first slot of the probe path */
	long long limit; /* this node's share of the limit, > 0 */
	long long remaining;
	struct rl_slot *s; /* under the lock only */
};

/*
 * Create the table with room for `slots` counters, zeroed, its lock robust
 * and shared between processes.  Returns NULL when slots is 0, the size
 * overflows, or mmap or the mutex set-up fails.  The caller frees it with
 * wl_ratelimit_free().
 */
struct wl_ratelimit *
wl_ratelimit_new(size_t slots)
{
	struct wl_ratelimit *rl = NULL;
	pthread_mutexattr_t attr;
	size_t len = 0;
	void *p;
	int attr_ok = 0, ok = 0;

	if (slots == 0 ||
	    slots > (SIZE_MAX - sizeof(*rl)) / sizeof(struct rl_slot))
		goto out;
	len = sizeof(*rl) + slots * sizeof(struct rl_slot);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
	         -1, 0);
	if (p == MAP_FAILED)
		goto out;
	rl = p;
	rl->nslots = slots;
	rl->maplen = len;
	if (pthread_mutexattr_init(&attr) != 0)
		goto out;
	attr_ok = 1;
	if (pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED) != 0 ||
	    pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST) != 0 ||
	    pthread_mutex_init(&rl->lock, &attr) != 0)
		goto out;
	ok = 1;
out:
	if (attr_ok)
		pthread_mutexattr_destroy(&attr);
	if (!ok && rl != NULL) {
		munmap(rl, len);
		rl = NULL;
	}
	return rl;
}

/*
 * Unmap the table from this process.  The creating process calls it once
 * no worker uses the table any more; NULL is a no-op.
 */
void
wl_ratelimit_free(struct wl_ratelimit *rl)
{
	if (rl == NULL)
		return;
	munmap(rl, rl->maplen);
}

/* This node's share of a per-minute limit, rounding up. */
static long long
rl_share(long long limit, unsigned share)
{
	if (share <= 1)
		return limit;
	return limit / share + (limit % share != 0);
}

/*
 * Prepare counter c for "<kind>:<id>:<r|w>".  Returns 0, or -1 when the
 * identity would not fit a slot.
 */
static int
rl_ctr_init(struct rl_ctr *c, const struct wl_ratelimit *rl, char kind,
            const char *id, enum wl_rl_class cls, long long limit)
{
	size_t n = strnlen(id, RL_ID_MAX), i;
	uint64_t h = 14695981039346656037ULL; /* FNV-1a, 64 bits */

	c->limit = limit;
	c->remaining = limit;
	c->s = NULL;
	if (n + 5 > RL_ID_MAX)
		return -1;
	c->id[0] = kind;
	c->id[1] = ':';
	memcpy(c->id + 2, id, n);
	c->id[n + 2] = ':';
	c->id[n + 3] = cls == WL_RL_WRITE ? 'w' : 'r';
	c->id[n + 4] = '\0';
	c->len = n + 4;
	for (i = 0; i < c->len; i++) {
		h ^= (unsigned char)c->id[i];
		h *= 1099511628211ULL;
	}
	c->home = (size_t)(h % rl->nslots);
	return 0;
}

/*
 * Under the lock: the slot counting c in window w.  That is its own slot
 * (zeroed first when its count is from an older window), or else the first
 * free slot of its probe path, claimed with a zero count.  NULL when the
 * path holds neither: the table is too full for c.
 */
static struct rl_slot *
rl_slot_get(struct wl_ratelimit *rl, const struct rl_ctr *c, int64_t w)
{
	struct rl_slot *s, *s_free = NULL;
	size_t i, n, pos = c->home;

	n = rl->nslots < RL_PROBE_MAX ? rl->nslots : RL_PROBE_MAX;
	for (i = 0; i < n; i++) {
		s = &rl->slot[pos];
		if (s->id[0] == '\0') {
			if (s_free == NULL)
				s_free = s;
			break;
		}
		if (memcmp(s->id, c->id, c->len + 1) == 0) {
			if (s->window < w) {
				s->window = w;
				s->count = 0;
			}
			return s;
		}
		if (s_free == NULL && s->window < w)
			s_free = s;
		if (++pos == rl->nslots)
			pos = 0;
	}
	if (s_free != NULL) {
		memcpy(s_free->id, c->id, c->len + 1);
		s_free->window = w;
		s_free->count = 0;
	}
	return s_free;
}

/*
 * The critical section: find or claim the slots of the n counters, refuse
 * when any is exhausted, else count on all of them.  Sets each remaining.
 * Returns 1 allowed, 0 refused; 1 with nothing counted (remaining left at
 * the limits) when the lock cannot be had or a counter finds no slot.
 */
static int
rl_count(struct wl_ratelimit *rl, struct rl_ctr *c, size_t n, int64_t w)
{
	size_t i;
	int rc, allowed = 1;

	rc = pthread_mutex_lock(&rl->lock);
	if (rc != 0 && rc != EOWNERDEAD)
		return 1;
	/*
	 * On EOWNERDEAD a worker died holding the lock.  At worst it left one
	 * counter incremented and not the other, or a half-written identity
	 * that expires with its window: not worth more than carrying on.  If
	 * the mutex cannot be made consistent, unlocking it makes it
	 * unrecoverable and every later call fails open.
	 */
	if (rc == EOWNERDEAD && pthread_mutex_consistent(&rl->lock) != 0)
		goto out;
	for (i = 0; i < n; i++) {
		c[i].s = rl_slot_get(rl, &c[i], w);
		if (c[i].s == NULL)
			goto out;
	}
	for (i = 0; i < n; i++)
		if (c[i].s->count >= c[i].limit)
			allowed = 0;
	for (i = 0; i < n; i++) {
		if (allowed)
			c[i].s->count++;
		c[i].remaining = c[i].limit - c[i].s->count;
		if (c[i].remaining < 0)
			c[i].remaining = 0; /* the limit fell mid-window */
	}
out:
	pthread_mutex_unlock(&rl->lock);
	return allowed;
}

/*
 * Count one request against the key and tenant limits; see ratelimit.h for
 * the contract.  A NULL table, or a NULL id for a limit, means that limit
 * does not apply; an id too long for a slot fails open.  Returns
 * out->allowed; out may be NULL.
 */
int
wl_ratelimit_take(struct wl_ratelimit *rl, const char *key_id,
                  const char *tenant_id, enum wl_rl_class cls,
                  long long key_limit, long long tenant_limit, unsigned share,
                  int64_t now_ms, struct wl_rl_result *out)
{
	struct rl_ctr c[2];
	struct wl_rl_result dummy;
	int is_tenant[2];
	int64_t w, left_ms;
	size_t i, n = 0, b = 0;
	int ok = 1;

	if (out == NULL)
		out = &dummy;
	memset(out, 0, sizeof(*out));
	out->allowed = 1;
	out->limit = out->remaining = -1;

	/* Floor division: windows stay aligned even before the epoch. */
	w = now_ms / RL_WINDOW_MS;
	if (now_ms % RL_WINDOW_MS < 0)
		w--;
	left_ms = (w + 1) * RL_WINDOW_MS - now_ms; /* 1 .. 60000 */
	out->reset = (int)((left_ms + 999) / 1000);

	if (rl == NULL)
		goto out;
	if (key_id != NULL && key_limit > 0) {
		if (rl_ctr_init(&c[n], rl, 'k', key_id, cls,
		                rl_share(key_limit, share)) == -1)
			ok = 0;
		is_tenant[n++] = 0;
	}
	if (tenant_id != NULL && tenant_limit > 0) {
		if (rl_ctr_init(&c[n], rl, 't', tenant_id, cls,
		                rl_share(tenant_limit, share)) == -1)
			ok = 0;
		is_tenant[n++] = 1;
	}
	if (n == 0)
		goto out;
	if (ok)
		out->allowed = rl_count(rl, c, n, w);

	/*
	 * The binding counter: fewest remaining (an exhausted one when
	 * refused), then the lower limit, then the key.
	 */
	for (i = 1; i < n; i++)
		if (c[i].remaining < c[b].remaining ||
		    (c[i].remaining == c[b].remaining &&
		     c[i].limit < c[b].limit))
			b = i;
	out->limit = c[b].limit;
	out->remaining = c[b].remaining;
	out->tenant_bound = is_tenant[b];
	if (!out->allowed)
		out->retry_after = out->reset;
out:
	return out->allowed;
}

/*
 * For tests: take the lock and _exit(0) while holding it.  Returns -1
 * only when the lock cannot be taken.
 */
int
wl_ratelimit_test_lock_and_die(struct wl_ratelimit *rl)
{
	int rc;

	rc = pthread_mutex_lock(&rl->lock);
	if (rc == EOWNERDEAD)
		rc = pthread_mutex_consistent(&rl->lock);
	if (rc != 0)
		return -1;
	_exit(0);
}
