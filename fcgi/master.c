/*
 * waitlist-fcgi: the master.  It opens the FastCGI socket, preforks the
 * workers and supervises them: a dead worker is replaced, SIGHUP re-reads
 * the configuration and replaces every worker, SIGTERM drains (workers
 * finish the request in hand) and exits.  Signal handlers only set flags;
 * the loop below acts on them.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <fcgiapp.h>

#include "../lib/waitlist.h"
#include "fcgi.h"

#define MAX_WORKERS 256
#define DRAIN_SECONDS 30

static volatile sig_atomic_t got_term, got_hup;

static void
on_signal(int sig)
{
	if (sig == SIGHUP)
		got_hup = 1;
	else
		got_term = 1;
}

struct pool {
	struct wl_config *cfg;
	const char *config_path;
	int fd;
	struct wl_ratelimit *rl; /* shared with every worker */
	pid_t pid[MAX_WORKERS];
	int64_t born[MAX_WORKERS];	/* when each slot's worker started (monotonic ms) */
	int64_t hold[MAX_WORKERS];	/* respawn not before (crash loop) */
	unsigned n;		/* slots in use: cfg->workers */
};

/*
 * Tell systemd how the service is doing (Type=notify): one datagram to
 * $NOTIFY_SOCKET, as sd_notify(3) documents; nothing when it is unset.
 * A name starting with "@" is in the abstract namespace.
 */
static void
notify(const char *msg)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa;
	size_t n;
	int fd;

	if (path == NULL || (path[0] != '/' && path[0] != '@') ||
	    (n = strlen(path)) >= sizeof(sa.sun_path))
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, path, n);
	if (sa.sun_path[0] == '@')
		sa.sun_path[0] = '\0';
	if ((fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0)
		return;
	(void)sendto(fd, msg, strlen(msg), MSG_NOSIGNAL, (struct sockaddr *)&sa,
		     (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n));
	close(fd);
}

static void
sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* Fork a worker.  The master's signals stay blocked across the fork
 * until the child has its own handlers (wl_worker_run() installs them
 * and waits with them unblocked): one sent to the new worker in between
 * would otherwise reach the master's handler, in the child, and be
 * lost. */
static pid_t
spawn(struct pool *p)
{
	sigset_t block, old;
	pid_t pid, master = getpid();

	sigemptyset(&block);
	sigaddset(&block, SIGHUP);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigprocmask(SIG_BLOCK, &block, &old);
	if ((pid = fork()) == 0) {
		/* A worker outlives no master (killed, it drains nothing):
		 * it is told, as by a stop, and served from no other. */
		if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 ||
		    getppid() != master)
			_exit(1);
		signal(SIGHUP, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		wl_log_set_component("fcgi-worker");
		_exit(wl_worker_run(p->fd, p->cfg, p->rl));
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (pid < 0)
		wl_log(WL_LOG_ERROR, "\"msg\":\"fork failed\",\"errno\":%d",
		       errno);
	return pid;
}

/* Start a worker in every empty slot, except slots whose last worker
 * died within a second of starting: those wait a second, so a worker
 * that cannot start does not turn into a fork storm. */
static void
fill(struct pool *p)
{
	int64_t now = wl_mono_ms();
	unsigned i;

	for (i = 0; i < p->n; i++)
		if (p->pid[i] <= 0 && now >= p->hold[i]) {
			p->pid[i] = spawn(p);
			p->born[i] = now;
		}
}

/* Signal every worker and wait up to DRAIN_SECONDS; then SIGKILL. */
static void
drain(struct pool *p)
{
	unsigned i, left;
	int waited;

	for (i = 0; i < p->n; i++)
		if (p->pid[i] > 0)
			kill(p->pid[i], SIGTERM);
	for (waited = 0; waited < DRAIN_SECONDS * 10; waited++) {
		left = 0;
		for (i = 0; i < p->n; i++) {
			if (p->pid[i] <= 0)
				continue;
			if (waitpid(p->pid[i], NULL, WNOHANG) == p->pid[i])
				p->pid[i] = 0;
			else
				left++;
		}
		if (left == 0)
			return;
		sleep_ms(100);
	}
	for (i = 0; i < p->n; i++)
		if (p->pid[i] > 0) {
			kill(p->pid[i], SIGKILL);
			waitpid(p->pid[i], NULL, 0);
			p->pid[i] = 0;
		}
}

static void
reap(struct pool *p)
{
	int64_t now = wl_mono_ms();
	unsigned i;
	pid_t pid;
	int st;

	while ((pid = waitpid(-1, &st, WNOHANG)) > 0)
		for (i = 0; i < p->n; i++)
			if (p->pid[i] == pid) {
				p->pid[i] = 0;
				/* A worker that failed young (not one that
				 * served its max_requests) waits a second. */
				if (now - p->born[i] < 1000 &&
				    !(WIFEXITED(st) && WEXITSTATUS(st) == 0))
					p->hold[i] = now + 1000;
				if (WIFSIGNALED(st))
					wl_log(WL_LOG_WARN,
					       "\"msg\":\"worker died\","
					       "\"worker\":%d,\"signal\":%d",
					       (int)pid, WTERMSIG(st));
				else if (WEXITSTATUS(st) != 0)
					wl_log(WL_LOG_WARN,
					       "\"msg\":\"worker failed\","
					       "\"worker\":%d,\"status\":%d",
					       (int)pid, WEXITSTATUS(st));
			}
}

/* Log why the master does not start; returns its exit status. */
static int
cannot_start(const char *why)
{
	wl_log_error(WL_LOG_ERROR, "cannot start", why);
	return 1;
}

/* Can workers start with c (what they need is there)?  Checked once by
 * the master rather than found out by every worker.  At start (schema),
 * the database's schema must be as new as the migrations installed, too
 * (see wl_admin_schema_current(): a database down is not refused).  Else
 * the reason, in err. */
static int
workers_can_start(const struct wl_config *c, int schema, char *err,
		  size_t errsz)
{
	struct wl_app *probe;
	int rc = 0;

	if ((probe = wl_app_new(c, WL_APP_SERVE, err, errsz)) == NULL)
		return -1;
	if (schema && wl_admin_schema_current(probe, err, errsz) == 0)
		rc = -1;
	wl_app_free(probe);
	return rc;
}

/* Can workers start with c, and does it change nothing that only a
 * restart applies?  Else the reason, in err. */
static int
reloadable(const struct pool *p, const struct wl_config *c, char *err,
	   size_t errsz)
{
	if (strcmp(c->fcgi_socket, p->cfg->fcgi_socket) != 0 ||
	    c->ratelimit_slots != p->cfg->ratelimit_slots) {
		snprintf(err, errsz, "[server] fcgi_socket and "
				     "ratelimit_slots take a restart");
		return -1;
	}
	return workers_can_start(c, 0, err, errsz);
}

static int
reload(struct pool *p)
{
	struct wl_config *c;
	char err[512];

	if ((c = wl_config_load(p->config_path, err, sizeof(err))) == NULL ||
	    reloadable(p, c, err, sizeof(err)) < 0) {
		/* (It names the key; of the values it may quote, none is a
		 * secret: the database password is never echoed.) */
		wl_log_error(WL_LOG_ERROR,
			     "reload failed; keeping the old configuration",
			     err);
		wl_config_free(c);
		return -1;
	}
	notify("RELOADING=1");
	drain(p);
	wl_config_free(p->cfg);
	p->cfg = c;
	p->n = c->workers;
	wl_log_set_level(c->log_level);
	fill(p);
	notify("READY=1");
	wl_log(WL_LOG_INFO, "\"msg\":\"reloaded\",\"workers\":%u", p->n);
	return 0;
}

/* Does a server answer on the unix socket at path? */
static int
answers(const char *path)
{
	struct sockaddr_un sa;
	size_t n = strlen(path);
	int fd, ok;

	if (n >= sizeof(sa.sun_path) ||
	    (fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return 0;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, path, n);
	ok = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	close(fd);
	return ok;
}

static int
open_socket(const char *path)
{
	struct stat st;
	mode_t mask;
	int fd, fl;

	/* A socket left by a master gone is replaced; one that a running
	 * master (or its workers) still answers on is not taken over. */
	if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode)) {
		if (answers(path)) {
			errno = EADDRINUSE;
			return -1;
		}
		unlink(path);
	}
	/* Created 0660 at once: no moment in which others may connect. */
	mask = umask(0117);
	fd = FCGX_OpenSocket(path, 1024);
	umask(mask);
	if (fd < 0)
		return -1;
	/* The web server's group may connect; nobody else.  Non-blocking:
	 * a worker woken for a connection that another worker took must not
	 * block in accept() (see wait_setup() in worker.c). */
	if (chmod(path, 0660) != 0 || (fl = fcntl(fd, F_GETFL)) < 0 ||
	    fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static void
usage(void)
{
	fprintf(stderr, "usage: waitlist-fcgi [--config FILE]\n");
	exit(2);
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
	    {"config", required_argument, NULL, 'c'}, {NULL, 0, NULL, 0}};
	struct pool p;
	struct sigaction sa;
	char err[512];
	int ch;

	memset(&p, 0, sizeof(p));
	while ((ch = getopt_long(argc, argv, "c:", longopts, NULL)) != -1) {
		if (ch == 'c')
			p.config_path = optarg;
		else
			usage();
	}
	wl_log_set_component("fcgi-master");
	/* A refusal to start is a log line like any (JSON, on stderr). */
	if ((p.cfg = wl_config_load(p.config_path, err, sizeof(err))) == NULL)
		return cannot_start(err);
	wl_log_set_level(p.cfg->log_level);
	if (workers_can_start(p.cfg, 1, err, sizeof(err)) < 0)
		return cannot_start(err);
	if ((p.fd = open_socket(p.cfg->fcgi_socket)) < 0) {
		snprintf(err, sizeof(err), "cannot listen on %s: %s",
			 p.cfg->fcgi_socket, strerror(errno));
		return cannot_start(err);
	}
	if ((p.rl = wl_ratelimit_new(p.cfg->ratelimit_slots)) == NULL)
		return cannot_start("cannot map the rate limit table");
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	p.n = p.cfg->workers;
	fill(&p);
	notify("READY=1");
	wl_log(WL_LOG_INFO,
	       "\"msg\":\"started\",\"workers\":%u,\"socket\":\"%s\"", p.n,
	       p.cfg->fcgi_socket);
	while (!got_term) {
		if (got_hup) {
			got_hup = 0;
			reload(&p);
		}
		reap(&p);
		fill(&p);
		sleep_ms(50);
	}
	notify("STOPPING=1");
	wl_log(WL_LOG_INFO, "\"msg\":\"draining\"");
	drain(&p);
	close(p.fd);
	unlink(p.cfg->fcgi_socket);
	wl_ratelimit_free(p.rl);
	wl_config_free(p.cfg);
	wl_log(WL_LOG_INFO, "\"msg\":\"stopped\"");
	return 0;
}
