/*
 * A FastCGI worker: accept a request, turn its parameters into a
 * struct wl_http_request, let libwaitlist answer, write the answer back.
 * Nothing else happens here.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/epoll.h>

#include <fcgiapp.h>

#include "../lib/waitlist.h"
#include "fcgi.h"

static volatile sig_atomic_t stopping;

static void
on_term(int sig)
{
	(void)sig;
	stopping = 1;
}

/*
 * Map the parameters of one request (envp: NULL-terminated "NAME=value"
 * strings, as libfcgi hands them over) onto req, whose strings then point
 * into envp, and return the number of body bytes to read (0: none).  A
 * CONTENT_LENGTH that is not a number or exceeds WL_BODY_MAX sets
 * req->body_too_large and returns 0: such a body is not read at all (the
 * request is answered with payload_too_large).
 */
size_t
wl_fcgi_request(char **envp, struct wl_http_request *req)
{
	const char *cl = FCGX_GetParam("CONTENT_LENGTH", envp);
	unsigned long want = 0;
	char *end;

	memset(req, 0, sizeof(*req));
	req->method = FCGX_GetParam("REQUEST_METHOD", envp);
	/* The raw URI: the router splits it before decoding anything. */
	req->path = FCGX_GetParam("REQUEST_URI", envp);
	req->query = FCGX_GetParam("QUERY_STRING", envp);
	req->authorization = FCGX_GetParam("HTTP_AUTHORIZATION", envp);
	req->content_type = FCGX_GetParam("CONTENT_TYPE", envp);
	req->idempotency_key = FCGX_GetParam("HTTP_IDEMPOTENCY_KEY", envp);
	req->request_id = FCGX_GetParam("REQUEST_ID", envp);
	req->test_now = FCGX_GetParam("HTTP_X_TEST_NOW", envp);
	if (req->path == NULL)
		req->path = FCGX_GetParam("DOCUMENT_URI", envp);
	if (req->query == NULL)
		req->query = "";
	req->body = "";
	if (cl && *cl) {
		errno = 0;
		want = strtoul(cl, &end, 10);
		if (*end || errno || want > WL_BODY_MAX) {
			req->body_too_large = 1;
			return 0;
		}
	}
	return want;
}

/* Read up to want body bytes.  Returns the body (caller frees) or NULL
 * for none. */
static char *
read_body(FCGX_Request *r, size_t want, size_t *len)
{
	char *buf;
	int n;

	*len = 0;
	if (want == 0 || (buf = malloc(want + 1)) == NULL)
		return NULL;
	n = FCGX_GetStr(buf, (int)want, r->in);
	if (n < 0)
		n = 0;
	buf[n] = '\0';
	*len = (size_t)n;
	return buf;
}

/* libfcgi's own printf lacks modern conversions, so the head is
 * formatted here and written as one block. */
static void
write_response(FCGX_Request *r, const struct wl_http_response *resp)
{
	char head[4096];
	size_t i, n = 0;
	int w;

	w = snprintf(head, sizeof(head), "Status: %d %s\r\n", resp->status,
		     wl_http_reason(resp->status));
	n += w > 0 ? (size_t)w : 0;
	for (i = 0; i < resp->nheaders && n < sizeof(head); i++) {
		w = snprintf(head + n, sizeof(head) - n, "%s: %s\r\n",
			     resp->headers[i].name, resp->headers[i].value);
		n += w > 0 ? (size_t)w : 0;
	}
	if (n < sizeof(head)) {
		if (resp->body)
			w = snprintf(head + n, sizeof(head) - n,
				     "Cache-Control: no-store\r\n"
				     "Content-Type: application/json\r\n"
				     "Content-Length: %zu\r\n\r\n",
				     resp->body_len);
		else
			w = snprintf(head + n, sizeof(head) - n,
				     "Cache-Control: no-store\r\n\r\n");
		n += w > 0 ? (size_t)w : 0;
	}
	if (n >= sizeof(head))
		n = sizeof(head) - 1;
	FCGX_PutStr(head, (int)n, r->out);
	if (resp->body)
		FCGX_PutStr(resp->body, (int)resp->body_len, r->out);
}

/*
 * Serve one request.  Returns 1 when its body was read whole (all of
 * CONTENT_LENGTH, none of it chunked): the web server then sends the end
 * of the input with it, whether it buffers bodies (nginx) or streams
 * them (Apache).
 */
static int
serve_one(struct wl_app *app, FCGX_Request *r)
{
	struct wl_http_request req;
	struct wl_http_response resp;
	size_t want;
	char *body;
	int whole;

	want = wl_fcgi_request(r->envp, &req);
	body = read_body(r, want, &req.body_len);
	if (body)
		req.body = body;
	req.body_cut = !req.body_too_large && req.body_len != want;
	whole = !req.body_too_large && !req.body_cut &&
		FCGX_GetParam("HTTP_TRANSFER_ENCODING", r->envp) == NULL;
	wl_handle(app, &req, &resp);
	write_response(r, &resp);
	wl_http_response_clear(&resp);
	free(body);
	return whole;
}

/*
 * End the request: its answer leaves at once, then its connection is
 * closed.  libfcgi's own close shuts down the sending side and then waits
 * for the web server to hang up first (up to 2 s), so that the server
 * never finds input of its own discarded; the worker idles through that
 * wait instead of taking the next request.  When the body was read whole
 * (serve_one()), only the end-of-input record can follow, and it comes
 * with the body: it is read, nothing is left unread, and the connection
 * is closed at once (FCGX_Detach() tells FCGX_Free() to).  Otherwise
 * (a body too large or chunked, which may still be arriving) libfcgi's
 * close waits as before.  This is FCGX_Finish_r() with that read in the
 * middle.
 */
static void
finish(FCGX_Request *r, int whole)
{
	int failed;

	failed = FCGX_FClose(r->err) != 0;
	failed |= FCGX_FClose(r->out) != 0;
	if (whole)
		while (FCGX_GetChar(r->in) != EOF)
			;
	failed |= FCGX_GetError(r->in) != 0;
	if (FCGX_HasSeenEOF(r->in))
		FCGX_Detach(r);
	FCGX_Free(r, failed || !r->keepConnection);
}

/*
 * A stop (SIGTERM, SIGINT) is held back except while the worker waits for
 * a connection: libfcgi drops a connection when a signal interrupts its
 * wait for the request after accept() or one of its reads, and the web
 * server answers that request 502.  Held back, a stop ends the worker
 * once the request in hand has been answered.  The wait is epoll_pwait()
 * on the listening socket with EPOLLEXCLUSIVE, so that a connection wakes
 * one idle worker, as a blocking accept() did; the socket is non-blocking
 * (master.c), so that a worker woken for a connection that another worker
 * took goes back to waiting instead of blocking in accept() with the stop
 * held back.  Returns the epoll descriptor and sets *open to the signal
 * mask of the wait, or -1.
 */
static int
wait_setup(int listen_fd, sigset_t *open)
{
	struct epoll_event ev = {.events = EPOLLIN | EPOLLEXCLUSIVE};
	sigset_t stop;
	int ep;

	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	if ((ep = epoll_create1(EPOLL_CLOEXEC)) < 0)
		return -1;
	ev.data.fd = listen_fd;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, listen_fd, &ev) != 0 ||
	    sigprocmask(SIG_BLOCK, &stop, open) != 0) {
		close(ep);
		return -1;
	}
	sigdelset(open, SIGTERM);
	sigdelset(open, SIGINT);
	return ep;
}

/*
 * Serve requests on listen_fd until SIGTERM (finishing the request in
 * hand) or until max_requests have been served (0: no limit), counting
 * them against the node's shared rate limit table rl.  Returns the
 * process exit status.
 */
int
wl_worker_run(int listen_fd, const struct wl_config *cfg,
	      struct wl_ratelimit *rl)
{
	struct sigaction sa;
	struct epoll_event ev;
	struct wl_app *app;
	FCGX_Request r;
	unsigned long served = 0;
	const char *failed = NULL;
	sigset_t open;
	char err[512];
	int ep;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_term; /* no SA_RESTART: epoll_pwait() must return */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	if ((ep = wait_setup(listen_fd, &open)) < 0) {
		wl_log(WL_LOG_ERROR, "\"msg\":\"worker cannot wait for "
				     "connections\",\"errno\":%d",
		       errno);
		return 1;
	}
	if ((app = wl_app_new(cfg, WL_APP_SERVE | WL_APP_KEYCACHE, err,
			      sizeof(err))) == NULL) {
		wl_log_error(WL_LOG_ERROR, "worker cannot start", err);
		close(ep);
		return 1;
	}
	wl_app_set_ratelimit(app, rl);
	if (FCGX_Init() != 0 ||
	    FCGX_InitRequest(&r, listen_fd, FCGI_FAIL_ACCEPT_ON_INTR) != 0) {
		wl_app_free(app);
		close(ep);
		return 1;
	}
	while (!stopping &&
	       (cfg->max_requests == 0 || served < cfg->max_requests)) {
		if (epoll_pwait(ep, &ev, 1, -1, &open) < 0) {
			if (errno == EINTR)
				continue;
			failed = "wait";
			break;
		}
		if (FCGX_Accept_r(&r) < 0) {
			/* (Taken by another worker.) */
			if (errno == EAGAIN || errno == EWOULDBLOCK ||
			    errno == EINTR)
				continue;
			failed = "accept";
			break;
		}
		finish(&r, serve_one(app, &r));
		served++;
	}
	/* Exit 0 only when stopped or done with its requests: the master
	 * replaces such a worker at once, and holds a failed one's place. */
	if (failed)
		wl_log(WL_LOG_ERROR,
		       "\"msg\":\"worker cannot %s\",\"errno\":%d", failed,
		       errno);
	FCGX_Free(&r, 0);
	wl_app_free(app);
	close(ep);
	return failed != NULL;
}
