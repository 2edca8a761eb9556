/* The FastCGI master and worker of waitlist-fcgi. */
#ifndef WL_FCGI_H
#define WL_FCGI_H

struct wl_config;

struct wl_ratelimit;

int wl_worker_run(int listen_fd, const struct wl_config *,
		  struct wl_ratelimit *);

#endif
