/* Runs every unit suite; needs no server. */
#include "config.h"

#include <stdlib.h>

#include "tests.h"

int
main(void)
{
	SRunner *sr = srunner_create(suite_config());
	int failed;

	srunner_add_suite(sr, suite_booking());
	srunner_add_suite(sr, suite_crypto());
	srunner_add_suite(sr, suite_cursor());
	srunner_add_suite(sr, suite_json());
	srunner_add_suite(sr, suite_keycache());
	srunner_add_suite(sr, suite_log());
	srunner_add_suite(sr, suite_ratelimit());
	srunner_add_suite(sr, suite_router());
	srunner_add_suite(sr, suite_time());
	srunner_add_suite(sr, suite_webhook());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
