/*
 * The store: the deliverer's database side, on two threads of their own,
 * each with its own connection, and the keeper of the ranges of events
 * it holds.  The sender (the libcurl loop) hands it finished attempts
 * and claims it gives back, and tells it how much room it has.  The
 * recorder writes the attempts it was handed, gathered a few
 * milliseconds, all of them in one transaction (what piles up while a
 * commit runs goes into the next one), and gives the claims back; the
 * claimer claims due deliveries for that room when a look is due (see
 * feed_due()), and wakes the sender's curl_multi_poll() after every
 * look.  Neither waits for the other's commits, so the sender gets new
 * claims while the last ones are still being recorded.
 */
#include "config.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"

/* While deliveries keep coming, look for new ones this often rather
 * than every poll interval: what a new event waits for its delivery is
 * bounded by it, and a look that finds nothing costs two cheap
 * statements. */
#define FLOWING_POLL_MS 20

/* The recorder writes a batch once this many attempts are in, or this
 * long after the first of them: a batch's cost to the database is
 * mostly per statement and per commit, so few large batches cost much
 * less than many small ones, and no transfer waits for them. */
#define GATHER 128
#define GATHER_MS 5

struct store {
	struct wl_app *app;	/* the claimer's */
	struct wl_app *rec_app;	/* the recorder's */
	const struct wl_config *cfg;
	const char *owner;
	CURLM *wake;
	int once;
	pthread_t claimer, recorder;
	int started;		/* threads started: 0, 1 or 2 */
	pthread_mutex_t mu;
	pthread_cond_t cv;	/* the claimer waits on it */
	pthread_cond_t rec_cv;	/* the recorder waits on it */
	/* Under mu. */
	struct done *done;	/* finished attempts to record */
	size_t ndone, capdone;
	struct wl_send *rel;	/* claims given back unsent */
	size_t nrel, caprel;
	struct wl_send *claimed; /* claims the sender has not taken yet */
	size_t nclaimed, capclaimed;
	unsigned room;		/* what the sender can take, by its count */
	size_t window;		/* what it may hold in all */
	char held[HELD_MAX];	/* subscriptions not to claim for (a,b) */
	unsigned long held_changes; /* times held changed */
	unsigned long pushes;	/* batches handed in so far */
	int quit;
	int writing;		/* the recorder is writing a batch */
	int looked_empty;	/* the last look claimed nothing (or failed),
				   and nothing was handed in since */
	int64_t last_feed;	/* when the last look was made (monotonic) */
	int64_t first_done;	/* when the oldest of done was handed in */
	struct wl_ranges ranges; /* its own lock */
	int failing;		/* the last look failed (logged once) */
	int failed;		/* a look or a record failed (--once: exit 1) */
	int found;		/* it found some */
	int more;		/* it filled all the room: more is due */
	int roomless;		/* the claimer sleeps for want of room */
};

/* Make room for one more element in *v (of size sz, n used, cap). */
static int
grow(void *v, size_t sz, size_t n, size_t *cap, size_t add)
{
	void *p;
	size_t c = *cap ? *cap : 64;

	if (n + add <= *cap)
		return 0;
	while (c < n + add)
		c *= 2;
	if ((p = realloc(*(void **)v, c * sz)) == NULL)
		return -1;
	*(void **)v = p;
	*cap = c;
	return 0;
}

static int64_t
next_feed(const struct store *s)
{
	int64_t every = s->cfg->deliverer_poll_ms;

	if (s->found && every > FLOWING_POLL_MS)
		every = FLOWING_POLL_MS;
	return s->last_feed + every;
}

/*
 * Is a look for due deliveries due?  Not without room the claimed ones
 * do not fill already.  Then every poll interval when idle, more often
 * while deliveries keep coming, as soon as half the room is free after a
 * look that filled all it had (a backlog), and with --once whenever the
 * sender is idle and the last look claimed something (see look()).  A
 * look costs a few statements whatever it brings, so it is not made for
 * one delivery.
 */
static int
feed_due(const struct store *s, int64_t now)
{
	size_t total = s->window;
	size_t avail = s->room > s->nclaimed ? s->room - s->nclaimed : 0;

	if (avail == 0 || s->quit)
		return 0;
	if (s->more && avail >= (total + 1) / 2)
		return 1;
	if (s->once && s->room == total && s->nclaimed == 0 &&
	    !s->looked_empty)
		return 1;
	return now >= next_feed(s);
}

/*
 * Wake the claimer if a look is due, or if it sleeps for want of room and
 * there is some now: it then sleeps until the next look is due instead.
 * Under mu.
 */
static void
wake_claimer(struct store *s)
{
	if (feed_due(s, wl_mono_ms()) ||
	    (s->roomless && s->room > s->nclaimed))
		pthread_cond_signal(&s->cv);
}

/* Claim as many deliveries as the sender has room for. */
static void
look(struct store *s, unsigned long pushes)
{
	struct wl_send *sends = NULL;
	size_t n = 0, avail;
	unsigned long long taken = 0;
	char held[HELD_MAX];
	unsigned long held_changes;
	int rc;

	pthread_mutex_lock(&s->mu);
	avail = s->room > s->nclaimed ? s->room - s->nclaimed : 0;
	memcpy(held, s->held, sizeof(held));
	held_changes = s->held_changes;
	pthread_mutex_unlock(&s->mu);
	rc = wl_deliver_claim(s->app, s->owner, &s->ranges, (unsigned)avail,
			      held, &sends, &n, &taken);
	pthread_mutex_lock(&s->mu);
	/* What was claimed goes out, even when a later step failed. */
	if (n > 0 &&
	    grow(&s->claimed, sizeof(*sends), s->nclaimed, &s->capclaimed,
		 n) == 0) {
		memcpy(&s->claimed[s->nclaimed], sends, n * sizeof(*sends));
		s->nclaimed += n;
	} else {
		/* Nothing claimed, or no memory to hold it: its leases
		 * expire and it goes out later. */
		wl_sends_free(sends, n);
		n = 0;
	}
	if ((rc != WL_OK) != s->failing)
		wl_log(rc != WL_OK ? WL_LOG_WARN : WL_LOG_INFO,
		       "\"msg\":\"%s\",\"error\":\"%s\"",
		       rc != WL_OK ? "cannot claim deliveries"
				   : "claiming deliveries again",
		       wl_strerror(rc));
	s->failing = rc != WL_OK;
	s->failed |= s->failing;
	s->last_feed = wl_mono_ms();
	s->found = taken > 0;
	s->more = taken > 0 && taken >= avail;
	/* For --once: claimed nothing (even what it claimed to fail counts),
	 * or failed: the next run goes on.  Without room it saw nothing,
	 * which is not "nothing due". */
	s->looked_empty = (rc != WL_OK || taken == 0) && avail > 0 &&
			  s->pushes == pushes;
	/* Held changed while it looked with the old list: look again. */
	if (s->held_changes != held_changes) {
		s->last_feed = 0;
		s->looked_empty = 0;
	}
	pthread_mutex_unlock(&s->mu);
	free(sends);
	curl_multi_wakeup(s->wake);
}

/* Record n finished attempts in one transaction, then free them. */
static void
record(struct store *s, struct done *d, size_t n)
{
	struct wl_attempt *v = calloc(n ? n : 1, sizeof(*v));
	size_t i;
	int rc = WL_ERR_NOMEM;

	for (i = 0; v && i < n; i++) {
		v[i].send = &d[i].send;
		v[i].res = d[i].res;
	}
	if (v)
		rc = wl_deliver_record(s->rec_app, s->owner, &s->ranges, v,
				       n);
	if (rc != WL_OK) {
		wl_log(WL_LOG_WARN,
		       "\"msg\":\"could not record %zu attempts; their leases "
		       "will expire and they will be sent again\"",
		       n);
		pthread_mutex_lock(&s->mu);
		s->failed = 1;
		pthread_mutex_unlock(&s->mu);
	}
	for (i = 0; i < n; i++)
		wl_sends_free(&d[i].send, 1);
	free(v);
}

static void
release(struct store *s, struct wl_send *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		wl_deliver_release(s->rec_app, s->owner, &s->ranges, &v[i]);
		wl_sends_free(&v[i], 1);
	}
}

/* Wait for a signal on cv, until at (monotonic ms) at most, and 1 s at
 * most. */
static void
wait_until(struct store *s, pthread_cond_t *cv, int64_t at)
{
	int64_t now = wl_mono_ms(), left = at - now;
	struct timespec ts;

	if (left > 1000)
		left = 1000;
	if (left < 1)
		left = 1;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += left / 1000;
	ts.tv_nsec += (left % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(cv, &s->mu, &ts);
}

/* The claimer: a look whenever one is due, until quit. */
static void *
claim_loop(void *arg)
{
	struct store *s = arg;
	unsigned long pushes;

	pthread_mutex_lock(&s->mu);
	while (!s->quit) {
		if (!feed_due(s, wl_mono_ms())) {
			/* Without room, until the sender makes some: the next
			 * look is not due before. */
			s->roomless = s->room <= s->nclaimed;
			wait_until(s, &s->cv,
				   s->roomless ? wl_mono_ms() + 1000
					       : next_feed(s));
			s->roomless = 0;
			continue;
		}
		pushes = s->pushes;
		pthread_mutex_unlock(&s->mu);
		look(s, pushes);
		pthread_mutex_lock(&s->mu);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

/* The recorder: writes what is handed in, until quit and the claimer
 * has stopped; then gives back what the sender never took. */
static void *
record_loop(void *arg)
{
	struct store *s = arg;
	struct done *d;
	struct wl_send *rel;
	size_t nd, nr;

	pthread_mutex_lock(&s->mu);
	for (;;) {
		if (s->ndone == 0 && s->nrel == 0) {
			if (s->quit && s->started < 2)
				break;
			wait_until(s, &s->rec_cv, wl_mono_ms() + 1000);
			continue;
		}
		if (s->ndone < GATHER && !s->quit && s->nrel == 0 &&
		    wl_mono_ms() < s->first_done + GATHER_MS) {
			wait_until(s, &s->rec_cv, s->first_done + GATHER_MS);
			continue;
		}
		d = s->done, nd = s->ndone;
		rel = s->rel, nr = s->nrel;
		s->done = NULL, s->ndone = s->capdone = 0;
		s->rel = NULL, s->nrel = s->caprel = 0;
		s->writing = 1;
		pthread_mutex_unlock(&s->mu);
		if (nd > 0)
			record(s, d, nd);
		release(s, rel, nr);
		free(d);
		free(rel);
		pthread_mutex_lock(&s->mu);
		s->writing = 0;
	}
	rel = s->claimed, nr = s->nclaimed;
	s->claimed = NULL, s->nclaimed = s->capclaimed = 0;
	pthread_mutex_unlock(&s->mu);
	release(s, rel, nr);
	free(rel);
	return NULL;
}

/* Start the store on app (claims) and rec_app (records), which it
 * alone uses from now on; wake is the sender's multi handle, woken when
 * claims arrive.  NULL on failure. */
struct store *
store_start(struct wl_app *app, struct wl_app *rec_app,
	    const struct wl_config *cfg, const char *owner, CURLM *wake,
	    int once)
{
	struct store *s = calloc(1, sizeof(*s));
	pthread_condattr_t ca;
	sigset_t all, old;

	if (s == NULL)
		return NULL;
	s->app = app;
	s->rec_app = rec_app;
	s->cfg = cfg;
	s->owner = owner;
	s->wake = wake;
	s->once = once;
	wl_ranges_init(&s->ranges);
	pthread_mutex_init(&s->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cv, &ca);
	pthread_cond_init(&s->rec_cv, &ca);
	pthread_condattr_destroy(&ca);
	/* Signals are the sender's: they must interrupt its poll. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (pthread_create(&s->recorder, NULL, record_loop, s) == 0) {
		s->started = 1;
		if (pthread_create(&s->claimer, NULL, claim_loop, s) == 0)
			s->started = 2;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (s->started < 2) {
		if (s->started)
			store_stop(s);
		else
			free(s);
		return NULL;
	}
	return s;
}

/* Hand n finished attempts over; their sends are the store's now.  If
 * they cannot be held, their leases expire and they are sent again. */
void
store_record(struct store *s, struct done *v, size_t n)
{
	size_t i;

	if (n == 0)
		return;
	pthread_mutex_lock(&s->mu);
	if (grow(&s->done, sizeof(*v), s->ndone, &s->capdone, n) == 0) {
		if (s->ndone == 0)
			s->first_done = wl_mono_ms();
		memcpy(&s->done[s->ndone], v, n * sizeof(*v));
		s->ndone += n;
		s->pushes++;
		s->looked_empty = 0;
		/* (Otherwise the recorder wakes when GATHER_MS is up.) */
		if (s->ndone == n || s->ndone >= GATHER)
			pthread_cond_signal(&s->rec_cv);
	} else
		for (i = 0; i < n; i++)
			wl_sends_free(&v[i].send, 1);
	pthread_mutex_unlock(&s->mu);
}

/* Give a claim back unsent; the send is the store's now. */
void
store_release(struct store *s, struct wl_send *send)
{
	pthread_mutex_lock(&s->mu);
	if (grow(&s->rel, sizeof(*send), s->nrel, &s->caprel, 1) == 0) {
		s->rel[s->nrel++] = *send;
		s->pushes++;
		s->looked_empty = 0;
		pthread_cond_signal(&s->rec_cv);
	} else
		wl_sends_free(send, 1);
	pthread_mutex_unlock(&s->mu);
}

/* Take the claims made so far, in claim order (free *out; the sends
 * are the caller's). */
size_t
store_take(struct store *s, struct wl_send **out)
{
	size_t n;

	pthread_mutex_lock(&s->mu);
	*out = s->claimed;
	n = s->nclaimed;
	s->claimed = NULL;
	s->nclaimed = s->capclaimed = 0;
	if (n > 0)
		wake_claimer(s);
	pthread_mutex_unlock(&s->mu);
	return n;
}

/* The sender has room for this many more deliveries, of window. */
void
store_room(struct store *s, unsigned room, size_t window, const char *held)
{
	int changed;

	pthread_mutex_lock(&s->mu);
	changed = room != s->room || window != s->window;
	/* What was held back may be due now: a look is, and the last one's
	 * "nothing" no longer holds. */
	if (strcmp(held, s->held) != 0) {
		snprintf(s->held, sizeof(s->held), "%s", held);
		s->held_changes++;
		s->looked_empty = 0;
		s->last_feed = 0;
		changed = 1;
	}
	if (changed) {
		s->room = room;
		s->window = window;
		wake_claimer(s);
	}
	pthread_mutex_unlock(&s->mu);
}

/* Has everything handed in been written, and did a look made after it
 * find nothing due?  (For --once.) */
int
store_quiet(struct store *s)
{
	int quiet;

	pthread_mutex_lock(&s->mu);
	quiet = s->looked_empty && s->ndone == 0 && s->nrel == 0 &&
		s->nclaimed == 0 && !s->writing;
	pthread_mutex_unlock(&s->mu);
	return quiet;
}

/* Write what is left, give back unsent claims, and end the threads:
 * the claimer first, so that nothing is claimed after the last give-back.
 * Returns whether a look or a record failed while it ran. */
int
store_stop(struct store *s)
{
	int failed;

	pthread_mutex_lock(&s->mu);
	s->quit = 1;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
	if (s->started == 2)
		pthread_join(s->claimer, NULL);
	pthread_mutex_lock(&s->mu);
	s->started = 1;
	pthread_cond_signal(&s->rec_cv);
	pthread_mutex_unlock(&s->mu);
	pthread_join(s->recorder, NULL);
	pthread_cond_destroy(&s->cv);
	pthread_cond_destroy(&s->rec_cv);
	pthread_mutex_destroy(&s->mu);
	free(s->done);
	free(s->rel);
	free(s->claimed);
	wl_ranges_free(&s->ranges);
	failed = s->failed;
	free(s);
	return failed;
}
