/*
 * receiver: the webhook endpoint of bench/run, made not to be the
 * bottleneck: one thread, epoll, HTTP/1.1 keep-alive, every request
 * answered 200 with an empty body as soon as it has been read.
 *
 * For each request it writes one line to --out:
 *     <webhook-id> <receipt ms> <occurredAt ms> <receipt - occurredAt ms>
 *     <repeat>
 * occurredAt is read from the JSON body (the event's commit-ish time, UTC,
 * millisecond precision); 0 and -1 when the body has none.  repeat is 0
 * the first time a webhook-id arrives and 1 after that.  Lines are
 * flushed whenever the receiver has nothing else to do, and --count then
 * holds "<requests> <distinct webhook-ids>", so a poller sees deliveries
 * within a few milliseconds.
 *
 * usage: receiver --port PORT --out FILE --count FILE
 * SIGTERM or SIGINT: flush and exit.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BUF_MAX (256 * 1024)

static volatile sig_atomic_t stopping;

struct conn {
	int fd;
	size_t len;
	char buf[BUF_MAX];
};

static void
on_term(int sig)
{
	(void)sig;
	stopping = 1;
}

static long long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* "YYYY-MM-DDTHH:MM:SS.mmmZ" to ms since the epoch; -1 if malformed. */
static long long
iso_ms(const char *s)
{
	struct tm tm;
	int ms = 0, n = 0;

	memset(&tm, 0, sizeof(tm));
	if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon,
		   &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &n) != 6)
		return -1;
	s += n;
	if (*s == '.') {
		int digits = 0;
		for (s++; *s >= '0' && *s <= '9'; s++, digits++)
			if (digits < 3)
				ms = ms * 10 + (*s - '0');
		while (digits++ < 3)
			ms *= 10;
	}
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	return (long long)timegm(&tm) * 1000 + ms;
}

/* The value of header name in the head [h, end), into out. */
static int
header(const char *h, const char *end, const char *name, char *out,
       size_t outsz)
{
	size_t n = strlen(name), i;
	const char *line = h, *eol;

	while (line < end) {
		eol = memmem(line, (size_t)(end - line), "\r\n", 2);
		if (eol == NULL)
			eol = end;
		if ((size_t)(eol - line) > n + 1 &&
		    strncasecmp(line, name, n) == 0 && line[n] == ':') {
			const char *v = line + n + 1;
			while (v < eol && (*v == ' ' || *v == '\t'))
				v++;
			for (i = 0; v + i < eol && i + 1 < outsz; i++)
				out[i] = v[i];
			out[i] = '\0';
			return 1;
		}
		line = eol + 2;
	}
	return 0;
}

/* Distinct webhook-ids: an open-addressing set of 64-bit FNV-1a hashes. */
static unsigned long long *set;
static size_t setcap, setn;

static unsigned long long
fnv(const char *s)
{
	unsigned long long h = 1469598103934665603ULL;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ULL;
	return h ? h : 1;
}

/* Add id; returns 1 when it was new. */
static int
set_add(const char *id)
{
	unsigned long long h = fnv(id);
	size_t i;

	if (setn * 2 >= setcap) {
		unsigned long long *old = set;
		size_t oldcap = setcap, j;
		setcap = setcap ? setcap * 2 : 1 << 16;
		set = calloc(setcap, sizeof(*set));
		if (set == NULL)
			abort();
		setn = 0;
		for (j = 0; j < oldcap; j++)
			if (old[j]) {
				for (i = old[j] & (setcap - 1); set[i];
				     i = (i + 1) & (setcap - 1))
					;
				set[i] = old[j];
				setn++;
			}
		free(old);
	}
	for (i = h & (setcap - 1); set[i]; i = (i + 1) & (setcap - 1))
		if (set[i] == h)
			return 0;
	set[i] = h;
	setn++;
	return 1;
}

static unsigned long requests;

static const char reply[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";

/*
 * Answer every complete request in c->buf.  Returns 0, or -1 to close
 * the connection.
 */
static int
drain(struct conn *c, FILE *out)
{
	for (;;) {
		char *end = memmem(c->buf, c->len, "\r\n\r\n", 4);
		char id[128] = "-", cl[32] = "0", *body, *p;
		size_t head, blen, total;
		long long recv, occ = 0;

		if (end == NULL)
			return c->len >= BUF_MAX ? -1 : 0;
		head = (size_t)(end - c->buf) + 4;
		header(c->buf, end, "content-length", cl, sizeof(cl));
		header(c->buf, end, "webhook-id", id, sizeof(id));
		blen = strtoul(cl, NULL, 10);
		total = head + blen;
		if (total > BUF_MAX)
			return -1;
		if (c->len < total)
			return 0;
		recv = now_ms();
		body = c->buf + head;
		{
			/* NUL-terminate the body for the search. */
			char saved = c->buf[total < BUF_MAX ? total : BUF_MAX - 1];
			c->buf[total < BUF_MAX ? total : BUF_MAX - 1] = '\0';
			p = strstr(body, "\"occurredAt\":\"");
			if (p)
				occ = iso_ms(p + 14);
			c->buf[total < BUF_MAX ? total : BUF_MAX - 1] = saved;
		}
		{
			int repeat = !set_add(id);
			requests++;
			if (occ > 0)
				fprintf(out, "%s %lld %lld %lld %d\n", id, recv,
					occ, recv - occ, repeat);
			else
				fprintf(out, "%s %lld 0 -1 %d\n", id, recv,
					repeat);
		}
		if (write(c->fd, reply, sizeof(reply) - 1) !=
		    (ssize_t)(sizeof(reply) - 1))
			return -1;
		memmove(c->buf, c->buf + total, c->len - total);
		c->len -= total;
	}
}

int
main(int argc, char *argv[])
{
	static const struct option longopts[] = {
	    {"port", required_argument, NULL, 'p'},
	    {"out", required_argument, NULL, 'o'},
	    {"count", required_argument, NULL, 'n'},
	    {NULL, 0, NULL, 0}};
	struct epoll_event ev, evs[256];
	struct sockaddr_in sin;
	struct sigaction sa;
	const char *path = NULL, *countpath = NULL;
	unsigned long shown = (unsigned long)-1;
	int ch, lfd, ep, one = 1, port = 0, i, n, cfd;
	FILE *out;

	while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (ch == 'p')
			port = atoi(optarg);
		else if (ch == 'o')
			path = optarg;
		else if (ch == 'n')
			countpath = optarg;
		else
			return 2;
	}
	if (port <= 0 || path == NULL || countpath == NULL) {
		fprintf(stderr, "usage: receiver --port PORT --out FILE "
				"--count FILE\n");
		return 2;
	}
	if ((out = fopen(path, "w")) == NULL ||
	    (cfd = open(countpath, O_WRONLY | O_CREAT | O_TRUNC, 0644)) < 0) {
		perror(path);
		return 1;
	}
	setvbuf(out, NULL, _IOFBF, 1 << 20);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((unsigned short)port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) < 0 ||
	    listen(lfd, 1024) < 0) {
		perror("receiver: listen");
		return 1;
	}
	ep = epoll_create1(0);
	ev.events = EPOLLIN;
	ev.data.ptr = NULL;
	epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);

	while (!stopping) {
		n = epoll_wait(ep, evs, 256, 50);
		if (n < 0 && errno != EINTR)
			break;
		for (i = 0; i < n; i++) {
			struct conn *c = evs[i].data.ptr;
			if (c == NULL) {
				int fd;
				while ((fd = accept4(lfd, NULL, NULL,
						     SOCK_NONBLOCK)) >= 0) {
					if ((c = malloc(sizeof(*c))) == NULL) {
						close(fd);
						continue;
					}
					c->fd = fd;
					c->len = 0;
					setsockopt(fd, IPPROTO_TCP, TCP_NODELAY,
						   &one, sizeof(one));
					ev.events = EPOLLIN;
					ev.data.ptr = c;
					epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
				}
				continue;
			}
			for (;;) {
				ssize_t r = read(c->fd, c->buf + c->len,
						 BUF_MAX - c->len);
				if (r > 0) {
					c->len += (size_t)r;
					if (drain(c, out) < 0)
						goto close;
					continue;
				}
				if (r < 0 && (errno == EAGAIN || errno == EINTR))
					break;
			close:
				epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
				close(c->fd);
				free(c);
				break;
			}
		}
		/* Nothing more right now: make the lines visible. */
		fflush(out);
		if (requests != shown) {
			char line[64];
			int len = snprintf(line, sizeof(line), "%20lu %20lu\n",
					   requests, (unsigned long)setn);
			if (pwrite(cfd, line, (size_t)len, 0) == len)
				shown = requests;
		}
	}
	fflush(out);
	fclose(out);
	return 0;
}
