/*
 * The pagination cursor codec: opaque, tamper-evident, bound to the
 * route, the tenant and the filters.
 */
#include "config.h"

#include <stdlib.h>

#include "extern.h"
#include "tests.h"

static struct wl_app app;
static struct wl_ctx ctx;

static void
setup(void)
{
	memset(&app, 0, sizeof(app));
	memset(&ctx, 0, sizeof(ctx));
	memset(app.secret, 0x5a, sizeof(app.secret));
	ctx.app = &app;
	ctx.route = 3;
	snprintf(ctx.key.tenant.id, sizeof(ctx.key.tenant.id), "ten_a");
}

static void
teardown(void)
{
}

START_TEST(a_cursor_round_trips_its_position)
{
	char cur[WL_CURSOR_BUF], pos[128];

	ck_assert_int_eq(wl_cursor_encode(&ctx, "status=x", "1700|ent_9", cur),
			 WL_OK);
	ck_assert_ptr_null(strchr(cur, '='));
	ck_assert_ptr_null(strchr(cur, '+'));
	ck_assert_int_eq(wl_cursor_decode(&ctx, "status=x", cur, pos,
					  sizeof(pos)),
			 0);
	ck_assert_str_eq(pos, "1700|ent_9");
}
END_TEST

START_TEST(a_tampered_cursor_is_refused)
{
	char cur[WL_CURSOR_BUF], pos[128];
	size_t i, n;

	ck_assert_int_eq(wl_cursor_encode(&ctx, "", "biz_1", cur), WL_OK);
	n = strlen(cur);
	for (i = 0; i < n; i++) {
		char saved = cur[i];
		cur[i] = saved == 'A' ? 'B' : 'A';
		ck_assert_int_eq(wl_cursor_decode(&ctx, "", cur, pos,
						  sizeof(pos)),
				 -1);
		cur[i] = saved;
	}
	cur[n - 1] = '\0';
	ck_assert_int_eq(wl_cursor_decode(&ctx, "", cur, pos, sizeof(pos)), -1);
}
END_TEST

START_TEST(a_cursor_is_bound_to_route_tenant_and_filters)
{
	char cur[WL_CURSOR_BUF], pos[128];

	ck_assert_int_eq(wl_cursor_encode(&ctx, "businessId=b1", "que_1", cur),
			 WL_OK);
	ck_assert_int_eq(wl_cursor_decode(&ctx, "businessId=b2", cur, pos,
					  sizeof(pos)),
			 -1);
	ctx.route = 4;
	ck_assert_int_eq(wl_cursor_decode(&ctx, "businessId=b1", cur, pos,
					  sizeof(pos)),
			 -1);
	ctx.route = 3;
	snprintf(ctx.key.tenant.id, sizeof(ctx.key.tenant.id), "ten_b");
	ck_assert_int_eq(wl_cursor_decode(&ctx, "businessId=b1", cur, pos,
					  sizeof(pos)),
			 -1);
	snprintf(ctx.key.tenant.id, sizeof(ctx.key.tenant.id), "ten_a");
	memset(app.secret, 0x33, sizeof(app.secret));
	ck_assert_int_eq(wl_cursor_decode(&ctx, "businessId=b1", cur, pos,
					  sizeof(pos)),
			 -1);
}
END_TEST

START_TEST(garbage_empty_and_overlong_cursors_are_refused)
{
	char big[1100], pos[128];

	memset(big, 'A', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	ck_assert_int_eq(wl_cursor_decode(&ctx, "", big, pos, sizeof(pos)), -1);
	ck_assert_int_eq(wl_cursor_decode(&ctx, "", "", pos, sizeof(pos)), -1);
	ck_assert_int_eq(wl_cursor_decode(&ctx, "", "not a cursor!", pos,
					  sizeof(pos)),
			 -1);
	ck_assert_int_eq(wl_cursor_decode(&ctx, "", "AAAA", pos, sizeof(pos)),
			 -1);
}
END_TEST

START_TEST(a_position_too_long_for_the_caller_is_refused)
{
	char cur[WL_CURSOR_BUF], pos[4];

	ck_assert_int_eq(wl_cursor_encode(&ctx, "", "ent_123456", cur), WL_OK);
	ck_assert_int_eq(wl_cursor_decode(&ctx, "", cur, pos, sizeof(pos)), -1);
}
END_TEST

Suite *
suite_cursor(void)
{
	Suite *s = suite_create("cursor");
	TCase *tc = tcase_create("codec");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, a_cursor_round_trips_its_position);
	tcase_add_test(tc, a_tampered_cursor_is_refused);
	tcase_add_test(tc, a_cursor_is_bound_to_route_tenant_and_filters);
	tcase_add_test(tc, garbage_empty_and_overlong_cursors_are_refused);
	tcase_add_test(tc, a_position_too_long_for_the_caller_is_refused);
	suite_add_tcase(s, tc);
	return s;
}
