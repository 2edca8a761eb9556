/*
 * Log lines: the process id each one carries, in a forked child too.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "extern.h"
#include "tests.h"

/* What log() writes to stderr, in out (NUL-terminated). */
static void
capture(void (*log)(void), char *out, size_t size)
{
	int fd[2], saved;
	ssize_t n;

	ck_assert_int_eq(pipe(fd), 0);
	ck_assert_int_ge(saved = dup(STDERR_FILENO), 0);
	ck_assert_int_eq(dup2(fd[1], STDERR_FILENO), STDERR_FILENO);
	close(fd[1]);
	log();
	ck_assert_int_eq(dup2(saved, STDERR_FILENO), STDERR_FILENO);
	close(saved);
	n = read(fd[0], out, size - 1);
	close(fd[0]);
	ck_assert_int_gt(n, 0);
	out[n] = '\0';
}

static void
log_one(void)
{
	wl_log(WL_LOG_INFO, "\"msg\":\"one\"");
}

static void
log_added(void)
{
	struct wl_loglines lines = {0};

	wl_log_add(&lines, WL_LOG_INFO, "\"msg\":\"a\"");
	wl_log_add(&lines, WL_LOG_INFO, "\"msg\":\"b\"");
	wl_log_flush(&lines);
}

/* The number after "pid": in the n-th line (from 0) of s, or -1. */
static long
pid_of(const char *s, int n)
{
	const char *p = s;

	for (; n > 0 && p; n--)
		if ((p = strchr(p, '\n')) != NULL)
			p++;
	if (p == NULL || (p = strstr(p, "\"pid\":")) == NULL)
		return -1;
	return strtol(p + 6, NULL, 10);
}

START_TEST(a_line_carries_the_process_id)
{
	char out[4096];

	capture(log_one, out, sizeof(out));
	ck_assert_msg(strstr(out, "\"msg\":\"one\"}\n") != NULL, "%s", out);
	ck_assert_int_eq(pid_of(out, 0), getpid());
	capture(log_added, out, sizeof(out));
	ck_assert_int_eq(pid_of(out, 0), getpid());
	ck_assert_int_eq(pid_of(out, 1), getpid());
}
END_TEST

/* The parent has logged (and so learnt its id) before the fork. */
START_TEST(a_forked_childs_lines_carry_its_own_id)
{
	char out[4096], child[4096] = "";
	int fd[2], status;
	ssize_t n;
	pid_t pid;

	capture(log_one, out, sizeof(out));
	ck_assert_int_eq(pipe(fd), 0);
	ck_assert_int_ge(pid = fork(), 0);
	if (pid == 0) {
		if (dup2(fd[1], STDERR_FILENO) < 0)
			_exit(1);
		log_one();
		log_added();
		_exit(0);
	}
	close(fd[1]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_int_gt(n = read(fd[0], child, sizeof(child) - 1), 0);
	close(fd[0]);
	child[n] = '\0';
	ck_assert_int_eq(pid_of(child, 0), pid);
	ck_assert_int_eq(pid_of(child, 1), pid);
	ck_assert_int_eq(pid_of(child, 2), pid);
	capture(log_one, out, sizeof(out));
	ck_assert_int_eq(pid_of(out, 0), getpid());
}
END_TEST

Suite *
suite_log(void)
{
	Suite *s = suite_create("log");
	TCase *t = tcase_create("pid");

	tcase_add_test(t, a_line_carries_the_process_id);
	tcase_add_test(t, a_forked_childs_lines_carry_its_own_id);
	suite_add_tcase(s, t);
	return s;
}
