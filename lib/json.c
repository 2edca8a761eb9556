/*
 * Typed access to cJSON trees, so that handlers never walk raw nodes, and
 * the UTF-8 check every client string passes.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "extern.h"

/* Getters return 1 found, 0 absent or null, -1 wrong type. */
int
wl_json_get_string(const cJSON *obj, const char *name, const char **out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);

	*out = NULL;
	if (v == NULL || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsString(v))
		return -1;
	*out = v->valuestring;
	return 1;
}

int
wl_json_get_bool(const cJSON *obj, const char *name, int *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);

	*out = 0;
	if (v == NULL || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsBool(v))
		return -1;
	*out = cJSON_IsTrue(v);
	return 1;
}

/*
 * A number of a request body whose text is not a whole number, though
 * the double it was read into may be one (1.00000000000000000001): set
 * by wl_json_parse_object() beside cJSON's own type bits.
 */
#define NOT_WHOLE (1 << 12)

/* An integer: a JSON number with no fractional part, of magnitude below
 * 2^53 (larger ones may be rounded), whose text is whole too when it came
 * through wl_json_parse_object(). */
int
wl_json_get_int(const cJSON *obj, const char *name, long long *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
	double d;

	*out = 0;
	if (v == NULL || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsNumber(v))
		return -1;
	d = v->valuedouble;
	if ((v->type & NOT_WHOLE) || !isfinite(d) || d != floor(d) ||
	    fabs(d) >= 9007199254740992.0)
		return -1;
	*out = (long long)d;
	return 1;
}

int
wl_json_get_object(const cJSON *obj, const char *name, const cJSON **out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);

	*out = NULL;
	if (v == NULL || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsObject(v))
		return -1;
	*out = v;
	return 1;
}

int
wl_json_get_array(const cJSON *obj, const char *name, const cJSON **out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);

	*out = NULL;
	if (v == NULL || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsArray(v))
		return -1;
	*out = v;
	return 1;
}

/*
 * Adders attach the new item to its parent at once; on allocation failure
 * they return NULL and the caller's eventual check of the printed root
 * catches it.  A NULL string becomes JSON null.
 */
/* Delete o, and return NULL: what an object missing a member that could
 * not be added (out of memory) is worth. */
cJSON *
wl_json_drop(cJSON *o)
{
	cJSON_Delete(o);
	return NULL;
}

cJSON *
wl_json_add_str(cJSON *obj, const char *name, const char *s)
{
	return s ? cJSON_AddStringToObject(obj, name, s)
		 : cJSON_AddNullToObject(obj, name);
}

/*
 * An integer, printed in decimal as it is: cJSON prints every number with
 * "%1.15g" and reads it back to check the digits.
 */
cJSON *
wl_json_int(long long v)
{
	char buf[24], *p = buf + sizeof(buf);
	unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v
				     : (unsigned long long)v;

	*--p = '\0';
	do
		*--p = (char)('0' + u % 10);
	while ((u /= 10) != 0);
	if (v < 0)
		*--p = '-';
	return cJSON_CreateRaw(p);
}

cJSON *
wl_json_add_int(cJSON *obj, const char *name, long long v)
{
	cJSON *item = wl_json_int(v);

	if (item == NULL || !cJSON_AddItemToObject(obj, name, item)) {
		cJSON_Delete(item);
		return NULL;
	}
	return item;
}

/*
 * Put the members of object from into object to: each replaces the one
 * of its name in place (or is added), and an object into an object is
 * put member by member.  Returns 0, or -1 when out of memory.
 */
int
wl_json_fill(cJSON *to, const cJSON *from)
{
	const cJSON *f;
	cJSON *t, *dup;

	cJSON_ArrayForEach(f, from) {
		t = cJSON_GetObjectItemCaseSensitive(to, f->string);
		if (cJSON_IsObject(t) && cJSON_IsObject(f)) {
			if (wl_json_fill(t, f) < 0)
				return -1;
			continue;
		}
		if ((dup = cJSON_Duplicate(f, 1)) == NULL)
			return -1;
		if (!(t ? cJSON_ReplaceItemInObjectCaseSensitive(to, f->string,
								  dup)
			: cJSON_AddItemToObject(to, f->string, dup))) {
			cJSON_Delete(dup);
			return -1;
		}
	}
	return 0;
}

/* An integer below 10^15 in magnitude, as digits into buf (32 bytes):
 * exactly what "%.15g" prints for it (and reads back), without printf. */
static int
exact_integer(double v, char *buf)
{
	char digits[24];
	unsigned long long u;
	size_t n = 0, i = 0;

	if (!(fabs(v) < 1e15) || v != floor(v) ||
	    (v == 0 && signbit(v)))
		return 0;
	u = (unsigned long long)fabs(v);
	do
		digits[n++] = (char)('0' + u % 10);
	while ((u /= 10) > 0);
	if (v < 0)
		buf[i++] = '-';
	while (n > 0)
		buf[i++] = digits[--n];
	buf[i] = '\0';
	return 1;
}

/* The shortest of "%.15g", "%.16g" and "%.17g" of v that reads back as v,
 * into buf (32 bytes). */
static void
shortest(double v, char *buf)
{
	int prec;

	if (exact_integer(v, buf))
		return;
	for (prec = 15; prec < 17; prec++) {
		snprintf(buf, 32, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			return;
	}
	snprintf(buf, 32, "%.17g", v);
}

/*
 * Replace every number below item with its shortest decimal form that
 * reads back as the same double (cJSON prints "%1.15g" and accepts it
 * when it is merely close: 9007199254740991 would become
 * 9007199254740990).  Returns 0, or -1 when out of memory.
 */
int
wl_json_exact_numbers(cJSON *item)
{
	cJSON *c, *next, *raw;
	char buf[32];

	for (c = item ? item->child : NULL; c; c = next) {
		next = c->next;
		if (!cJSON_IsNumber(c)) {
			if (wl_json_exact_numbers(c) < 0)
				return -1;
			continue;
		}
		shortest(c->valuedouble, buf);
		if ((raw = cJSON_CreateRaw(buf)) == NULL)
			return -1;
		/* The member's name moves over (the call below frees c). */
		raw->string = c->string;
		raw->type |= c->type & cJSON_StringIsConst;
		c->string = NULL;
		cJSON_ReplaceItemViaPointer(item, c, raw);
	}
	return 0;
}

cJSON *
wl_json_add_bool(cJSON *obj, const char *name, int v)
{
	return cJSON_AddBoolToObject(obj, name, v ? 1 : 0);
}

/* A timestamp in the response format; ms < 0 writes null. */
cJSON *
wl_json_add_ts(cJSON *obj, const char *name, int64_t ms)
{
	char ts[WL_TS_MAX];

	if (ms < 0)
		return cJSON_AddNullToObject(obj, name);
	wl_ms_to_iso(ms, ts);
	return cJSON_AddStringToObject(obj, name, ts);
}

/* A JSON array of the given strings. */
cJSON *
wl_json_str_array(char *const *v, size_t n)
{
	cJSON *a = cJSON_CreateArray();
	size_t i;

	for (i = 0; a && i < n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(v[i]));
	return a;
}

/*
 * The character at p, before end: its length in bytes (1 to 4) with its
 * code point in *cp, or 0 when the bytes there are not one valid UTF-8
 * character (overlong, surrogate, past U+10FFFF, cut short) or are NUL.
 */
static size_t
utf8_next(const unsigned char *p, const unsigned char *end,
	  unsigned long *cp)
{
	unsigned c = *p;
	size_t len, i;

	if (c == 0)
		return 0;
	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
		*cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		*cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		*cp = c & 0x07;
	} else
		return 0;
	if ((size_t)(end - p) < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		*cp = (*cp << 6) | (p[i] & 0x3f);
	}
	if ((len == 3 && *cp < 0x800) || (len == 4 && *cp < 0x10000) ||
	    *cp > 0x10ffff || (*cp >= 0xd800 && *cp <= 0xdfff))
		return 0;
	return len;
}

/* 1 when s[0..n) is well-formed UTF-8 (no overlongs, surrogates or NUL). */
int
wl_utf8_valid(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + n;
	size_t len;
	unsigned long cp;

	for (; p < end; p += len)
		if ((len = utf8_next(p, end, &cp)) == 0)
			return 0;
	return 1;
}

/* Number of code points of a valid UTF-8 string. */
size_t
wl_utf8_len(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		if (((unsigned char)*s & 0xc0) != 0x80)
			n++;
	return n;
}

/* Is code point c white space (Unicode White_Space) or drawn as nothing
 * (Default_Ignorable_Code_Point, and the Braille blank)? */
static int
blank_cp(unsigned long c)
{
	return (c >= 0x09 && c <= 0x0d) || c == 0x20 || c == 0x85 ||
	       c == 0xa0 || c == 0xad || c == 0x34f || c == 0x61c ||
	       c == 0x115f || c == 0x1160 || c == 0x1680 || c == 0x17b4 ||
	       c == 0x17b5 || (c >= 0x180b && c <= 0x180f) ||
	       (c >= 0x2000 && c <= 0x200f) || (c >= 0x2028 && c <= 0x202f) ||
	       (c >= 0x205f && c <= 0x206f) || c == 0x2800 || c == 0x3000 ||
	       c == 0x3164 || (c >= 0xfe00 && c <= 0xfe0f) || c == 0xfeff ||
	       c == 0xffa0 || (c >= 0xfff0 && c <= 0xfff8) ||
	       (c >= 0x1bca0 && c <= 0x1bca3) ||
	       (c >= 0x1d173 && c <= 0x1d17a) || (c >= 0xe0000 && c <= 0xe0fff);
}

/* 1 when s shows nothing: empty, or only white space and characters drawn
 * as nothing.  (Not valid UTF-8: 0.) */
int
wl_utf8_blank(const char *s)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + strlen(s);
	unsigned long cp;
	size_t len;

	for (; p < end; p += len)
		if ((len = utf8_next(p, end, &cp)) == 0 || !blank_cp(cp))
			return 0;
	return 1;
}

/* Bytes of the longest prefix of s, at most max, that does not end inside
 * a character: for quoting caller text in a message without breaking it. */
size_t
wl_utf8_prefix(const char *s, size_t max)
{
	size_t n = strnlen(s, max);

	if (s[n] != '\0')
		while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
			n--;
	return n;
}

/* Drop a character cut short at the end of s (text truncated by bytes). */
void
wl_utf8_trim(char *s)
{
	size_t n = strlen(s), i = n, need;
	unsigned char c;

	while (i > 0 && n - i < 3 && ((unsigned char)s[i - 1] & 0xc0) == 0x80)
		i--;
	if (i == 0)
		return;
	c = (unsigned char)s[i - 1];
	need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
	if (n - (i - 1) < need)
		s[i - 1] = '\0';
}

#define JSON_DEPTH_MAX 64

static void
skip_ws(const char **p, const char *end)
{
	while (*p < end && (**p == ' ' || **p == '\t' || **p == '\n' ||
			    **p == '\r'))
		(*p)++;
}

static int
is_digit(const char *p, const char *end)
{
	return p < end && *p >= '0' && *p <= '9';
}

static int strict_value(const char **, const char *, int);

/* A string: no raw control characters, only the escapes of RFC 8259. */
static int
strict_string(const char **p, const char *end)
{
	const char *s = *p + 1;
	int i;

	for (; s < end; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"') {
			*p = s + 1;
			return 0;
		}
		if (c < 0x20)
			return -1;
		if (c != '\\')
			continue;
		if (++s == end)
			return -1;
		if (*s == 'u') {
			for (i = 1; i <= 4; i++)
				if (s + i >= end ||
				    strchr("0123456789abcdefABCDEF", s[i]) ==
					NULL ||
				    s[i] == '\0')
					return -1;
			s += 4;
		} else if (*s == '\0' || strchr("\"\\/bfnrt", *s) == NULL)
			return -1;
	}
	return -1;
}

/* -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)? */
static int
strict_number(const char **p, const char *end)
{
	const char *s = *p;

	if (s < end && *s == '-')
		s++;
	if (!is_digit(s, end))
		return -1;
	if (*s == '0')
		s++;
	else
		while (is_digit(s, end))
			s++;
	if (s < end && *s == '.') {
		if (!is_digit(++s, end))
			return -1;
		while (is_digit(s, end))
			s++;
	}
	if (s < end && (*s == 'e' || *s == 'E')) {
		s++;
		if (s < end && (*s == '+' || *s == '-'))
			s++;
		if (!is_digit(s, end))
			return -1;
		while (is_digit(s, end))
			s++;
	}
	*p = s;
	return 0;
}

static int
strict_members(const char **p, const char *end, int depth, char close)
{
	skip_ws(p, end);
	if (*p < end && **p == close) {
		(*p)++;
		return 0;
	}
	for (;;) {
		if (close == '}') {
			if (*p >= end || **p != '"' || strict_string(p, end) < 0)
				return -1;
			skip_ws(p, end);
			if (*p >= end || *(*p)++ != ':')
				return -1;
		}
		if (strict_value(p, end, depth) < 0)
			return -1;
		skip_ws(p, end);
		if (*p < end && **p == ',') {
			(*p)++;
			skip_ws(p, end);
			continue;
		}
		if (*p < end && **p == close) {
			(*p)++;
			return 0;
		}
		return -1;
	}
}

static int
strict_value(const char **p, const char *end, int depth)
{
	skip_ws(p, end);
	if (*p >= end)
		return -1;
	switch (**p) {
	case '{':
	case '[':
		if (depth >= JSON_DEPTH_MAX)
			return -1;
		(*p)++;
		return strict_members(p, end, depth + 1,
				      (*p)[-1] == '{' ? '}' : ']');
	case '"':
		return strict_string(p, end);
	case 't':
	case 'f':
	case 'n': {
		static const char *const words[] = {"true", "false", "null"};
		size_t i, n;
		for (i = 0; i < 3; i++) {
			n = strlen(words[i]);
			if ((size_t)(end - *p) >= n &&
			    memcmp(*p, words[i], n) == 0) {
				*p += n;
				return 0;
			}
		}
		return -1;
	}
	default:
		return strict_number(p, end);
	}
}

/*
 * 1 when text is exactly one JSON value by the grammar of RFC 8259, nested
 * at most JSON_DEPTH_MAX deep.  cJSON alone is more lenient (leading
 * zeros, "1.", raw control characters in strings).
 */
int
wl_json_strict(const char *text, size_t n)
{
	const char *p = text, *end = text + n;

	if (strict_value(&p, end, 0) < 0)
		return 0;
	skip_ws(&p, end);
	return p == end;
}

/* 1 when the JSON text holds a \u0000 escape (outside an escaped '\\'). */
static int
has_nul_escape(const char *t, size_t n)
{
	size_t i, run = 0;

	for (i = 0; i < n; i++) {
		if (t[i] == '\\') {
			run++;
			continue;
		}
		if (run % 2 == 1 && t[i] == 'u' && i + 4 < n &&
		    memcmp(t + i + 1, "0000", 4) == 0)
			return 1;
		run = 0;
	}
	return 0;
}

static int
name_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* 1 when object node repeats a member name.  Past a few members the
 * names are sorted, so that a body of thousands costs no more to refuse
 * than any other of its size. */
static int
repeats_a_name(const cJSON *node)
{
	const cJSON *a, *b;
	const char **names;
	size_t n = 0, i;
	int dup = 0;

	for (a = node->child; a; a = a->next)
		n++;
	if (n > 16 && (names = malloc(n * sizeof(*names))) != NULL) {
		for (i = 0, a = node->child; a; a = a->next)
			names[i++] = a->string;
		qsort(names, n, sizeof(*names), name_cmp);
		for (i = 1; i < n && !dup; i++)
			dup = strcmp(names[i - 1], names[i]) == 0;
		free(names);
		return dup;
	}
	for (a = node->child; a; a = a->next)
		for (b = a->next; b; b = b->next)
			if (strcmp(a->string, b->string) == 0)
				return 1;
	return 0;
}

/* 1 when some object in the tree repeats a member name. */
static int
has_duplicate_keys(const cJSON *node)
{
	const cJSON *a;

	if (cJSON_IsObject(node) && repeats_a_name(node))
		return 1;
	for (a = node->child; a; a = a->next)
		if (a->child && has_duplicate_keys(a))
			return 1;
	return 0;
}

/*
 * Advance *p past the next number of the JSON text (outside strings):
 * 1 when its text is a whole number (digits past the decimal point, once
 * the exponent has moved it, all zero), 0 when not, -1 when none is left.
 */
static int
next_number_whole(const char **p, const char *end)
{
	const char *s = *p, *ip, *fp = NULL;
	long ni, nf = 0, e = 0, point, i;
	int in_str = 0, neg = 0, whole = 1;

	for (; s < end; s++) {
		if (in_str) {
			if (*s == '\\')
				s++;
			else if (*s == '"')
				in_str = 0;
		} else if (*s == '"') {
			in_str = 1;
		} else if (*s == '-' || is_digit(s, end)) {
			break;
		}
	}
	if (s >= end)
		return -1;
	if (*s == '-')
		s++;
	for (ip = s; is_digit(s, end); s++)
		;
	ni = s - ip;
	if (s < end && *s == '.') {
		for (fp = ++s; is_digit(s, end); s++)
			;
		nf = s - fp;
	}
	if (s < end && (*s == 'e' || *s == 'E')) {
		s++;
		if (s < end && (*s == '+' || *s == '-'))
			neg = *s++ == '-';
		for (; is_digit(s, end); s++)
			if (e < 1000000)
				e = e * 10 + (*s - '0');
	}
	*p = s;
	point = ni + (neg ? -e : e);
	for (i = point < 0 ? 0 : point; i < ni + nf && whole; i++)
		whole = (i < ni ? ip[i] : fp[i - ni]) == '0';
	return whole;
}

/* Mark the numbers under node whose text is not whole, reading the text
 * along (cJSON keeps members and elements in the text's order). */
static void
mark_not_whole(cJSON *node, const char **p, const char *end)
{
	cJSON *c;

	for (c = node->child; c; c = c->next) {
		if (cJSON_IsNumber(c)) {
			if (next_number_whole(p, end) == 0)
				c->type |= NOT_WHOLE;
		} else if (c->child) {
			mark_not_whole(c, p, end);
		}
	}
}

/*
 * Parse a request body that must be one JSON object of valid UTF-8 and
 * strict RFC 8259 syntax.  cJSON would silently cut strings at a \u0000
 * escape and keep only the first of duplicate members, so both are
 * refused here.  NULL when the
 * text is not such an object.
 */
cJSON *
wl_json_parse_object(const char *text, size_t n)
{
	const char *end = NULL;
	cJSON *root;

	if (!wl_utf8_valid(text, n) || !wl_json_strict(text, n) ||
	    has_nul_escape(text, n))
		return NULL;
	root = cJSON_ParseWithLengthOpts(text, n, &end, 0);
	if (root == NULL)
		return NULL;
	while (end && (size_t)(end - text) < n && *end != '\0' &&
	       strchr(" \t\r\n", *end) != NULL)
		end++;
	if (!cJSON_IsObject(root) || (end && (size_t)(end - text) != n) ||
	    has_duplicate_keys(root)) {
		cJSON_Delete(root);
		return NULL;
	}
	end = text;
	mark_not_whole(root, &end, text + n);
	return root;
}
