/* The Check suites of libwaitlist; each check_<module>.c exports one. */
#ifndef WL_TESTS_H
#define WL_TESTS_H

#include <check.h>

Suite *suite_booking(void);
Suite *suite_config(void);
Suite *suite_crypto(void);
Suite *suite_cursor(void);
Suite *suite_json(void);
Suite *suite_keycache(void);
Suite *suite_log(void);
Suite *suite_ratelimit(void);
Suite *suite_router(void);
Suite *suite_time(void);
Suite *suite_webhook(void);

#endif
