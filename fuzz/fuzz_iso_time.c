/*
 * ISO 8601 input timestamps and HH:MM times: anything is refused or
 * gives an instant that prints in the response format and parses back
 * to itself.
 */
#include "config.h"

#include <stdlib.h>

#include "extern.h"
#include "fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	char out[WL_TS_MAX], *text;
	int64_t ms, back;
	int minutes;

	if (n > 256)
		return 0;
	text = fuzz_str(data, n);
	if (wl_iso_to_ms(text, &ms) == 0) {
		if (ms < 0)
			abort();
		wl_ms_to_iso(ms, out);
		if (strlen(out) != 24 || wl_iso_to_ms(out, &back) != 0 ||
		    back != ms)
			abort();
	}
	if (wl_hhmm_parse(text, &minutes) == 0 &&
	    (minutes < 0 || minutes > 1440))
		abort();
	free(text);
	return 0;
}
