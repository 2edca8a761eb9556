#include "config.h"

#include "extern.h"
#include "tests.h"

START_TEST(placeholder_time)
{
	ck_assert_int_eq(1, 1);
}
END_TEST

Suite *
suite_time(void)
{
	Suite *s = suite_create("time");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, placeholder_time);
	suite_add_tcase(s, tc);
	return s;
}
