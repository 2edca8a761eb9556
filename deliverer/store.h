/*
 * The deliverer's database side, on threads of its own: it records
 * finished attempts and gives back unsent claims (each batch in one
 * transaction), and claims new events and due retries for the room the
 * sender has, so that no HTTP transfer waits for a commit.
 */
#ifndef WL_DELIVERER_STORE_H
#define WL_DELIVERER_STORE_H

#include <curl/curl.h>

#include "../lib/waitlist.h"

struct store;

/* A finished attempt handed to the store. */
struct done {
	struct wl_send send;
	struct wl_send_result res;
};

struct store *store_start(struct wl_app *, struct wl_app *rec_app,
			  const struct wl_config *, const char *owner,
			  CURLM *wake, int once);
void store_record(struct store *, struct done *, size_t n);
void store_release(struct store *, struct wl_send *);
size_t store_take(struct store *, struct wl_send **out);
/* The subscriptions sending to a slow endpoint, not to be claimed for:
 * ids separated by commas, at most HELD_MAX bytes. */
#define HELD_MAX 4096
void store_room(struct store *, unsigned room, size_t window,
		const char *held);
int store_quiet(struct store *);
int store_stop(struct store *);

#endif
