/*
 * The key epoch that lets waitlistctl tell a node's workers to drop their
 * cached lookups (lib/keycache.c), and the holder count of the results the
 * cache hands out; the lookups themselves are tested through the stack
 * (t/integration/auth.test.mjs, entries.test.mjs).
 */
#include "config.h"

#include <sys/stat.h>

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "extern.h"
#include "tests.h"

static char dir[64], sock[128], epoch[128];

/* A configuration whose FastCGI socket is in a new directory. */
static struct wl_config *
config_in_temp_dir(unsigned seconds)
{
	struct wl_config *c;
	char text[256], err[256];

	snprintf(dir, sizeof(dir), "/tmp/wl_check_keycache_XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(sock, sizeof(sock), "%s/fcgi.sock", dir);
	snprintf(epoch, sizeof(epoch), "%s/keys.epoch", dir);
	snprintf(text, sizeof(text),
	         "[server]\nfcgi_socket = %s\nkey_cache_seconds = %u\n", sock,
	         seconds);
	ck_assert_ptr_nonnull(c = wl_config_parse(text, err, sizeof(err)));
	return c;
}

static uint64_t
epoch_value(void)
{
	uint64_t v = 0;
	int fd;

	ck_assert_int_ge(fd = open(epoch, O_RDONLY), 0);
	ck_assert_int_eq(pread(fd, &v, sizeof(v), 0), sizeof(v));
	close(fd);
	return v;
}

START_TEST(a_worker_creates_the_epoch_and_changes_add_one)
{
	struct wl_config *c = config_in_temp_dir(1);
	struct wl_keycache *kc;

	/* Before any worker: nothing to tell, and no file is made. */
	ck_assert_int_eq(wl_keys_changed(c), WL_OK);
	ck_assert_int_ne(access(epoch, F_OK), 0);
	/* A socket without the file: this is not the service's directory,
	 * or the file was removed; the change cannot be told. */
	ck_assert_int_eq(close(open(sock, O_CREAT | O_WRONLY, 0600)), 0);
	ck_assert_int_eq(wl_keys_changed(c), WL_ERR_IO);
	unlink(sock);
	ck_assert_ptr_nonnull(kc = wl_keycache_new(c));
	ck_assert_uint_eq(epoch_value(), 0);
	ck_assert_int_eq(wl_keys_changed(c), WL_OK);
	ck_assert_int_eq(wl_keys_changed(c), WL_OK);
	ck_assert_uint_eq(epoch_value(), 2);
	/* A second worker maps the same counter. */
	wl_keycache_free(wl_keycache_new(c));
	ck_assert_uint_eq(epoch_value(), 2);
	wl_keycache_free(kc);
	unlink(epoch);
	rmdir(dir);
	wl_config_free(c);
}
END_TEST

START_TEST(zero_seconds_caches_nothing)
{
	struct wl_config *c = config_in_temp_dir(0);

	ck_assert_ptr_null(wl_keycache_new(c));
	ck_assert_int_ne(access(epoch, F_OK), 0);
	rmdir(dir);
	wl_config_free(c);
}
END_TEST

START_TEST(an_unusable_epoch_file_is_reported)
{
	struct wl_config *c = config_in_temp_dir(1);

	/* A directory where the file should be: it cannot be mapped. */
	ck_assert_int_eq(mkdir(epoch, 0700), 0);
	ck_assert_int_eq(wl_keys_changed(c), WL_ERR_IO);
	ck_assert_ptr_null(wl_keycache_new(c));
	rmdir(epoch);
	rmdir(dir);
	wl_config_free(c);
}
END_TEST

/* One result of one cell, allocated as sql.c allocates them. */
static struct wl_rows *
one_cell(const char *text)
{
	struct wl_rows *r = calloc(1, sizeof(*r));

	ck_assert_ptr_nonnull(r);
	r->nrows = r->ncols = 1;
	ck_assert_ptr_nonnull(r->cell = calloc(2, sizeof(char *)));
	ck_assert_ptr_nonnull(r->len = calloc(2, sizeof(unsigned long)));
	ck_assert_ptr_nonnull(r->cell[0] = strdup(text));
	r->len[0] = strlen(text);
	return r;
}

START_TEST(a_shared_result_lives_until_its_last_holder_frees_it)
{
	struct wl_rows *r = one_cell("que_1");

	ck_assert_ptr_eq(wl_rows_share(r), r);
	ck_assert_ptr_eq(wl_rows_share(r), r);
	wl_rows_free(r);
	wl_rows_free(r);
	/* Still whole for the last holder (the sanitizers and valgrind
	 * would see a read of freed memory, or the leak if it is never
	 * freed). */
	ck_assert_str_eq(wl_rows_str(r, 0, 0), "que_1");
	wl_rows_free(r);
	wl_rows_free(NULL);
}
END_TEST

Suite *
suite_keycache(void)
{
	Suite *s = suite_create("keycache");
	TCase *tc = tcase_create("epoch");

	tcase_add_test(tc, a_worker_creates_the_epoch_and_changes_add_one);
	tcase_add_test(tc, zero_seconds_caches_nothing);
	tcase_add_test(tc, an_unusable_epoch_file_is_reported);
	suite_add_tcase(s, tc);
	tc = tcase_create("shared results");
	tcase_add_test(tc, a_shared_result_lives_until_its_last_holder_frees_it);
	suite_add_tcase(s, tc);
	return s;
}
