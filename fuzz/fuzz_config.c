/* The configuration parser: any text is refused with a message, or gives
 * a configuration that passes its own checks. */
#include "config.h"

#include <stdlib.h>

#include "extern.h"
#include "fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	struct wl_config *c;
	char err[512] = "", small[16] = "", *text;

	if (n > 65536)
		return 0;
	text = fuzz_str(data, n);
	c = wl_config_parse(text, err, sizeof(err));
	if (c == NULL && err[0] == '\0')
		abort(); /* refused without saying why */
	if (c && (c->fcgi_socket[0] != '/' ||
	          c->retry_base_seconds > c->retry_cap_seconds ||
	          c->workers < 1 || c->workers > 256))
		abort();
	wl_config_free(c);
	/* A short error buffer truncates the message, nothing more. */
	wl_config_free(wl_config_parse(text, small, sizeof(small)));
	free(text);
	return 0;
}
