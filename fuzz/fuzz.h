/* Shared by the libFuzzer targets (see fuzz/targets.mk). */
#ifndef WL_FUZZ_H
#define WL_FUZZ_H

#include <stddef.h>
#include <stdint.h>

#include "waitlist.h"

/* The one API key the fake database knows (fakedb.c). */
#define FUZZ_KEY "wl_fuzzfuzzfuzzfuzzfuzzfuzzfuzzfuzzfuzzfuzzfuz"

/* The application every target shares: fixed configuration and secret,
 * the fake database, a rate limit table.  Built on first use. */
struct wl_app *fuzz_app(void);

/* Abort unless resp is a well-formed answer: a 2xx-4xx or 503 status, no
 * control characters in any header, a JSON body, and the error envelope
 * {error, code, requestId} on errors. */
void fuzz_check(const struct wl_http_response *resp);

/* A NUL-terminated copy of data (caller frees). */
char *fuzz_str(const uint8_t *data, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#endif
