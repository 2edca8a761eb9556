// Same-day bookings: creation under the availability rules of DECISIONS.md
// ("Hours and availability rules"), capacity under concurrency,
// availability, reschedule and cancel, and their events.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { api, sql } from './lib.mjs';
import {
  ALL_DAY, SLOT_MS, TS_RE, assertError, create, dayZone, entryCount, events, getEntry, hours,
  iso, key, line, localParts, localTodayAt, moveThrough, mustCreate, nextSlot, setStatus, setup,
  todayKey, write,
} from './util-entries.mjs';

const ZONE = dayZone();
const MIN = 60000;
const bl = (ref, over = {}) => line(ref, { timeZone: ZONE, services: ['s1', 's60'], ...over });

const A = setup({
  q1: { timeZone: ZONE, services: ['s1', 's60'], availability: { bookingCapacity: 50 } },
  services: [{ ref: 's60', serviceName: 'Long', baseDurationMinutes: 60, isActive: true }],
  queues: [
    bl('qCap', { availability: { bookingCapacity: 2 } }),
    bl('qOne', { availability: { bookingCapacity: 1 } }),
    bl('qOne2', { availability: { bookingCapacity: 1 } }),
    bl('qOne3', { availability: { bookingCapacity: 1 } }),
    bl('qOne4', { availability: { bookingCapacity: 1 } }),
    bl('qOne5', { availability: { bookingCapacity: 1 } }),
    bl('qOff', { availability: { bookingsEnabled: false } }),
    bl('qPause', { availability: { bookingsPaused: true } }),
    bl('qDayOff', { availability: { bookingHours: hours(ALL_DAY, { [todayKey(ZONE)]: { enabled: false } }) } }),
    bl('qEarly', { availability: { bookingHours: hours({ enabled: true, start: '00:00', end: '01:00' }) } }),
    bl('qLate', { availability: { bookingHours: hours({ enabled: true, start: '22:00', end: '24:00' }) } }),
    bl('qGrid', { availability: { bookingHours: hours({ enabled: true, start: '00:10', end: '24:00' }) } }),
    bl('qNoWalk', {
      workingHours: hours({ enabled: true, start: '00:00', end: '01:00' }),
      availability: { walkInsEnabled: false, bookingCapacity: 5 },
    }),
    bl('qAvail', { availability: { bookingCapacity: 3 } }),
  ],
  keys: [key('knoguest', { scopes: ['waitlist:read', 'waitlist:write'] })],
});
const B = setup();

const booking = (queueId, at, over = {}) => ({
  queueId, partySize: 1, fullName: 'Booked Guest', isBooking: true, scheduledFor: typeof at === 'number' ? iso(at) : at, ...over,
});

function bookingsAt(queueId, at) {
  return Number(sql(`SELECT COUNT(*) FROM entries WHERE queue_id='${queueId}' AND scheduled_for=${at} AND status IN ('waiting','ready','confirmed')`)[0][0]);
}

// Same instant written with the line's local offset (whole hours).
function withOffset(ms, zone) {
  const { hour, minute } = localParts(zone, ms);
  const utc = new Date(ms);
  let diff = (hour * 60 + minute) - (utc.getUTCHours() * 60 + utc.getUTCMinutes());
  if (diff > 720) diff -= 1440;
  if (diff < -720) diff += 1440;
  const local = new Date(ms + diff * MIN).toISOString().slice(0, 19);
  const sign = diff < 0 ? '-' : '+';
  const a = Math.abs(diff);
  return `${local}${sign}${String(Math.floor(a / 60)).padStart(2, '0')}:${String(a % 60).padStart(2, '0')}`;
}

test('scheduledFor may use the ISO 8601 basic format or an hour-only offset', async () => {
  const at = nextSlot() + 2 * SLOT_MS;
  const basic = iso(at).replace(/[-:]/g, '');
  for (const form of [basic, iso(at).replace('Z', '+00')]) {
    const res = await create(A.key, booking(A.queueId, form));
    assert.equal(res.status, 201, `${form}: ${res.text}`);
    assert.equal(res.json.entry.scheduledFor, iso(at), form);
  }
  // Basic and extended mixed is neither.
  const mixed = iso(at).slice(0, 11) + basic.slice(9);
  assertError(await create(A.key, booking(A.queueId, mixed)), 400, 'validation_failed');
});

test('a booking is created confirmed with its booking id, time and events', async () => {
  const at = nextSlot();
  const res = await create(A.key, booking(A.queueId, withOffset(at, ZONE), { phone: '+15550001111' }));
  assert.equal(res.status, 201, res.text);
  const e = res.json.entry;
  assert.equal(e.status, 'confirmed');
  assert.equal(e.isBooking, true);
  assert.match(e.bookingId, /^bkg_/);
  assert.match(e.id, /^ent_/);
  assert.notEqual(e.bookingId, e.id);
  assert.equal(e.version, 1);
  assert.equal(e.scheduledFor, iso(at));
  assert.match(e.scheduledFor, TS_RE);
  assert.equal(e.position, null);
  assert.equal(e.estimatedWaitMinutes, null);
  assert.deepEqual(await getEntry(A.key, e.id), e);

  const evs = events(A.tenantId).filter((x) => x.body.resourceId === e.id);
  assert.deepEqual(evs.map((x) => x.type), ['waitlist.entry.created', 'booking.created']);
  assert.deepEqual(evs[0].body.data, { entryId: e.id, status: 'confirmed', isBooking: true });
  assert.deepEqual(evs[1].body.data, { entryId: e.id, bookingId: e.bookingId, scheduledFor: iso(at) });
  assert.equal(evs[1].seq, evs[0].seq + 1);
  for (const x of evs) {
    assert.equal(x.body.resourceVersion, 1);
    assert.ok(!x.raw.includes('Booked Guest') && !x.raw.includes('5550001111'));
  }
});

test('a booking does not need walk-ins or open working hours', async () => {
  const e = await mustCreate(A.key, booking(A.qNoWalk, nextSlot()));
  assert.equal(e.status, 'confirmed');
  assertError(await create(A.key, { queueId: A.qNoWalk, partySize: 1, fullName: 'Walk' }), 409, 'queue_unavailable');
});

const UNAVAILABLE = {
  'in the past': () => [A.queueId, nextSlot() - 4 * SLOT_MS],
  'at the last grid point before now': () => [A.queueId, Math.floor(Date.now() / SLOT_MS) * SLOT_MS],
  'on the next local day': () => [A.queueId, nextSlot() + 24 * 60 * MIN],
  'tomorrow at local midnight': () => [A.queueId, localTodayAt(ZONE, 24, 0)],
  'yesterday': () => [A.queueId, nextSlot() - 24 * 60 * MIN],
  'off the grid by 7 minutes': () => [A.queueId, nextSlot() + 7 * MIN],
  'off the grid by 30 seconds': () => [A.queueId, nextSlot() + 30000],
  'off the grid by one millisecond': () => [A.queueId, nextSlot() + 1],
  'on a day the booking hours are disabled': () => [A.qDayOff, nextSlot()],
  'after the booking hours ended': () => [A.qEarly, nextSlot()],
  'before the booking hours start': () => [A.qLate, nextSlot()],
  'off a grid anchored at 00:10': () => [A.qGrid, nextSlot() + 15 * MIN],
  'with a 60-minute service on the last 15-minute slot': () => [A.queueId, localTodayAt(ZONE, 23, 45), { serviceTypeId: A.s60 }],
  'with a 30-minute service overflowing the end of hours': () => [A.queueId, localTodayAt(ZONE, 23, 45), { serviceTypeId: A.s1 }],
};

for (const [name, make] of Object.entries(UNAVAILABLE)) {
  test(`a booking ${name} is 409 booking_unavailable`, async () => {
    const [q, at, extra] = make();
    const before = entryCount(A.tenantId);
    assertError(await create(A.key, booking(q, at, extra)), 409, 'booking_unavailable');
    assert.equal(entryCount(A.tenantId), before);
  });
}

test('slots on the grid inside the hours are accepted, up to the end of the hours', async () => {
  // The last 60-minute slot ends exactly at 24:00.
  const long = await mustCreate(A.key, booking(A.queueId, localTodayAt(ZONE, 23, 0), { serviceTypeId: A.s60 }));
  assert.equal(long.scheduledFor, iso(localTodayAt(ZONE, 23, 0)));
  // Without a service the slot lasts bookingSlotMinutes: 23:45 fits.
  await mustCreate(A.key, booking(A.queueId, localTodayAt(ZONE, 23, 45)));
  // Grids start at the hours' start.
  await mustCreate(A.key, booking(A.qLate, localTodayAt(ZONE, 22, 0)));
  await mustCreate(A.key, booking(A.qLate, localTodayAt(ZONE, 23, 30)));
  assertError(await create(A.key, booking(A.qLate, localTodayAt(ZONE, 22, 5))), 409, 'booking_unavailable');
  await mustCreate(A.key, booking(A.qGrid, nextSlot() + 10 * MIN));
});

test('on a day the clocks change, bookings keep to the local hours, as walk-ins do', async () => {
  // DECISIONS "Hours and availability rules": hours are local HH:MM, and a
  // booking's whole interval lies inside that day's bookingHours.  New
  // York, 2026-03-08: 02:00 EST becomes 03:00 EDT at 07:00Z; 2026-11-01:
  // 02:00 EDT becomes 01:00 EST at 06:00Z.
  const nyLine = (start, end) => {
    const h = hours({ enabled: true, start, end });
    return { q1: { timeZone: 'America/New_York', workingHours: h, availability: { bookingSlotMinutes: 30, bookingHours: h, bookingCapacity: 5 } } };
  };
  const at = (now) => ({ 'x-test-now': now });
  const slots = async (t, now) => {
    const res = await api('GET', `/waitlist/queues/${t.queueId}/availability`, { key: t.key, headers: at(now) });
    assert.equal(res.status, 200, res.text);
    return res.json.availability.slots.map((x) => x.startsAt.slice(11, 16));
  };
  const book = (t, now, scheduledFor) => api('POST', '/waitlist/entries', {
    key: t.key, idempotencyKey: `dst-${t.queueId}-${scheduledFor}`, headers: at(now), body: booking(t.queueId, scheduledFor),
  });
  const walkIn = (t, now) => api('POST', '/waitlist/entries', {
    key: t.key, idempotencyKey: `dst-walk-${t.queueId}-${now}`, headers: at(now),
    body: { queueId: t.queueId, partySize: 1, fullName: 'Walk-in Guest' },
  });

  // Hours ending at 02:30, inside the gap, end at the change.
  const spring = setup(nyLine('00:00', '02:30'));
  assert.deepEqual(await slots(spring, '2026-03-08T05:00:00Z'), ['05:00', '05:30', '06:00', '06:30']);
  assertError(await book(spring, '2026-03-08T05:00:00Z', '2026-03-08T03:00:00-04:00'), 409, 'booking_unavailable');
  assertError(await walkIn(spring, '2026-03-08T07:00:00Z'), 409, 'queue_unavailable');
  assert.equal((await book(spring, '2026-03-08T05:00:00Z', '2026-03-08T01:30:00-05:00')).status, 201);

  // Hours starting at 01:30: the first 01:00-01:30 is before them.
  const fall = setup(nyLine('01:30', '04:00'));
  assert.deepEqual(await slots(fall, '2026-11-01T04:00:00Z'), ['05:30', '06:30', '07:00', '07:30', '08:00', '08:30']);
  assertError(await book(fall, '2026-11-01T04:00:00Z', '2026-11-01T01:00:00-05:00'), 409, 'booking_unavailable');
  assertError(await walkIn(fall, '2026-11-01T06:00:00Z'), 409, 'queue_unavailable');

  // Hours ending at 01:30: 01:30-02:00 EDT is after them, the second
  // 01:00-01:30 in them again.
  const back = setup(nyLine('00:00', '01:30'));
  assert.deepEqual(await slots(back, '2026-11-01T04:00:00Z'), ['04:00', '04:30', '05:00', '06:00']);
  assertError(await book(back, '2026-11-01T04:00:00Z', '2026-11-01T01:30:00-04:00'), 409, 'booking_unavailable');
  assertError(await walkIn(back, '2026-11-01T05:45:00Z'), 409, 'queue_unavailable');
  assert.equal((await book(back, '2026-11-01T04:00:00Z', '2026-11-01T01:00:00-05:00')).status, 201);
  assert.equal((await walkIn(back, '2026-11-01T06:15:00Z')).status, 201);

  // Hours wholly inside the skipped hour hold no time that day.
  const none = setup(nyLine('02:15', '02:45'));
  const res = await api('GET', `/waitlist/queues/${none.queueId}/availability`, { key: none.key, headers: at('2026-03-08T05:00:00Z') });
  assert.equal(res.status, 200, res.text);
  assert.equal(res.json.availability.bookingsOpen, false);
  assert.deepEqual(res.json.availability.slots, []);
});

test('bookingsEnabled false or bookingsPaused is 409 queue_unavailable', async () => {
  const before = entryCount(A.tenantId);
  assertError(await create(A.key, booking(A.qOff, nextSlot())), 409, 'queue_unavailable');
  assertError(await create(A.key, booking(A.qPause, nextSlot())), 409, 'queue_unavailable');
  assert.equal(entryCount(A.tenantId), before);
  // Walk-ins are still welcome there.
  await mustCreate(A.key, { queueId: A.qOff, partySize: 1, fullName: 'Walk' });
  await mustCreate(A.key, { queueId: A.qPause, partySize: 1, fullName: 'Walk' });
});

test('six concurrent bookings of one slot with capacity 2: two 201, four 409', async () => {
  const at = nextSlot() + 4 * SLOT_MS;
  const results = await Promise.all(Array.from({ length: 6 }, (_, i) =>
    create(A.key, booking(A.qCap, at, { fullName: `Racer ${i}` }))));
  const ok = results.filter((r) => r.status === 201);
  assert.equal(ok.length, 2, results.map((r) => `${r.status} ${r.json?.code ?? ''}`).join(', '));
  for (const r of results) if (r.status !== 201) assertError(r, 409, 'booking_unavailable');
  assert.equal(bookingsAt(A.qCap, at), 2);
  const av = await api('GET', `/waitlist/queues/${A.qCap}/availability`, { key: A.key });
  assert.equal(av.status, 200, av.text);
  const slot = av.json.availability.slots.find((s) => s.startsAt === iso(at));
  assert.ok(slot, `slot ${iso(at)} listed`);
  assert.equal(slot.remaining, 0);
  // Cancelling one frees a place.
  const first = ok[0].json.entry;
  const c = await write('POST', `/bookings/${first.id}/cancel`, A.key, { expectedStatus: 'confirmed', expectedVersion: 1 });
  assert.equal(c.status, 200, c.text);
  await mustCreate(A.key, booking(A.qCap, at));
  const full = await create(A.key, booking(A.qCap, at));
  assertError(full, 409, 'booking_unavailable');
  assert.match(full.json.error, /^scheduledFor /, 'the message names the field');
});

test('capacity counts overlapping intervals, not only equal start times', async () => {
  const t = nextSlot() + 2 * SLOT_MS;
  await mustCreate(A.key, booking(A.qOne, t, { serviceTypeId: A.s60 }));
  // Inside the hour: overlaps.
  assertError(await create(A.key, booking(A.qOne, t + 30 * MIN)), 409, 'booking_unavailable');
  assertError(await create(A.key, booking(A.qOne, t + 45 * MIN)), 409, 'booking_unavailable');
  // A 30-minute service starting before and running into it.
  assertError(await create(A.key, booking(A.qOne, t - 15 * MIN, { serviceTypeId: A.s1 })), 409, 'booking_unavailable');
  // Adjacent intervals do not overlap.
  await mustCreate(A.key, booking(A.qOne, t + 60 * MIN));
  await mustCreate(A.key, booking(A.qOne, t - 15 * MIN));
});

test('availability lists today\'s bookable slots and remaining drops after a booking', async () => {
  const res = await api('GET', `/waitlist/queues/${A.qAvail}/availability`, { key: A.key });
  assert.equal(res.status, 200, res.text);
  assert.deepEqual(Object.keys(res.json), ['availability']);
  const a = res.json.availability;
  assert.equal(a.queueId, A.qAvail);
  assert.equal(a.date, localParts(ZONE).date);
  assert.equal(a.timeZone, ZONE);
  assert.equal(a.bookingsOpen, true);
  assert.equal(a.slotMinutes, 15);
  assert.equal(a.durationMinutes, 15);
  assert.equal(a.capacity, 3);
  assert.ok(a.slots.length > 10);
  const now = Date.now();
  for (const s of a.slots) {
    assert.match(s.startsAt, TS_RE);
    assert.equal(Date.parse(s.endsAt) - Date.parse(s.startsAt), 15 * MIN);
    assert.equal(Date.parse(s.startsAt) % SLOT_MS, 0);
    assert.ok(Date.parse(s.startsAt) >= now - 5000, `slot ${s.startsAt} in the past`);
    assert.equal(s.remaining, 3);
  }
  assert.equal(a.slots.at(-1).endsAt, iso(localTodayAt(ZONE, 24, 0)));
  const at = nextSlot();
  assert.ok(a.slots.some((s) => s.startsAt === iso(at)));
  await mustCreate(A.key, booking(A.qAvail, at, { serviceTypeId: A.s1 }));
  const after = (await api('GET', `/waitlist/queues/${A.qAvail}/availability`, { key: A.key })).json.availability;
  const by = Object.fromEntries(after.slots.map((s) => [s.startsAt, s.remaining]));
  assert.equal(by[iso(at)], 2);
  assert.equal(by[iso(at + SLOT_MS)], 2, 'a 30-minute booking takes two 15-minute slots');
  assert.equal(by[iso(at + 2 * SLOT_MS)], 3);

  // With a service, the duration is the service's and no slot runs past the hours.
  const svc = await api('GET', `/waitlist/queues/${A.qAvail}/availability?serviceTypeId=${A.s60}`, { key: A.key });
  assert.equal(svc.status, 200, svc.text);
  assert.equal(svc.json.availability.durationMinutes, 60);
  assert.equal(svc.json.availability.slots.at(-1).startsAt, iso(localTodayAt(ZONE, 23, 0)));
  const before = svc.json.availability.slots.find((s) => s.startsAt === iso(at - SLOT_MS));
  assert.ok(before, `no slot at ${iso(at - SLOT_MS)}`);
  assert.equal(before.remaining, 2);
});

test('availability of lines that take no bookings today has no slots', async () => {
  for (const q of [A.qOff, A.qPause, A.qDayOff, A.qEarly]) {
    const res = await api('GET', `/waitlist/queues/${q}/availability`, { key: A.key });
    assert.equal(res.status, 200, res.text);
    if (q === A.qOff || q === A.qPause) assert.equal(res.json.availability.bookingsOpen, false, res.text);
    assert.deepEqual(res.json.availability.slots, []);
  }
});

test('availability of another tenant\'s or an unknown line is 404; an unattached service is 400', async () => {
  assertError(await api('GET', `/waitlist/queues/${B.queueId}/availability`, { key: A.key }), 404, 'not_found');
  assertError(await api('GET', '/waitlist/queues/que_nope/availability', { key: A.key }), 404, 'not_found');
  assertError(await api('GET', `/waitlist/queues/${A.qAvail}/availability?serviceTypeId=svc_nope`, { key: A.key }), 400, 'validation_failed');
});

// ---- reschedule ----

test('reschedule moves the booking, bumps the version and emits booking.rescheduled', async () => {
  const at = nextSlot();
  const e = await mustCreate(A.key, booking(A.queueId, at));
  const to = at + 2 * SLOT_MS;
  const res = await write('POST', `/bookings/${e.id}/reschedule`, A.key, { scheduledFor: withOffset(to, ZONE), expectedVersion: 1 });
  assert.equal(res.status, 200, res.text);
  assert.deepEqual(Object.keys(res.json), ['entry']);
  const n = res.json.entry;
  assert.equal(n.version, 2);
  assert.equal(n.scheduledFor, iso(to));
  assert.equal(n.status, 'confirmed');
  assert.equal(n.bookingId, e.bookingId);
  assert.deepEqual(await getEntry(A.key, e.id), n);
  const evs = events(A.tenantId).filter((x) => x.body.resourceId === e.id);
  assert.deepEqual(evs.map((x) => x.type), ['waitlist.entry.created', 'booking.created', 'booking.rescheduled']);
  assert.equal(evs[2].body.resourceVersion, 2);
  assert.deepEqual(evs[2].body.data, { entryId: e.id, bookingId: e.bookingId, scheduledFor: iso(to), previousScheduledFor: iso(at) });
});

test('reschedule into a full slot is 409; into its own slot it does not count itself', async () => {
  const t = nextSlot() + SLOT_MS;
  const a = await mustCreate(A.key, booking(A.qOne2, t));
  const b = await mustCreate(A.key, booking(A.qOne2, t + SLOT_MS));
  assertError(await write('POST', `/bookings/${b.id}/reschedule`, A.key, { scheduledFor: iso(t), expectedVersion: 1 }), 409, 'booking_unavailable');
  assert.equal((await getEntry(A.key, b.id)).scheduledFor, iso(t + SLOT_MS));
  const same = await write('POST', `/bookings/${a.id}/reschedule`, A.key, { scheduledFor: iso(t), expectedVersion: 1 });
  assert.equal(same.status, 200, same.text);
  assert.equal(same.json.entry.version, 2);
});

test('reschedule checks the availability rules', async () => {
  const e = await mustCreate(A.key, booking(A.queueId, nextSlot()));
  for (const to of [nextSlot() + 7 * MIN, nextSlot() - 4 * SLOT_MS, nextSlot() + 24 * 60 * MIN, localTodayAt(ZONE, 24, 0)]) {
    assertError(await write('POST', `/bookings/${e.id}/reschedule`, A.key, { scheduledFor: iso(to), expectedVersion: 1 }), 409, 'booking_unavailable');
  }
  assert.deepEqual(await getEntry(A.key, e.id), e);
});

test('reschedule with a stale version is 409 version_conflict', async () => {
  const e = await mustCreate(A.key, booking(A.queueId, nextSlot()));
  const ok = await write('POST', `/bookings/${e.id}/reschedule`, A.key, { scheduledFor: iso(nextSlot() + SLOT_MS), expectedVersion: 1 });
  assert.equal(ok.status, 200, ok.text);
  assertError(await write('POST', `/bookings/${e.id}/reschedule`, A.key, { scheduledFor: iso(nextSlot() + 2 * SLOT_MS), expectedVersion: 1 }), 409, 'version_conflict');
  assert.equal((await getEntry(A.key, e.id)).scheduledFor, iso(nextSlot() + SLOT_MS));
});

test('reschedule of a walk-in is 400 invalid_request', async () => {
  const w = await mustCreate(A.key, { queueId: A.queueId, partySize: 1, fullName: 'Walk' });
  assertError(await write('POST', `/bookings/${w.id}/reschedule`, A.key, { scheduledFor: iso(nextSlot()), expectedVersion: 1 }), 400, 'invalid_request');
  assert.deepEqual(await getEntry(A.key, w.id), w);
});

test('reschedule of a cancelled or in-service booking is 400 invalid_transition', async () => {
  const c = await moveThrough(A.key, await mustCreate(A.key, booking(A.queueId, nextSlot())), ['cancelled']);
  assertError(await write('POST', `/bookings/${c.id}/reschedule`, A.key, { scheduledFor: iso(nextSlot() + SLOT_MS), expectedVersion: c.version }), 400, 'invalid_transition');
  const s = await moveThrough(A.key, await mustCreate(A.key, booking(A.queueId, nextSlot())), ['in_service']);
  assertError(await write('POST', `/bookings/${s.id}/reschedule`, A.key, { scheduledFor: iso(nextSlot() + SLOT_MS), expectedVersion: s.version }), 400, 'invalid_transition');
  assert.deepEqual(await getEntry(A.key, c.id), c);
  assert.deepEqual(await getEntry(A.key, s.id), s);
});

test('reschedule bodies are validated and other tenants\' bookings are 404', async () => {
  const e = await mustCreate(A.key, booking(A.queueId, nextSlot()));
  const to = iso(nextSlot() + SLOT_MS);
  for (const bad of [
    { expectedVersion: 1 },
    { scheduledFor: to },
    { scheduledFor: to.replace(/\.000Z$/, ''), expectedVersion: 1 },
    { scheduledFor: 'soon', expectedVersion: 1 },
    // openapi.json's TimestampInput: at most 64 characters, here 65.
    { scheduledFor: to.replace(/\.000Z$/, `.${'0'.repeat(44)}Z`), expectedVersion: 1 },
    { scheduledFor: to, expectedVersion: '1' },
    { scheduledFor: to, expectedVersion: 1, queueId: A.qOne },
  ]) {
    assertError(await write('POST', `/bookings/${e.id}/reschedule`, A.key, bad), 400, ['validation_failed', 'invalid_request']);
  }
  assert.deepEqual(await getEntry(A.key, e.id), e);
  const other = await mustCreate(B.key, { queueId: B.queueId, partySize: 1, fullName: 'B walk' });
  assertError(await write('POST', `/bookings/${other.id}/reschedule`, A.key, { scheduledFor: to, expectedVersion: 1 }), 404, 'not_found');
  assertError(await write('POST', '/bookings/ent_nope/reschedule', A.key, { scheduledFor: to, expectedVersion: 1 }), 404, 'not_found');
  // The booking id is not a route id.
  assertError(await write('POST', `/bookings/${e.bookingId}/reschedule`, A.key, { scheduledFor: to, expectedVersion: 1 }), 404, 'not_found');
});

// ---- cancel ----

test('cancel moves the booking to cancelled and emits status_changed and booking.cancelled', async () => {
  const e = await mustCreate(A.key, booking(A.queueId, nextSlot()));
  const res = await write('POST', `/bookings/${e.id}/cancel`, A.key, { expectedStatus: 'confirmed', expectedVersion: 1, reason: 'guest called' });
  assert.equal(res.status, 200, res.text);
  assert.deepEqual(Object.keys(res.json), ['entry']);
  assert.equal(res.json.entry.status, 'cancelled');
  assert.equal(res.json.entry.version, 2);
  assert.equal(res.json.entry.scheduledFor, e.scheduledFor);
  const evs = events(A.tenantId).filter((x) => x.body.resourceId === e.id);
  assert.deepEqual(evs.map((x) => x.type), ['waitlist.entry.created', 'booking.created', 'waitlist.entry.status_changed', 'booking.cancelled']);
  assert.deepEqual(evs[2].body.data, { entryId: e.id, status: 'cancelled', previousStatus: 'confirmed' });
  assert.deepEqual(evs[3].body.data, { entryId: e.id, bookingId: e.bookingId });
  assert.equal(evs[3].body.resourceVersion, 2);
  assert.ok(!evs[3].raw.includes('guest called'));
  // Without a reason, from ready.
  const r = await moveThrough(A.key, await mustCreate(A.key, booking(A.queueId, nextSlot())), ['ready']);
  const c = await write('POST', `/bookings/${r.id}/cancel`, A.key, { expectedStatus: 'ready', expectedVersion: 2 });
  assert.equal(c.status, 200, c.text);
  assert.equal(c.json.entry.status, 'cancelled');
});

test('cancelling a booking through the status route also emits booking.cancelled', async () => {
  const e = await mustCreate(A.key, booking(A.queueId, nextSlot()));
  const res = await setStatus(A.key, e, 'cancelled');
  assert.equal(res.status, 200, res.text);
  const evs = events(A.tenantId).filter((x) => x.body.resourceId === e.id);
  assert.deepEqual(evs.map((x) => x.type).slice(2), ['waitlist.entry.status_changed', 'booking.cancelled']);
  assert.deepEqual(evs[3].body.data, { entryId: e.id, bookingId: e.bookingId });
  // A no_show is not a cancellation; a walk-in's cancellation is not a booking's.
  const n = await mustCreate(A.key, booking(A.queueId, nextSlot()));
  await moveThrough(A.key, n, ['no_show']);
  assert.deepEqual(events(A.tenantId).filter((x) => x.body.resourceId === n.id).map((x) => x.type),
    ['waitlist.entry.created', 'booking.created', 'waitlist.entry.status_changed']);
  const w = await mustCreate(A.key, { queueId: A.queueId, partySize: 1, fullName: 'Walk' });
  await moveThrough(A.key, w, ['cancelled']);
  assert.deepEqual(events(A.tenantId).filter((x) => x.body.resourceId === w.id).map((x) => x.type),
    ['waitlist.entry.created', 'waitlist.entry.status_changed']);
});

test('cancel with a stale status or version is 409 and changes nothing', async () => {
  const e = await mustCreate(A.key, booking(A.queueId, nextSlot()));
  assertError(await write('POST', `/bookings/${e.id}/cancel`, A.key, { expectedStatus: 'ready', expectedVersion: 1 }), 409, 'status_conflict');
  assertError(await write('POST', `/bookings/${e.id}/cancel`, A.key, { expectedStatus: 'waiting', expectedVersion: 7 }), 409, 'status_conflict');
  assertError(await write('POST', `/bookings/${e.id}/cancel`, A.key, { expectedStatus: 'confirmed', expectedVersion: 2 }), 409, 'version_conflict');
  assert.deepEqual(await getEntry(A.key, e.id), e);
  assert.equal(events(A.tenantId).filter((x) => x.body.resourceId === e.id).length, 2);
});

test('cancel of a walk-in is 400 invalid_request; of a finished booking 400 invalid_transition', async () => {
  const w = await mustCreate(A.key, { queueId: A.queueId, partySize: 1, fullName: 'Walk' });
  assertError(await write('POST', `/bookings/${w.id}/cancel`, A.key, { expectedStatus: 'waiting', expectedVersion: 1 }), 400, 'invalid_request');
  assert.deepEqual(await getEntry(A.key, w.id), w);
  const c = await moveThrough(A.key, await mustCreate(A.key, booking(A.queueId, nextSlot())), ['cancelled']);
  assertError(await write('POST', `/bookings/${c.id}/cancel`, A.key, { expectedStatus: 'cancelled', expectedVersion: c.version }), 400, 'invalid_transition');
  const s = await moveThrough(A.key, await mustCreate(A.key, booking(A.queueId, nextSlot())), ['in_service']);
  assertError(await write('POST', `/bookings/${s.id}/cancel`, A.key, { expectedStatus: 'in_service', expectedVersion: s.version }), 400, 'invalid_transition');
  const d = await moveThrough(A.key, s, ['completed']);
  assertError(await write('POST', `/bookings/${d.id}/cancel`, A.key, { expectedStatus: 'completed', expectedVersion: d.version }), 400, 'invalid_transition');
  assert.equal(events(A.tenantId).filter((x) => x.body.resourceId === c.id && x.type === 'booking.cancelled').length, 1);
});

test('cancel bodies are validated and other tenants\' bookings are 404', async () => {
  const e = await mustCreate(A.key, booking(A.queueId, nextSlot()));
  for (const bad of [
    { expectedVersion: 1 },
    { expectedStatus: 'confirmed' },
    { expectedStatus: 'booked', expectedVersion: 1 },
    { expectedStatus: 'confirmed', expectedVersion: 1, status: 'cancelled' },
    { expectedStatus: 'confirmed', expectedVersion: 1, reason: 42 },
  ]) {
    assertError(await write('POST', `/bookings/${e.id}/cancel`, A.key, bad), 400, ['validation_failed', 'invalid_request']);
  }
  assert.deepEqual(await getEntry(A.key, e.id), e);
  const other = await mustCreate(B.key, { queueId: B.queueId, partySize: 1, fullName: 'B walk' });
  assertError(await write('POST', `/bookings/${other.id}/cancel`, A.key, { expectedStatus: 'waiting', expectedVersion: 1 }), 404, 'not_found');
  assertError(await write('POST', `/bookings/${e.bookingId}/cancel`, A.key, { expectedStatus: 'confirmed', expectedVersion: 1 }), 404, 'not_found');
});

test('concurrent reschedules of two bookings into the last place: one wins', async () => {
  const t = nextSlot();
  const a = await mustCreate(A.key, booking(A.qOne3, t + SLOT_MS));
  const b = await mustCreate(A.key, booking(A.qOne3, t + 2 * SLOT_MS));
  const [ra, rb] = await Promise.all([a, b].map((e) =>
    write('POST', `/bookings/${e.id}/reschedule`, A.key, { scheduledFor: iso(t), expectedVersion: 1 })));
  const statuses = [ra.status, rb.status].sort();
  assert.deepEqual(statuses, [200, 409], `${ra.text} / ${rb.text}`);
  assert.equal(bookingsAt(A.qOne3, t), 1);
});

test('a booking back from in_service to waiting needs room at its time again', async () => {
  // Capacity 1: while a is in service it holds no place, so b takes the
  // slot; a cannot return to the line until b is gone.
  const t = nextSlot() + SLOT_MS;
  const a = await moveThrough(A.key, await mustCreate(A.key, booking(A.qOne4, t)), ['in_service']);
  const b = await mustCreate(A.key, booking(A.qOne4, t));
  const refused = await setStatus(A.key, a, 'waiting');
  assertError(refused, 409, 'booking_unavailable');
  const still = await getEntry(A.key, a.id);
  assert.equal(still.status, 'in_service');
  assert.equal(still.version, a.version);
  await moveThrough(A.key, b, ['cancelled']);
  const back = await setStatus(A.key, a, 'waiting');
  assert.equal(back.status, 200, back.text);
  assert.equal(back.json.entry.status, 'waiting');
  assert.equal(back.json.entry.version, a.version + 1);
});

test('a booking\'s new service sets its length; a longer one must fit the capacity', async () => {
  // Capacity 1: a (15 minutes, no service) then b right after it.
  const t = nextSlot() + SLOT_MS;
  const a = await mustCreate(A.key, booking(A.qOne5, t));
  const b = await mustCreate(A.key, booking(A.qOne5, t + SLOT_MS));
  const end = (id) => Number(sql(`SELECT booking_end FROM entries WHERE id='${id}'`)[0][0]);
  // 30 minutes would run into b.
  assertError(await write('PATCH', `/waitlist/entries/${a.id}`, A.key, { expectedVersion: 1, serviceTypeId: A.s1 }), 409, 'booking_unavailable');
  assert.deepEqual(await getEntry(A.key, a.id), a);
  assert.equal(end(a.id), t + SLOT_MS);
  await moveThrough(A.key, b, ['cancelled']);
  const longer = await write('PATCH', `/waitlist/entries/${a.id}`, A.key, { expectedVersion: 1, serviceTypeId: A.s1 });
  assert.equal(longer.status, 200, longer.text);
  assert.equal(longer.json.entry.serviceTypeId, A.s1);
  assert.equal(longer.json.entry.scheduledFor, iso(t));
  assert.equal(end(a.id), t + 2 * SLOT_MS);
  assertError(await create(A.key, booking(A.qOne5, t + SLOT_MS)), 409, 'booking_unavailable');
  // Without its service it takes the slot's length again and frees the rest.
  const shorter = await write('PATCH', `/waitlist/entries/${a.id}`, A.key, { expectedVersion: 2, serviceTypeId: null });
  assert.equal(shorter.status, 200, shorter.text);
  assert.equal(end(a.id), t + SLOT_MS);
  await mustCreate(A.key, booking(A.qOne5, t + SLOT_MS));
  // Past the end of the day's booking hours (24:00) it does not fit either.
  const last = await mustCreate(A.key, booking(A.queueId, localTodayAt(ZONE, 23, 45)));
  assertError(await write('PATCH', `/waitlist/entries/${last.id}`, A.key, { expectedVersion: 1, serviceTypeId: A.s1 }), 409, 'booking_unavailable');
  assert.deepEqual(await getEntry(A.key, last.id), last);
});

test('booking events are contiguous and carry no guest values', async () => {
  const evs = events(A.tenantId);
  assert.ok(evs.some((e) => e.type.startsWith('booking.')), 'no booking event to look at');
  evs.forEach((e, i) => assert.equal(e.seq, i + 1));
  for (const e of evs) {
    assert.ok(!e.raw.includes('Booked Guest') && !e.raw.includes('Racer'), `event ${e.seq} carries a guest name`);
    if (e.type.startsWith('booking.')) assert.match(e.body.data.bookingId, /^bkg_/);
  }
});
