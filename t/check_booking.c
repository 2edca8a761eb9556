/*
 * The booking rules' slot arithmetic with a fixed clock: business days in
 * IANA zones across DST changes, the grid from the day's opening, the
 * whole interval inside bookingHours (24:00 ends included).
 */
#include "config.h"

#include <stdlib.h>

#include "extern.h"
#include "tests.h"

static int64_t
at(const char *iso)
{
	int64_t ms = 0;

	ck_assert_int_eq(wl_iso_to_ms(iso, &ms), 0);
	return ms;
}

/* A line in zone tz with booking hours given as JSON, slots of slot min. */
static void
line(struct wl_queue *q, const char *tz, const char *hours, int slot)
{
	char err[256];
	cJSON *in = cJSON_Parse(hours);

	memset(q, 0, sizeof(*q));
	snprintf(q->tz, sizeof(q->tz), "%s", tz);
	q->booking_hours = wl_hours_normalize(in, NULL, "bookingHours", err,
					      sizeof(err));
	ck_assert_ptr_nonnull(q->booking_hours);
	q->slot_minutes = slot;
	q->capacity = 1;
	q->bookings_enabled = 1;
	cJSON_Delete(in);
}

/* Bookable grid points of [w->open, w->close) from now on. */
static int
count_slots(const struct wl_queue *q, const struct wl_booking_window *w,
	    long long minutes)
{
	int64_t t;
	int n = 0;

	for (t = w->open; t < w->close; t += q->slot_minutes * 60000LL)
		n += wl_booking_slot_ok(q, w, t, minutes);
	return n;
}

#define ALL_DAY "{\"enabled\":true,\"start\":\"00:00\",\"end\":\"24:00\"}"

START_TEST(paris_spring_forward_day_has_23_hours_of_slots)
{
	struct wl_queue q;
	struct wl_booking_window w;

	line(&q, "Europe/Paris", ALL_DAY, 30);
	/* 00:10 local on 2026-03-29; clocks jump from 02:00 to 03:00. */
	ck_assert_int_eq(wl_booking_window(&q, at("2026-03-28T23:10:00Z"), &w),
			 0);
	ck_assert_int_eq(w.day_start, at("2026-03-28T23:00:00Z"));
	ck_assert_int_eq(w.day_end, at("2026-03-29T22:00:00Z"));
	ck_assert_int_eq(w.open, w.day_start);
	ck_assert_int_eq(w.close, w.day_end);
	/* 00:30 and 01:30 local, then 03:00 local right after 01:30. */
	ck_assert(wl_booking_slot_ok(&q, &w, at("2026-03-28T23:30:00Z"), 30));
	ck_assert(wl_booking_slot_ok(&q, &w, at("2026-03-29T00:30:00Z"), 30));
	ck_assert(wl_booking_slot_ok(&q, &w, at("2026-03-29T01:00:00Z"), 30));
	ck_assert(wl_booking_slot_ok(&q, &w, at("2026-03-29T21:30:00Z"), 30));
	ck_assert(!wl_booking_slot_ok(&q, &w, at("2026-03-29T22:00:00Z"), 30));
	/* 23 hours of half-hour slots, less the one already begun. */
	ck_assert_int_eq(count_slots(&q, &w, 30), 45);
	wl_queue_clear(&q);
}
END_TEST

START_TEST(new_york_fall_back_day_has_25_hours_of_slots)
{
	struct wl_queue q;
	struct wl_booking_window w;

	line(&q, "America/New_York", ALL_DAY, 60);
	/* 00:05 EDT on 2026-11-01; 02:00 EDT becomes 01:00 EST. */
	ck_assert_int_eq(wl_booking_window(&q, at("2026-11-01T04:05:00Z"), &w),
			 0);
	ck_assert_int_eq(w.day_start, at("2026-11-01T04:00:00Z"));
	ck_assert_int_eq(w.day_end, at("2026-11-02T05:00:00Z"));
	/* Both 01:00 local hours are bookable. */
	ck_assert(wl_booking_slot_ok(&q, &w, at("2026-11-01T05:00:00Z"), 60));
	ck_assert(wl_booking_slot_ok(&q, &w, at("2026-11-01T06:00:00Z"), 60));
	ck_assert(wl_booking_slot_ok(&q, &w, at("2026-11-02T04:00:00Z"), 60));
	ck_assert_int_eq(count_slots(&q, &w, 60), 24);
	wl_queue_clear(&q);
}
END_TEST

START_TEST(new_york_spring_forward_grid_counts_from_the_opening)
{
	struct wl_queue q;
	struct wl_booking_window w;

	line(&q, "America/New_York",
	     "{\"enabled\":true,\"start\":\"01:00\",\"end\":\"05:00\"}", 30);
	/* 2026-03-08: 02:00 EST becomes 03:00 EDT, so 01:00-05:00 local
	 * holds three real hours. */
	ck_assert_int_eq(wl_booking_window(&q, at("2026-03-08T05:00:00Z"), &w),
			 0);
	ck_assert_int_eq(w.open, at("2026-03-08T06:00:00Z"));
	ck_assert_int_eq(w.close, at("2026-03-08T09:00:00Z"));
	ck_assert_int_eq(count_slots(&q, &w, 30), 6);
	wl_queue_clear(&q);
}
END_TEST

START_TEST(an_interval_may_end_at_2400_but_not_after)
{
	struct wl_queue q;
	struct wl_booking_window w;

	line(&q, "UTC", "{\"enabled\":true,\"start\":\"18:00\",\"end\":\"24:00\"}",
	     60);
	ck_assert_int_eq(wl_booking_window(&q, at("2026-06-01T12:00:00Z"), &w),
			 0);
	ck_assert_int_eq(w.close, at("2026-06-02T00:00:00Z"));
	ck_assert(wl_booking_slot_ok(&q, &w, at("2026-06-01T23:00:00Z"), 60));
	ck_assert(!wl_booking_slot_ok(&q, &w, at("2026-06-01T23:00:00Z"), 90));
	ck_assert(!wl_booking_slot_ok(&q, &w, at("2026-06-01T17:00:00Z"), 60));
	wl_queue_clear(&q);
}
END_TEST

START_TEST(slots_off_the_grid_in_the_past_or_on_another_day_are_refused)
{
	struct wl_queue q;
	struct wl_booking_window w;

	line(&q, "UTC", "{\"enabled\":true,\"start\":\"09:00\",\"end\":\"17:00\"}",
	     15);
	ck_assert_int_eq(wl_booking_window(&q, at("2026-06-01T10:20:00Z"), &w),
			 0);
	ck_assert(wl_booking_slot_ok(&q, &w, at("2026-06-01T10:30:00Z"), 15));
	ck_assert(!wl_booking_slot_ok(&q, &w, at("2026-06-01T10:37:00Z"), 15));
	ck_assert(!wl_booking_slot_ok(&q, &w, at("2026-06-01T10:15:00Z"), 15));
	ck_assert(!wl_booking_slot_ok(&q, &w, at("2026-06-02T10:30:00Z"), 15));
	ck_assert(!wl_booking_slot_ok(&q, &w, at("2026-06-01T16:50:00Z"), 15));
	ck_assert(wl_booking_slot_ok(&q, &w, at("2026-06-01T16:45:00Z"), 15));
	/* A 60-minute service must end by 17:00. */
	ck_assert(wl_booking_slot_ok(&q, &w, at("2026-06-01T16:00:00Z"), 60));
	ck_assert(!wl_booking_slot_ok(&q, &w, at("2026-06-01T16:15:00Z"), 60));
	wl_queue_clear(&q);
}
END_TEST

START_TEST(a_closed_day_has_no_booking_window)
{
	struct wl_queue q;
	struct wl_booking_window w;

	/* 2026-06-01 is a Monday. */
	line(&q, "UTC",
	     "{\"enabled\":true,\"start\":\"09:00\",\"end\":\"17:00\","
	     "\"days\":{\"mon\":{\"enabled\":false}}}",
	     15);
	ck_assert_int_eq(wl_booking_window(&q, at("2026-06-01T08:00:00Z"), &w),
			 -1);
	ck_assert_int_eq(wl_booking_window(&q, at("2026-06-02T08:00:00Z"), &w),
			 0);
	wl_queue_clear(&q);
}
END_TEST

START_TEST(no_schedule_books_the_whole_local_day)
{
	struct wl_queue q;
	struct wl_booking_window w;

	line(&q, "Asia/Tokyo", "{\"enabled\":false}", 60);
	ck_assert_int_eq(wl_booking_window(&q, at("2026-06-01T00:30:00Z"), &w),
			 0);
	/* Local 09:30: the day runs 2026-05-31T15:00Z to 06-01T15:00Z. */
	ck_assert_int_eq(w.open, at("2026-05-31T15:00:00Z"));
	ck_assert_int_eq(w.close, at("2026-06-01T15:00:00Z"));
	ck_assert_int_eq(count_slots(&q, &w, 60), 14);
	wl_queue_clear(&q);
}
END_TEST

START_TEST(a_booking_may_reach_across_a_change_inside_the_hours)
{
	struct wl_queue q;
	struct wl_booking_window w;

	line(&q, "America/New_York", ALL_DAY, 30);
	/* 2026-11-01: 01:30 EDT to 01:30 EST is one hour. */
	ck_assert_int_eq(wl_booking_window(&q, at("2026-11-01T04:00:00Z"), &w),
			 0);
	ck_assert_int_eq(w.nspans, 1);
	ck_assert(wl_booking_slot_ok(&q, &w, at("2026-11-01T05:30:00Z"), 60));
	wl_queue_clear(&q);
	line(&q, "Europe/London", ALL_DAY, 30);
	ck_assert_int_eq(wl_booking_window(&q, at("2026-10-25T12:00:00Z"), &w),
			 0);
	ck_assert_int_eq(w.nspans, 1);
	wl_queue_clear(&q);
	/* Lord Howe: 02:00 +11 becomes 01:30 +10:30 on 2026-04-05. */
	line(&q, "Australia/Lord_Howe", ALL_DAY, 30);
	ck_assert_int_eq(wl_booking_window(&q, at("2026-04-04T13:00:00Z"), &w),
			 0);
	ck_assert_int_eq(w.nspans, 1);
	ck_assert(wl_booking_slot_ok(&q, &w, at("2026-04-04T14:30:00Z"), 60));
	wl_queue_clear(&q);
}
END_TEST

START_TEST(hours_ending_in_a_spring_forward_gap_end_at_the_change)
{
	struct wl_queue q;
	struct wl_booking_window w;

	line(&q, "America/New_York",
	     "{\"enabled\":true,\"start\":\"00:00\",\"end\":\"02:30\"}", 30);
	/* 2026-03-08: local time passes 02:30 when 02:00 EST becomes 03:00
	 * EDT, at 07:00Z; 03:00-03:30 EDT is after the hours. */
	ck_assert_int_eq(wl_booking_window(&q, at("2026-03-08T05:00:00Z"), &w),
			 0);
	ck_assert_int_eq(w.close, at("2026-03-08T07:00:00Z"));
	ck_assert(wl_booking_slot_ok(&q, &w, at("2026-03-08T06:30:00Z"), 30));
	ck_assert(!wl_booking_slot_ok(&q, &w, at("2026-03-08T07:00:00Z"), 30));
	ck_assert_int_eq(count_slots(&q, &w, 30), 4);
	wl_queue_clear(&q);
}
END_TEST

START_TEST(hours_starting_in_a_spring_forward_gap_start_at_the_change)
{
	struct wl_queue q;
	struct wl_booking_window w;

	line(&q, "America/New_York",
	     "{\"enabled\":true,\"start\":\"02:30\",\"end\":\"05:00\"}", 30);
	/* 03:00 EDT (07:00Z) is the first instant past 02:30 local. */
	ck_assert_int_eq(wl_booking_window(&q, at("2026-03-08T05:00:00Z"), &w),
			 0);
	ck_assert_int_eq(w.open, at("2026-03-08T07:00:00Z"));
	ck_assert_int_eq(w.close, at("2026-03-08T09:00:00Z"));
	ck_assert(wl_booking_slot_ok(&q, &w, at("2026-03-08T07:00:00Z"), 30));
	ck_assert_int_eq(count_slots(&q, &w, 30), 4);
	wl_queue_clear(&q);
}
END_TEST

START_TEST(a_repeated_hour_is_booked_only_where_its_local_time_is_open)
{
	struct wl_queue q;
	struct wl_booking_window w;

	/* 2026-11-01: 02:00 EDT (06:00Z) becomes 01:00 EST. */
	line(&q, "America/New_York",
	     "{\"enabled\":true,\"start\":\"01:30\",\"end\":\"04:00\"}", 30);
	ck_assert_int_eq(wl_booking_window(&q, at("2026-11-01T04:00:00Z"), &w),
			 0);
	ck_assert(wl_booking_slot_ok(&q, &w, at("2026-11-01T05:30:00Z"), 30));
	/* 01:00-01:30 EST is before the hours. */
	ck_assert(!wl_booking_slot_ok(&q, &w, at("2026-11-01T06:00:00Z"), 30));
	ck_assert(wl_booking_slot_ok(&q, &w, at("2026-11-01T06:30:00Z"), 30));
	/* 01:30-02:00 EDT, 01:30-04:00 EST. */
	ck_assert_int_eq(count_slots(&q, &w, 30), 6);
	wl_queue_clear(&q);

	line(&q, "America/New_York",
	     "{\"enabled\":true,\"start\":\"00:00\",\"end\":\"01:30\"}", 30);
	ck_assert_int_eq(wl_booking_window(&q, at("2026-11-01T04:00:00Z"), &w),
			 0);
	ck_assert_int_eq(w.nspans, 2);
	/* 01:30-02:00 EDT is after the hours; 01:00-01:30 EST is in them. */
	ck_assert(wl_booking_slot_ok(&q, &w, at("2026-11-01T05:00:00Z"), 30));
	ck_assert(!wl_booking_slot_ok(&q, &w, at("2026-11-01T05:30:00Z"), 30));
	ck_assert(wl_booking_slot_ok(&q, &w, at("2026-11-01T06:00:00Z"), 30));
	/* Nor may a booking reach across the closed half hour. */
	ck_assert(!wl_booking_slot_ok(&q, &w, at("2026-11-01T05:00:00Z"), 90));
	ck_assert_int_eq(count_slots(&q, &w, 30), 4);
	wl_queue_clear(&q);
}
END_TEST

/* Are walk-ins let in at every quarter hour of [t, t + minutes), all
 * before end? */
static int
open_all_along(const struct wl_queue *q, int64_t t, int minutes, int64_t end)
{
	int m;

	if (t + minutes * 60000LL > end)
		return 0;
	for (m = 0; m < minutes; m += 15)
		if (!wl_queue_open_now(q, t + m * 60000LL))
			return 0;
	return 1;
}

/*
 * On the days clocks change, a one-minute booking at any minute is
 * possible exactly when a walk-in is let in at that minute (the same
 * hours as working hours).
 */
START_TEST(bookings_and_walk_ins_agree_on_every_minute_of_clock_change_days)
{
	static const struct {
		const char *tz, *noon; /* noon UTC of a day the clocks change */
	} days[] = {
	    {"America/New_York", "2026-03-08T12:00:00Z"},
	    {"America/New_York", "2026-11-01T12:00:00Z"},
	    {"Europe/London", "2026-03-29T12:00:00Z"},
	    {"Europe/London", "2026-10-25T12:00:00Z"},
	    {"Australia/Sydney", "2026-04-05T12:00:00Z"},
	    {"Australia/Sydney", "2026-10-04T12:00:00Z"},
	    {"Australia/Lord_Howe", "2026-04-05T12:00:00Z"},
	    {"Australia/Lord_Howe", "2026-10-04T12:00:00Z"},
	    {"America/Santiago", "2026-04-04T12:00:00Z"},
	    {"America/Santiago", "2026-04-05T12:00:00Z"},
	    {"Asia/Beirut", "2026-10-24T12:00:00Z"},
	    {"America/Santiago", "2026-09-06T12:00:00Z"},
	    {"America/Havana", "2026-03-08T12:00:00Z"},
	    {"America/Havana", "2026-11-01T12:00:00Z"},
	    {"Asia/Kathmandu", "2026-06-01T12:00:00Z"},
	};
	static const char *const hours[] = {
	    "00:00\",\"end\":\"24:00", "00:00\",\"end\":\"02:30",
	    "01:30\",\"end\":\"04:00", "00:00\",\"end\":\"01:30",
	    "02:30\",\"end\":\"05:00", "01:00\",\"end\":\"03:00",
	    "02:15\",\"end\":\"02:45", "09:00\",\"end\":\"17:00",
	    "22:00\",\"end\":\"24:00", "22:00\",\"end\":\"23:30",
	};
	struct wl_queue q;
	struct wl_booking_window w;
	char json[128];
	size_t i, j;
	int64_t t;

	for (i = 0; i < sizeof(days) / sizeof(*days); i++) {
		for (j = 0; j < sizeof(hours) / sizeof(*hours); j++) {
			snprintf(json, sizeof(json),
				 "{\"enabled\":true,\"start\":\"%s\"}",
				 hours[j]);
			line(&q, days[i].tz, json, 1);
			q.working_hours = q.booking_hours;
			ck_assert_int_eq(
			    wl_booking_window(&q, at(days[i].noon), &w), 0);
			w.now = w.day_start;
			for (t = w.day_start; t < w.day_end; t += 60000)
				if (wl_queue_open_now(&q, t) !=
				    wl_booking_slot_ok(&q, &w, t, 1))
					ck_abort_msg("%s %s, hours %s: "
						     "walk-ins %d at %lld",
						     days[i].tz, days[i].noon,
						     json,
						     wl_queue_open_now(&q, t),
						     (long long)t);
			/* An hour-long booking on the 15-minute grid, which
			 * holds every change and every edge of these hours:
			 * taken where walk-ins are let in all along it. */
			q.slot_minutes = 15;
			for (t = w.open; t < w.day_end; t += 15 * 60000)
				if (open_all_along(&q, t, 60, w.day_end) !=
				    wl_booking_slot_ok(&q, &w, t, 60))
					ck_abort_msg("%s %s, hours %s: an hour "
						     "from %lld",
						     days[i].tz, days[i].noon,
						     json, (long long)t);
			q.working_hours = NULL;
			wl_queue_clear(&q);
		}
	}
}
END_TEST

Suite *
suite_booking(void)
{
	Suite *s = suite_create("booking");
	TCase *tc = tcase_create("slots");

	tcase_add_test(tc, paris_spring_forward_day_has_23_hours_of_slots);
	tcase_add_test(tc, new_york_fall_back_day_has_25_hours_of_slots);
	tcase_add_test(tc, new_york_spring_forward_grid_counts_from_the_opening);
	tcase_add_test(tc, an_interval_may_end_at_2400_but_not_after);
	tcase_add_test(tc,
		       slots_off_the_grid_in_the_past_or_on_another_day_are_refused);
	tcase_add_test(tc, a_closed_day_has_no_booking_window);
	tcase_add_test(tc, no_schedule_books_the_whole_local_day);
	tcase_add_test(tc, a_booking_may_reach_across_a_change_inside_the_hours);
	tcase_add_test(tc, hours_ending_in_a_spring_forward_gap_end_at_the_change);
	tcase_add_test(tc,
		       hours_starting_in_a_spring_forward_gap_start_at_the_change);
	tcase_add_test(tc,
		       a_repeated_hour_is_booked_only_where_its_local_time_is_open);
	tcase_add_test(
	    tc, bookings_and_walk_ins_agree_on_every_minute_of_clock_change_days);
	suite_add_tcase(s, tc);
	return s;
}
