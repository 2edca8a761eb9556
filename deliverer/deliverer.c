/*
 * waitlist-deliverer: pushes signed webhooks.  The loop fans new events
 * out to deliveries, claims due deliveries under a lease, and sends them
 * concurrently with the libcurl multi interface (bounded overall and per
 * endpoint).  The attempts that finish together are recorded together,
 * in one transaction, by the library, which decides retries; a claimed
 * delivery starts as soon as its endpoint has room.  No database lock is
 * held while HTTP is in flight.  SIGTERM stops claiming and waits for the
 * transfers in flight (at most the attempt timeout); --once runs until
 * nothing is due.
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
	int64_t started;
	int refused; /* the connected address broke the destination policy */
};

/* A claimed delivery waiting for its endpoint to have room. */
struct waiting {
	struct wl_send send;
	int64_t claimed;
};

struct loop {
	struct wl_app *app;
	const struct wl_config *cfg;
	CURLM *multi;
	char owner[48];
	struct xfer **xfers;	/* in flight */
	size_t n, cap;
	struct waiting *wait;	/* claimed, not started yet */
	size_t nwait;
	int64_t last_feed;	/* when we last looked for due deliveries */
	int found;		/* that look found some */
	int more;		/* it filled all the room: more is due */
};

/* A claimed delivery may wait this long for room; then it goes back
 * (its lease lasts the attempt timeout plus 20 s). */
#define WAIT_MS 10000

/* While deliveries keep coming, look for new ones this often rather
 * than every poll interval: what a new event waits for its delivery is
 * bounded by it, and a look that finds nothing costs two cheap
 * statements. */
#define FLOWING_POLL_MS 20

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

static size_t
host_busy(const struct loop *l, const char *host)
{
	size_t i, n = 0;

	for (i = 0; i < l->n; i++)
		if (strcmp(l->xfers[i]->send.host, host) == 0)
			n++;
	return n;
}

static void
xfer_free(struct xfer *x)
{
	if (x == NULL)
		return;
	if (x->easy)
		curl_easy_cleanup(x->easy);
	curl_slist_free_all(x->headers);
	wl_sends_free(&x->send, 1);
	free(x);
}

/* Start sending s; takes ownership of its contents. */
static int
start(struct loop *l, const struct wl_send *s)
{
	struct xfer *x = calloc(1, sizeof(*x)), **nx;
	size_t i;

	if (x == NULL)
		return -1;
	x->send = *s;
	x->retry_after = -1;
	x->started = wl_clock_ms();
	for (i = 0; s->headers[i]; i++)
		x->headers = curl_slist_append(x->headers, s->headers[i]);
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		if ((nx = realloc(l->xfers, cap * sizeof(*nx))) == NULL)
			goto fail;
		l->xfers = nx;
		l->cap = cap;
	}
	if ((x->easy = curl_easy_init()) == NULL)
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
	return 0;
fail:
	wl_deliver_release(l->app, l->owner, &x->send);
	xfer_free(x);
	return -1;
}

/* The outcome of finished transfer x. */
static void
result_of(const struct xfer *x, CURLcode code, int64_t now,
	  struct wl_send_result *res)
{
	long status = 0;

	memset(res, 0, sizeof(*res));
	res->attempted_at = x->started;
	res->duration_ms = (long)(now - x->started);
	res->retry_after = x->retry_after;
	res->timed_out = code == CURLE_OPERATION_TIMEDOUT;
	if (code == CURLE_OK &&
	    curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status) ==
		CURLE_OK)
		res->http_status = (int)status;
}

/*
 * Record every transfer that has finished, all in one transaction (a
 * commit per attempt would bound the deliverer by the database's fsyncs),
 * then let them go.  Returns how many finished.
 */
static size_t
reap(struct loop *l)
{
	struct wl_attempt *done;
	struct xfer *x, **xs;
	CURLMsg *msg;
	int64_t now = wl_clock_ms();
	size_t n = 0, i, j;
	int left;

	if (l->n == 0)
		return 0;
	done = calloc(l->n, sizeof(*done));
	xs = calloc(l->n, sizeof(*xs));
	if (done == NULL || xs == NULL)
		goto out; /* try again on the next turn */
	while (n < l->n &&
	       (msg = curl_multi_info_read(l->multi, &left)) != NULL) {
		if (msg->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE,
				  (char **)&x);
		result_of(x, msg->data.result, now, &done[n].res);
		done[n].send = &x->send;
		xs[n++] = x;
	}
	if (wl_deliver_record(l->app, l->owner, done, n) != 0)
		wl_log(WL_LOG_WARN,
		       "\"msg\":\"could not record %zu attempts; their leases "
		       "will expire and they will be sent again\"",
		       n);
	for (i = 0; i < n; i++) {
		curl_multi_remove_handle(l->multi, xs[i]->easy);
		for (j = 0; j < l->n; j++)
			if (l->xfers[j] == xs[i]) {
				l->xfers[j] = l->xfers[--l->n];
				break;
			}
		xfer_free(xs[i]);
	}
out:
	free(done);
	free(xs);
	return n;
}

/*
 * Start what waits, in claim order, wherever its endpoint has room; give
 * back what waited too long, or everything when stopping.  Returns how
 * many started.
 */
static size_t
start_waiting(struct loop *l, int give_back_all)
{
	int64_t now = wl_clock_ms();
	size_t i, kept = 0, started = 0;

	for (i = 0; i < l->nwait; i++) {
		struct waiting *w = &l->wait[i];
		if (give_back_all || now - w->claimed > WAIT_MS) {
			wl_deliver_release(l->app, l->owner, &w->send);
			wl_sends_free(&w->send, 1);
		} else if (host_busy(l, w->send.host) <
			   l->cfg->deliverer_per_endpoint) {
			if (start(l, &w->send) == 0)
				started++;
		} else
			l->wait[kept++] = *w;
	}
	l->nwait = kept;
	return started;
}

/* When the next look for due deliveries is due (see feed_due()). */
static int64_t
next_feed(const struct loop *l)
{
	int64_t every = l->cfg->deliverer_poll_ms;

	if (l->found && every > FLOWING_POLL_MS)
		every = FLOWING_POLL_MS;
	return l->last_feed + every;
}

/*
 * Is it time to look for due deliveries?  Every poll interval when idle,
 * more often while deliveries keep coming, and while the last look
 * filled all the room it had (a backlog) as soon as half of the
 * room is free again: a claim costs two statements, whatever it brings,
 * so it is not made for one delivery.
 */
static int
feed_due(const struct loop *l, int64_t now)
{
	size_t total = l->cfg->deliverer_concurrency, busy = l->n + l->nwait;

	if (busy >= total)
		return 0;
	if (l->more && total - busy >= (total + 1) / 2)
		return 1;
	return now >= next_feed(l);
}

/*
 * Fan out, and claim as many deliveries as there is room for overall.
 * They wait in l->wait until their endpoint has room (rather than going
 * back at once, which would cost a commit each).  Returns how many were
 * claimed to be sent.
 */
static size_t
feed(struct loop *l, int64_t now)
{
	struct wl_send *sends = NULL;
	size_t n = 0, i, busy = l->n + l->nwait;
	unsigned room = l->cfg->deliverer_concurrency > busy
			    ? l->cfg->deliverer_concurrency - (unsigned)busy
			    : 0;
	struct waiting *nw;
	long created = 0;

	l->last_feed = now;
	l->found = l->more = 0;
	if (wl_deliver_fanout(l->app, &created) != 0 || room == 0 ||
	    wl_deliver_claim(l->app, l->owner, room, &sends, &n) != 0 ||
	    (nw = realloc(l->wait, (l->nwait + n + 1) * sizeof(*nw))) == NULL) {
		wl_sends_free(sends, n);
		free(sends);
		return 0;
	}
	l->wait = nw;
	for (i = 0; i < n; i++) {
		l->wait[l->nwait].send = sends[i];
		l->wait[l->nwait++].claimed = now;
	}
	free(sends);
	l->found = n > 0;
	l->more = n == room;
	return n;
}

/* How long the loop may sleep when no transfer needs it. */
static int
poll_timeout(const struct loop *l, int once)
{
	int64_t now = wl_clock_ms(), left = next_feed(l) - now;

	if (stopping)
		return (int)l->cfg->deliverer_poll_ms;
	if (feed_due(l, now) || (once && l->n + l->nwait == 0))
		return 0;
	return left < 0 ? 0 : (int)left;
}

static void
usage(void)
{
	fprintf(stderr, "usage: waitlist-deliverer [--config FILE] [--once]\n");
	exit(2);
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
	struct sigaction sa;
	struct loop l;
	char err[512];
	int ch, once = 0, running;

	while ((ch = getopt_long(argc, argv, "c:o", longopts, NULL)) != -1) {
		if (ch == 'c')
			config = optarg;
		else if (ch == 'o')
			once = 1;
		else
			usage();
	}
	wl_log_set_component("deliverer");
	if ((cfg = wl_config_load(config, err, sizeof(err))) == NULL) {
		fprintf(stderr, "waitlist-deliverer: %s\n", err);
		return 1;
	}
	memset(&l, 0, sizeof(l));
	l.cfg = cfg;
	if ((l.app = wl_app_new(cfg, WL_APP_SECRET, err, sizeof(err))) == NULL) {
		fprintf(stderr, "waitlist-deliverer: %s\n", err);
		wl_config_free(cfg);
		return 1;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	l.multi = curl_multi_init();
	curl_multi_setopt(l.multi, CURLMOPT_MAX_TOTAL_CONNECTIONS,
			  (long)cfg->deliverer_concurrency);
	curl_multi_setopt(l.multi, CURLMOPT_MAX_HOST_CONNECTIONS,
			  (long)cfg->deliverer_per_endpoint);
	wl_deliver_owner(l.owner);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	/* Nothing to reload: a SIGHUP (say, sent to a whole group on
	 * reload) must not end the deliverer. */
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	wl_log(WL_LOG_INFO, "\"msg\":\"started\",\"owner\":\"%s\"", l.owner);
	for (;;) {
		int64_t now = wl_clock_ms();
		size_t claimed = 1;

		if (stopping)
			start_waiting(&l, 1);
		else if (feed_due(&l, now) || (once && l.n + l.nwait == 0))
			claimed = feed(&l, now);
		start_waiting(&l, 0);
		curl_multi_perform(l.multi, &running);
		/* What finished freed room at its endpoint. */
		if (reap(&l) > 0)
			start_waiting(&l, 0);
		if (l.n + l.nwait == 0 && (stopping || (once && claimed == 0)))
			break;
		/* Sleep until a transfer needs us or the next look is due. */
		curl_multi_poll(l.multi, NULL, 0, poll_timeout(&l, once), NULL);
	}
	wl_log(WL_LOG_INFO, "\"msg\":\"stopped\"");
	free(l.xfers);
	free(l.wait);
	curl_multi_cleanup(l.multi);
	curl_global_cleanup();
	wl_app_free(l.app);
	wl_config_free(cfg);
	return 0;
}
