/*
 * waitlist-deliverer: pushes signed webhooks.  This loop, the sender,
 * sends claimed deliveries concurrently with the libcurl multi interface
 * (bounded overall and per endpoint); a claimed delivery starts as soon
 * as there is room, overall and at its endpoint.  The store's threads
 * (store.c) do all the database work: they lease new events in ranges
 * and due retries for the sender's window (more than it sends at once:
 * see window()), and record finished attempts in batches, one
 * transaction each, through the library, which decides retries.  No
 * transfer waits for a commit, and no database lock is held while HTTP
 * is in flight.  SIGTERM stops claiming and waits for the transfers in
 * flight (at most the attempt timeout); --once runs until nothing is
 * due.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>

#include "../lib/waitlist.h"
#include "store.h"

static volatile sig_atomic_t stopping;

static void
on_term(int sig)
{
	(void)sig;
	stopping = 1;
}

struct xfer {
	CURL *easy;
	struct curl_slist *headers;
	struct wl_send send;
	long retry_after;
	int64_t started;      /* service clock: the attempt's time */
	int64_t started_mono; /* monotonic: its duration */
	int refused; /* the connected address broke the destination policy */
};

/* A claimed delivery waiting for its endpoint to have room. */
struct waiting {
	struct wl_send send;
	int64_t claimed; /* monotonic ms */
};

/* A subscription whose endpoint answered 410, for GONE_MS after the
 * last (see gone_add()), as it was before a resume (its count). */
struct gone {
	char subscription_id[48];
	int64_t resumes;
	int64_t until; /* monotonic ms */
};

#define GONE_MAX 16

/* The attempts ended at an endpoint, counted from its first in spans of
 * RATE_MS, half of WAIT_MS: this span's and the last tell what it takes
 * in WAIT_MS.  Kept for the last RATES_MAX endpoints to start one. */
#define RATE_MS (WAIT_MS / 2)
#define RATES_MAX 16

struct rate {
	char host[256];
	int64_t since;	       /* the current span's start (monotonic ms) */
	unsigned ended, before; /* ended in it, in the span before */
	int64_t before_ms;     /* how long the span before ran (0: none) */
};

struct loop {
	struct store *store;
	const struct wl_config *cfg;
	CURLM *multi;
	struct xfer **xfers;	/* in flight */
	size_t n, cap;
	struct waiting *wait;	/* claimed, not started yet */
	size_t nwait, capwait;
	CURL **idle;		/* handles to use again (curl_easy_reset) */
	size_t nidle;		/* at most deliverer_concurrency */
	int64_t pace_sec;	/* the second started_now counts in */
	size_t started_now, started_before; /* and the one before */
	struct gone gone[GONE_MAX];
	size_t ngone;
	struct rate rates[RATES_MAX];
	size_t nrates;
};

/* The window (see window()) holds at most this many times what the
 * sender sends at once. */
#define WINDOW 4

/* A claimed delivery may wait this long for room; then it goes back
 * (its lease lasts the attempt timeout plus 20 s). */
#define WAIT_MS 10000

/* An endpoint with every slot in flight, a claim that has waited this
 * long, and more claims waiting than it ends attempts in WAIT_MS (see
 * struct rate) is slow: what it cannot take in time would go back
 * unsent.  The claimer then leaves out the subscriptions sending
 * there, and their waiting claims stop counting against the window: an
 * endpoint that stalls holds back no other's deliveries, and gets about
 * what it takes. */
#define SLOW_MS 1000

/* The endpoints found slow in a turn (see slow_find()), at most. */
#define SLOW_MAX 8

struct slow {
	const char *host[SLOW_MAX];
	size_t n;
};

/* How long a 410 holds back the claims of its subscription: those made
 * before the recorder disables it reach the sender within a claimer's
 * look, which a slow name lookup for another endpoint can stretch to
 * seconds; as long as a claim may wait for room. */
#define GONE_MS WAIT_MS

static size_t
discard(char *p, size_t size, size_t n, void *arg)
{
	(void)p;
	(void)arg;
	return size * n;
}

static size_t
on_header(char *line, size_t size, size_t n, void *arg)
{
	struct xfer *x = arg;
	size_t len = size * n;
	char value[128];

	if (len > 12 && strncasecmp(line, "retry-after:", 12) == 0 &&
	    len - 12 < sizeof(value)) {
		memcpy(value, line + 12, len - 12);
		value[len - 12] = '\0';
		x->retry_after = wl_retry_after_parse(value, wl_clock_ms());
	}
	return len;
}

/* Refuse to send to an address the destination policy forbids, checked
 * on the address actually connected (so DNS rebinding is caught). */
static int
on_prereq(void *arg, char *ip, char *local_ip, int port, int local_port)
{
	struct xfer *x = arg;

	(void)local_ip;
	(void)port;
	(void)local_port;
	if (wl_deliver_address_ok(&x->send, ip))
		return CURL_PREREQFUNC_OK;
	x->refused = 1;
	return CURL_PREREQFUNC_ABORT;
}

/* Count the transfers started by the second: this one's, the last's. */
static void
pace_roll(struct loop *l, int64_t now)
{
	int64_t sec = now / 1000;

	if (sec == l->pace_sec)
		return;
	l->started_before = sec == l->pace_sec + 1 ? l->started_now : 0;
	l->started_now = 0;
	l->pace_sec = sec;
}

/* Is g the hold of s's endpoint, as its subscription was when s was read? */
static int
gone_holds(const struct gone *g, const struct wl_send *s)
{
	return strcmp(g->subscription_id, s->subscription_id) == 0 &&
	       g->resumes == s->resumes;
}

/*
 * The endpoint of s's subscription answered 410: nothing more is sent to
 * it from here.  The recorder disables the subscription, after which no
 * claim includes it; the claims made before, waiting here or not yet
 * taken, go back unsent (start_waiting()), and their ranges are then
 * dropped (those of events after a resume meanwhile are sent later).
 * Claims read after a resume (a 410 from before it disables nothing) are
 * not held back.  Other deliverers stop once the disabling commits.  The
 * list runs oldest first; a full one forgets its oldest.
 */
static void
gone_add(struct loop *l, const struct wl_send *s, int64_t now)
{
	size_t i;

	for (i = 0; i < l->ngone && !gone_holds(&l->gone[i], s); i++)
		;
	if (i == l->ngone && l->ngone == GONE_MAX)
		i = 0;
	if (i < l->ngone) /* out of its place: it goes last */
		memmove(l->gone + i, l->gone + i + 1,
			(--l->ngone - i) * sizeof(*l->gone));
	i = l->ngone++;
	snprintf(l->gone[i].subscription_id,
		 sizeof(l->gone[i].subscription_id), "%s", s->subscription_id);
	l->gone[i].resumes = s->resumes;
	l->gone[i].until = now + GONE_MS;
}

/* Is s for an endpoint gone (see gone_holds())? */
static int
gone_has(struct loop *l, const struct wl_send *s, int64_t now)
{
	size_t i;

	while (l->ngone > 0 && l->gone[0].until < now)
		memmove(l->gone, l->gone + 1, --l->ngone * sizeof(*l->gone));
	for (i = 0; i < l->ngone; i++)
		if (gone_holds(&l->gone[i], s))
			return 1;
	return 0;
}

static size_t
host_busy(const struct loop *l, const char *host)
{
	size_t i, n = 0;

	for (i = 0; i < l->n; i++)
		if (strcmp(l->xfers[i]->send.host, host) == 0)
			n++;
	return n;
}

/* Is host one of the n hosts of v? */
static int
host_in(const char *const *v, size_t n, const char *host)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(v[i], host) == 0)
			return 1;
	return 0;
}

static struct rate *
rate_find(struct loop *l, const char *host)
{
	size_t i;

	for (i = 0; i < l->nrates; i++)
		if (strcmp(l->rates[i].host, host) == 0)
			return &l->rates[i];
	return NULL;
}

/* Start a new span when the current one is over. */
static void
rate_roll(struct rate *r, int64_t now)
{
	int next = now - r->since < 2 * RATE_MS;

	if (now - r->since < RATE_MS)
		return;
	r->before = next ? r->ended : 0;
	r->before_ms = next ? now - r->since : 0;
	r->ended = 0;
	r->since = now;
}

/* The count of host, from its first attempt on (the endpoint counted
 * longest ago makes way for a new one). */
static struct rate *
rate_get(struct loop *l, const char *host, int64_t now)
{
	struct rate *r = rate_find(l, host);
	size_t i, old = 0;

	if (r != NULL) {
		rate_roll(r, now);
		return r;
	}
	if (l->nrates < RATES_MAX)
		old = l->nrates++;
	else
		for (i = 1; i < RATES_MAX; i++)
			if (l->rates[i].since < l->rates[old].since)
				old = i;
	r = &l->rates[old];
	memset(r, 0, sizeof(*r));
	snprintf(r->host, sizeof(r->host), "%s", host);
	r->since = now;
	return r;
}

/* About the attempts host ends in WAIT_MS, by those ended since its
 * count began (over a second at least). */
static size_t
rate_takes(struct loop *l, const char *host, int64_t now)
{
	struct rate *r = rate_find(l, host);
	int64_t span;

	if (r == NULL)
		return 0;
	rate_roll(r, now);
	span = now - r->since + r->before_ms;
	if (span < SLOW_MS)
		span = SLOW_MS;
	return (size_t)(((int64_t)r->ended + r->before) * WAIT_MS / span);
}

/* A handle for a new transfer: one used before if there is one. */
static CURL *
easy_get(struct loop *l)
{
	CURL *e;

	if (l->nidle == 0)
		return curl_easy_init();
	e = l->idle[--l->nidle];
	curl_easy_reset(e);
	return e;
}

static void
xfer_free(struct loop *l, struct xfer *x)
{
	if (x == NULL)
		return;
	if (x->easy && l->idle &&
	    l->nidle < l->cfg->deliverer_concurrency)
		l->idle[l->nidle++] = x->easy;
	else if (x->easy)
		curl_easy_cleanup(x->easy);
	curl_slist_free_all(x->headers);
	wl_sends_free(&x->send, 1);
	free(x);
}

/* Start sending s; takes ownership of its contents (given back to the
 * store when it cannot start). */
static int
start(struct loop *l, struct wl_send *s)
{
	struct xfer *x = calloc(1, sizeof(*x)), **nx;
	size_t i;

	if (x == NULL) {
		store_release(l->store, s);
		return -1;
	}
	x->send = *s;
	x->retry_after = -1;
	x->started = wl_clock_ms();
	x->started_mono = wl_mono_ms();
	rate_get(l, x->send.host, x->started_mono);
	for (i = 0; s->headers[i]; i++)
		x->headers = curl_slist_append(x->headers, s->headers[i]);
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		if ((nx = realloc(l->xfers, cap * sizeof(*nx))) == NULL)
			goto fail;
		l->xfers = nx;
		l->cap = cap;
	}
	if ((x->easy = easy_get(l)) == NULL)
		goto fail;
	curl_easy_setopt(x->easy, CURLOPT_URL, s->url);
	curl_easy_setopt(x->easy, CURLOPT_POST, 1L);
	curl_easy_setopt(x->easy, CURLOPT_POSTFIELDS, s->body);
	curl_easy_setopt(x->easy, CURLOPT_POSTFIELDSIZE, (long)s->body_len);
	curl_easy_setopt(x->easy, CURLOPT_HTTPHEADER, x->headers);
	curl_easy_setopt(x->easy, CURLOPT_TIMEOUT_MS,
			 (long)l->cfg->timeout_seconds * 1000L);
	curl_easy_setopt(x->easy, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(x->easy, CURLOPT_PROTOCOLS_STR, "http,https");
	/* No proxy, whatever the environment says: the address on_prereq
	 * checks must be the destination's own. */
	curl_easy_setopt(x->easy, CURLOPT_PROXY, "");
	curl_easy_setopt(x->easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(x->easy, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(x->easy, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(x->easy, CURLOPT_HEADERDATA, x);
	curl_easy_setopt(x->easy, CURLOPT_PREREQFUNCTION, on_prereq);
	curl_easy_setopt(x->easy, CURLOPT_PREREQDATA, x);
	curl_easy_setopt(x->easy, CURLOPT_PRIVATE, x);
	if (curl_multi_add_handle(l->multi, x->easy) != CURLM_OK)
		goto fail;
	l->xfers[l->n++] = x;
	pace_roll(l, x->started_mono);
	l->started_now++;
	return 0;
fail:
	store_release(l->store, &x->send);
	memset(&x->send, 0, sizeof(x->send));
	xfer_free(l, x);
	return -1;
}

/* The outcome of finished transfer x.  The status line is the receiver's
 * answer: once it has come, it counts even when the rest of the response
 * then times out or breaks off (the body is read only to be dropped). */
static void
result_of(const struct xfer *x, CURLcode code, int64_t mono,
	  struct wl_send_result *res)
{
	long status = 0;

	memset(res, 0, sizeof(*res));
	res->attempted_at = x->started;
	res->duration_ms = (long)(mono - x->started_mono);
	res->retry_after = x->retry_after;
	if (curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status) !=
	    CURLE_OK)
		status = 0;
	if (code == CURLE_OK || status >= 200)
		res->http_status = (int)status;
	else
		res->timed_out = code == CURLE_OPERATION_TIMEDOUT;
}

/* Hand every transfer that has finished to the store, to be recorded
 * together, and let them go.  Returns how many finished. */
static size_t
reap(struct loop *l)
{
	struct done *done;
	struct xfer *x;
	CURLMsg *msg;
	int64_t now = wl_mono_ms();
	size_t n = 0, running = l->n, j;
	int left;

	if (running == 0 || (done = calloc(running, sizeof(*done))) == NULL)
		return 0; /* (no memory: try again on the next turn) */
	/* (l->n goes down as they are let go.) */
	while (n < running &&
	       (msg = curl_multi_info_read(l->multi, &left)) != NULL) {
		if (msg->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE,
				  (char **)&x);
		result_of(x, msg->data.result, now, &done[n].res);
		rate_get(l, x->send.host, now)->ended++;
		if (done[n].res.http_status == 410)
			gone_add(l, &x->send, now);
		done[n++].send = x->send;
		memset(&x->send, 0, sizeof(x->send));
		curl_multi_remove_handle(l->multi, x->easy);
		for (j = 0; j < l->n; j++)
			if (l->xfers[j] == x) {
				l->xfers[j] = l->xfers[--l->n];
				break;
			}
		xfer_free(l, x);
	}
	store_record(l->store, done, n);
	free(done);
	return n;
}

/*
 * Start what waits, in claim order, wherever its endpoint has room; give
 * back what waited too long, what is for an endpoint gone, or everything
 * when stopping.  Returns how many started.
 */
static size_t
start_waiting(struct loop *l, int give_back_all)
{
	int64_t now = wl_mono_ms();
	size_t i, kept = 0, started = 0, nfull = 0;
	const char *full[8]; /* endpoints found without room in this pass */
	int was_full;

	for (i = 0; i < l->nwait; i++) {
		struct waiting *w = &l->wait[i];
		const char *host = w->send.host;
		if (give_back_all || now - w->claimed > WAIT_MS ||
		    gone_has(l, &w->send, now)) {
			store_release(l->store, &w->send);
			continue;
		}
		was_full = host_in(full, nfull, host);
		if (!was_full && l->n < l->cfg->deliverer_concurrency &&
		    host_busy(l, host) < l->cfg->deliverer_per_endpoint) {
			if (start(l, &w->send) == 0)
				started++;
			continue;
		}
		if (kept != i)
			l->wait[kept] = *w;
		/* (wait[kept] stays as it is for the rest of the pass.) */
		if (!was_full && nfull < 8 &&
		    l->n < l->cfg->deliverer_concurrency)
			full[nfull++] = l->wait[kept].send.host;
		kept++;
	}
	l->nwait = kept;
	return started;
}

/* Queue the claims the store has made since the last turn. */
static void
take(struct loop *l)
{
	struct wl_send *sends;
	size_t n = store_take(l->store, &sends), i;
	int64_t now = wl_mono_ms();

	if (n > 0 && l->nwait + n > l->capwait) {
		size_t cap = (l->nwait + n) * 2;
		struct waiting *nw = realloc(l->wait, cap * sizeof(*nw));
		if (nw == NULL) {
			for (i = 0; i < n; i++)
				store_release(l->store, &sends[i]);
			free(sends);
			return;
		}
		l->wait = nw;
		l->capwait = cap;
	}
	for (i = 0; i < n; i++) {
		l->wait[l->nwait].send = sends[i];
		l->wait[l->nwait++].claimed = now;
	}
	free(sends);
}

/*
 * The claims the sender may hold, in flight or waiting for room: what it
 * sends at once and, on top, as many as it started in the last second or
 * two, up to WINDOW times in all.  Enough for the next claims to be
 * there while a claim commits, and no more than a slow endpoint takes
 * before WAIT_MS runs out.
 */
static size_t
window(struct loop *l)
{
	size_t conc = l->cfg->deliverer_concurrency, w;

	pace_roll(l, wl_mono_ms());
	w = conc + l->started_now + l->started_before;
	return w < conc * WINDOW ? w : conc * WINDOW;
}

/* Is host slow (see SLOW_MS)? */
static int
host_slow(struct loop *l, const char *host, int64_t now)
{
	size_t waiting = 0, i;

	if (host_busy(l, host) < l->cfg->deliverer_per_endpoint)
		return 0;
	for (i = 0; i < l->nwait; i++)
		waiting += strcmp(l->wait[i].send.host, host) == 0;
	return waiting > rate_takes(l, host, now);
}

/* The slow endpoints (see SLOW_MS), for this turn: the hosts are those of
 * claims that have waited SLOW_MS, each looked at once. */
static void
slow_find(struct loop *l, int64_t now, struct slow *sl)
{
	const char *seen[SLOW_MAX * 2];
	size_t i, nseen = 0;

	sl->n = 0;
	for (i = 0; i < l->nwait && nseen < SLOW_MAX * 2; i++) {
		const char *host = l->wait[i].send.host;
		if (now - l->wait[i].claimed < SLOW_MS ||
		    host_in(seen, nseen, host))
			continue;
		seen[nseen++] = host;
		if (sl->n < SLOW_MAX && host_slow(l, host, now))
			sl->host[sl->n++] = host;
	}
}

/* Add s's subscription to held, ids separated by commas (len bytes so
 * far), unless it is there or there is no room.  Returns whether it is
 * there. */
static int
held_add(char *held, size_t *len, const struct wl_send *s)
{
	size_t n = strlen(s->subscription_id);

	if (wl_deliver_held(held, s->subscription_id))
		return 1;
	if (*len + n + 2 > HELD_MAX)
		return 0;
	if (*len > 0)
		held[(*len)++] = ',';
	memcpy(held + *len, s->subscription_id, n + 1);
	*len += n;
	return 1;
}

/* The subscriptions sending to a slow endpoint, into held.  Returns how
 * many waiting claims are for those held. */
static size_t
held_list(const struct loop *l, const struct slow *sl, char held[HELD_MAX])
{
	size_t i, len = 0, nheld = 0;

	held[0] = '\0';
	if (sl->n == 0)
		return 0;
	for (i = 0; i < l->n; i++)
		if (host_in(sl->host, sl->n, l->xfers[i]->send.host))
			held_add(held, &len, &l->xfers[i]->send);
	for (i = 0; i < l->nwait; i++)
		if (host_in(sl->host, sl->n, l->wait[i].send.host) &&
		    held_add(held, &len, &l->wait[i].send))
			nheld++;
	return nheld;
}

/* What the sender can take on: its window w less what it holds, but for
 * the nheld claims waiting for held subscriptions.  (No claim adds to
 * those: what waits for them was claimed before they were held.) */
static unsigned
room(const struct loop *l, size_t w, size_t nheld)
{
	size_t busy = l->n + l->nwait - nheld;

	return w > busy ? (unsigned)(w - busy) : 0;
}

static void
usage(void)
{
	fprintf(stderr, "usage: waitlist-deliverer [--config FILE] [--once]\n");
	exit(2);
}

/* Run until stopped, or with --once until nothing is due. */
static void
run(struct loop *l, int once)
{
	char held[HELD_MAX];
	struct slow sl;
	int running;
	size_t w, nheld;

	for (;;) {
		if (stopping)
			start_waiting(l, 1);
		else
			take(l);
		start_waiting(l, 0);
		curl_multi_perform(l->multi, &running);
		/* What finished freed room at its endpoint. */
		if (reap(l) > 0)
			start_waiting(l, 0);
		w = window(l);
		slow_find(l, wl_mono_ms(), &sl);
		nheld = held_list(l, &sl, held);
		store_room(l->store, stopping ? 0 : room(l, w, nheld), w, held);
		if (l->n + l->nwait == 0 &&
		    (stopping || (once && store_quiet(l->store))))
			break;
		/* Sleep until a transfer needs us, claims arrive (the store
		 * wakes us) or a waiting claim may have waited too long. */
		curl_multi_poll(l->multi, NULL, 0, 1000, NULL);
	}
}

static void
loop_init(struct loop *l, const struct wl_config *cfg)
{
	memset(l, 0, sizeof(*l));
	l->cfg = cfg;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	l->multi = curl_multi_init();
	l->idle = calloc(cfg->deliverer_concurrency, sizeof(*l->idle));
	curl_multi_setopt(l->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS,
			  (long)cfg->deliverer_concurrency);
	curl_multi_setopt(l->multi, CURLMOPT_MAX_HOST_CONNECTIONS,
			  (long)cfg->deliverer_per_endpoint);
}

static void
loop_free(struct loop *l)
{
	free(l->xfers);
	free(l->wait);
	while (l->nidle > 0)
		curl_easy_cleanup(l->idle[--l->nidle]);
	free(l->idle);
	curl_multi_cleanup(l->multi);
	curl_global_cleanup();
}

static void
on_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	/* Nothing to reload: a SIGHUP (say, sent to a whole group on
	 * reload) must not end the deliverer. */
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
	    {"config", required_argument, NULL, 'c'},
	    {"once", no_argument, NULL, 'o'},
	    {NULL, 0, NULL, 0}};
	const char *config = NULL;
	struct wl_config *cfg;
	struct wl_app *app = NULL, *rec_app = NULL;
	struct loop l;
	char owner[48], err[512];
	int ch, once = 0, failed;

	while ((ch = getopt_long(argc, argv, "c:o", longopts, NULL)) != -1) {
		if (ch == 'c')
			config = optarg;
		else if (ch == 'o')
			once = 1;
		else
			usage();
	}
	wl_log_set_component("deliverer");
	if ((cfg = wl_config_load(config, err, sizeof(err))) == NULL)
		goto refused;
	wl_log_set_level(cfg->log_level);
	/* Two connections: claims and records do not wait for each other.
	 * (A database down at start is waited for as ever.) */
	if ((app = wl_app_new(cfg, WL_APP_SECRET, err, sizeof(err))) == NULL ||
	    (rec_app = wl_app_new(cfg, WL_APP_SECRET, err, sizeof(err))) ==
		NULL ||
	    wl_admin_schema_current(app, err, sizeof(err)) == 0)
		goto refused;
	loop_init(&l, cfg);
	wl_deliver_owner(owner);
	on_signals();
	if ((l.store = store_start(app, rec_app, cfg, owner, l.multi, once)) ==
	    NULL) {
		snprintf(err, sizeof(err), "cannot start a thread");
		loop_free(&l);
		goto refused;
	}
	wl_log(WL_LOG_INFO, "\"msg\":\"started\",\"owner\":\"%s\"", owner);
	run(&l, once);
	/* Records what is left and gives back claims never taken.  With
	 * --once, a failed look or record is the run's failure (a timer
	 * shows it). */
	failed = store_stop(l.store);
	wl_log(WL_LOG_INFO, "\"msg\":\"stopped\"");
	loop_free(&l);
	wl_app_free(rec_app);
	wl_app_free(app);
	wl_config_free(cfg);
	return once && failed ? 1 : 0;

refused:
	/* A refusal to start is a log line like any (JSON, on stderr). */
	wl_log_error(WL_LOG_ERROR, "cannot start", err);
	wl_app_free(rec_app);
	wl_app_free(app);
	wl_config_free(cfg);
	return 1;
}
