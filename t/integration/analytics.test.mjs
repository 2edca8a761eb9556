// GET /analytics/queues/{queueId}/summary (DECISIONS "Analytics", "Errors",
// "Queue" time zone rule; issue 14; definitions in lib/analytics.c):
// counts for one local business day of a line, scope analytics:read.
//
// The day's entries are those created during it in the line's zone
// (DST-correct); wait = creation to first in_service of walk-ins; service
// = last in_service to completed; served = entries that reached
// in_service; noShowRate = no_show / entries; minutes with one decimal,
// percentiles by nearest rank, 0 when nothing to measure.
//
// Every creation and status change is pinned with X-Test-Now so the day is
// scripted to the minute.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { api, fixture, seed, uniq } from './lib.mjs';
import {
  DAY_MS, addDays, assertError, assertOk, createKey, iso, localDate, localInstant, pinned, tenantSet, walkIn,
} from './util-limits.mjs';

const STATUSES = ['waiting', 'ready', 'confirmed', 'in_service', 'completed', 'cancelled', 'no_show'];
const ALL_DAY = { enabled: true, start: '00:00', end: '24:00' };

function queueDef(ref, name, timeZone) {
  return {
    ref, name, timeZone, services: ['s1'], customFields: ['f1'],
    workingHours: { ...ALL_DAY },
    availability: {
      walkInsEnabled: true, walkInsPaused: false, bookingsEnabled: true, bookingsPaused: false,
      bookingSlotMinutes: 15, bookingHours: { ...ALL_DAY }, bookingCapacity: 5, serviceRequired: false,
    },
  };
}

// Business b1 in Europe/Paris with q1 (zone null: the business's), q2 (zone
// null) and qny (America/New_York); business b2 (UTC) with qb2.
function parisTenant() {
  const f = fixture();
  const b1 = f.tenants[0].businesses[0];
  b1.timeZone = 'Europe/Paris';
  b1.queues.push(queueDef('q2', 'Second line', null), queueDef('qny', 'New York line', 'America/New_York'));
  f.tenants[0].businesses.push({
    ref: 'b2', name: `${f.tenants[0].name} other`, slug: uniq('biz'), timeZone: 'UTC',
    services: [], customFields: [], queues: [{ ...queueDef('qb2', 'Other business line', null), services: [], customFields: [] }],
  });
  return seed(f);
}

async function arrive(refs, queueId, whenMs, body = {}) {
  const res = await api('POST', '/waitlist/entries', {
    key: refs.k1, headers: pinned(iso(whenMs)), idempotencyKey: uniq('idem'),
    body: { ...walkIn(queueId, 'Guest Name'), ...body },
  });
  return assertOk(res, 201, `create at ${iso(whenMs)}`).entry;
}

async function move(refs, entry, status, whenMs) {
  const res = await api('PATCH', `/waitlist/entries/${entry.id}/status`, {
    key: refs.k1, headers: pinned(iso(whenMs)), idempotencyKey: uniq('idem'),
    body: { status, expectedStatus: entry.status, expectedVersion: entry.version },
  });
  return assertOk(res, 200, `${entry.status} -> ${status} at ${iso(whenMs)}`).entry;
}

async function summary(key, queueId, date, { now } = {}) {
  const q = date === undefined ? '' : `?date=${encodeURIComponent(date)}`;
  const headers = now === undefined ? {} : pinned(iso(now));
  return api('GET', `/analytics/queues/${queueId}/summary${q}`, { key, headers });
}

async function summaryOk(key, queueId, date, opts) {
  const res = await summary(key, queueId, date, opts);
  const body = assertOk(res, 200, `summary ${queueId} ${date}`);
  assert.deepEqual(Object.keys(body), ['summary']);
  return { s: body.summary, text: res.text };
}

function hours(map) {
  const a = Array(24).fill(0);
  for (const [h, n] of Object.entries(map)) a[Number(h)] = n;
  return a;
}

function expected(queueId, date, timeZone, o = {}) {
  return {
    queueId, date, timeZone,
    entries: { total: 0, walkIns: 0, bookings: 0, ...o.entries },
    byStatus: { ...Object.fromEntries(STATUSES.map((s) => [s, 0])), ...o.byStatus },
    served: o.served ?? 0,
    noShowRate: o.noShowRate ?? 0,
    waitMinutes: { average: 0, p50: 0, p90: 0, ...o.waitMinutes },
    serviceMinutes: { average: 0, ...o.serviceMinutes },
    arrivalsByHour: hours(o.arrivals ?? {}),
  };
}

const MIN = 60_000;

test('a scripted day gives the exact figures', async () => {
  const refs = parisTenant();
  const tz = 'Europe/Paris';
  const D = localDate(tz, Date.now() - 10 * DAY_MS);
  const T = (hhmm, date = D) => localInstant(tz, date, hhmm);
  const names = [];
  const guest = (extra = {}) => {
    const fullName = `Zelda ${uniq('Quixote')}`;
    names.push(fullName);
    return { fullName, ...extra };
  };
  const phone = '+33612345678';
  const note = uniq('peanut-allergy');
  // Four walk-ins served: waits 10, 20, 30, 40; service 30, 15, 45, 12.
  const served = [
    ['09:05', '09:15', '09:45'],
    ['09:20', '09:40', '09:55'],
    ['10:10', '10:40', '11:25'],
    ['14:00', '14:40', '14:52'],
  ];
  for (const [i, [c, s, d]] of served.entries()) {
    const extra = i === 0 ? { phone, notes: note, customData: { [refs.f1]: 'in' } } : {};
    let e = await arrive(refs, refs.q1, T(c), guest(extra));
    e = await move(refs, e, 'in_service', T(s));
    await move(refs, e, 'completed', T(d));
  }
  const e5 = await arrive(refs, refs.q1, T('15:30'), guest());
  await move(refs, e5, 'no_show', T('16:00'));
  const e6 = await arrive(refs, refs.q1, T('16:15'), guest());
  await move(refs, e6, 'cancelled', T('16:20'));
  await arrive(refs, refs.q1, T('18:45'), guest()); // still waiting
  const booking = await arrive(refs, refs.q1, T('11:00'), guest({
    isBooking: true, scheduledFor: iso(T('13:00')), externalReference: uniq('ext'),
  }));
  assert.equal(booking.status, 'confirmed');
  // Created the evening before, served after midnight: the day before's.
  let x = await arrive(refs, refs.q1, T('23:50', addDays(D, -1)), guest());
  x = await move(refs, x, 'in_service', T('00:20'));
  await move(refs, x, 'completed', T('00:40'));
  // Created just after the day: the next day's.
  await arrive(refs, refs.q1, T('00:05', addDays(D, 1)), guest());
  // Another line of the same business the same day: not this line's.
  await arrive(refs, refs.q2, T('12:00'), guest());

  const { s, text } = await summaryOk(refs.k1, refs.q1, D);
  assert.deepEqual(s, expected(refs.q1, D, tz, {
    entries: { total: 8, walkIns: 7, bookings: 1 },
    byStatus: { waiting: 1, confirmed: 1, completed: 4, cancelled: 1, no_show: 1 },
    served: 4,
    noShowRate: 0.125,
    waitMinutes: { average: 25, p50: 20, p90: 40 },
    serviceMinutes: { average: 25.5 },
    arrivals: { 9: 2, 10: 1, 11: 1, 14: 1, 15: 1, 16: 1, 18: 1 },
  }));
  // Never a guest value.
  for (const v of [...names, phone, note, 'Guest Name']) assert.ok(!text.includes(v), `summary shows guest value ${v}`);
  assert.ok(!text.includes('33612345678'), 'summary shows the phone number');

  const before = (await summaryOk(refs.k1, refs.q1, addDays(D, -1))).s;
  assert.deepEqual(before, expected(refs.q1, addDays(D, -1), tz, {
    entries: { total: 1, walkIns: 1 }, byStatus: { completed: 1 }, served: 1,
    waitMinutes: { average: 30, p50: 30, p90: 30 }, serviceMinutes: { average: 20 }, arrivals: { 23: 1 },
  }));
  const after = (await summaryOk(refs.k1, refs.q1, addDays(D, 1))).s;
  assert.deepEqual(after, expected(refs.q1, addDays(D, 1), tz, {
    entries: { total: 1, walkIns: 1 }, byStatus: { waiting: 1 }, arrivals: { 0: 1 },
  }));
  const other = (await summaryOk(refs.k1, refs.q2, D)).s;
  assert.deepEqual(other, expected(refs.q2, D, tz, {
    entries: { total: 1, walkIns: 1 }, byStatus: { waiting: 1 }, arrivals: { 12: 1 },
  }));
});

test('wait runs to the first in_service, service from the last in_service to completed; fractions to one decimal', async () => {
  const refs = parisTenant();
  const tz = 'Europe/Paris';
  const D = localDate(tz, Date.now() - 3 * DAY_MS);
  const T = (hhmm) => localInstant(tz, D, hhmm);
  let e = await arrive(refs, refs.q1, T('10:00'));
  e = await move(refs, e, 'in_service', T('10:10'));
  e = await move(refs, e, 'waiting', T('10:20'));
  e = await move(refs, e, 'in_service', T('10:50'));
  await move(refs, e, 'completed', T('11:05'));
  // 7.5 and 8.25 minutes: averages and percentiles keep one decimal.
  let f = await arrive(refs, refs.q1, T('12:00'));
  f = await move(refs, f, 'ready', T('12:03'));
  f = await move(refs, f, 'in_service', T('12:00') + 7.5 * MIN);
  await move(refs, f, 'completed', T('12:00') + 15.75 * MIN);
  const { s } = await summaryOk(refs.k1, refs.q1, D);
  assert.deepEqual(s, expected(refs.q1, D, tz, {
    entries: { total: 2, walkIns: 2 }, byStatus: { completed: 2 }, served: 2,
    // waits 10 and 7.5: mean 8.75 -> 8.8; nearest rank p50 = 7.5, p90 = 10.
    waitMinutes: { average: 8.8, p50: 7.5, p90: 10 },
    // services 15 and 8.25: mean 11.625 -> 11.6.
    serviceMinutes: { average: 11.6 },
    arrivals: { 10: 1, 12: 1 },
  }));
});

test('a day without entries is all zeros', async () => {
  const refs = parisTenant();
  const D = localDate('Europe/Paris', Date.now() - 5 * DAY_MS);
  const { s } = await summaryOk(refs.k1, refs.q1, D);
  assert.deepEqual(s, expected(refs.q1, D, 'Europe/Paris'));
  assert.equal(s.arrivalsByHour.length, 24);
});

test('the line time zone: its own, else its business one', async () => {
  const refs = parisTenant();
  const D = localDate('America/New_York', Date.now() - DAY_MS);
  assert.equal((await summaryOk(refs.k1, refs.qny, D)).s.timeZone, 'America/New_York');
  assert.equal((await summaryOk(refs.k1, refs.q1, D)).s.timeZone, 'Europe/Paris');
  assert.equal((await summaryOk(refs.k1, refs.qb2, D)).s.timeZone, 'UTC');
});

test('date validation: format, impossible dates, the future and more than 90 days back are 400 validation_failed', async () => {
  const refs = parisTenant();
  const tz = 'Europe/Paris';
  const now = Date.now();
  const today = localDate(tz, now);
  const bad = [
    '2026-1-05', '20261105', '2026/11/05', 'yesterday', `${today}T00:00:00Z`, `${today} `, ` ${today}`,
    `${today}x`, '2026-11-5x', '+2026-11-05', '2026-02-30', '2026-13-01', '2026-00-10', '2026-04-31',
    '2025-02-29', '0000-00-00', 'abcd-ef-gh', '',
    // A space or a sign for the tens of a day 21 to 29 days back at most
    // 60 days: read leniently, either would be a date inside the window.
    ...[' ', '+'].map((c) => {
      const d = Array.from({ length: 60 }, (_, i) => addDays(today, -1 - i)).find((x) => /-2[1-9]$/.test(x));
      return `${d.slice(0, 8)}${c}${d.slice(9)}`;
    }),
    addDays(today, 1), addDays(today, 400), addDays(today, -91), addDays(today, -365), '2000-01-01',
  ];
  for (const d of bad) {
    assertError(await summary(refs.k1, refs.q1, d, { now }), 400, 'validation_failed', `date=${JSON.stringify(d)}`);
  }
  for (const d of [today, addDays(today, -1), addDays(today, -90)]) {
    assert.equal((await summaryOk(refs.k1, refs.q1, d, { now })).s.date, d);
  }
});

test('without a date the summary is for today in the line time zone', async () => {
  const refs = parisTenant();
  const f = fixture();
  f.tenants[0].businesses[0].queues.push(queueDef('qak', 'Auckland line', 'Pacific/Auckland'),
    queueDef('qla', 'Los Angeles line', 'America/Los_Angeles'));
  const z = seed(f);
  const utcDay = new Date().toISOString().slice(0, 10);
  // 12:00 UTC is already tomorrow in Auckland; 03:00 UTC still yesterday
  // in Los Angeles.
  const noon = Date.parse(`${utcDay}T12:00:00Z`);
  const three = Date.parse(`${utcDay}T03:00:00Z`);
  assert.notEqual(localDate('Pacific/Auckland', noon), utcDay);
  assert.notEqual(localDate('America/Los_Angeles', three), utcDay);
  assert.equal((await summaryOk(z.k1, z.qak, undefined, { now: noon })).s.date, localDate('Pacific/Auckland', noon));
  assert.equal((await summaryOk(z.k1, z.qla, undefined, { now: three })).s.date, localDate('America/Los_Angeles', three));
  assert.equal((await summaryOk(refs.k1, refs.q1, undefined, { now: noon })).s.date, localDate('Europe/Paris', noon));
  // Today's entries are counted in the default summary.
  const e = await arrive(z, z.qak, noon);
  const { s } = await summaryOk(z.k1, z.qak, undefined, { now: noon + MIN });
  assert.equal(s.entries.total, 1);
  assert.equal(s.byStatus.waiting, 1);
  assert.equal(e.status, 'waiting');
});

// Europe/Paris, 2026-10-25: clocks go back at 03:00 CEST to 02:00 CET
// (01:00 UTC); the local day lasts 25 hours, 22:00Z on the 24th to 23:00Z
// on the 25th, and 02:00-02:59 happens twice.
test('DST fall back in Europe/Paris (2026-10-25, 25 hours): day boundaries, a doubled hour 2, waits in real minutes', async () => {
  const refs = parisTenant();
  const tz = 'Europe/Paris';
  const at = (s) => Date.parse(s);
  await arrive(refs, refs.q1, at('2026-10-24T21:59:00Z')); // 24th 23:59 CEST
  await arrive(refs, refs.q1, at('2026-10-24T22:00:00Z')); // 25th 00:00 CEST
  await arrive(refs, refs.q1, at('2026-10-24T22:30:00Z')); // 00:30 CEST
  let e = await arrive(refs, refs.q1, at('2026-10-25T00:30:00Z')); // 02:30 CEST
  await arrive(refs, refs.q1, at('2026-10-25T01:30:00Z')); // 02:30 CET
  await arrive(refs, refs.q1, at('2026-10-25T22:30:00Z')); // 23:30 CET
  await arrive(refs, refs.q1, at('2026-10-25T22:59:00Z')); // 23:59 CET
  await arrive(refs, refs.q1, at('2026-10-25T23:00:00Z')); // 26th 00:00 CET
  // 02:30 CEST to 02:40 CET is 70 real minutes, not 10.
  e = await move(refs, e, 'in_service', at('2026-10-25T01:40:00Z'));
  await move(refs, e, 'completed', at('2026-10-25T02:10:00Z'));
  const now = at('2026-11-21T12:00:00Z');
  const day = (await summaryOk(refs.k1, refs.q1, '2026-10-25', { now })).s;
  assert.deepEqual(day, expected(refs.q1, '2026-10-25', tz, {
    entries: { total: 6, walkIns: 6 }, byStatus: { waiting: 5, completed: 1 }, served: 1,
    waitMinutes: { average: 70, p50: 70, p90: 70 }, serviceMinutes: { average: 30 },
    arrivals: { 0: 2, 2: 2, 23: 2 },
  }));
  const before = (await summaryOk(refs.k1, refs.q1, '2026-10-24', { now })).s;
  assert.deepEqual(before, expected(refs.q1, '2026-10-24', tz, {
    entries: { total: 1, walkIns: 1 }, byStatus: { waiting: 1 }, arrivals: { 23: 1 },
  }));
  const after = (await summaryOk(refs.k1, refs.q1, '2026-10-26', { now })).s;
  assert.deepEqual(after, expected(refs.q1, '2026-10-26', tz, {
    entries: { total: 1, walkIns: 1 }, byStatus: { waiting: 1 }, arrivals: { 0: 1 },
  }));
});

// Europe/Paris, 2026-03-29: clocks go forward at 02:00 CET to 03:00 CEST
// (01:00 UTC); the local day lasts 23 hours and has no hour 2.
test('DST spring forward in Europe/Paris (2026-03-29, 23 hours): no hour 2, boundaries, waits in real minutes', async () => {
  const refs = parisTenant();
  const tz = 'Europe/Paris';
  const at = (s) => Date.parse(s);
  await arrive(refs, refs.q1, at('2026-03-28T22:59:00Z')); // 28th 23:59 CET
  await arrive(refs, refs.q1, at('2026-03-28T23:00:00Z')); // 29th 00:00 CET
  let e = await arrive(refs, refs.q1, at('2026-03-29T00:50:00Z')); // 01:50 CET
  await arrive(refs, refs.q1, at('2026-03-29T01:00:00Z')); // 03:00 CEST
  await arrive(refs, refs.q1, at('2026-03-29T21:59:00Z')); // 23:59 CEST
  await arrive(refs, refs.q1, at('2026-03-29T22:00:00Z')); // 30th 00:00 CEST
  // 01:50 CET to 03:10 CEST is 20 real minutes.
  e = await move(refs, e, 'in_service', at('2026-03-29T01:10:00Z'));
  await move(refs, e, 'completed', at('2026-03-29T01:25:00Z'));
  const now = at('2026-04-10T12:00:00Z');
  const day = (await summaryOk(refs.k1, refs.q1, '2026-03-29', { now })).s;
  assert.deepEqual(day, expected(refs.q1, '2026-03-29', tz, {
    entries: { total: 4, walkIns: 4 }, byStatus: { waiting: 3, completed: 1 }, served: 1,
    waitMinutes: { average: 20, p50: 20, p90: 20 }, serviceMinutes: { average: 15 },
    arrivals: { 0: 1, 1: 1, 3: 1, 23: 1 },
  }));
  assert.equal((await summaryOk(refs.k1, refs.q1, '2026-03-28', { now })).s.entries.total, 1);
  assert.equal((await summaryOk(refs.k1, refs.q1, '2026-03-30', { now })).s.entries.total, 1);
});

// America/New_York, 2026-11-01: clocks go back at 02:00 EDT to 01:00 EST
// (06:00 UTC); the local day runs 04:00Z on the 1st to 05:00Z on the 2nd.
test('DST fall back in America/New_York (2026-11-01): the line zone, a doubled hour 1, boundaries', async () => {
  const refs = parisTenant();
  const tz = 'America/New_York';
  const at = (s) => Date.parse(s);
  await arrive(refs, refs.qny, at('2026-11-01T03:59:00Z')); // 31st 23:59 EDT
  await arrive(refs, refs.qny, at('2026-11-01T04:00:00Z')); // 1st 00:00 EDT
  await arrive(refs, refs.qny, at('2026-11-01T05:30:00Z')); // 01:30 EDT
  await arrive(refs, refs.qny, at('2026-11-01T06:30:00Z')); // 01:30 EST
  await arrive(refs, refs.qny, at('2026-11-01T07:30:00Z')); // 02:30 EST
  await arrive(refs, refs.qny, at('2026-11-02T04:59:00Z')); // 1st 23:59 EST
  await arrive(refs, refs.qny, at('2026-11-02T05:00:00Z')); // 2nd 00:00 EST
  const now = at('2026-11-21T12:00:00Z');
  const day = (await summaryOk(refs.k1, refs.qny, '2026-11-01', { now })).s;
  assert.deepEqual(day, expected(refs.qny, '2026-11-01', tz, {
    entries: { total: 5, walkIns: 5 }, byStatus: { waiting: 5 }, arrivals: { 0: 1, 1: 2, 2: 1, 23: 1 },
  }));
  const before = (await summaryOk(refs.k1, refs.qny, '2026-10-31', { now })).s;
  assert.deepEqual(before, expected(refs.qny, '2026-10-31', tz, {
    entries: { total: 1, walkIns: 1 }, byStatus: { waiting: 1 }, arrivals: { 23: 1 },
  }));
  const after = (await summaryOk(refs.k1, refs.qny, '2026-11-02', { now })).s;
  assert.deepEqual(after, expected(refs.qny, '2026-11-02', tz, {
    entries: { total: 1, walkIns: 1 }, byStatus: { waiting: 1 }, arrivals: { 0: 1 },
  }));
  // The same instants mean other days on the Paris line of the business:
  // nothing of the New York line shows there.
  assert.equal((await summaryOk(refs.k1, refs.q1, '2026-11-01', { now })).s.entries.total, 0);
});

test('scope: analytics:read is needed, and enough', async () => {
  const refs = parisTenant();
  const D = localDate('Europe/Paris', Date.now());
  const noScope = createKey(refs.t1, ['waitlist:read', 'waitlist:write', 'guest:read', 'events:read']);
  assertError(await summary(noScope.key, refs.q1, D), 403, 'insufficient_scope', 'without analytics:read');
  assertError(await summary(noScope.key, refs.q1), 403, 'insufficient_scope', 'without analytics:read, no date');
  const only = createKey(refs.t1, ['analytics:read']);
  assert.equal((await summaryOk(only.key, refs.q1, D)).s.queueId, refs.q1);
});

test('restrictions: a line outside the key restrictions, of another tenant or unknown is 404', async () => {
  const refs = parisTenant();
  const other = seed(fixture());
  // Yesterday in UTC is a past or current date in every zone, so it is a
  // valid date for the Paris and the UTC line at any hour.
  const D = localDate('UTC', Date.now() - DAY_MS);
  const toQ2 = createKey(refs.t1, ['analytics:read'], { queues: [refs.q2] });
  assertError(await summary(toQ2.key, refs.q1, D), 404, 'not_found', 'key restricted to q2, asking q1');
  assert.equal((await summaryOk(toQ2.key, refs.q2, D)).s.queueId, refs.q2);
  const toB2 = createKey(refs.t1, ['analytics:read'], { businesses: [refs.b2] });
  assertError(await summary(toB2.key, refs.q1, D), 404, 'not_found', 'key restricted to b2, asking q1');
  assert.equal((await summaryOk(toB2.key, refs.qb2, D)).s.queueId, refs.qb2);
  assertError(await summary(refs.k1, other.q1, D), 404, 'not_found', "another tenant's line");
  assertError(await summary(refs.k1, 'que_doesnotexist', D), 404, 'not_found', 'unknown line');
  // Not found comes before the date check: nothing is revealed.
  assertError(await summary(toQ2.key, refs.q1, 'bad'), 404, 'not_found', 'restricted line with a bad date');
});

test('eligibility applies to analytics like any line route', async () => {
  const refs = parisTenant();
  tenantSet(refs.t1, '--billing', 'off');
  assertError(await summary(refs.k1, refs.q1), 402, 'billing_unavailable');
  tenantSet(refs.t1, '--billing', 'on', '--public-api', 'off');
  assertError(await summary(refs.k1, refs.q1), 403, 'launch_disabled');
});
