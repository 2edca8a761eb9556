/*
 * Typed getters, the UTF-8 check and the request-body parser.
 */
#include "config.h"

#include <limits.h>
#include <stdlib.h>

#include "extern.h"
#include "tests.h"

static cJSON *doc;

static void
setup_doc(void)
{
	doc = cJSON_Parse("{\"s\":\"text\",\"b\":true,\"f\":false,\"i\":-3,"
			  "\"big\":9007199254740992,\"frac\":1.5,"
			  "\"huge\":1e300,\"o\":{\"k\":1},\"a\":[1,2],"
			  "\"n\":null}");
	ck_assert_ptr_nonnull(doc);
}

static void
teardown_doc(void)
{
	cJSON_Delete(doc);
	doc = NULL;
}

/* Parse a C string as a request body; 1 when it is accepted. */
static int
accepted(const char *text)
{
	cJSON *o = wl_json_parse_object(text, strlen(text));

	cJSON_Delete(o);
	return o != NULL;
}

/* An event whose data could not be made (NULL: out of memory) fails the
 * batch's write, and with it the change, before anything is sent to the
 * database (there is none here). */
START_TEST(event_without_data_fails_its_batch)
{
	struct wl_events b = {0};

	ck_assert_int_eq(wl_events_add(&b, WL_EV_ENTRY_CREATED,
				       cJSON_CreateObject()),
			 WL_OK);
	ck_assert_int_eq(wl_events_add(&b, WL_EV_BOOKING_CREATED, NULL),
			 WL_ERR_NOMEM);
	ck_assert_uint_eq(b.n, 1);
	ck_assert_int_eq(wl_outbox_write(NULL, &b, "ten_x", "biz_x", "que_x",
					 "ent_x", 1, 0),
			 WL_ERR_NOMEM);
	ck_assert_uint_eq(b.n, 0);
	ck_assert_int_eq(b.err, WL_OK);
}
END_TEST

START_TEST(get_string_reports_found_absent_null_and_wrong_type)
{
	const char *s = "stale";

	ck_assert_int_eq(wl_json_get_string(doc, "s", &s), 1);
	ck_assert_str_eq(s, "text");
	ck_assert_int_eq(wl_json_get_string(doc, "missing", &s), 0);
	ck_assert_ptr_null(s);
	s = "stale";
	ck_assert_int_eq(wl_json_get_string(doc, "n", &s), 0);
	ck_assert_ptr_null(s);
	s = "stale";
	ck_assert_int_eq(wl_json_get_string(doc, "i", &s), -1);
	ck_assert_ptr_null(s);
	ck_assert_int_eq(wl_json_get_string(doc, "o", &s), -1);
	/* Names are case-sensitive. */
	ck_assert_int_eq(wl_json_get_string(doc, "S", &s), 0);
}
END_TEST

START_TEST(get_bool_reports_found_absent_null_and_wrong_type)
{
	int b = 7;

	ck_assert_int_eq(wl_json_get_bool(doc, "b", &b), 1);
	ck_assert_int_eq(b, 1);
	ck_assert_int_eq(wl_json_get_bool(doc, "f", &b), 1);
	ck_assert_int_eq(b, 0);
	b = 7;
	ck_assert_int_eq(wl_json_get_bool(doc, "missing", &b), 0);
	ck_assert_int_eq(b, 0);
	ck_assert_int_eq(wl_json_get_bool(doc, "n", &b), 0);
	ck_assert_int_eq(wl_json_get_bool(doc, "i", &b), -1);
	ck_assert_int_eq(wl_json_get_bool(doc, "s", &b), -1);
}
END_TEST

START_TEST(get_int_reports_found_absent_null_and_wrong_type)
{
	long long v = 7;

	ck_assert_int_eq(wl_json_get_int(doc, "i", &v), 1);
	ck_assert_int_eq(v, -3);
	ck_assert_int_eq(wl_json_get_int(doc, "missing", &v), 0);
	ck_assert_int_eq(v, 0);
	ck_assert_int_eq(wl_json_get_int(doc, "n", &v), 0);
	ck_assert_int_eq(wl_json_get_int(doc, "s", &v), -1);
	ck_assert_int_eq(wl_json_get_int(doc, "b", &v), -1);
}
END_TEST

START_TEST(get_int_refuses_fractions_and_huge_numbers)
{
	long long v = 7;

	ck_assert_int_eq(wl_json_get_int(doc, "frac", &v), -1);
	ck_assert_int_eq(v, 0);
	ck_assert_int_eq(wl_json_get_int(doc, "huge", &v), -1);
	/* 2^53, which 9007199254740993 reads as too: refused. */
	ck_assert_int_eq(wl_json_get_int(doc, "big", &v), -1);
}
END_TEST

START_TEST(get_int_refuses_from_two_to_the_53)
{
	cJSON *o = cJSON_Parse("{\"p\":9007199254740994,"
			       "\"m\":-9007199254740994,"
			       "\"neg\":-9007199254740992,\"e\":2e3,"
			       "\"max\":9007199254740991}");
	long long v;

	ck_assert_ptr_nonnull(o);
	ck_assert_int_eq(wl_json_get_int(o, "p", &v), -1);
	ck_assert_int_eq(wl_json_get_int(o, "m", &v), -1);
	ck_assert_int_eq(wl_json_get_int(o, "neg", &v), -1);
	ck_assert_int_eq(wl_json_get_int(o, "max", &v), 1);
	ck_assert_int_eq(v, 9007199254740991LL);
	/* An exponent is fine when the value is whole. */
	ck_assert_int_eq(wl_json_get_int(o, "e", &v), 1);
	ck_assert_int_eq(v, 2000);
	cJSON_Delete(o);
}
END_TEST

START_TEST(get_object_and_array_check_the_type)
{
	const cJSON *v = doc;

	ck_assert_int_eq(wl_json_get_object(doc, "o", &v), 1);
	ck_assert_ptr_eq(v, cJSON_GetObjectItem(doc, "o"));
	ck_assert_int_eq(wl_json_get_object(doc, "a", &v), -1);
	ck_assert_ptr_null(v);
	ck_assert_int_eq(wl_json_get_object(doc, "n", &v), 0);
	ck_assert_int_eq(wl_json_get_object(doc, "missing", &v), 0);
	ck_assert_int_eq(wl_json_get_array(doc, "a", &v), 1);
	ck_assert_int_eq(cJSON_GetArraySize(v), 2);
	ck_assert_int_eq(wl_json_get_array(doc, "o", &v), -1);
	ck_assert_ptr_null(v);
	ck_assert_int_eq(wl_json_get_array(doc, "n", &v), 0);
	ck_assert_int_eq(wl_json_get_array(doc, "s", &v), -1);
}
END_TEST

START_TEST(adders_write_nulls_and_timestamps)
{
	cJSON *o = cJSON_CreateObject();
	char *text;
	char *v[] = {"x", "y"};

	ck_assert_ptr_nonnull(wl_json_add_str(o, "s", NULL));
	ck_assert_ptr_nonnull(wl_json_add_int(o, "i", -42));
	ck_assert_ptr_nonnull(wl_json_add_bool(o, "b", 5));
	ck_assert_ptr_nonnull(wl_json_add_ts(o, "t", 0));
	ck_assert_ptr_nonnull(wl_json_add_ts(o, "u", -1));
	cJSON_AddItemToObject(o, "v", wl_json_str_array(v, 2));
	cJSON_AddItemToObject(o, "w", wl_json_str_array(NULL, 0));
	ck_assert_ptr_nonnull(text = cJSON_PrintUnformatted(o));
	ck_assert_str_eq(text, "{\"s\":null,\"i\":-42,\"b\":true,"
			       "\"t\":\"1970-01-01T00:00:00.000Z\","
			       "\"u\":null,\"v\":[\"x\",\"y\"],\"w\":[]}");
	free(text);
	cJSON_Delete(o);
}
END_TEST

START_TEST(add_int_writes_every_digit)
{
	cJSON *o = cJSON_CreateObject();
	char *text;

	wl_json_add_int(o, "z", 0);
	wl_json_add_int(o, "big", 9007199254740993LL);
	wl_json_add_int(o, "max", LLONG_MAX);
	wl_json_add_int(o, "min", LLONG_MIN);
	ck_assert_ptr_nonnull(text = cJSON_PrintUnformatted(o));
	ck_assert_str_eq(text, "{\"z\":0,\"big\":9007199254740993,"
			       "\"max\":9223372036854775807,"
			       "\"min\":-9223372036854775808}");
	free(text);
	cJSON_Delete(o);
}
END_TEST

/* Integers take a path without printf: its digits must be printf's. */
START_TEST(exact_numbers_print_integers_as_printf_does)
{
	static const double v[] = {0, -0.0, 1, -1, 7, 10, 42, -100, 65535,
				   2147483648.0, -2147483649.0, 1e14,
				   999999999999999.0, -999999999999999.0,
				   1e15, -1e15, 1234567890123456.0};
	char want[40], *text;
	cJSON *o;
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(*v); i++) {
		ck_assert_ptr_nonnull(o = cJSON_CreateObject());
		cJSON_AddNumberToObject(o, "n", v[i]);
		ck_assert_int_eq(wl_json_exact_numbers(o), 0);
		ck_assert_ptr_nonnull(text = cJSON_PrintUnformatted(o));
		snprintf(want, sizeof(want), "{\"n\":%.15g}", v[i]);
		if (v[i] == 1234567890123456.0) /* 16 digits: %.16g */
			snprintf(want, sizeof(want), "{\"n\":%.16g}", v[i]);
		ck_assert_str_eq(text, want);
		free(text);
		cJSON_Delete(o);
	}
}
END_TEST

START_TEST(exact_numbers_keep_every_digit_and_the_names)
{
	cJSON *o = cJSON_Parse("{\"a\":9007199254740991,\"b\":0.30000000000000004,"
			       "\"c\":[1.0000000000000002,42.5,{\"d\":-0.1}],"
			       "\"e\":\"x\",\"f\":1e300,\"g\":5}");
	char *text;

	ck_assert_ptr_nonnull(o);
	ck_assert_int_eq(wl_json_exact_numbers(o), 0);
	ck_assert_ptr_nonnull(text = cJSON_PrintUnformatted(o));
	ck_assert_str_eq(text, "{\"a\":9007199254740991,"
			       "\"b\":0.30000000000000004,"
			       "\"c\":[1.0000000000000002,42.5,{\"d\":-0.1}],"
			       "\"e\":\"x\",\"f\":1e+300,\"g\":5}");
	free(text);
	cJSON_Delete(o);
	ck_assert_int_eq(wl_json_exact_numbers(NULL), 0);
}
END_TEST

START_TEST(fill_replaces_in_place_and_descends_into_objects)
{
	cJSON *o = cJSON_Parse("{\"entry\":{\"id\":\"e\",\"position\":null,"
			       "\"wait\":null,\"n\":{\"a\":1}},\"z\":2}");
	cJSON *p = cJSON_Parse("{\"entry\":{\"position\":3,\"wait\":null,"
			       "\"n\":5,\"new\":[1]}}");
	char *text;

	ck_assert_ptr_nonnull(o);
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(wl_json_fill(o, p), 0);
	ck_assert_ptr_nonnull(text = cJSON_PrintUnformatted(o));
	ck_assert_str_eq(text, "{\"entry\":{\"id\":\"e\",\"position\":3,"
			       "\"wait\":null,\"n\":5,\"new\":[1]},"
			       "\"z\":2}");
	free(text);
	ck_assert_int_eq(wl_json_fill(o, NULL), 0);
	cJSON_Delete(p);
	cJSON_Delete(o);
}
END_TEST

START_TEST(utf8_accepts_ascii_and_multibyte)
{
	static const char *const ok[] = {
	    "",
	    "plain ascii ~\x7f",
	    "\xc3\xa9",		    /* é */
	    "\xe2\x82\xac",	    /* € */
	    "\xef\xbf\xbf",	    /* U+FFFF */
	    "\xed\x9f\xbf",	    /* U+D7FF, just below the surrogates */
	    "\xf0\x9f\x98\x80",	    /* 😀 */
	    "\xf4\x8f\xbf\xbf",	    /* U+10FFFF */
	    "caf\xc3\xa9 \xf0\x9f\x98\x80!",
	};
	size_t i;

	for (i = 0; i < sizeof(ok) / sizeof(*ok); i++)
		ck_assert_msg(wl_utf8_valid(ok[i], strlen(ok[i])) == 1,
			      "refused #%zu", i);
}
END_TEST

START_TEST(utf8_refuses_malformed_sequences)
{
	static const char *const bad[] = {
	    "\xc0\xaf",		/* overlong '/' */
	    "\xc1\xbf",		/* overlong */
	    "\xe0\x80\xaf",	/* overlong in three bytes */
	    "\xf0\x80\x80\xaf", /* overlong in four bytes */
	    "\xed\xa0\x80",	/* U+D800 */
	    "\xed\xbf\xbf",	/* U+DFFF */
	    "\xf4\x90\x80\x80", /* U+110000 */
	    "\xc3",		/* truncated */
	    "\xe2\x82",
	    "\xf0\x9f\x98",
	    "a\xc3",
	    "\x80",		/* lone continuation */
	    "\xc3\x28",		/* bad continuation */
	    "\xe2\x28\xa1",
	};
	char one[2] = {0, 0};
	unsigned c;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		ck_assert_msg(wl_utf8_valid(bad[i], strlen(bad[i])) == 0,
			      "accepted #%zu", i);
	for (c = 0xf5; c <= 0xff; c++) {
		one[0] = (char)c;
		ck_assert_msg(wl_utf8_valid(one, 1) == 0, "accepted %#x", c);
	}
}
END_TEST

START_TEST(utf8_refuses_embedded_nul)
{
	ck_assert_int_eq(wl_utf8_valid("a\0b", 3), 0);
	ck_assert_int_eq(wl_utf8_valid("\0", 1), 0);
	/* The length bounds the check: the NUL after it does not count. */
	ck_assert_int_eq(wl_utf8_valid("a\0b", 1), 1);
	/* A sequence cut by the length is truncated. */
	ck_assert_int_eq(wl_utf8_valid("\xc3\xa9", 1), 0);
}
END_TEST

START_TEST(utf8_len_counts_code_points)
{
	ck_assert_uint_eq(wl_utf8_len(""), 0);
	ck_assert_uint_eq(wl_utf8_len("abc"), 3);
	ck_assert_uint_eq(wl_utf8_len("caf\xc3\xa9"), 4);
	ck_assert_uint_eq(wl_utf8_len("\xe2\x82\xac\xf0\x9f\x98\x80"), 2);
}
END_TEST

START_TEST(utf8_prefix_ends_on_a_character_boundary)
{
	const char *e3 = "\xe2\x82\xac\xe2\x82\xac"; /* two 3-byte characters */

	ck_assert_uint_eq(wl_utf8_prefix("abc", 10), 3);
	ck_assert_uint_eq(wl_utf8_prefix("abc", 2), 2);
	ck_assert_uint_eq(wl_utf8_prefix(e3, 6), 6);
	ck_assert_uint_eq(wl_utf8_prefix(e3, 5), 3);
	ck_assert_uint_eq(wl_utf8_prefix(e3, 4), 3);
	ck_assert_uint_eq(wl_utf8_prefix(e3, 3), 3);
	ck_assert_uint_eq(wl_utf8_prefix(e3, 2), 0);
	ck_assert_uint_eq(wl_utf8_prefix("\xf0\x9f\x98\x80", 3), 0);
}
END_TEST

START_TEST(utf8_trim_drops_a_character_cut_short)
{
	char a[] = "ab\xe2\x82", b[] = "ab\xe2\x82\xac", c[] = "ab\xf0\x9f\x98",
	     d[] = "abc", e[] = "a\xc3";

	wl_utf8_trim(a);
	wl_utf8_trim(b);
	wl_utf8_trim(c);
	wl_utf8_trim(d);
	wl_utf8_trim(e);
	ck_assert_str_eq(a, "ab");
	ck_assert_str_eq(b, "ab\xe2\x82\xac");
	ck_assert_str_eq(c, "ab");
	ck_assert_str_eq(d, "abc");
	ck_assert_str_eq(e, "a");
}
END_TEST

START_TEST(utf8_blank_sees_unicode_white_space_and_invisibles)
{
	ck_assert_int_eq(wl_utf8_blank(""), 1);
	ck_assert_int_eq(wl_utf8_blank(" \t\r\n"), 1);
	ck_assert_int_eq(wl_utf8_blank("\xc2\xa0"), 1);	  /* no-break space */
	ck_assert_int_eq(wl_utf8_blank("\xe3\x80\x80 "), 1); /* ideographic */
	ck_assert_int_eq(wl_utf8_blank("\xe2\x80\x8b\xef\xbb\xbf"), 1);
	ck_assert_int_eq(wl_utf8_blank("\xc2\x85\xe2\x80\xa8"), 1);
	ck_assert_int_eq(wl_utf8_blank(" a "), 0);
	ck_assert_int_eq(wl_utf8_blank("\xc3\xa9"), 0);
	ck_assert_int_eq(wl_utf8_blank("\xc2\xa0\xf0\x9f\x98\x80"), 0);
	ck_assert_int_eq(wl_utf8_blank("\xe3\x80\x81"), 0); /* ideographic comma */
	ck_assert_int_eq(wl_utf8_blank("\xe3\x85\xa4\xe2\x80\x8f"), 1); /* Hangul filler, RLM */
	ck_assert_int_eq(wl_utf8_blank("\xe2\xa0\x80\xc2\xad"), 1); /* Braille blank, SHY */
	ck_assert_int_eq(wl_utf8_blank("\xe3"), 0);	/* cut short */
	ck_assert_int_eq(wl_utf8_blank(" \xe2\x80"), 0);
	ck_assert_int_eq(wl_utf8_blank("\xc0\xa0"), 0);	/* overlong space */
}
END_TEST

START_TEST(get_int_takes_whole_numbers_by_their_text)
{
	const char *t = "{\"g\":\"1.5 \\\" 2.5\",\"a\":1.00000000000000000001,"
			"\"b\":100.0,\"c\":1e2,\"d\":1.5e1,\"e\":[{\"f\":"
			"0.99999999999999999999}],\"h\":10E-1,\"i\":0.0,"
			"\"j\":-0,\"k\":12e-1,\"l\":-2.00000000000000000001e0,"
			"\"m\":123456789.123e3}";
	cJSON *o = wl_json_parse_object(t, strlen(t));
	const cJSON *e;
	long long v;

	ck_assert_ptr_nonnull(o);
	ck_assert_int_eq(wl_json_get_int(o, "a", &v), -1);
	ck_assert_int_eq(wl_json_get_int(o, "b", &v), 1);
	ck_assert_int_eq(v, 100);
	ck_assert_int_eq(wl_json_get_int(o, "c", &v), 1);
	ck_assert_int_eq(v, 100);
	ck_assert_int_eq(wl_json_get_int(o, "d", &v), 1);
	ck_assert_int_eq(v, 15);
	e = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "e"), 0);
	ck_assert_int_eq(wl_json_get_int(e, "f", &v), -1);
	ck_assert_int_eq(wl_json_get_int(o, "h", &v), 1);
	ck_assert_int_eq(v, 1);
	ck_assert_int_eq(wl_json_get_int(o, "i", &v), 1);
	ck_assert_int_eq(wl_json_get_int(o, "j", &v), 1);
	ck_assert_int_eq(wl_json_get_int(o, "k", &v), -1);
	ck_assert_int_eq(wl_json_get_int(o, "l", &v), -1);
	ck_assert_int_eq(wl_json_get_int(o, "m", &v), 1);
	ck_assert_int_eq(v, 123456789123);
	cJSON_Delete(o);
}
END_TEST

START_TEST(parse_object_accepts_an_object_with_trailing_space)
{
	const char *t = "  {\"a\":1,\"b\":{\"c\":[1,{\"d\":\"\xc3\xa9\"}]}}"
			" \t\r\n";
	cJSON *o = wl_json_parse_object(t, strlen(t));
	const cJSON *b;
	long long a;

	ck_assert_ptr_nonnull(o);
	ck_assert_int_eq(wl_json_get_int(o, "a", &a), 1);
	ck_assert_int_eq(a, 1);
	ck_assert_int_eq(wl_json_get_object(o, "b", &b), 1);
	cJSON_Delete(o);
	ck_assert_int_eq(accepted("{}"), 1);
}
END_TEST

START_TEST(parse_object_honours_the_length)
{
	const char *t = "{\"a\":1} garbage";
	cJSON *o = wl_json_parse_object(t, 7);

	ck_assert_ptr_nonnull(o);
	cJSON_Delete(o);
	ck_assert_ptr_null(wl_json_parse_object(t, strlen(t)));
	ck_assert_ptr_null(wl_json_parse_object(t, 6));
	ck_assert_ptr_null(wl_json_parse_object("", 0));
}
END_TEST

START_TEST(parse_object_refuses_non_objects)
{
	ck_assert_int_eq(accepted("[]"), 0);
	ck_assert_int_eq(accepted("[{\"a\":1}]"), 0);
	ck_assert_int_eq(accepted("1"), 0);
	ck_assert_int_eq(accepted("\"s\""), 0);
	ck_assert_int_eq(accepted("null"), 0);
	ck_assert_int_eq(accepted("true"), 0);
	ck_assert_int_eq(accepted(""), 0);
	ck_assert_int_eq(accepted("   "), 0);
}
END_TEST

START_TEST(parse_object_refuses_trailing_garbage)
{
	ck_assert_int_eq(accepted("{} x"), 0);
	ck_assert_int_eq(accepted("{}{}"), 0);
	ck_assert_int_eq(accepted("{},"), 0);
	ck_assert_int_eq(accepted("{\"a\":1"), 0);
	ck_assert_int_eq(accepted("{\"a\":1,}"), 0);
}
END_TEST

START_TEST(parse_object_refuses_invalid_utf8)
{
	ck_assert_int_eq(accepted("{\"a\":\"\xc0\xaf\"}"), 0);
	ck_assert_int_eq(accepted("{\"\xed\xa0\x80\":1}"), 0);
	ck_assert_int_eq(accepted("{\"a\":\"\xff\"}"), 0);
	ck_assert_int_eq(wl_json_parse_object("{\"a\":\"\0\"}", 9) == NULL, 1);
}
END_TEST

START_TEST(parse_object_refuses_duplicate_keys)
{
	ck_assert_int_eq(accepted("{\"a\":1,\"a\":2}"), 0);
	ck_assert_int_eq(accepted("{\"a\":1,\"b\":2,\"a\":3}"), 0);
	ck_assert_int_eq(accepted("{\"a\":{\"b\":1,\"b\":2}}"), 0);
	ck_assert_int_eq(accepted("{\"a\":[{\"b\":1},{\"c\":1,\"c\":1}]}"), 0);
	/* Same name in different objects, or differing case, is fine. */
	ck_assert_int_eq(accepted("{\"a\":{\"a\":1},\"b\":{\"a\":2}}"), 1);
	ck_assert_int_eq(accepted("{\"a\":1,\"A\":2}"), 1);
	ck_assert_int_eq(accepted("{\"a\":[{\"b\":1},{\"b\":2}]}"), 1);
}
END_TEST

/* Objects of many members: names AA..ZZ (676), with one name repeated
 * at a place given by dup (-1: none), nested at depth deep. */
static int
accepted_many(int dup, int deep)
{
	char *text = malloc(676 * 12 + 64), *p = text;
	int i, ok;

	p += sprintf(p, deep ? "{\"x\":{" : "{");
	for (i = 0; i < 676; i++)
		p += sprintf(p, "%s\"%c%c\":%d", i ? "," : "", 'A' + i / 26,
			     'A' + i % 26, i);
	if (dup >= 0)
		p += sprintf(p, ",\"%c%c\":1", 'A' + dup / 26, 'A' + dup % 26);
	sprintf(p, deep ? "}}" : "}");
	ok = accepted(text);
	free(text);
	return ok;
}

START_TEST(parse_object_refuses_duplicate_keys_among_many)
{
	ck_assert_int_eq(accepted_many(-1, 0), 1);
	ck_assert_int_eq(accepted_many(-1, 1), 1);
	ck_assert_int_eq(accepted_many(0, 0), 0);
	ck_assert_int_eq(accepted_many(675, 0), 0);
	ck_assert_int_eq(accepted_many(337, 1), 0);
}
END_TEST

START_TEST(parse_object_refuses_nul_escapes)
{
	/* JSON text {"a":"x\u0000y"}: a NUL inside the value. */
	ck_assert_int_eq(accepted("{\"a\":\"x\\u0000y\"}"), 0);
	/* {"\u0000":1}: a NUL inside a key. */
	ck_assert_int_eq(accepted("{\"\\u0000\":1}"), 0);
	/* {"a":"\\\u0000"}: an escaped backslash, then a NUL escape. */
	ck_assert_int_eq(accepted("{\"a\":\"\\\\\\u0000\"}"), 0);
}
END_TEST

START_TEST(parse_object_accepts_escaped_backslash_before_u0000)
{
	/* JSON text {"a":"\\u0000"}: a backslash, then the letters u0000. */
	const char *one = "{\"a\":\"\\\\u0000\"}";
	/* JSON text {"a":"\\\\u0000"}: two backslashes, then u0000. */
	const char *two = "{\"a\":\"\\\\\\\\u0000\"}";
	const char *s;
	cJSON *o;

	ck_assert_uint_eq(strlen(one), 15);
	ck_assert_ptr_nonnull(o = wl_json_parse_object(one, strlen(one)));
	ck_assert_int_eq(wl_json_get_string(o, "a", &s), 1);
	ck_assert_str_eq(s, "\\u0000");
	cJSON_Delete(o);
	ck_assert_uint_eq(strlen(two), 17);
	ck_assert_ptr_nonnull(o = wl_json_parse_object(two, strlen(two)));
	ck_assert_int_eq(wl_json_get_string(o, "a", &s), 1);
	ck_assert_str_eq(s, "\\\\u0000");
	cJSON_Delete(o);
	/* Other \u escapes are fine. */
	ck_assert_int_eq(accepted("{\"a\":\"\\u00e9\\u0001\"}"), 1);
}
END_TEST

START_TEST(parse_object_refuses_deep_nesting_without_crashing)
{
	size_t depth = 5000, i, n = 0;
	char *t = malloc(2 * depth + 8);

	ck_assert_ptr_nonnull(t);
	memcpy(t + n, "{\"a\":", 5);
	n += 5;
	for (i = 0; i < depth; i++)
		t[n++] = '[';
	for (i = 0; i < depth; i++)
		t[n++] = ']';
	t[n++] = '}';
	t[n] = '\0';
	ck_assert_ptr_null(wl_json_parse_object(t, n));
	/* Unbalanced, too. */
	ck_assert_ptr_null(wl_json_parse_object(t, 5 + depth));
	free(t);
}
END_TEST

/* An object holding `depth` nested arrays: total depth + 1 levels. */
static int
nested(size_t depth)
{
	char t[5 + 2 * 100 + 2];
	size_t i, n = 0;

	memcpy(t + n, "{\"a\":", 5);
	n += 5;
	for (i = 0; i < depth; i++)
		t[n++] = '[';
	for (i = 0; i < depth; i++)
		t[n++] = ']';
	t[n++] = '}';
	t[n] = '\0';
	return accepted(t);
}

START_TEST(parse_object_accepts_nesting_up_to_64_levels)
{
	ck_assert_int_eq(nested(63), 1);
}
END_TEST

START_TEST(parse_object_refuses_nesting_past_64_levels)
{
	ck_assert_int_eq(nested(64), 0);
	ck_assert_int_eq(nested(100), 0);
}
END_TEST

START_TEST(parse_object_refuses_lenient_numbers_and_raw_controls)
{
	ck_assert_int_eq(accepted("{\"n\":01}"), 0);
	ck_assert_int_eq(accepted("{\"n\":1.}"), 0);
	ck_assert_int_eq(accepted("{\"n\":.5}"), 0);
	ck_assert_int_eq(accepted("{\"n\":+1}"), 0);
	ck_assert_int_eq(accepted("{\"n\":1e}"), 0);
	ck_assert_int_eq(accepted("{\"s\":\"a\tb\"}"), 0);
	ck_assert_int_eq(accepted("{\"s\":\"\\x\"}"), 0);
	ck_assert_int_eq(accepted("{\"n\":-0.5e+3,\"s\":\"\\u00e9\\n\"}"), 1);
}
END_TEST

Suite *
suite_json(void)
{
	Suite *s = suite_create("json");
	TCase *tg = tcase_create("getters");
	TCase *tu = tcase_create("utf8");
	TCase *tp = tcase_create("parse");

	tcase_add_checked_fixture(tg, setup_doc, teardown_doc);
	tcase_add_test(tg, event_without_data_fails_its_batch);
	tcase_add_test(tg, get_string_reports_found_absent_null_and_wrong_type);
	tcase_add_test(tg, get_bool_reports_found_absent_null_and_wrong_type);
	tcase_add_test(tg, get_int_reports_found_absent_null_and_wrong_type);
	tcase_add_test(tg, get_int_refuses_fractions_and_huge_numbers);
	tcase_add_test(tg, get_int_refuses_from_two_to_the_53);
	tcase_add_test(tg, get_object_and_array_check_the_type);
	tcase_add_test(tg, adders_write_nulls_and_timestamps);
	tcase_add_test(tg, add_int_writes_every_digit);
	tcase_add_test(tg, exact_numbers_keep_every_digit_and_the_names);
	tcase_add_test(tg, exact_numbers_print_integers_as_printf_does);
	tcase_add_test(tg, fill_replaces_in_place_and_descends_into_objects);
	suite_add_tcase(s, tg);
	tcase_add_test(tu, utf8_accepts_ascii_and_multibyte);
	tcase_add_test(tu, utf8_refuses_malformed_sequences);
	tcase_add_test(tu, utf8_refuses_embedded_nul);
	tcase_add_test(tu, utf8_len_counts_code_points);
	tcase_add_test(tu, utf8_prefix_ends_on_a_character_boundary);
	tcase_add_test(tu, utf8_blank_sees_unicode_white_space_and_invisibles);
	tcase_add_test(tu, get_int_takes_whole_numbers_by_their_text);
	tcase_add_test(tu, utf8_trim_drops_a_character_cut_short);
	suite_add_tcase(s, tu);
	tcase_add_test(tp, parse_object_accepts_an_object_with_trailing_space);
	tcase_add_test(tp, parse_object_honours_the_length);
	tcase_add_test(tp, parse_object_refuses_non_objects);
	tcase_add_test(tp, parse_object_refuses_trailing_garbage);
	tcase_add_test(tp, parse_object_refuses_invalid_utf8);
	tcase_add_test(tp, parse_object_refuses_duplicate_keys);
	tcase_add_test(tp, parse_object_refuses_duplicate_keys_among_many);
	tcase_add_test(tp, parse_object_refuses_nul_escapes);
	tcase_add_test(tp, parse_object_accepts_escaped_backslash_before_u0000);
	tcase_add_test(tp, parse_object_refuses_deep_nesting_without_crashing);
	tcase_add_test(tp, parse_object_accepts_nesting_up_to_64_levels);
	tcase_add_test(tp, parse_object_refuses_nesting_past_64_levels);
	tcase_add_test(tp, parse_object_refuses_lenient_numbers_and_raw_controls);
	suite_add_tcase(s, tp);
	return s;
}
