/*
 * Growable buffers with a hard cap, so that nothing a client sends can make
 * one grow without bound.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "extern.h"

/*
 * Append n bytes, keeping the buffer NUL-terminated.  Returns WL_OK,
 * WL_ERR_LIMIT when the cap would be passed, or WL_ERR_NOMEM.
 */
int
wl_buf_append(struct wl_buf *b, const void *data, size_t n)
{
	size_t need = b->len + n + 1;
	char *p;

	if (b->max && b->len + n > b->max)
		return WL_ERR_LIMIT;
	if (need > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < need)
			cap *= 2;
		if ((p = realloc(b->p, cap)) == NULL)
			return WL_ERR_NOMEM;
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, data, n);
	b->len += n;
	b->p[b->len] = '\0';
	return WL_OK;
}

/* printf-style append; same returns as wl_buf_append(). */
int
wl_buf_printf(struct wl_buf *b, const char *fmt, ...)
{
	char small[512], *big = NULL;
	va_list ap;
	int n, rc;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return WL_ERR_INVALID;
	if ((size_t)n < sizeof(small))
		return wl_buf_append(b, small, (size_t)n);
	if ((big = malloc((size_t)n + 1)) == NULL)
		return WL_ERR_NOMEM;
	va_start(ap, fmt);
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	va_end(ap);
	rc = wl_buf_append(b, big, (size_t)n);
	free(big);
	return rc;
}

/* Release the storage; the buffer may be reused afterwards. */
void
wl_buf_free(struct wl_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

/*
 * Append the whole file at path (within the buffer's cap).  Returns WL_OK;
 * or, with "path: why" in err and the buffer freed, WL_ERR_IO (unreadable,
 * a directory too), WL_ERR_LIMIT (past the cap) or WL_ERR_NOMEM.
 */
int
wl_buf_read_file(struct wl_buf *b, const char *path, char *err, size_t errsz)
{
	char chunk[8192];
	size_t n;
	FILE *f;
	int rc = WL_OK, saved = 0;

	if ((f = fopen(path, "rb")) == NULL) {
		snprintf(err, errsz, "%s: %s", path, strerror(errno));
		wl_buf_free(b);
		return WL_ERR_IO;
	}
	while (rc == WL_OK && (n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		rc = wl_buf_append(b, chunk, n);
	if (rc == WL_OK && ferror(f)) {
		saved = errno;
		rc = WL_ERR_IO;
	}
	fclose(f);
	if (rc == WL_OK && b->p == NULL)
		rc = wl_buf_append(b, "", 0);
	if (rc != WL_OK) {
		snprintf(err, errsz, "%s: %s", path,
			 rc == WL_ERR_LIMIT   ? "too large"
			 : rc == WL_ERR_NOMEM ? "out of memory"
					      : strerror(saved));
		wl_buf_free(b);
	}
	return rc;
}
