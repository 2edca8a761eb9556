/*
 * Per-minute request limits shared by all worker processes of a node
 * (ratelimit.c).  Included from extern.h.
 */
#ifndef WL_RATELIMIT_H
#define WL_RATELIMIT_H

#include <stddef.h>
#include <stdint.h>

#include "waitlist.h" /* wl_ratelimit_new() and _free() are public */


enum wl_rl_class { WL_RL_READ, WL_RL_WRITE };

struct wl_rl_result {
	int allowed;		/* 1: go on; 0: answer 429 */
	long long limit;	/* the binding limit (lowest remaining) */
	long long remaining;	/* requests left in this window for it */
	int reset;		/* seconds until the window ends, >= 1 */
	int retry_after;	/* when denied: seconds to wait, >= 1 */
	int tenant_bound;	/* 1 when the tenant limit is the binding one */
};

/* Count one request of class cls for key_id and tenant_id at now_ms
 * against key_limit and tenant_limit (per minute; <= 0: unlimited), each
 * divided by share (the number of nodes enforcing the limit together,
 * >= 1, rounding up).  Either limit exhausted: not allowed, and nothing is
 * counted.  Otherwise both counters are incremented atomically.  The table
 * full or a lock failure: allowed (fail open) with remaining = limit.
 * Returns out->allowed.  Neither limit set: allowed, limit and remaining
 * -1, retry_after 0 (as whenever allowed). */
int wl_ratelimit_take(struct wl_ratelimit *, const char *key_id,
		      const char *tenant_id, enum wl_rl_class cls,
		      long long key_limit, long long tenant_limit,
		      unsigned share, int64_t now_ms, struct wl_rl_result *out);

/* For tests: take the table's lock and _exit(0) holding it, as a worker
 * killed inside the critical section would.  Returns -1 only when the
 * lock cannot be taken. */
int wl_ratelimit_test_lock_and_die(struct wl_ratelimit *);

#endif
