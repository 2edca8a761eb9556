/*
 * Retry-After values as a webhook receiver may send them (the deliverer
 * passes the header value with its leading space and trailing CRLF), and
 * the backoff they lead to.  Input: 4 bytes of clock offset, 1 attempt
 * byte, then the value.
 */
#include "config.h"

#include <stdlib.h>

#include "extern.h"
#include "fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	const struct wl_config *cfg = fuzz_app()->cfg;
	int64_t now = 1767225600000LL, ms; /* 2026-01-01 */
	long v;
	char *text;

	if (n < 5 || n > 512)
		return 0;
	now += (int64_t)((uint32_t)data[0] << 24 | (uint32_t)data[1] << 16 |
	                 (uint32_t)data[2] << 8 | data[3]) *
	       1000;
	text = fuzz_str(data + 5, n - 5);
	v = wl_retry_after_parse(text, now);
	if (v < -1)
		abort();
	ms = wl_backoff_ms(cfg, data[4], v, (unsigned)now);
	if (ms < 1000 || ms > 3600 * 1000LL)
		abort();
	free(text);
	return 0;
}
