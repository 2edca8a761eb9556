/* The FastCGI master and worker of waitlist-fcgi. */
#ifndef WL_FCGI_H
#define WL_FCGI_H

#include <stddef.h>

struct wl_config;
struct wl_http_request;
struct wl_ratelimit;

int wl_worker_run(int listen_fd, const struct wl_config *,
		  struct wl_ratelimit *);
/* FastCGI parameters -> request; returns the body length to read. */
size_t wl_fcgi_request(char **envp, struct wl_http_request *);

#endif
