/*
 * The configuration parser: defaults, sections, comments, and refusals
 * that name the offending key.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "extern.h"
#include "tests.h"

static char err[512];

/* Parse text that must be refused; returns err for inspection. */
static const char *
refused(const char *text)
{
	struct wl_config *c;

	err[0] = '\0';
	c = wl_config_parse(text, err, sizeof(err));
	if (c != NULL) {
		wl_config_free(c);
		ck_abort_msg("accepted: %s", text);
	}
	ck_assert_str_ne(err, "");
	return err;
}

/* Write text to a new temporary file; path must hold 64 bytes. */
static void
write_temp(char *path, const char *text)
{
	FILE *f;
	int fd;

	snprintf(path, 64, "/tmp/wl_check_config_XXXXXX");
	ck_assert_int_ge(fd = mkstemp(path), 0);
	ck_assert_ptr_nonnull(f = fdopen(fd, "w"));
	ck_assert_int_eq(fputs(text, f) >= 0, 1);
	ck_assert_int_eq(fclose(f), 0);
}

START_TEST(empty_text_gives_every_default)
{
	struct wl_config *c = wl_config_parse("", err, sizeof(err));

	ck_assert_ptr_nonnull(c);
	ck_assert_str_eq(c->db_host, "localhost");
	ck_assert_uint_eq(c->db_port, 3306);
	ck_assert_str_eq(c->db_socket, "");
	ck_assert_str_eq(c->db_user, "waitlist");
	ck_assert_str_eq(c->db_password, "");
	ck_assert_str_eq(c->db_name, "waitlist");
	ck_assert_uint_eq(c->workers, 4);
	ck_assert_str_eq(c->fcgi_socket, "/run/waitlist/fcgi.sock");
	ck_assert_uint_eq(c->max_requests, 10000);
	ck_assert_uint_eq(c->key_cache_seconds, 1);
	ck_assert_str_eq(c->log_level, "info");
	ck_assert_str_eq(c->allowed_hosts, "");
	ck_assert_str_eq(c->insecure_hosts, "");
	ck_assert_str_eq(c->zapier_hosts, "hooks.zapier.com");
	ck_assert_uint_eq(c->retry_base_seconds, 30);
	ck_assert_uint_eq(c->retry_cap_seconds, 3600);
	ck_assert_uint_eq(c->max_attempts, 32);
	ck_assert_uint_eq(c->max_age_seconds, 86400);
	ck_assert_uint_eq(c->timeout_seconds, 10);
	ck_assert_uint_eq(c->deliverer_concurrency, 64);
	ck_assert_uint_eq(c->deliverer_per_endpoint, 8);
	ck_assert_uint_eq(c->deliverer_poll_ms, 500);
	wl_config_free(c);
}
END_TEST

START_TEST(sections_and_keys_set_values)
{
	struct wl_config *c = wl_config_parse(
	    "[database]\n"
	    "host = db.example\n"
	    "port = 3307\n"
	    "socket = /run/mysqld/mysqld.sock\n"
	    "user = wl\n"
	    "password = s3cret = with equals\n"
	    "name = wl_test\n"
	    "[server]\n"
	    "workers = 8\n"
	    "fcgi_socket = /tmp/fcgi.sock\n"
	    "log_level = debug\n"
	    "[webhooks]\n"
	    "allowed_hosts = a.example,b.example\n"
	    "retry_base_seconds = 5\n"
	    "retry_cap_seconds = 60\n"
	    "max_attempts = 3\n"
	    "timeout_seconds = 1\n",
	    err, sizeof(err));

	ck_assert_msg(c != NULL, "refused: %s", err);
	ck_assert_str_eq(c->db_host, "db.example");
	ck_assert_uint_eq(c->db_port, 3307);
	ck_assert_str_eq(c->db_socket, "/run/mysqld/mysqld.sock");
	ck_assert_str_eq(c->db_user, "wl");
	/* Only the first '=' separates key from value. */
	ck_assert_str_eq(c->db_password, "s3cret = with equals");
	ck_assert_str_eq(c->db_name, "wl_test");
	ck_assert_uint_eq(c->workers, 8);
	ck_assert_str_eq(c->fcgi_socket, "/tmp/fcgi.sock");
	ck_assert_str_eq(c->log_level, "debug");
	ck_assert_str_eq(c->allowed_hosts, "a.example,b.example");
	ck_assert_uint_eq(c->retry_base_seconds, 5);
	ck_assert_uint_eq(c->retry_cap_seconds, 60);
	ck_assert_uint_eq(c->max_attempts, 3);
	ck_assert_uint_eq(c->timeout_seconds, 1);
	/* Keys not given keep their defaults. */
	ck_assert_uint_eq(c->max_requests, 10000);
	ck_assert_str_eq(c->zapier_hosts, "hooks.zapier.com");
	wl_config_free(c);
}
END_TEST

START_TEST(later_value_of_a_key_wins)
{
	struct wl_config *c = wl_config_parse("[server]\nworkers = 2\n"
					      "workers = 3\n",
					      err, sizeof(err));

	ck_assert_ptr_nonnull(c);
	ck_assert_uint_eq(c->workers, 3);
	wl_config_free(c);
}
END_TEST

START_TEST(comments_blank_lines_and_spaces_are_ignored)
{
	struct wl_config *c = wl_config_parse(
	    "# a comment\n"
	    "; another comment\n"
	    "\n"
	    "   \t\n"
	    "  [ server ]  \n"
	    "   # indented comment with = sign\n"
	    "\tworkers\t=\t7\t\r\n"
	    "; bogus = 1\n"
	    "\n",
	    err, sizeof(err));

	ck_assert_msg(c != NULL, "refused: %s", err);
	ck_assert_uint_eq(c->workers, 7);
	wl_config_free(c);
}
END_TEST

START_TEST(unknown_key_is_refused_and_named)
{
	const char *e = refused("[server]\nbogus = 1\n");

	ck_assert_ptr_nonnull(strstr(e, "bogus"));
	ck_assert_ptr_nonnull(strstr(e, "server"));
	ck_assert_ptr_nonnull(strstr(e, "line 2"));
}
END_TEST

START_TEST(key_of_another_section_is_refused)
{
	const char *e = refused("[server]\nport = 3306\n");

	ck_assert_ptr_nonnull(strstr(e, "port"));
	ck_assert_ptr_nonnull(strstr(e, "server"));
}
END_TEST

START_TEST(unknown_section_is_refused_and_named)
{
	const char *e = refused("[nosuch]\nhost = x\n");

	ck_assert_ptr_nonnull(strstr(e, "nosuch"));
	ck_assert_ptr_nonnull(strstr(e, "line 1"));
	/* Even with no key in it. */
	e = refused("[database]\nhost = x\n[nosuch]\n");
	ck_assert_ptr_nonnull(strstr(e, "line 3"));
	ck_assert_ptr_nonnull(strstr(e, "nosuch"));
}
END_TEST

START_TEST(key_before_any_section_is_refused)
{
	ck_assert_ptr_nonnull(strstr(refused("workers = 2\n"), "workers"));
}
END_TEST

START_TEST(malformed_lines_are_refused)
{
	ck_assert_ptr_nonnull(strstr(refused("[server\n"), "line 1"));
	ck_assert_ptr_nonnull(strstr(refused("[server] x\n"), "line 1"));
	ck_assert_ptr_nonnull(
	    strstr(refused("[server]\nworkers 4\n"), "line 2"));
}
END_TEST

START_TEST(bad_numbers_are_refused_and_named)
{
	static const char *const bad[] = {
	    "[server]\nworkers = many\n",
	    "[server]\nworkers = 0\n",
	    "[server]\nworkers = 257\n",
	    "[server]\nworkers = -1\n",
	    "[server]\nworkers = +4\n",
	    "[server]\nworkers = 4x\n",
	    "[server]\nworkers = 4.0\n",
	    "[server]\nworkers =\n",
	    "[server]\nworkers = 99999999999999999999999\n",
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		ck_assert_msg(strstr(refused(bad[i]), "workers") != NULL,
			      "%s: %s", bad[i], err);
	ck_assert_ptr_nonnull(strstr(refused("[database]\nport = 70000\n"),
				     "port"));
	ck_assert_ptr_nonnull(
	    strstr(refused("[webhooks]\nmax_attempts = 33\n"),
		   "max_attempts"));
	ck_assert_ptr_nonnull(
	    strstr(refused("[webhooks]\ntimeout_seconds = 11\n"),
		   "timeout_seconds"));
}
END_TEST

START_TEST(number_bounds_are_inclusive)
{
	struct wl_config *c = wl_config_parse("[database]\nport = 65535\n"
					      "[server]\nworkers = 256\n"
					      "max_requests = 0\n",
					      err, sizeof(err));

	ck_assert_msg(c != NULL, "refused: %s", err);
	ck_assert_uint_eq(c->db_port, 65535);
	ck_assert_uint_eq(c->workers, 256);
	ck_assert_uint_eq(c->max_requests, 0);
	wl_config_free(c);
}
END_TEST

START_TEST(bad_log_level_is_refused)
{
	const char *e = refused("[server]\nlog_level = verbose\n");

	ck_assert_ptr_nonnull(strstr(e, "log_level"));
	ck_assert_ptr_nonnull(strstr(e, "verbose"));
	ck_assert_ptr_nonnull(strstr(refused("[server]\nlog_level = INFO\n"),
				     "log_level"));
}
END_TEST

START_TEST(relative_fcgi_socket_is_refused)
{
	ck_assert_ptr_nonnull(strstr(
	    refused("[server]\nfcgi_socket = run/fcgi.sock\n"), "fcgi_socket"));
	ck_assert_ptr_nonnull(
	    strstr(refused("[server]\nfcgi_socket =\n"), "fcgi_socket"));
}
END_TEST

START_TEST(retry_base_above_cap_is_refused)
{
	struct wl_config *c;
	const char *e = refused("[webhooks]\nretry_base_seconds = 120\n"
				"retry_cap_seconds = 60\n");

	ck_assert_ptr_nonnull(strstr(e, "retry_base_seconds"));
	c = wl_config_parse("[webhooks]\nretry_base_seconds = 60\n"
			    "retry_cap_seconds = 60\n",
			    err, sizeof(err));
	ck_assert_msg(c != NULL, "equal base and cap refused: %s", err);
	wl_config_free(c);
}
END_TEST

START_TEST(host_lists_must_name_hosts)
{
	static const char *const bad[] = {
	    "https://example.com/path", "not a host!!", ";;;", "-a.com",
	    "a..b", "a.com, b.com/x", "a-.com", "*", "*.", NULL};
	static const char *const good[] = {
	    "", ",,", "a.com, ,b.com", "127.0.0.1,localhost,::1",
	    " *.example.com , .example.org ",
	    "hooks.zapier.com", "under_score.test", NULL};
	char text[256];
	struct wl_config *c;
	const char *e;
	size_t i;

	for (i = 0; bad[i]; i++) {
		snprintf(text, sizeof(text), "[webhooks]\nzapier_hosts = %s\n",
			 bad[i]);
		e = refused(text);
		ck_assert_msg(strstr(e, "[webhooks] zapier_hosts") != NULL,
			      "%s: %s", bad[i], e);
	}
	for (i = 0; good[i]; i++) {
		snprintf(text, sizeof(text),
			 "[webhooks]\nallowed_hosts = %s\ninsecure_hosts = %s\n",
			 good[i], good[i]);
		c = wl_config_parse(text, err, sizeof(err));
		ck_assert_msg(c != NULL, "%s refused: %s", good[i], err);
		wl_config_free(c);
	}
	ck_assert_ptr_nonnull(strstr(
	    refused("[webhooks]\ninsecure_hosts = a b\n"), "insecure_hosts"));
}
END_TEST

START_TEST(load_of_a_directory_is_refused)
{
	err[0] = '\0';
	ck_assert_ptr_null(wl_config_load("/tmp", err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "/tmp"));
}
END_TEST

START_TEST(load_of_missing_file_names_the_path)
{
	const char *path = "/nonexistent/dir/waitlist.conf";

	err[0] = '\0';
	ck_assert_ptr_null(wl_config_load(path, err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, path));
}
END_TEST

START_TEST(load_reads_a_file)
{
	struct wl_config *c;
	char path[64];

	write_temp(path, "[server]\nworkers = 9\n");
	c = wl_config_load(path, err, sizeof(err));
	unlink(path);
	ck_assert_msg(c != NULL, "refused: %s", err);
	ck_assert_uint_eq(c->workers, 9);
	wl_config_free(c);
}
END_TEST

START_TEST(load_error_names_the_path_and_the_key)
{
	char path[64];

	write_temp(path, "[server]\nbogus = 1\n");
	err[0] = '\0';
	ck_assert_ptr_null(wl_config_load(path, err, sizeof(err)));
	unlink(path);
	ck_assert_ptr_nonnull(strstr(err, path));
	ck_assert_ptr_nonnull(strstr(err, "bogus"));
}
END_TEST

START_TEST(default_path_follows_the_environment)
{
	const char *old = getenv("WAITLIST_CONFIG");
	char *saved = old ? strdup(old) : NULL;

	ck_assert_int_eq(setenv("WAITLIST_CONFIG", "/tmp/x.conf", 1), 0);
	ck_assert_str_eq(wl_config_default_path(), "/tmp/x.conf");
	ck_assert_int_eq(unsetenv("WAITLIST_CONFIG"), 0);
	ck_assert_ptr_nonnull(strstr(wl_config_default_path(),
				     "/waitlist/waitlist.conf"));
	if (saved) {
		setenv("WAITLIST_CONFIG", saved, 1);
		free(saved);
	}
}
END_TEST

START_TEST(free_of_null_is_a_no_op)
{
	wl_config_free(NULL);
}
END_TEST

Suite *
suite_config(void)
{
	Suite *s = suite_create("config");
	TCase *tc = tcase_create("parse");
	TCase *tl = tcase_create("load");

	tcase_add_test(tc, empty_text_gives_every_default);
	tcase_add_test(tc, sections_and_keys_set_values);
	tcase_add_test(tc, later_value_of_a_key_wins);
	tcase_add_test(tc, comments_blank_lines_and_spaces_are_ignored);
	tcase_add_test(tc, unknown_key_is_refused_and_named);
	tcase_add_test(tc, key_of_another_section_is_refused);
	tcase_add_test(tc, unknown_section_is_refused_and_named);
	tcase_add_test(tc, key_before_any_section_is_refused);
	tcase_add_test(tc, malformed_lines_are_refused);
	tcase_add_test(tc, bad_numbers_are_refused_and_named);
	tcase_add_test(tc, number_bounds_are_inclusive);
	tcase_add_test(tc, bad_log_level_is_refused);
	tcase_add_test(tc, relative_fcgi_socket_is_refused);
	tcase_add_test(tc, retry_base_above_cap_is_refused);
	tcase_add_test(tc, host_lists_must_name_hosts);
	tcase_add_test(tc, free_of_null_is_a_no_op);
	suite_add_tcase(s, tc);
	tcase_add_test(tl, load_of_missing_file_names_the_path);
	tcase_add_test(tl, load_reads_a_file);
	tcase_add_test(tl, load_of_a_directory_is_refused);
	tcase_add_test(tl, load_error_names_the_path_and_the_key);
	tcase_add_test(tl, default_path_follows_the_environment);
	suite_add_tcase(s, tl);
	return s;
}
