/*
 * Webhooks without a database: Standard Webhooks signatures, sealed
 * secrets, the retry schedule, Retry-After parsing and the destination
 * policy (DECISIONS "Webhooks", SPEC "Webhook delivery").
 */
#include "config.h"

#include <limits.h>
#include <stdlib.h>

#include "extern.h"
#include "tests.h"

/* ------------------------------------------------------------------ */
/* Signatures and secrets */

START_TEST(sign_matches_standard_webhooks_vector)
{
	static const char body[] = "{\"test\": 2432232314}";
	char out[64];

	ck_assert_int_eq(wl_webhook_sign("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
					 "msg_p5jXN8AQM9LWM0D4loKWxJek",
					 1614265330, body, strlen(body), out),
			 WL_OK);
	ck_assert_str_eq(out, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
}
END_TEST

START_TEST(sign_covers_exact_body_bytes_id_and_timestamp)
{
	static const char secret[] = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
	static const char body[] = "{\"test\": 2432232314}";
	char ref[64], out[64];
	size_t n = strlen(body);

	ck_assert_int_eq(wl_webhook_sign(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek",
					 1614265330, body, n, ref),
			 WL_OK);
	/* one byte less of the body */
	ck_assert_int_eq(wl_webhook_sign(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek",
					 1614265330, body, n - 1, out),
			 WL_OK);
	ck_assert_str_ne(out, ref);
	/* another timestamp */
	ck_assert_int_eq(wl_webhook_sign(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek",
					 1614265331, body, n, out),
			 WL_OK);
	ck_assert_str_ne(out, ref);
	/* another id */
	ck_assert_int_eq(wl_webhook_sign(secret, "msg_p5jXN8AQM9LWM0D4loKWxJeK",
					 1614265330, body, n, out),
			 WL_OK);
	ck_assert_str_ne(out, ref);
	/* the secret without its prefix is the same key */
	ck_assert_int_eq(wl_webhook_sign("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
					 "msg_p5jXN8AQM9LWM0D4loKWxJek",
					 1614265330, body, n, out),
			 WL_OK);
	ck_assert_str_eq(out, ref);
}
END_TEST

START_TEST(sign_refuses_malformed_secret)
{
	char out[64];

	ck_assert_int_ne(wl_webhook_sign("whsec_not*base64!", "msg_1", 1, "{}",
					 2, out),
			 WL_OK);
	ck_assert_int_ne(wl_webhook_sign("whsec_", "msg_1", 1, "{}", 2, out),
			 WL_OK);
}
END_TEST

START_TEST(whsec_new_is_prefix_and_base64_of_32_bytes)
{
	char a[64], b[64];
	unsigned char raw[64];

	ck_assert_int_eq(wl_whsec_new(a), WL_OK);
	ck_assert_int_eq(wl_whsec_new(b), WL_OK);
	ck_assert_int_eq(strncmp(a, "whsec_", 6), 0);
	ck_assert_uint_eq(strlen(a), 6 + 44);
	ck_assert_int_eq(a[6 + 43], '=');
	ck_assert_int_eq(wl_b64_decode(a + 6, 44, raw, sizeof(raw)), 32);
	ck_assert_str_ne(a, b);
}
END_TEST

START_TEST(seal_open_round_trip)
{
	unsigned char server[WL_SECRET_LEN];
	char secret[64], sealed[WL_SEALED_MAX], sealed2[WL_SEALED_MAX],
	    plain[160];

	memset(server, 0x42, sizeof(server));
	ck_assert_int_eq(wl_whsec_new(secret), WL_OK);
	ck_assert_int_eq(wl_secret_seal(server, secret, sealed), WL_OK);
	ck_assert_ptr_null(strstr(sealed, secret + 6));
	ck_assert_int_eq(wl_secret_open(server, sealed, plain), WL_OK);
	ck_assert_str_eq(plain, secret);
	/* a fresh nonce each time */
	ck_assert_int_eq(wl_secret_seal(server, secret, sealed2), WL_OK);
	ck_assert_str_ne(sealed, sealed2);
	ck_assert_int_eq(wl_secret_open(server, sealed2, plain), WL_OK);
	ck_assert_str_eq(plain, secret);
}
END_TEST

START_TEST(tampered_sealed_secret_does_not_open)
{
	unsigned char server[WL_SECRET_LEN], other[WL_SECRET_LEN];
	char sealed[WL_SEALED_MAX], bad[WL_SEALED_MAX], plain[160];
	size_t i, n;

	memset(server, 0x42, sizeof(server));
	memset(other, 0x43, sizeof(other));
	ck_assert_int_eq(wl_secret_seal(server, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
					sealed),
			 WL_OK);
	n = strlen(sealed);
	/* every position (nonce, ciphertext, tag) is covered */
	for (i = 0; i < n && sealed[i] != '='; i++) {
		strcpy(bad, sealed);
		bad[i] = bad[i] == 'A' ? 'B' : 'A';
		ck_assert_msg(wl_secret_open(server, bad, plain) != WL_OK,
			      "a change at %zu went unnoticed", i);
	}
	/* truncated */
	strcpy(bad, sealed);
	bad[n / 2] = '\0';
	ck_assert_int_ne(wl_secret_open(server, bad, plain), WL_OK);
	/* another server secret */
	ck_assert_int_ne(wl_secret_open(other, sealed, plain), WL_OK);
	/* not base64 */
	ck_assert_int_ne(wl_secret_open(server, "*** not sealed ***", plain),
			 WL_OK);
	ck_assert_int_ne(wl_secret_open(server, "", plain), WL_OK);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Retry schedule */

static struct wl_config *
cfg_new(const char *text)
{
	char err[256] = "";
	struct wl_config *c = wl_config_parse(text, err, sizeof(err));

	ck_assert_msg(c != NULL, "config: %s", err);
	return c;
}

/* The production schedule: base 30 s, cap one hour. */
static struct wl_config *
cfg_prod(void)
{
	struct wl_config *c = cfg_new("");

	c->retry_base_seconds = 30;
	c->retry_cap_seconds = 3600;
	return c;
}

static int64_t
ceiling_ms(int attempt)
{
	int64_t top = 30000;
	int i;

	for (i = 1; i < attempt && top < 3600000; i++)
		top *= 2;
	return top > 3600000 ? 3600000 : top;
}

START_TEST(backoff_stays_within_full_jitter_bounds)
{
	struct wl_config *c = cfg_prod();
	static const unsigned fixed[] = {0,	  1,	      999,
					 1000,	  29999,      30000,
					 30001,	  123456789u, UINT_MAX / 2,
					 UINT_MAX - 1, UINT_MAX};
	unsigned seed = 12345, r;
	int attempt, i;
	int64_t d;

	for (attempt = 1; attempt <= 40; attempt++) {
		for (i = 0; i < (int)(sizeof(fixed) / sizeof(*fixed)) + 200;
		     i++) {
			if (i < (int)(sizeof(fixed) / sizeof(*fixed)))
				r = fixed[i];
			else
				r = seed = seed * 1103515245u + 12345u;
			d = wl_backoff_ms(c, attempt, -1, r);
			ck_assert_msg(d >= 1000 && d <= ceiling_ms(attempt),
				      "attempt %d random %u: %lld ms outside "
				      "[1000, %lld]",
				      attempt, r, (long long)d,
				      (long long)ceiling_ms(attempt));
		}
	}
	wl_config_free(c);
}
END_TEST

START_TEST(backoff_random_zero_is_one_second)
{
	struct wl_config *c = cfg_prod();
	int attempt;

	for (attempt = 1; attempt <= 40; attempt++)
		ck_assert_int_eq(wl_backoff_ms(c, attempt, -1, 0), 1000);
	wl_config_free(c);
}
END_TEST

START_TEST(backoff_grows_exponentially_to_the_cap)
{
	struct wl_config *c = cfg_prod();
	int attempt;

	/* the top of the jitter range is reachable and doubles */
	for (attempt = 1; attempt <= 40; attempt++)
		ck_assert_int_eq(wl_backoff_ms(c, attempt, -1,
					       (unsigned)ceiling_ms(attempt)),
				 ceiling_ms(attempt));
	ck_assert_int_eq(ceiling_ms(1), 30000);
	ck_assert_int_eq(ceiling_ms(2), 60000);
	ck_assert_int_eq(ceiling_ms(7), 1920000);
	ck_assert_int_eq(ceiling_ms(8), 3600000);
	wl_config_free(c);
}
END_TEST

START_TEST(backoff_never_exceeds_the_cap)
{
	struct wl_config *c = cfg_prod();
	unsigned r;

	for (r = UINT_MAX - 5000; r != 0; r++) {
		ck_assert_int_le(wl_backoff_ms(c, 40, -1, r), 3600000);
		ck_assert_int_le(wl_backoff_ms(c, 32, -1, r), 3600000);
		ck_assert_int_le(wl_backoff_ms(c, INT_MAX, -1, r), 3600000);
	}
	ck_assert_int_le(wl_backoff_ms(c, 40, -1, UINT_MAX), 3600000);
	ck_assert_int_le(wl_backoff_ms(c, 1, -1, UINT_MAX), 30000);
	wl_config_free(c);
}
END_TEST

START_TEST(backoff_follows_the_configured_schedule)
{
	/* the local stack: base 1 s, cap 10 s */
	struct wl_config *c = cfg_new("[webhooks]\nretry_base_seconds = 1\n"
				      "retry_cap_seconds = 10\n");
	unsigned r;

	for (r = 0; r < 50000; r += 7) {
		ck_assert_int_le(wl_backoff_ms(c, 1, -1, r), 1000);
		ck_assert_int_le(wl_backoff_ms(c, 3, -1, r), 4000);
		ck_assert_int_le(wl_backoff_ms(c, 30, -1, r), 10000);
		ck_assert_int_ge(wl_backoff_ms(c, 30, -1, r), 1000);
	}
	ck_assert_int_eq(wl_backoff_ms(c, 30, -1, 10000), 10000);
	wl_config_free(c);
}
END_TEST

START_TEST(backoff_honours_retry_after_capped_at_an_hour)
{
	struct wl_config *c = cfg_prod();

	ck_assert_int_eq(wl_backoff_ms(c, 1, 120, 0), 120000);
	ck_assert_int_eq(wl_backoff_ms(c, 1, 120, UINT_MAX), 120000);
	ck_assert_int_eq(wl_backoff_ms(c, 5, 3600, 77), 3600000);
	ck_assert_int_eq(wl_backoff_ms(c, 1, 3601, 77), 3600000);
	ck_assert_int_eq(wl_backoff_ms(c, 1, 99999, 77), 3600000);
	ck_assert_int_eq(wl_backoff_ms(c, 1, 100000000, 77), 3600000);
	ck_assert_int_eq(wl_backoff_ms(c, 1, 0, 77), 1000);
	ck_assert_int_eq(wl_backoff_ms(c, 1, 1, 77), 1000);
	/* the hour cap holds even when the configured backoff cap is lower */
	c->retry_cap_seconds = 10;
	c->retry_base_seconds = 1;
	ck_assert_int_eq(wl_backoff_ms(c, 1, 120, 0), 120000);
	ck_assert_int_eq(wl_backoff_ms(c, 1, 99999, 0), 3600000);
	wl_config_free(c);
}
END_TEST

START_TEST(retry_after_parses_seconds_and_dates)
{
	/* Wed, 21 Oct 2015 07:28:00 GMT */
	const int64_t at = 1445412480LL * 1000;

	ck_assert_int_eq(wl_retry_after_parse("120", at), 120);
	ck_assert_int_eq(wl_retry_after_parse(" 7 ", at), 7);
	ck_assert_int_eq(wl_retry_after_parse("0", at), 0);
	ck_assert_int_eq(wl_retry_after_parse("7\r\n", at), 7);
	ck_assert_int_eq(wl_retry_after_parse("Wed, 21 Oct 2015 07:28:00 GMT",
					      at - 60000),
			 60);
	ck_assert_int_eq(wl_retry_after_parse(" Wed, 21 Oct 2015 07:28:00 GMT\r\n",
					      at - 60000),
			 60);
	/* a date in the past: retry at once */
	ck_assert_int_eq(wl_retry_after_parse("Wed, 21 Oct 2015 07:28:00 GMT",
					      at + 3600000),
			 0);
	ck_assert_int_eq(wl_retry_after_parse("Wed, 21 Oct 2015 07:28:00 GMT",
					      at),
			 0);
}
END_TEST

START_TEST(retry_after_refuses_garbage)
{
	ck_assert_int_eq(wl_retry_after_parse("", 0), -1);
	ck_assert_int_eq(wl_retry_after_parse("   ", 0), -1);
	ck_assert_int_eq(wl_retry_after_parse("soon", 0), -1);
	ck_assert_int_eq(wl_retry_after_parse(NULL, 0), -1);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Destinations */

START_TEST(private_addresses_are_private)
{
	static const char *const private[] = {
	    "10.0.0.1",	      "10.255.255.255", "172.16.0.1",
	    "172.31.255.254", "192.168.1.1",	"127.0.0.1",
	    "127.8.9.10",     "169.254.169.254", "100.64.0.1",
	    "100.127.255.255", "0.0.0.0",	"::1",
	    "::",	      "fc00::1",	"fd12:3456::1",
	    "fe80::1",	      "febf::1",	"::ffff:127.0.0.1",
	    "::ffff:10.1.2.3", "::ffff:192.168.0.1",
	    /* unparseable counts as private */
	    "",		      "garbage",	"256.1.1.1",
	    "10.0.0",	      "localhost",	"1.2.3.4.5",
	    NULL};
	size_t i;

	for (i = 0; private[i]; i++)
		ck_assert_msg(wl_addr_private(private[i]),
			      "%s should count as private", private[i]);
}
END_TEST

START_TEST(public_addresses_are_public)
{
	static const char *const public[] = {
	    "8.8.8.8",	   "1.1.1.1",	   "172.32.0.1",   "172.15.255.255",
	    "192.169.0.1", "100.128.0.1",  "100.63.255.255", "11.0.0.1",
	    "2001:4860:4860::8888", "2606:4700:4700::1111",
	    "::ffff:8.8.8.8", NULL};
	size_t i;

	for (i = 0; public[i]; i++)
		ck_assert_msg(!wl_addr_private(public[i]),
			      "%s should count as public", public[i]);
}
END_TEST

START_TEST(host_list_matches_exactly_and_subdomains)
{
	ck_assert(wl_host_listed("hooks.example.com", "hooks.example.com"));
	ck_assert(wl_host_listed("a.test, hooks.example.com", "hooks.example.com"));
	ck_assert(wl_host_listed(" a.test , hooks.example.com ", "a.test"));
	ck_assert(wl_host_listed("hooks.example.com", "HOOKS.Example.COM"));
	ck_assert(!wl_host_listed("hooks.example.com", "example.com"));
	ck_assert(!wl_host_listed("hooks.example.com", "x.hooks.example.com"));
	ck_assert(!wl_host_listed("hooks.example.com", "hooks.example.com.evil.com"));
	ck_assert(!wl_host_listed("", "hooks.example.com"));
	ck_assert(!wl_host_listed(NULL, "hooks.example.com"));

	ck_assert(wl_host_listed("*.zapier.com", "hooks.zapier.com"));
	ck_assert(wl_host_listed("*.zapier.com", "a.b.zapier.com"));
	ck_assert(wl_host_listed("*.zapier.com", "HOOKS.ZAPIER.COM"));
	ck_assert(!wl_host_listed("*.zapier.com", "zapier.com.evil.com"));
	ck_assert(!wl_host_listed("*.zapier.com", "evilzapier.com"));
	ck_assert(wl_host_listed(".zapier.com", "hooks.zapier.com"));
	ck_assert(!wl_host_listed(".zapier.com", "zapier.com.evil.com"));
	ck_assert(!wl_host_listed(".zapier.com", "evilzapier.com"));
}
END_TEST

/* allowed_hosts names hosts that need no DNS to be refused. */
static struct wl_config *
cfg_dest(void)
{
	return cfg_new("[webhooks]\n"
		       "allowed_hosts = hooks.example.com, 10.0.0.5\n"
		       "insecure_hosts = 127.0.0.1, ::1\n"
		       "zapier_hosts = hooks.zapier.com\n");
}

/* Refused for a key of type t, with a reason that names want ("": any). */
static void
refused_for(const struct wl_config *c, enum wl_itype t, const char *url,
	    const char *want)
{
	char host[256], why[256] = "";

	ck_assert_msg(wl_dest_check(c, t, url, host, sizeof(host), why,
				    sizeof(why)) < 0,
		      "%s was accepted", url);
	ck_assert_msg(why[0] != '\0', "%s refused without a reason", url);
	ck_assert_msg(strstr(why, want) != NULL, "%s refused for: %s", url,
		      why);
}

static void
refused(const struct wl_config *c, enum wl_itype t, const char *url)
{
	refused_for(c, t, url, "");
}

START_TEST(destination_refusals)
{
	struct wl_config *c = cfg_dest();

	/* plain http to a host that is not insecure-allowed */
	refused(c, WL_ITYPE_API, "http://hooks.example.com/x");
	/* other schemes */
	refused(c, WL_ITYPE_API, "ftp://hooks.example.com/x");
	/* not in allowed_hosts */
	refused(c, WL_ITYPE_API, "https://other.example.com/x");
	refused(c, WL_ITYPE_API, "https://hooks.example.com.evil.com/x");
	refused(c, WL_ITYPE_API, "https://example.com/x");
	/* a Zapier connection may only reach Zapier's hosts */
	refused(c, WL_ITYPE_ZAPIER, "https://hooks.example.com/x");
	refused(c, WL_ITYPE_ZAPIER, "http://127.0.0.1:9/x");
	/* credentials in the URL */
	refused(c, WL_ITYPE_API, "https://user:pw@hooks.example.com/x");
	refused(c, WL_ITYPE_API, "https://user@hooks.example.com/x");
	refused(c, WL_ITYPE_API, "http://user:pw@127.0.0.1:9/x");
	/* port 0, where nothing can be reached; ports past 65535 */
	refused_for(c, WL_ITYPE_API, "http://127.0.0.1:0/x", "port");
	refused_for(c, WL_ITYPE_API, "http://127.0.0.1:000/x", "port");
	refused(c, WL_ITYPE_API, "http://127.0.0.1:65536/x");
	/* not a URL */
	refused(c, WL_ITYPE_API, "not a url");
	refused(c, WL_ITYPE_API, "");
	refused(c, WL_ITYPE_API, "hooks.example.com/x");
	/* an allowed host on a private address (numeric: no DNS) */
	refused(c, WL_ITYPE_API, "https://10.0.0.5/x");
	/* a private address that is not allowed at all */
	refused(c, WL_ITYPE_API, "http://10.0.0.6/x");
	wl_config_free(c);
}
END_TEST

START_TEST(destination_insecure_loopback_is_accepted)
{
	struct wl_config *c = cfg_dest();
	char host[256], why[256] = "";

	ck_assert_msg(wl_dest_check(c, WL_ITYPE_API, "http://127.0.0.1:9/x",
				    host, sizeof(host), why, sizeof(why)) == 0,
		      "refused: %s", why);
	ck_assert_str_eq(host, "127.0.0.1");
	ck_assert_msg(wl_dest_check(c, WL_ITYPE_API, "http://[::1]:9/hook",
				    host, sizeof(host), why, sizeof(why)) == 0,
		      "refused: %s", why);
	ck_assert_str_eq(host, "::1");
	ck_assert_msg(wl_dest_check(c, WL_ITYPE_API, "http://127.0.0.1:65535/x",
				    host, sizeof(host), why, sizeof(why)) == 0,
		      "refused: %s", why);
	wl_config_free(c);
}
END_TEST

START_TEST(delivery_address_check_follows_insecure_flag)
{
	struct wl_send s;

	memset(&s, 0, sizeof(s));
	ck_assert(!wl_deliver_address_ok(&s, "127.0.0.1"));
	ck_assert(!wl_deliver_address_ok(&s, "10.1.2.3"));
	ck_assert(!wl_deliver_address_ok(&s, "::ffff:169.254.169.254"));
	ck_assert(wl_deliver_address_ok(&s, "8.8.8.8"));
	s.insecure_ok = 1;
	ck_assert(wl_deliver_address_ok(&s, "127.0.0.1"));
}
END_TEST

START_TEST(held_subscriptions_match_whole_ids_only)
{
	const char *held = "whs_ab,whs_abc,whs_x";

	ck_assert(wl_deliver_held(held, "whs_ab"));
	ck_assert(wl_deliver_held(held, "whs_abc"));
	ck_assert(wl_deliver_held(held, "whs_x"));
	ck_assert(!wl_deliver_held(held, "whs_a"));
	ck_assert(!wl_deliver_held(held, "whs_abcd"));
	ck_assert(!wl_deliver_held(held, "hs_x"));
	ck_assert(!wl_deliver_held(held, ""));
	ck_assert(!wl_deliver_held(held, NULL));
	ck_assert(!wl_deliver_held("", "whs_ab"));
	ck_assert(wl_deliver_held("whs_b", "whs_b"));
}
END_TEST

Suite *
suite_webhook(void)
{
	Suite *s = suite_create("webhook");
	TCase *tc = tcase_create("signing");

	tcase_add_test(tc, sign_matches_standard_webhooks_vector);
	tcase_add_test(tc, sign_covers_exact_body_bytes_id_and_timestamp);
	tcase_add_test(tc, sign_refuses_malformed_secret);
	tcase_add_test(tc, whsec_new_is_prefix_and_base64_of_32_bytes);
	tcase_add_test(tc, seal_open_round_trip);
	tcase_add_test(tc, tampered_sealed_secret_does_not_open);
	suite_add_tcase(s, tc);

	tc = tcase_create("retry");
	tcase_add_test(tc, backoff_stays_within_full_jitter_bounds);
	tcase_add_test(tc, backoff_random_zero_is_one_second);
	tcase_add_test(tc, backoff_grows_exponentially_to_the_cap);
	tcase_add_test(tc, backoff_never_exceeds_the_cap);
	tcase_add_test(tc, backoff_follows_the_configured_schedule);
	tcase_add_test(tc, backoff_honours_retry_after_capped_at_an_hour);
	tcase_add_test(tc, retry_after_parses_seconds_and_dates);
	tcase_add_test(tc, retry_after_refuses_garbage);
	suite_add_tcase(s, tc);

	tc = tcase_create("destinations");
	tcase_add_test(tc, private_addresses_are_private);
	tcase_add_test(tc, public_addresses_are_public);
	tcase_add_test(tc, host_list_matches_exactly_and_subdomains);
	tcase_add_test(tc, destination_refusals);
	tcase_add_test(tc, destination_insecure_loopback_is_accepted);
	tcase_add_test(tc, delivery_address_check_follows_insecure_flag);
	tcase_add_test(tc, held_subscriptions_match_whole_ids_only);
	suite_add_tcase(s, tc);
	return s;
}
