/*
 * Per-minute rate limits: counting within a window, the binding counter,
 * the answer's headers, sharing between processes and surviving a worker
 * that dies holding the lock.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/wait.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ratelimit.h"
#include "tests.h"



/* The start of a window: a multiple of 60000 ms. */
#define T0 1700000040000LL

/* One read by key k of tenant t, with no sharing between nodes. */
static int
take_read(struct wl_ratelimit *rl, const char *k, const char *t, long long kl,
          long long tl, int64_t now, struct wl_rl_result *r)
{
	return wl_ratelimit_take(rl, k, t, WL_RL_READ, kl, tl, 1, now, r);
}

START_TEST(reads_allow_exactly_the_limit_then_refuse)
{
	struct wl_ratelimit *rl = wl_ratelimit_new(64);
	struct wl_rl_result r;
	int i;

	ck_assert_ptr_nonnull(rl);
	for (i = 0; i < 5; i++) {
		ck_assert_int_eq(
		    take_read(rl, "key_a", "ten_a", 5, 0, T0 + i, &r), 1);
		ck_assert_int_eq(r.allowed, 1);
		ck_assert_int_eq(r.limit, 5);
		ck_assert_int_eq(r.remaining, 4 - i);
		ck_assert_int_eq(r.retry_after, 0);
	}
	ck_assert_int_eq(take_read(rl, "key_a", "ten_a", 5, 0, T0 + 5, &r), 0);
	ck_assert_int_eq(r.allowed, 0);
	ck_assert_int_eq(r.limit, 5);
	ck_assert_int_eq(r.remaining, 0);
	ck_assert_int_ge(r.retry_after, 1);
	wl_ratelimit_free(rl);
}
END_TEST

START_TEST(writes_are_counted_apart_from_reads)
{
	struct wl_ratelimit *rl = wl_ratelimit_new(64);
	struct wl_rl_result r;
	int i;

	for (i = 0; i < 3; i++)
		ck_assert_int_eq(take_read(rl, "key_a", "ten_a", 3, 3, T0, &r),
		                 1);
	ck_assert_int_eq(take_read(rl, "key_a", "ten_a", 3, 3, T0, &r), 0);
	for (i = 0; i < 3; i++) {
		ck_assert_int_eq(wl_ratelimit_take(rl, "key_a", "ten_a",
		                                   WL_RL_WRITE, 3, 3, 1, T0,
		                                   &r),
		                 1);
		ck_assert_int_eq(r.remaining, 2 - i);
	}
	ck_assert_int_eq(wl_ratelimit_take(rl, "key_a", "ten_a", WL_RL_WRITE, 3,
	                                   3, 1, T0, &r),
	                 0);
	ck_assert_int_eq(take_read(rl, "key_a", "ten_a", 3, 3, T0, &r), 0);
	wl_ratelimit_free(rl);
}
END_TEST

START_TEST(key_limit_binds_below_the_tenant_limit)
{
	struct wl_ratelimit *rl = wl_ratelimit_new(64);
	struct wl_rl_result r;
	int i;

	for (i = 0; i < 3; i++)
		ck_assert_int_eq(
		    take_read(rl, "key_a", "ten_a", 3, 100, T0, &r), 1);
	ck_assert_int_eq(take_read(rl, "key_a", "ten_a", 3, 100, T0, &r), 0);
	ck_assert_int_eq(r.tenant_bound, 0);
	ck_assert_int_eq(r.limit, 3);
	ck_assert_int_eq(r.remaining, 0);
	/* Another key of the tenant has its own key counter. */
	ck_assert_int_eq(take_read(rl, "key_b", "ten_a", 3, 100, T0, &r), 1);
	ck_assert_int_eq(r.remaining, 2);
	wl_ratelimit_free(rl);
}
END_TEST

START_TEST(keys_of_one_tenant_share_the_tenant_limit)
{
	struct wl_ratelimit *rl = wl_ratelimit_new(64);
	struct wl_rl_result r;

	ck_assert_int_eq(take_read(rl, "key_a", "ten_a", 10, 4, T0, &r), 1);
	ck_assert_int_eq(take_read(rl, "key_b", "ten_a", 10, 4, T0, &r), 1);
	ck_assert_int_eq(take_read(rl, "key_a", "ten_a", 10, 4, T0, &r), 1);
	ck_assert_int_eq(take_read(rl, "key_b", "ten_a", 10, 4, T0, &r), 1);
	ck_assert_int_eq(r.tenant_bound, 1);
	ck_assert_int_eq(r.remaining, 0);
	ck_assert_int_eq(take_read(rl, "key_a", "ten_a", 10, 4, T0, &r), 0);
	ck_assert_int_eq(r.tenant_bound, 1);
	ck_assert_int_eq(r.limit, 4);
	ck_assert_int_eq(take_read(rl, "key_b", "ten_a", 10, 4, T0, &r), 0);
	ck_assert_int_eq(take_read(rl, "key_c", "ten_a", 10, 4, T0, &r), 0);
	/* Another tenant is untouched. */
	ck_assert_int_eq(take_read(rl, "key_d", "ten_b", 10, 4, T0, &r), 1);
	ck_assert_int_eq(r.remaining, 3);
	wl_ratelimit_free(rl);
}
END_TEST

START_TEST(refused_request_consumes_nothing)
{
	struct wl_ratelimit *rl = wl_ratelimit_new(64);
	struct wl_rl_result r;
	int i;

	/* key_a: 2 of 2; ten_a: 2 of 5. */
	ck_assert_int_eq(take_read(rl, "key_a", "ten_a", 2, 5, T0, &r), 1);
	ck_assert_int_eq(take_read(rl, "key_a", "ten_a", 2, 5, T0, &r), 1);
	for (i = 0; i < 10; i++) {
		ck_assert_int_eq(take_read(rl, "key_a", "ten_a", 2, 5, T0, &r),
		                 0);
		ck_assert_int_eq(r.remaining, 0);
		ck_assert_int_eq(r.limit, 2);
	}
	/* The tenant counter still says 2 used: key_b gets exactly 3. */
	for (i = 0; i < 3; i++) {
		ck_assert_int_eq(take_read(rl, "key_b", "ten_a", 10, 5, T0, &r),
		                 1);
		ck_assert_int_eq(r.remaining, 2 - i);
		ck_assert_int_eq(r.tenant_bound, 1);
	}
	ck_assert_int_eq(take_read(rl, "key_b", "ten_a", 10, 5, T0, &r), 0);
	/* And key_b's own counter was not charged by its refusal. */
	ck_assert_int_eq(take_read(rl, "key_b", "ten_b", 10, 0, T0, &r), 1);
	ck_assert_int_eq(r.remaining, 10 - 4);
	wl_ratelimit_free(rl);
}
END_TEST

START_TEST(new_window_resets_the_counters)
{
	struct wl_ratelimit *rl = wl_ratelimit_new(64);
	struct wl_rl_result r;
	int i;

	for (i = 0; i < 2; i++)
		ck_assert_int_eq(take_read(rl, "key_a", "ten_a", 2, 2, T0, &r),
		                 1);
	ck_assert_int_eq(take_read(rl, "key_a", "ten_a", 2, 2, T0 + 59999, &r),
	                 0);
	ck_assert_int_eq(take_read(rl, "key_a", "ten_a", 2, 2, T0 + 60000, &r),
	                 1);
	ck_assert_int_eq(r.remaining, 1);
	ck_assert_int_eq(take_read(rl, "key_a", "ten_a", 2, 2, T0 + 60001, &r),
	                 1);
	ck_assert_int_eq(take_read(rl, "key_a", "ten_a", 2, 2, T0 + 60002, &r),
	                 0);
	wl_ratelimit_free(rl);
}
END_TEST

START_TEST(retry_after_is_the_seconds_to_the_window_end)
{
	struct wl_ratelimit *rl = wl_ratelimit_new(64);
	struct wl_rl_result r;

	ck_assert_int_eq(take_read(rl, "key_a", NULL, 1, 0, T0, &r), 1);
	ck_assert_int_eq(r.reset, 60);
	ck_assert_int_eq(r.retry_after, 0);
	ck_assert_int_eq(take_read(rl, "key_a", NULL, 1, 0, T0 + 15200, &r), 0);
	ck_assert_int_eq(r.retry_after, 45);
	ck_assert_int_eq(r.reset, 45);
	ck_assert_int_eq(take_read(rl, "key_a", NULL, 1, 0, T0 + 59000, &r), 0);
	ck_assert_int_eq(r.retry_after, 1);
	ck_assert_int_eq(take_read(rl, "key_a", NULL, 1, 0, T0 + 59999, &r), 0);
	ck_assert_int_eq(r.retry_after, 1);
	ck_assert_int_eq(r.reset, 1);
	wl_ratelimit_free(rl);
}
END_TEST

START_TEST(share_divides_the_limit_rounding_up)
{
	struct wl_ratelimit *rl = wl_ratelimit_new(64);
	struct wl_rl_result r;
	int i;

	for (i = 0; i < 3; i++)
		ck_assert_int_eq(wl_ratelimit_take(rl, "key_a", "ten_a",
		                                   WL_RL_READ, 5, 0, 2, T0, &r),
		                 1);
	ck_assert_int_eq(r.limit, 3);
	ck_assert_int_eq(wl_ratelimit_take(rl, "key_a", "ten_a", WL_RL_READ, 5,
	                                   0, 2, T0, &r),
	                 0);
	/* A limit smaller than the share still lets one through. */
	ck_assert_int_eq(wl_ratelimit_take(rl, "key_b", "ten_a", WL_RL_READ, 1,
	                                   0, 3, T0, &r),
	                 1);
	ck_assert_int_eq(r.limit, 1);
	ck_assert_int_eq(wl_ratelimit_take(rl, "key_b", "ten_a", WL_RL_READ, 1,
	                                   0, 3, T0, &r),
	                 0);
	/* The tenant limit is divided too. */
	ck_assert_int_eq(wl_ratelimit_take(rl, "key_c", "ten_c", WL_RL_READ, 0,
	                                   9, 4, T0, &r),
	                 1);
	ck_assert_int_eq(r.limit, 3);
	ck_assert_int_eq(r.tenant_bound, 1);
	wl_ratelimit_free(rl);
}
END_TEST

START_TEST(zero_or_negative_limit_is_unlimited)
{
	struct wl_ratelimit *rl = wl_ratelimit_new(64);
	struct wl_rl_result r;
	int i;

	for (i = 0; i < 1000; i++)
		ck_assert_int_eq(take_read(rl, "key_a", "ten_a", 0, -1, T0, &r),
		                 1);
	ck_assert_int_eq(r.limit, -1);
	ck_assert_int_eq(r.remaining, -1);
	/* An unlimited key under a limited tenant: the tenant binds. */
	ck_assert_int_eq(take_read(rl, "key_a", "ten_a", 0, 2, T0, &r), 1);
	ck_assert_int_eq(r.limit, 2);
	ck_assert_int_eq(r.tenant_bound, 1);
	ck_assert_int_eq(take_read(rl, "key_a", "ten_a", -5, 2, T0, &r), 1);
	ck_assert_int_eq(take_read(rl, "key_a", "ten_a", 0, 2, T0, &r), 0);
	/* No table at all: everything goes. */
	ck_assert_int_eq(take_read(NULL, "key_a", "ten_a", 1, 1, T0, &r), 1);
	wl_ratelimit_free(rl);
}
END_TEST

START_TEST(limit_and_remaining_follow_the_lowest_remaining)
{
	struct wl_ratelimit *rl = wl_ratelimit_new(64);
	struct wl_rl_result r;
	int i;

	/* The lower limit binds while both counters are fresh. */
	ck_assert_int_eq(take_read(rl, "key_a", "ten_a", 10, 3, T0, &r), 1);
	ck_assert_int_eq(r.limit, 3);
	ck_assert_int_eq(r.remaining, 2);
	ck_assert_int_eq(r.tenant_bound, 1);
	ck_assert_int_eq(take_read(rl, "key_b", "ten_b", 3, 10, T0, &r), 1);
	ck_assert_int_eq(r.limit, 3);
	ck_assert_int_eq(r.remaining, 2);
	ck_assert_int_eq(r.tenant_bound, 0);

	/* ten_c has 1 of 8 left after key_x; key_y's limit 5 is lower,
	 * yet the tenant is the counter closer to refusing. */
	for (i = 0; i < 6; i++)
		ck_assert_int_eq(
		    take_read(rl, "key_x", "ten_c", 100, 8, T0, &r), 1);
	ck_assert_int_eq(take_read(rl, "key_y", "ten_c", 5, 8, T0, &r), 1);
	ck_assert_int_eq(r.limit, 8);
	ck_assert_int_eq(r.remaining, 1);
	ck_assert_int_eq(r.tenant_bound, 1);
	wl_ratelimit_free(rl);
}
END_TEST

START_TEST(table_full_fails_open)
{
	struct wl_ratelimit *rl = wl_ratelimit_new(8);
	struct wl_rl_result r;
	char k[32];
	int i, refused = 0, open = 0;

	ck_assert_ptr_nonnull(rl);
	for (i = 0; i < 100; i++) {
		snprintf(k, sizeof(k), "key_%d", i);
		ck_assert_int_eq(take_read(rl, k, NULL, 1, 0, T0, &r), 1);
	}
	/* The first eight hold the slots and are enforced; the rest go. */
	for (i = 0; i < 100; i++) {
		snprintf(k, sizeof(k), "key_%d", i);
		if (take_read(rl, k, NULL, 1, 0, T0, &r) == 0) {
			ck_assert_int_lt(i, 8);
			refused++;
		} else {
			ck_assert_int_eq(r.limit, 1);
			ck_assert_int_eq(r.remaining, 1);
			open++;
		}
	}
	ck_assert_int_eq(refused, 8);
	ck_assert_int_eq(open, 92);
	/* A key and tenant pair where only one fits also fails open, with
	 * the lower limit reported whole. */
	ck_assert_int_eq(take_read(rl, "key_0", "ten_z", 1, 7, T0, &r), 1);
	ck_assert_int_eq(r.limit, 1);
	ck_assert_int_eq(r.remaining, 1);
	wl_ratelimit_free(rl);
}
END_TEST

START_TEST(stale_slots_are_reused_in_a_new_window)
{
	struct wl_ratelimit *rl = wl_ratelimit_new(4);
	struct wl_rl_result r;
	char k[32];
	int i, round, allowed, left;

	for (i = 0; i < 4; i++) {
		snprintf(k, sizeof(k), "key_%d", i);
		ck_assert_int_eq(take_read(rl, k, NULL, 2, 0, T0, &r), 1);
	}
	/* A full table, a minute later: old and new keys each get their own
	 * slot (no duplicates), and are enforced rather than let through. */
	for (round = 0; round < 3; round++) {
		allowed = round < 2;
		left = allowed ? 1 - round : 0;
		for (i = 2; i < 6; i++) {
			snprintf(k, sizeof(k), "key_%d", i);
			ck_assert_int_eq(
			    take_read(rl, k, NULL, 2, 0, T0 + 60000, &r),
			    allowed);
			ck_assert_int_eq(r.remaining, left);
		}
	}
	wl_ratelimit_free(rl);
}
END_TEST

START_TEST(overlong_id_fails_open_and_47_chars_fit)
{
	struct wl_ratelimit *rl = wl_ratelimit_new(64);
	struct wl_rl_result r;
	char id47[48], id60[61];

	memset(id47, 'a', 47);
	id47[47] = '\0';
	memset(id60, 'b', 60);
	id60[60] = '\0';
	ck_assert_int_eq(take_read(rl, id47, id47, 1, 1, T0, &r), 1);
	ck_assert_int_eq(r.remaining, 0);
	ck_assert_int_eq(take_read(rl, id47, id47, 1, 1, T0, &r), 0);
	ck_assert_int_eq(take_read(rl, id60, NULL, 1, 0, T0, &r), 1);
	ck_assert_int_eq(take_read(rl, id60, NULL, 1, 0, T0, &r), 1);
	ck_assert_int_eq(r.remaining, 1);
	wl_ratelimit_free(rl);
}
END_TEST

START_TEST(processes_share_one_counter_exactly)
{
	struct wl_ratelimit *rl = wl_ratelimit_new(1024);
	struct wl_rl_result r;
	int res[2], go[2], i, j, status;
	pid_t pid[4];
	long got, total = 0;
	char c;

	ck_assert_ptr_nonnull(rl);
	ck_assert_int_eq(pipe(res), 0);
	ck_assert_int_eq(pipe(go), 0);
	for (i = 0; i < 4; i++) {
		pid[i] = fork();
		ck_assert_int_ne(pid[i], -1);
		if (pid[i] != 0)
			continue;
		/* Child: wait for all to be forked, then race. */
		close(res[0]);
		close(go[1]);
		got = 0;
		if (read(go[0], &c, 1) != 0)
			_exit(2);
		for (j = 0; j < 1000; j++)
			got += wl_ratelimit_take(rl, "key_shared", "ten_shared",
			                         WL_RL_WRITE, 2500, 0, 1, T0,
			                         NULL);
		_exit(write(res[1], &got, sizeof(got)) == sizeof(got) ? 0 : 3);
	}
	close(res[1]);
	close(go[0]);
	close(go[1]);
	for (i = 0; i < 4; i++) {
		ck_assert_int_eq(read(res[0], &got, sizeof(got)), sizeof(got));
		total += got;
	}
	close(res[0]);
	for (i = 0; i < 4; i++) {
		ck_assert_int_eq(waitpid(pid[i], &status, 0), pid[i]);
		ck_assert(WIFEXITED(status));
		ck_assert_int_eq(WEXITSTATUS(status), 0);
	}
	ck_assert_int_eq(total, 2500);
	ck_assert_int_eq(wl_ratelimit_take(rl, "key_shared", "ten_shared",
	                                   WL_RL_WRITE, 2500, 0, 1, T0, &r),
	                 0);
	ck_assert_int_eq(r.remaining, 0);
	wl_ratelimit_free(rl);
}
END_TEST

START_TEST(worker_dying_with_the_lock_does_not_wedge_the_node)
{
	struct wl_ratelimit *rl = wl_ratelimit_new(64);
	struct wl_rl_result r;
	pid_t pid;
	int status;

	ck_assert_ptr_nonnull(rl);
	ck_assert_int_eq(take_read(rl, "key_a", "ten_a", 10, 0, T0, &r), 1);
	ck_assert_int_eq(r.remaining, 9);
	pid = fork();
	ck_assert_int_ne(pid, -1);
	if (pid == 0) {
		wl_ratelimit_test_lock_and_die(rl);
		_exit(2);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	/* Still counted, not failed open: the lock was recovered. */
	ck_assert_int_eq(take_read(rl, "key_a", "ten_a", 10, 0, T0, &r), 1);
	ck_assert_int_eq(r.remaining, 8);
	ck_assert_int_eq(take_read(rl, "key_a", "ten_a", 10, 0, T0, &r), 1);
	ck_assert_int_eq(r.remaining, 7);
	wl_ratelimit_free(rl);
}
END_TEST

START_TEST(half_a_million_takes_are_all_counted_and_their_cost_reported)
{
	struct wl_ratelimit *rl = wl_ratelimit_new(4096);
	struct wl_rl_result r;
	struct timespec a, b;
	char keys[64][16];
	const int n = 500000;
	double ns;
	int i, allowed = 0;

	ck_assert_ptr_nonnull(rl);
	for (i = 0; i < 64; i++)
		snprintf(keys[i], sizeof(keys[i]), "key_%02d", i);
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (i = 0; i < n; i++)
		allowed +=
		    wl_ratelimit_take(rl, keys[i & 63], "ten_bench", WL_RL_READ,
		                      LLONG_MAX, LLONG_MAX, 1, T0, &r);
	clock_gettime(CLOCK_MONOTONIC, &b);
	ns = ((double)(b.tv_sec - a.tv_sec) * 1e9 +
	      (double)(b.tv_nsec - a.tv_nsec)) /
	     n;
	/* Reported, not asserted: timing depends on the machine. */
	fprintf(stderr, "ratelimit: %.1f ns per take (key + tenant)\n", ns);
	ck_assert_int_eq(allowed, n);
	ck_assert_int_eq(r.remaining, LLONG_MAX - n);
	ck_assert_int_eq(r.tenant_bound, 1);
	wl_ratelimit_free(rl);
}
END_TEST

Suite *
suite_ratelimit(void)
{
	Suite *s = suite_create("ratelimit");
	TCase *tw = tcase_create("window");
	TCase *tb = tcase_create("binding");
	TCase *tt = tcase_create("table");
	TCase *tp = tcase_create("processes");

	tcase_add_test(tw, reads_allow_exactly_the_limit_then_refuse);
	tcase_add_test(tw, writes_are_counted_apart_from_reads);
	tcase_add_test(tw, refused_request_consumes_nothing);
	tcase_add_test(tw, new_window_resets_the_counters);
	tcase_add_test(tw, retry_after_is_the_seconds_to_the_window_end);
	suite_add_tcase(s, tw);
	tcase_add_test(tb, key_limit_binds_below_the_tenant_limit);
	tcase_add_test(tb, keys_of_one_tenant_share_the_tenant_limit);
	tcase_add_test(tb, share_divides_the_limit_rounding_up);
	tcase_add_test(tb, zero_or_negative_limit_is_unlimited);
	tcase_add_test(tb, limit_and_remaining_follow_the_lowest_remaining);
	suite_add_tcase(s, tb);
	tcase_add_test(tt, table_full_fails_open);
	tcase_add_test(tt, stale_slots_are_reused_in_a_new_window);
	tcase_add_test(tt, overlong_id_fails_open_and_47_chars_fit);
	tcase_add_test(tt, half_a_million_takes_are_all_counted_and_their_cost_reported);
	suite_add_tcase(s, tt);
	tcase_add_test(tp, processes_share_one_counter_exactly);
	tcase_add_test(tp, worker_dying_with_the_lock_does_not_wedge_the_node);
	suite_add_tcase(s, tp);
	return s;
}
