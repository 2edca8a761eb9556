/*
 * Identifiers, digests, MACs, base64 and keys, against known vectors
 * where there are some.
 */
#include "config.h"

#include <ctype.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdlib.h>
#include <time.h>

#include "extern.h"
#include "tests.h"

static void
sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) == -1)
		;
}

static void
to_hex(const unsigned char *p, size_t n, char *out)
{
	static const char hex[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = hex[p[i] >> 4];
		out[2 * i + 1] = hex[p[i] & 0xf];
	}
	out[2 * n] = '\0';
}

START_TEST(id_keeps_prefix_and_has_26_crockford_chars)
{
	char id[WL_ID_MAX];
	size_t i;

	ck_assert_int_eq(wl_id_new("ent_", id), WL_OK);
	ck_assert_uint_eq(strlen(id), 4 + 26);
	ck_assert_int_eq(strncmp(id, "ent_", 4), 0);
	for (i = 4; id[i]; i++)
		ck_assert_msg(strchr("0123456789abcdefghjkmnpqrstvwxyz",
				     id[i]) != NULL,
			      "'%c' in %s", id[i], id);
	ck_assert_int_eq(wl_id_new("", id), WL_OK);
	ck_assert_uint_eq(strlen(id), 26);
}
END_TEST

START_TEST(id_with_oversized_prefix_is_refused)
{
	char id[WL_ID_MAX];
	char prefix[WL_ID_MAX];

	memset(prefix, 'p', sizeof(prefix) - 1);
	prefix[sizeof(prefix) - 1] = '\0';
	ck_assert_int_ne(wl_id_new(prefix, id), WL_OK);
}
END_TEST

START_TEST(ids_differ)
{
	char a[WL_ID_MAX], b[WL_ID_MAX];

	ck_assert_int_eq(wl_id_new("x_", a), WL_OK);
	ck_assert_int_eq(wl_id_new("x_", b), WL_OK);
	ck_assert_str_ne(a, b);
}
END_TEST

/* Ids take their random part from a pool of the process's: a forked
 * child must not hand out what its parent will. */
START_TEST(ids_after_a_fork_differ_from_the_parents)
{
	char a[WL_ID_MAX], child[WL_ID_MAX] = "", parent[WL_ID_MAX];
	int fd[2], status;
	pid_t pid;

	ck_assert_int_eq(wl_id_new("x_", a), WL_OK); /* the pool is full */
	ck_assert_int_eq(pipe(fd), 0);
	ck_assert_int_ge(pid = fork(), 0);
	if (pid == 0) {
		if (wl_id_new("x_", child) != WL_OK ||
		    write(fd[1], child, strlen(child) + 1) < 0)
			_exit(1);
		_exit(0);
	}
	close(fd[1]);
	ck_assert_int_gt(read(fd[0], child, sizeof(child) - 1), 0);
	close(fd[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_int_eq(wl_id_new("x_", parent), WL_OK);
	/* The last 16 characters are 80 random bits. */
	ck_assert_uint_eq(strlen(child), strlen(parent));
	ck_assert_str_ne(child + strlen(child) - 16,
			 parent + strlen(parent) - 16);
}
END_TEST

START_TEST(ids_sort_in_time_order)
{
	char prev[WL_ID_MAX], next[WL_ID_MAX];
	int i;

	ck_assert_int_eq(wl_id_new("q_", prev), WL_OK);
	for (i = 0; i < 5; i++) {
		sleep_ms(2);
		ck_assert_int_eq(wl_id_new("q_", next), WL_OK);
		ck_assert_msg(strcmp(prev, next) < 0, "%s !< %s", prev, next);
		memcpy(prev, next, sizeof(prev));
	}
}
END_TEST

START_TEST(id_time_part_encodes_the_clock)
{
	char id[WL_ID_MAX];
	const char *alpha = "0123456789abcdefghjkmnpqrstvwxyz";
	int64_t before = wl_now_ms(), after, ms = 0;
	int i;

	ck_assert_int_eq(wl_id_new("", id), WL_OK);
	after = wl_now_ms();
	/* The first 10 characters hold 3 + 9 * 5 = 48 bits of time. */
	for (i = 0; i < 10; i++)
		ms = ms * 32 + (strchr(alpha, id[i]) - alpha);
	ck_assert_int_ge(ms, before);
	ck_assert_int_le(ms, after);
}
END_TEST

START_TEST(id_at_bounds_the_ids_made_before_and_after)
{
	char at[WL_ID_MAX], id[WL_ID_MAX], prev[WL_ID_MAX];
	int64_t now;

	ck_assert_int_eq(wl_id_new("dlv_", prev), WL_OK);
	sleep_ms(2);
	now = wl_now_ms();
	ck_assert_int_eq(wl_id_at("dlv_", now, at), WL_OK);
	ck_assert_int_eq(wl_id_new("dlv_", id), WL_OK);
	ck_assert_uint_eq(strlen(at), strlen(id));
	ck_assert_msg(strcmp(prev, at) < 0, "%s !< %s", prev, at);
	ck_assert_msg(strcmp(at, id) <= 0, "%s !<= %s", at, id);
	/* The time part only; the rest is all zeros. */
	ck_assert_str_eq(at + 14, "0000000000000000");
	ck_assert_int_eq(wl_id_at("dlv_", 0, at), WL_OK);
	ck_assert_str_eq(at, "dlv_00000000000000000000000000");
	ck_assert_int_eq(wl_id_at("dlv_", ((int64_t)1 << 48) - 1, at), WL_OK);
	ck_assert_str_eq(at, "dlv_7zzzzzzzzz0000000000000000");
}
END_TEST

START_TEST(b64url_round_trips_random_bytes)
{
	unsigned char in[40], back[40];
	char enc[4 * ((sizeof(in) + 2) / 3) + 1];
	size_t n, elen;
	long dlen;

	for (n = 0; n <= sizeof(in); n++) {
		ck_assert_int_eq(wl_random_bytes(in, n), WL_OK);
		elen = wl_b64url_encode(in, n, enc);
		ck_assert_uint_eq(elen, strlen(enc));
		ck_assert_uint_eq(elen, (n * 4 + 2) / 3);
		ck_assert_ptr_null(strchr(enc, '='));
		ck_assert_ptr_null(strchr(enc, '+'));
		ck_assert_ptr_null(strchr(enc, '/'));
		dlen = wl_b64url_decode(enc, elen, back, sizeof(back));
		ck_assert_int_eq(dlen, (long)n);
		ck_assert_int_eq(memcmp(in, back, n), 0);
	}
}
END_TEST

START_TEST(b64url_uses_the_url_alphabet)
{
	static const unsigned char in[] = {0xfb, 0xff, 0xbf};
	unsigned char back[3];
	char enc[5];

	wl_b64url_encode(in, sizeof(in), enc);
	ck_assert_str_eq(enc, "-_-_");
	ck_assert_int_eq(wl_b64url_decode("-_-_", 4, back, sizeof(back)), 3);
	ck_assert_int_eq(memcmp(back, in, 3), 0);
}
END_TEST

START_TEST(b64url_decode_refuses_bad_input)
{
	unsigned char out[16];

	/* Padding, the standard alphabet, impossible lengths. */
	ck_assert_int_eq(wl_b64url_decode("Zg==", 4, out, sizeof(out)), -1);
	ck_assert_int_eq(wl_b64url_decode("Zg=", 3, out, sizeof(out)), -1);
	ck_assert_int_eq(wl_b64url_decode("ab+c", 4, out, sizeof(out)), -1);
	ck_assert_int_eq(wl_b64url_decode("ab/c", 4, out, sizeof(out)), -1);
	ck_assert_int_eq(wl_b64url_decode("a", 1, out, sizeof(out)), -1);
	ck_assert_int_eq(wl_b64url_decode("abcde", 5, out, sizeof(out)), -1);
	/* Even when the stray character carries only zero bits. */
	ck_assert_int_eq(wl_b64url_decode("A", 1, out, sizeof(out)), -1);
	ck_assert_int_eq(wl_b64url_decode("AAAAA", 5, out, sizeof(out)), -1);
	ck_assert_int_eq(wl_b64url_decode("ab c", 4, out, sizeof(out)), -1);
	ck_assert_int_eq(wl_b64url_decode("ab\0c", 4, out, sizeof(out)), -1);
	/* "Zg" is the canonical "f"; "Zh" sets bits that do not exist. */
	ck_assert_int_eq(wl_b64url_decode("Zg", 2, out, sizeof(out)), 1);
	ck_assert_int_eq(out[0], 'f');
	ck_assert_int_eq(wl_b64url_decode("Zh", 2, out, sizeof(out)), -1);
	/* "Zm8" is the canonical "fo"; "Zm9" leaves a stray low bit. */
	ck_assert_int_eq(wl_b64url_decode("Zm8", 3, out, sizeof(out)), 2);
	ck_assert_int_eq(memcmp(out, "fo", 2), 0);
	ck_assert_int_eq(wl_b64url_decode("Zm9", 3, out, sizeof(out)), -1);
}
END_TEST

START_TEST(b64_decode_takes_padding_and_refuses_bad_input)
{
	unsigned char out[16];

	/* Padded or not, the standard alphabet only, canonical only. */
	ck_assert_int_eq(wl_b64_decode("Zg==", 4, out, sizeof(out)), 1);
	ck_assert_int_eq(out[0], 'f');
	ck_assert_int_eq(wl_b64_decode("Zg", 2, out, sizeof(out)), 1);
	ck_assert_int_eq(wl_b64_decode("+/+/", 4, out, sizeof(out)), 3);
	ck_assert_int_eq(out[0], 0xfb);
	ck_assert_int_eq(wl_b64_decode("-_-_", 4, out, sizeof(out)), -1);
	ck_assert_int_eq(wl_b64_decode("Zh==", 4, out, sizeof(out)), -1);
	ck_assert_int_eq(wl_b64_decode("A===", 4, out, sizeof(out)), -1);
	ck_assert_int_eq(wl_b64_decode("Zm9v", 4, out, 2), -1);
}
END_TEST

START_TEST(b64url_decode_respects_the_output_size)
{
	unsigned char out[3];

	ck_assert_int_eq(wl_b64url_decode("Zm9vYmFy", 8, out, 3), -1);
	ck_assert_int_eq(wl_b64url_decode("Zm9v", 4, out, 3), 3);
	ck_assert_int_eq(memcmp(out, "foo", 3), 0);
	ck_assert_int_eq(wl_b64url_decode("", 0, out, 0), 0);
}
END_TEST

START_TEST(b64_matches_rfc4648_vectors)
{
	static const char *const v[][2] = {
	    {"", ""},		{"f", "Zg=="},	   {"fo", "Zm8="},
	    {"foo", "Zm9v"},	{"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="},
	    {"foobar", "Zm9vYmFy"},
	};
	static const unsigned char hi[] = {0xfb, 0xff, 0xbf};
	char out[16];
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(*v); i++) {
		ck_assert_uint_eq(wl_b64_encode((const unsigned char *)v[i][0],
						strlen(v[i][0]), out),
				  strlen(v[i][1]));
		ck_assert_str_eq(out, v[i][1]);
	}
	wl_b64_encode(hi, sizeof(hi), out);
	ck_assert_str_eq(out, "+/+/");
}
END_TEST

START_TEST(sha256_matches_fips_vectors)
{
	unsigned char raw[32];
	char hex[65];

	wl_sha256_hex("abc", 3, hex);
	ck_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a3961"
			      "77a9cb410ff61f20015ad");
	wl_sha256_hex("", 0, hex);
	ck_assert_str_eq(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649"
			      "b934ca495991b7852b855");
	wl_sha256("abc", 3, raw);
	to_hex(raw, sizeof(raw), hex);
	ck_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a3961"
			      "77a9cb410ff61f20015ad");
}
END_TEST

START_TEST(hmac_sha256_matches_rfc4231_case_2)
{
	const char *msg = "what do ya want for nothing?";
	unsigned char mac[32];
	char hex[65];

	wl_hmac_sha256("Jefe", 4, msg, strlen(msg), mac);
	to_hex(mac, sizeof(mac), hex);
	ck_assert_str_eq(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2"
			      "739839dec58b964ec3843");
}
END_TEST

START_TEST(hmac_sha256_matches_rfc4231_case_1)
{
	unsigned char key[20], mac[32];
	char hex[65];

	memset(key, 0x0b, sizeof(key));
	wl_hmac_sha256(key, sizeof(key), "Hi There", 8, mac);
	to_hex(mac, sizeof(mac), hex);
	ck_assert_str_eq(hex, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9"
			      "833da726e9376c2e32cff7");
}
END_TEST

/* RFC 4231 case 6: a key longer than the block is hashed first. */
static const char case6[] = "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5"
			    "140546040f0ee37f54";

static void *
hmac_case6(void *out)
{
	const char *msg = "Test Using Larger Than Block-Size Key - Hash Key "
			  "First";
	unsigned char key[131], mac[32];

	memset(key, 0xaa, sizeof(key));
	wl_hmac_sha256(key, sizeof(key), msg, strlen(msg), mac);
	to_hex(mac, sizeof(mac), out);
	return out;
}

/* Each thread keeps one HMAC context and keys it anew for every MAC. */
START_TEST(hmac_sha256_takes_each_key_anew_in_every_thread)
{
	unsigned char key[20], mac[32];
	char hex[65], other[65] = "";
	pthread_t t;

	ck_assert_str_eq(hmac_case6(hex), case6);
	memset(key, 0x0b, sizeof(key));
	wl_hmac_sha256(key, sizeof(key), "Hi There", 8, mac);
	to_hex(mac, sizeof(mac), hex);
	ck_assert_str_eq(hex, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9"
			      "833da726e9376c2e32cff7");
	ck_assert_int_eq(pthread_create(&t, NULL, hmac_case6, other), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_str_eq(other, case6);
	ck_assert_str_eq(hmac_case6(hex), case6);
}
END_TEST

START_TEST(ct_equal_compares_bytes)
{
	ck_assert_int_eq(wl_ct_equal("abcdef", "abcdef", 6), 1);
	ck_assert_int_eq(wl_ct_equal("abcdef", "abcdeg", 6), 0);
	ck_assert_int_eq(wl_ct_equal("xbcdef", "abcdef", 6), 0);
	/* Only the first n bytes count. */
	ck_assert_int_eq(wl_ct_equal("abcX", "abcY", 3), 1);
	ck_assert_int_eq(wl_ct_equal("a", "b", 0), 1);
}
END_TEST

START_TEST(key_generate_gives_prefix_length_and_digest)
{
	char plain[64], plain2[64], digest[65], expect[65];
	size_t i;

	ck_assert_int_eq(wl_key_generate(plain, sizeof(plain), digest), WL_OK);
	ck_assert_int_eq(strncmp(plain, "wl_", 3), 0);
	ck_assert_uint_eq(strlen(plain), 3 + 43);
	for (i = 3; plain[i]; i++)
		ck_assert_msg(isalnum((unsigned char)plain[i]) ||
				  plain[i] == '-' || plain[i] == '_',
			      "'%c' in key", plain[i]);
	wl_sha256_hex(plain, strlen(plain), expect);
	ck_assert_str_eq(digest, expect);
	ck_assert_int_eq(wl_key_generate(plain2, sizeof(plain2), digest),
			 WL_OK);
	ck_assert_str_ne(plain, plain2);
}
END_TEST

START_TEST(scopes_parse_known_names_into_bits)
{
	unsigned mask = 99;

	ck_assert_int_eq(wl_scopes_parse("waitlist:read,webhooks:write", &mask),
			 0);
	ck_assert_uint_eq(mask, (1u << WL_SCOPE_WAITLIST_READ) |
				    (1u << WL_SCOPE_WEBHOOKS_WRITE));
	ck_assert_int_eq(wl_scopes_parse("waitlist:read,waitlist:write,"
					 "guest:read,events:read,"
					 "webhooks:read,webhooks:write,"
					 "analytics:read",
					 &mask),
			 0);
	ck_assert_uint_eq(mask, (1u << WL_SCOPE__MAX) - 1);
	ck_assert_int_eq(wl_scopes_parse(",,guest:read,", &mask), 0);
	ck_assert_uint_eq(mask, 1u << WL_SCOPE_GUEST_READ);
	ck_assert_int_eq(wl_scopes_parse("", &mask), 0);
	ck_assert_uint_eq(mask, 0);
}
END_TEST

START_TEST(scopes_parse_refuses_unknown_names)
{
	unsigned mask;

	ck_assert_int_eq(wl_scopes_parse("waitlist:read,admin", &mask), -1);
	ck_assert_int_eq(wl_scopes_parse("Waitlist:read", &mask), -1);
	/* No trimming: a space makes the name unknown. */
	ck_assert_int_eq(wl_scopes_parse("waitlist:read, guest:read", &mask),
			 -1);
}
END_TEST

START_TEST(split_list_drops_empty_items)
{
	char **v;
	size_t n;

	ck_assert_int_eq(wl_split_list(",a,,bc,", &v, &n), 2);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(v[0], "a");
	ck_assert_str_eq(v[1], "bc");
	wl_strv_free(v, n);
	ck_assert_int_eq(wl_split_list("", &v, &n), 0);
	ck_assert_uint_eq(n, 0);
	ck_assert_ptr_null(v);
	ck_assert_int_eq(wl_split_list(",,,", &v, &n), 0);
	ck_assert_ptr_null(v);
	ck_assert_int_eq(wl_split_list(NULL, &v, &n), 0);
	ck_assert_int_eq(wl_split_list(" x ", &v, &n), 1);
	ck_assert_str_eq(v[0], " x ");
	wl_strv_free(v, n);
}
END_TEST

Suite *
suite_crypto(void)
{
	Suite *s = suite_create("crypto");
	TCase *ti = tcase_create("id");
	TCase *tb = tcase_create("base64");
	TCase *td = tcase_create("digest");
	TCase *tk = tcase_create("keys");

	tcase_add_test(ti, id_keeps_prefix_and_has_26_crockford_chars);
	tcase_add_test(ti, id_with_oversized_prefix_is_refused);
	tcase_add_test(ti, ids_differ);
	tcase_add_test(ti, ids_after_a_fork_differ_from_the_parents);
	tcase_add_test(ti, ids_sort_in_time_order);
	tcase_add_test(ti, id_time_part_encodes_the_clock);
	tcase_add_test(ti, id_at_bounds_the_ids_made_before_and_after);
	suite_add_tcase(s, ti);
	tcase_add_test(tb, b64url_round_trips_random_bytes);
	tcase_add_test(tb, b64url_uses_the_url_alphabet);
	tcase_add_test(tb, b64url_decode_refuses_bad_input);
	tcase_add_test(tb, b64_decode_takes_padding_and_refuses_bad_input);
	tcase_add_test(tb, b64url_decode_respects_the_output_size);
	tcase_add_test(tb, b64_matches_rfc4648_vectors);
	suite_add_tcase(s, tb);
	tcase_add_test(td, sha256_matches_fips_vectors);
	tcase_add_test(td, hmac_sha256_matches_rfc4231_case_2);
	tcase_add_test(td, hmac_sha256_matches_rfc4231_case_1);
	tcase_add_test(td, hmac_sha256_takes_each_key_anew_in_every_thread);
	tcase_add_test(td, ct_equal_compares_bytes);
	suite_add_tcase(s, td);
	tcase_add_test(tk, key_generate_gives_prefix_length_and_digest);
	tcase_add_test(tk, scopes_parse_known_names_into_bits);
	tcase_add_test(tk, scopes_parse_refuses_unknown_names);
	tcase_add_test(tk, split_list_drops_empty_items);
	suite_add_tcase(s, tk);
	return s;
}
