/*
 * Result rows: every cell as text, NULL for SQL NULL.  Apart from sql.c so
 * that a build without MariaDB (the fuzz targets' fake database) uses the
 * same accessors.
 */
#include "config.h"

#include <stdlib.h>

#include "extern.h"

/* Text of a cell; NULL for SQL NULL or out of range. */
const char *
wl_rows_str(const struct wl_rows *rows, size_t r, size_t c)
{
	if (rows == NULL || r >= rows->nrows || c >= rows->ncols)
		return NULL;
	return rows->cell[r * rows->ncols + c];
}

/* Integer value of a cell; 0 for NULL. */
long long
wl_rows_int(const struct wl_rows *rows, size_t r, size_t c)
{
	const char *s = wl_rows_str(rows, r, c);

	return s ? strtoll(s, NULL, 10) : 0;
}

/*
 * Give a result one more holder (a worker's cache keeps results it hands
 * out): each holder calls wl_rows_free() once, and the last one frees it.
 * Not for results shared between threads.
 */
struct wl_rows *
wl_rows_share(struct wl_rows *rows)
{
	rows->shared++;
	return rows;
}

/* Free a result, or drop one holder of a shared one; NULL is a no-op. */
void
wl_rows_free(struct wl_rows *rows)
{
	size_t i;

	if (rows == NULL)
		return;
	if (rows->shared > 0) {
		rows->shared--;
		return;
	}
	for (i = 0; rows->cell && i < rows->nrows * rows->ncols; i++)
		free(rows->cell[i]);
	free(rows->cell);
	free(rows->len);
	free(rows);
}
