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

/* Free a result; NULL is a no-op. */
void
wl_rows_free(struct wl_rows *rows)
{
	size_t i;

	if (rows == NULL)
		return;
	for (i = 0; rows->cell && i < rows->nrows * rows->ncols; i++)
		free(rows->cell[i]);
	free(rows->cell);
	free(rows->len);
	free(rows);
}
