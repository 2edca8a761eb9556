/*
 * Cursor decoding: anything is refused or decodes to a position that
 * fits; and a cursor made for any position decodes back to it, but not
 * for another route, tenant or filter.  Input: a route byte, a size
 * byte, then the cursor (also used as a position).
 */
#include "config.h"

#include <stdlib.h>

#include "extern.h"
#include "fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	struct wl_ctx ctx;
	char pos[1100], out[WL_CURSOR_BUF], *text;
	size_t possz;

	if (n < 2 || n > 4096)
		return 0;
	memset(&ctx, 0, sizeof(ctx));
	ctx.app = fuzz_app();
	ctx.route = data[0] % 32;
	snprintf(ctx.key.tenant.id, sizeof(ctx.key.tenant.id), "ten_fuzz");
	possz = 1 + data[1] % 255;
	text = fuzz_str(data + 2, n - 2);

	if (wl_cursor_decode(&ctx, "status=pending", text, pos, possz) == 0 &&
	    strlen(pos) >= possz)
		abort();

	if (wl_cursor_encode(&ctx, "status=pending", text, out) == WL_OK) {
		if (strlen(out) >= WL_CURSOR_BUF)
			abort();
		if (wl_cursor_decode(&ctx, "status=pending", out, pos,
		                     sizeof(pos)) != 0 ||
		    strcmp(pos, text) != 0)
			abort();
		if (wl_cursor_decode(&ctx, "status=failed", out, pos,
		                     sizeof(pos)) == 0)
			abort();
		ctx.route++;
		if (wl_cursor_decode(&ctx, "status=pending", out, pos,
		                     sizeof(pos)) == 0)
			abort();
		ctx.route--;
		snprintf(ctx.key.tenant.id, sizeof(ctx.key.tenant.id),
		         "ten_other");
		if (wl_cursor_decode(&ctx, "status=pending", out, pos,
		                     sizeof(pos)) == 0)
			abort();
	}
	free(text);
	return 0;
}
