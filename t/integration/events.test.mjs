// GET /events: the event types and their exact fields, the filters, paging
// and polling, the key's restrictions, cursor errors and retention
// (SPEC "Events", DECISIONS "Events and the feed", "Pagination", "Errors").

import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { api, ctl, seed, sql, uniq } from './lib.mjs';
import {
  ALL_SCOPES, DATA_KEYS, EVENT_KEYS, EVENT_TYPES, HIGH_LIMITS, TS_RE,
  assertError, businessDef, createBooking, createWalkIn, editEntry, events,
  keyDef, queueDef, rawEvents, readAll, setStatus, slotAhead, storedBodies,
  storedSeqs,
} from './util-events.mjs';

// A fresh tenant: businesses b1 (lines q1, q2) and b2 (line q3); key kAll
// with every scope, kB1 restricted to b1, kQ2 restricted to line q2, kNoEv
// with every scope but events:read.
function makeTenant() {
  const noEvents = ALL_SCOPES.filter((s) => s !== 'events:read');
  return seed({
    tenants: [{
      ref: 't', name: uniq('events tenant'), plan: 'pro', publicApi: true,
      webhooks: true, state: 'active', emailVerified: true,
      billingAvailable: true, guestAllowance: 100000, limits: HIGH_LIMITS,
      businesses: [
        businessDef('b1', [queueDef('q1', 'Line one'), queueDef('q2', 'Line two')]),
        businessDef('b2', [queueDef('q3', 'Line three')]),
      ],
      keys: [
        keyDef('kAll', ALL_SCOPES),
        keyDef('kB1', ALL_SCOPES, { businesses: ['b1'] }),
        keyDef('kQ2', ALL_SCOPES, { queues: ['q2'] }),
        keyDef('kNoEv', noEvents),
      ],
    }],
  });
}

function seqs(list) {
  return list.map((e) => e.sequence);
}

function range(from, to) {
  const out = [];
  for (let i = from; i <= to; i += 1) out.push(i);
  return out;
}

// Flip the character at index i of a cursor to another base64url one.
function flip(cursor, i) {
  const c = cursor[i];
  const r = c === 'A' ? 'B' : 'A';
  return cursor.slice(0, i) + r + cursor.slice(i + 1);
}

describe('event types and their fields', () => {
  test('every change emits the documented events with exact fields, data and sequence', async () => {
    const t = makeTenant();
    const key = t.kAll;
    const startedAt = Date.now();
    const name = uniq('Zelda Quist');
    const phone = '+14155550187';
    const notes = uniq('allergic-to-peanuts-note');
    const name2 = uniq('Yorick Plumtree');
    const notes2 = uniq('window-seat-please');
    const bookName = uniq('Wilhelmina Booker');
    const bookNotes = uniq('booking-private-note');

    // 1. walk-in, 2. edit, 3. status change.
    const w1 = await createWalkIn(key, t.q1, { fullName: name, phone, notes });
    assert.equal(w1.version, 1);
    const w2 = await editEntry(key, w1, { fullName: name2, notes: notes2, partySize: 3 });
    assert.equal(w2.version, 2);
    const w3 = await setStatus(key, w2, 'ready');
    assert.equal(w3.version, 3);

    // 4-5. a booking; 6. rescheduled; 7-8. cancelled by the cancel route.
    const at1 = slotAhead(20, 0);
    const at2 = slotAhead(20, 1);
    const b1 = await createBooking(key, t.q2, at1, { fullName: bookName, phone: '+14155550188', notes: bookNotes });
    assert.equal(b1.status, 'confirmed');
    assert.equal(b1.isBooking, true);
    assert.match(b1.bookingId, /^bkg_/);
    const rs = await api('POST', `/bookings/${b1.id}/reschedule`, {
      key, idempotencyKey: uniq('k'), body: { scheduledFor: at2, expectedVersion: b1.version },
    });
    assert.equal(rs.status, 200, rs.text);
    const b1r = rs.json.entry;
    assert.equal(b1r.version, 2);
    const cx = await api('POST', `/bookings/${b1.id}/cancel`, {
      key, idempotencyKey: uniq('k'),
      body: { expectedStatus: b1r.status, expectedVersion: b1r.version, reason: 'guest called' },
    });
    assert.equal(cx.status, 200, cx.text);
    const b1c = cx.json.entry;
    assert.equal(b1c.status, 'cancelled');
    assert.equal(b1c.version, 3);

    // 9-10. another booking; 11-12. cancelled through PATCH status.
    const b2 = await createBooking(key, t.q3, at1);
    const b2c = await setStatus(key, b2, 'cancelled');
    assert.equal(b2c.version, 2);
    const finishedAt = Date.now();

    const expected = [
      ['waitlist.entry.created', w1, t.b1, t.q1, 1, { entryId: w1.id, status: 'waiting', isBooking: false }],
      ['waitlist.entry.updated', w1, t.b1, t.q1, 2, { entryId: w1.id, changedFields: ['fullName', 'notes', 'partySize'] }],
      ['waitlist.entry.status_changed', w1, t.b1, t.q1, 3, { entryId: w1.id, status: 'ready', previousStatus: 'waiting' }],
      ['waitlist.entry.created', b1, t.b1, t.q2, 1, { entryId: b1.id, status: 'confirmed', isBooking: true }],
      ['booking.created', b1, t.b1, t.q2, 1, { entryId: b1.id, bookingId: b1.bookingId, scheduledFor: at1 }],
      ['booking.rescheduled', b1, t.b1, t.q2, 2, { entryId: b1.id, bookingId: b1.bookingId, scheduledFor: at2, previousScheduledFor: at1 }],
      ['waitlist.entry.status_changed', b1, t.b1, t.q2, 3, { entryId: b1.id, status: 'cancelled', previousStatus: 'confirmed' }],
      ['booking.cancelled', b1, t.b1, t.q2, 3, { entryId: b1.id, bookingId: b1.bookingId }],
      ['waitlist.entry.created', b2, t.b2, t.q3, 1, { entryId: b2.id, status: 'confirmed', isBooking: true }],
      ['booking.created', b2, t.b2, t.q3, 1, { entryId: b2.id, bookingId: b2.bookingId, scheduledFor: at1 }],
      ['waitlist.entry.status_changed', b2, t.b2, t.q3, 2, { entryId: b2.id, status: 'cancelled', previousStatus: 'confirmed' }],
      ['booking.cancelled', b2, t.b2, t.q3, 2, { entryId: b2.id, bookingId: b2.bookingId }],
    ];

    const res = await events(key);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json.hasMore, false);
    const list = res.json.events;
    assert.deepEqual(seqs(list), range(1, expected.length), 'sequences are 1..N in order');
    const ids = new Set();
    list.forEach((ev, i) => {
      const [type, entry, biz, queue, version, data] = expected[i];
      const where = `event ${i + 1} (${ev.type})`;
      assert.deepEqual(Object.keys(ev).sort(), EVENT_KEYS, `${where}: keys`);
      assert.equal(ev.type, type, where);
      assert.match(ev.id, /^evt_[A-Za-z0-9]+$/, where);
      assert.ok(!ids.has(ev.id), `${where}: duplicate event id`);
      ids.add(ev.id);
      assert.notEqual(ev.id, entry.id);
      assert.equal(ev.schemaVersion, '1', where);
      assert.equal(ev.sequence, i + 1, where);
      assert.match(ev.occurredAt, TS_RE, `${where}: occurredAt format`);
      const ts = Date.parse(ev.occurredAt);
      assert.ok(ts >= startedAt - 5000 && ts <= finishedAt + 5000, `${where}: occurredAt ${ev.occurredAt} is now`);
      assert.equal(ev.tenantId, t.t, where);
      assert.equal(ev.businessId, biz, where);
      assert.equal(ev.queueId, queue, where);
      assert.equal(ev.resourceId, entry.id, `${where}: resourceId is the entry id`);
      assert.equal(ev.resourceVersion, version, `${where}: resourceVersion`);
      assert.deepEqual(Object.keys(ev.data).sort(), DATA_KEYS[type], `${where}: data keys`);
      const got = { ...ev.data };
      if (type === 'waitlist.entry.updated') got.changedFields = [...got.changedFields].sort();
      assert.deepEqual(got, data, `${where}: data`);
      for (const k of ['scheduledFor', 'previousScheduledFor']) {
        if (k in ev.data) assert.match(ev.data[k], TS_RE, `${where}: data.${k} format`);
      }
    });
    // Events of one change share its occurredAt; occurredAt never goes back.
    for (let i = 1; i < list.length; i += 1) {
      assert.ok(Date.parse(list[i].occurredAt) >= Date.parse(list[i - 1].occurredAt), 'occurredAt order');
    }
    assert.equal(list[3].occurredAt, list[4].occurredAt);
    assert.equal(list[6].occurredAt, list[7].occurredAt);

    // The versions match what the entry reads now.
    for (const [entry, version] of [[w1, 3], [b1, 3], [b2, 2]]) {
      const got = await api('GET', `/waitlist/entries/${entry.id}`, { key });
      assert.equal(got.status, 200, got.text);
      assert.equal(got.json.entry.version, version);
    }

    // No guest value anywhere in the feed.
    for (const secret of [name, name2, phone, '4155550187', '+14155550188', notes, notes2, bookName, bookNotes, 'guest called']) {
      assert.ok(!res.text.includes(secret), `the feed leaks ${secret}`);
    }

    // Byte-for-byte the stored bodies, and the table's seqs are 1..N.
    const raw = rawEvents(res.text);
    const stored = storedBodies(t.t);
    assert.equal(raw.length, expected.length);
    raw.forEach((text, i) => assert.equal(text, stored.get(i + 1), `event ${i + 1} is served as stored`));
    assert.deepEqual(storedSeqs(t.t), range(1, expected.length));
    for (const body of stored.values()) {
      for (const secret of [name, name2, phone, notes, notes2, bookName, bookNotes]) {
        assert.ok(!body.includes(secret), `a stored event holds ${secret}`);
      }
    }
  });

  test('a refused change emits nothing and the sequence stays gap-free', async () => {
    const t = makeTenant();
    const key = t.kAll;
    const w = await createWalkIn(key, t.q1);
    // version conflict, status conflict, invalid transition: no events.
    for (const body of [
      { status: 'ready', expectedStatus: 'waiting', expectedVersion: 7 },
      { status: 'ready', expectedStatus: 'confirmed', expectedVersion: 1 },
      { status: 'completed', expectedStatus: 'waiting', expectedVersion: 1 },
    ]) {
      const r = await api('PATCH', `/waitlist/entries/${w.id}/status`, { key, idempotencyKey: uniq('k'), body });
      assert.ok(r.status === 409 || r.status === 400, r.text);
    }
    // An idempotent replay emits nothing either.
    const ik = uniq('k');
    const body = { status: 'ready', expectedStatus: 'waiting', expectedVersion: 1 };
    const first = await api('PATCH', `/waitlist/entries/${w.id}/status`, { key, idempotencyKey: ik, body });
    assert.equal(first.status, 200, first.text);
    const again = await api('PATCH', `/waitlist/entries/${w.id}/status`, { key, idempotencyKey: ik, body });
    assert.equal(again.status, 200, again.text);
    assert.equal(again.headers.get('idempotency-replayed'), 'true');
    await createWalkIn(key, t.q1);
    const all = await readAll(key);
    assert.deepEqual(all.events.map((e) => [e.sequence, e.type]), [
      [1, 'waitlist.entry.created'],
      [2, 'waitlist.entry.status_changed'],
      [3, 'waitlist.entry.created'],
    ]);
    assert.deepEqual(storedSeqs(t.t), [1, 2, 3]);
  });

  test('a tenant without events reads an empty page with a usable cursor', async () => {
    const t = makeTenant();
    const res = await events(t.kAll);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.json.events, []);
    assert.equal(res.json.hasMore, false);
    const again = await events(t.kAll, { cursor: res.json.nextCursor });
    assert.equal(again.status, 200, again.text);
    assert.deepEqual(again.json.events, []);
    // The first event ever is found by polling that cursor.
    const w = await createWalkIn(t.kAll, t.q1);
    const next = await events(t.kAll, { cursor: again.json.nextCursor });
    assert.equal(next.status, 200, next.text);
    assert.deepEqual(next.json.events.map((e) => [e.sequence, e.resourceId]), [[1, w.id]]);
  });
});

describe('filters, paging and polling', () => {
  let t;
  let all; // the whole feed as kAll reads it
  let ents;

  before(async () => {
    t = makeTenant();
    const k = t.kAll;
    ents = {};
    const a = await createWalkIn(k, t.q1);
    ents.a = await editEntry(k, a, { partySize: 2 });
    ents.a = await setStatus(k, ents.a, 'ready');
    const b = await createWalkIn(k, t.q2);
    ents.b = await setStatus(k, b, 'in_service');
    const bk = await createBooking(k, t.q2, slotAhead(20, 0));
    ents.bk = await setStatus(k, bk, 'cancelled');
    const c = await createWalkIn(k, t.q3);
    ents.c = await setStatus(k, c, 'no_show');
    const ck = await createBooking(k, t.q3, slotAhead(20, 0));
    const rs = await api('POST', `/bookings/${ck.id}/reschedule`, {
      key: k, idempotencyKey: uniq('k'), body: { scheduledFor: slotAhead(20, 2), expectedVersion: ck.version },
    });
    assert.equal(rs.status, 200, rs.text);
    ents.ck = rs.json.entry;
    all = (await readAll(k)).events;
    assert.equal(all.length, 14);
    assert.deepEqual(seqs(all), range(1, 14));
  });

  test('types filters to one type', async () => {
    for (const type of EVENT_TYPES) {
      const res = await events(t.kAll, { types: type });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.json.hasMore, false);
      assert.deepEqual(seqs(res.json.events), seqs(all.filter((e) => e.type === type)), type);
      assert.ok(res.json.events.length > 0, `fixture has ${type}`);
    }
  });

  test('types filters to several types, in sequence order', async () => {
    const want = ['booking.cancelled', 'waitlist.entry.created', 'booking.rescheduled'];
    const res = await events(t.kAll, { types: want.join(',') });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(seqs(res.json.events), seqs(all.filter((e) => want.includes(e.type))));
    // Percent-encoded commas mean the same.
    const enc = await api('GET', `/events?types=${want.map(encodeURIComponent).join('%2C')}`, { key: t.kAll });
    assert.equal(enc.status, 200, enc.text);
    assert.deepEqual(seqs(enc.json.events), seqs(res.json.events));
  });

  // Each item of types must name an event type: an unknown name or an
  // empty item (leading, trailing or doubled comma) is refused.
  for (const types of [
    'waitlist.entry.deleted', 'bogus', 'waitlist.entry.created,bogus',
    'Waitlist.Entry.Created', 'waitlist.entry.created,', ',waitlist.entry.created',
    'waitlist.entry.created,,booking.created', ',',
  ]) {
    test(`types=${types} is validation_failed`, async () => {
      assertError(await events(t.kAll, { types }), 400, 'validation_failed');
    });
  }

  test('businessId and queueId filter, alone and combined', async () => {
    const cases = [
      [{ businessId: t.b1 }, (e) => e.businessId === t.b1],
      [{ businessId: t.b2 }, (e) => e.businessId === t.b2],
      [{ queueId: t.q2 }, (e) => e.queueId === t.q2],
      [{ queueId: t.q3 }, (e) => e.queueId === t.q3],
      [{ businessId: t.b1, queueId: t.q2 }, (e) => e.queueId === t.q2],
      [{ types: 'waitlist.entry.status_changed', businessId: t.b1 },
        (e) => e.type === 'waitlist.entry.status_changed' && e.businessId === t.b1],
      [{ types: 'booking.created,booking.rescheduled', queueId: t.q3 },
        (e) => ['booking.created', 'booking.rescheduled'].includes(e.type) && e.queueId === t.q3],
    ];
    for (const [params, pred] of cases) {
      const got = await readAll(t.kAll, params);
      const want = all.filter(pred);
      assert.ok(want.length > 0, JSON.stringify(params));
      assert.deepEqual(seqs(got.events), seqs(want), JSON.stringify(params));
    }
  });

  test('an unknown business or line is 404; a malformed one is validation_failed', async () => {
    assertError(await events(t.kAll, { businessId: 'biz_doesnotexist' }), 404, 'not_found');
    assertError(await events(t.kAll, { queueId: 'que_doesnotexist' }), 404, 'not_found');
    assertError(await events(t.kAll, { businessId: 'b'.repeat(161) }), 400, 'validation_failed');
    // Another tenant's business and line are not revealed.
    const other = makeTenant();
    assertError(await events(t.kAll, { businessId: other.b1 }), 404, 'not_found');
    assertError(await events(t.kAll, { queueId: other.q1 }), 404, 'not_found');
  });

  test('limit is 1..100', async () => {
    for (const limit of ['0', '101', '-1', 'abc', '1.5', '1000']) {
      assertError(await events(t.kAll, { limit }), 400, 'validation_failed');
    }
    const one = await events(t.kAll, { limit: 1 });
    assert.equal(one.status, 200, one.text);
    assert.deepEqual(seqs(one.json.events), [1]);
    assert.equal(one.json.hasMore, true);
    const hundred = await events(t.kAll, { limit: 100 });
    assert.equal(hundred.status, 200, hundred.text);
    assert.equal(hundred.json.events.length, all.length);
    assert.equal(hundred.json.hasMore, false);
  });

  test('limit pages through the whole feed with nextCursor until hasMore is false', async () => {
    for (const limit of [1, 2, 4, 7, 14, 15]) {
      let cursor;
      const seen = [];
      for (let pages = 0; ; pages += 1) {
        assert.ok(pages < 100, 'runaway paging');
        const res = await events(t.kAll, { limit, cursor });
        assert.equal(res.status, 200, res.text);
        assert.ok(res.json.events.length <= limit);
        seen.push(...res.json.events);
        cursor = res.json.nextCursor;
        if (!res.json.hasMore) break;
        assert.equal(res.json.events.length, limit, 'only the last page is short');
      }
      assert.deepEqual(seqs(seen), range(1, all.length), `limit ${limit}`);
      assert.deepEqual(seen, all);
    }
    // Filtered paging, one event a page.
    const want = all.filter((e) => e.type === 'waitlist.entry.status_changed');
    const got = await readAll(t.kAll, { types: 'waitlist.entry.status_changed', limit: 1 });
    assert.deepEqual(seqs(got.events), seqs(want));
    assert.ok(got.pages >= want.length);
  });

  test('the default page size is 100', async () => {
    const p = makeTenant();
    // 105 events: 53 walk-ins, 52 of them marked ready.
    const made = [];
    for (let i = 0; i < 53; i += 1) made.push(createWalkIn(p.kAll, i % 2 ? p.q1 : p.q3));
    const entries = await Promise.all(made);
    await Promise.all(entries.slice(0, 52).map((e) => setStatus(p.kAll, e, 'ready')));
    const first = await events(p.kAll);
    assert.equal(first.status, 200, first.text);
    assert.equal(first.json.events.length, 100);
    assert.deepEqual(seqs(first.json.events), range(1, 100));
    assert.equal(first.json.hasMore, true);
    const rest = await events(p.kAll, { cursor: first.json.nextCursor });
    assert.equal(rest.status, 200, rest.text);
    assert.deepEqual(seqs(rest.json.events), range(101, 105));
    assert.equal(rest.json.hasMore, false);
    assert.deepEqual(storedSeqs(p.t), range(1, 105));
  });

  test('polling with the last cursor returns nothing, then exactly the new events', async () => {
    const p = makeTenant();
    const k = p.kAll;
    let w = await createWalkIn(k, p.q1);
    const start = await readAll(k);
    assert.deepEqual(seqs(start.events), [1]);
    // Nothing new: empty, hasMore false, and the cursor still works.
    const idle = await events(k, { cursor: start.cursor });
    assert.equal(idle.status, 200, idle.text);
    assert.deepEqual(idle.json.events, []);
    assert.equal(idle.json.hasMore, false);
    const idle2 = await events(k, { cursor: idle.json.nextCursor });
    assert.equal(idle2.status, 200, idle2.text);
    assert.deepEqual(idle2.json.events, []);

    w = await setStatus(k, w, 'ready');
    const bk = await createBooking(k, p.q3, slotAhead(20, 0));
    const got = await events(k, { cursor: idle2.json.nextCursor });
    assert.equal(got.status, 200, got.text);
    assert.deepEqual(got.json.events.map((e) => [e.sequence, e.type, e.resourceId]), [
      [2, 'waitlist.entry.status_changed', w.id],
      [3, 'waitlist.entry.created', bk.id],
      [4, 'booking.created', bk.id],
    ]);
    assert.equal(got.json.hasMore, false);
    // The old cursor still replays from where it was.
    const replay = await events(k, { cursor: start.cursor });
    assert.deepEqual(seqs(replay.json.events), [2, 3, 4]);
    const after = await events(k, { cursor: got.json.nextCursor });
    assert.deepEqual(after.json.events, []);
  });

  test('a filtered read over 500 unwanted events: hasMore only when more follow them', async () => {
    // A request examines at most 500 events; with exactly 500 and nothing
    // after them there is nothing more to read.
    const p = makeTenant();
    const k = p.kAll;
    for (let i = 0; i < 500; i += 25) {
      await Promise.all(Array.from({ length: 25 }, () => createWalkIn(k, p.q1)));
    }
    const five = await events(k, { queueId: p.q2 });
    assert.equal(five.status, 200, five.text);
    assert.deepEqual(five.json.events, []);
    assert.equal(five.json.hasMore, false, 'hasMore with nothing after the 500 examined');
    const idle = await events(k, { queueId: p.q2, cursor: five.json.nextCursor });
    assert.deepEqual(idle.json.events, []);
    assert.equal(idle.json.hasMore, false);
    // One more: the first request stops at 500 and says so; the next
    // reads the rest.
    const q2 = await createWalkIn(k, p.q2);
    const first = await events(k, { queueId: p.q2 });
    assert.deepEqual(first.json.events, []);
    assert.equal(first.json.hasMore, true, 'no hasMore with event 501 not yet examined');
    const rest = await events(k, { queueId: p.q2, cursor: first.json.nextCursor });
    assert.deepEqual(rest.json.events.map((e) => [e.sequence, e.resourceId]), [[501, q2.id]]);
    assert.equal(rest.json.hasMore, false);
  });

  test('a filtered poll passes over unwanted events and shows only new wanted ones', async () => {
    const p = makeTenant();
    const k = p.kAll;
    const a = await createWalkIn(k, p.q1);
    const first = await readAll(k, { queueId: p.q1 });
    assert.deepEqual(first.events.map((e) => e.resourceId), [a.id]);
    // Unwanted changes (another line) only.
    await createWalkIn(k, p.q3);
    await createWalkIn(k, p.q2);
    const none = await events(k, { queueId: p.q1, cursor: first.cursor });
    assert.equal(none.status, 200, none.text);
    assert.deepEqual(none.json.events, []);
    assert.equal(none.json.hasMore, false);
    // A wanted change among unwanted ones.
    const a2 = await setStatus(k, a, 'confirmed');
    await createWalkIn(k, p.q3);
    const got = await events(k, { queueId: p.q1, cursor: none.json.nextCursor });
    assert.equal(got.status, 200, got.text);
    assert.deepEqual(got.json.events.map((e) => [e.sequence, e.type, e.resourceId, e.resourceVersion]), [
      [4, 'waitlist.entry.status_changed', a.id, a2.version],
    ]);
  });
});

describe('restrictions and scope', () => {
  let t;
  let all;

  before(async () => {
    t = makeTenant();
    const k = t.kAll;
    for (const q of [t.q1, t.q2, t.q3, t.q2, t.q1, t.q3]) {
      const e = await createWalkIn(k, q);
      await setStatus(k, e, 'ready');
    }
    await createBooking(k, t.q2, slotAhead(20, 0));
    await createBooking(k, t.q3, slotAhead(20, 0));
    all = (await readAll(k)).events;
    assert.equal(all.length, 16);
  });

  test('a key restricted to a business sees only that business\'s events', async () => {
    const got = await readAll(t.kB1);
    const want = all.filter((e) => e.businessId === t.b1);
    assert.ok(want.length > 0 && want.length < all.length);
    assert.deepEqual(seqs(got.events), seqs(want));
    assert.deepEqual(got.events, want);
    // And page by page too.
    const paged = await readAll(t.kB1, { limit: 1 });
    assert.deepEqual(seqs(paged.events), seqs(want));
    // Its own business and line filters work.
    const q1 = await readAll(t.kB1, { queueId: t.q1 });
    assert.deepEqual(seqs(q1.events), seqs(all.filter((e) => e.queueId === t.q1)));
  });

  test('a key restricted to a line sees only that line\'s events', async () => {
    const got = await readAll(t.kQ2);
    const want = all.filter((e) => e.queueId === t.q2);
    assert.ok(want.length > 0);
    assert.deepEqual(seqs(got.events), seqs(want));
    const filtered = await readAll(t.kQ2, { types: 'booking.created' });
    assert.deepEqual(seqs(filtered.events), seqs(want.filter((e) => e.type === 'booking.created')));
    const biz = await readAll(t.kQ2, { businessId: t.b1 });
    assert.deepEqual(seqs(biz.events), seqs(want));
  });

  test('a filter outside the key\'s restrictions is 403 resource_forbidden', async () => {
    assertError(await events(t.kB1, { businessId: t.b2 }), 403, 'resource_forbidden');
    assertError(await events(t.kB1, { queueId: t.q3 }), 403, 'resource_forbidden');
    assertError(await events(t.kQ2, { queueId: t.q1 }), 403, 'resource_forbidden');
    assertError(await events(t.kQ2, { businessId: t.b2 }), 403, 'resource_forbidden');
  });

  test('a key without events:read is 403 insufficient_scope', async () => {
    assertError(await events(t.kNoEv), 403, 'insufficient_scope');
    assertError(await events(t.kNoEv, { limit: 5 }), 403, 'insufficient_scope');
  });

  test('no key or a bad key is 401', async () => {
    assertError(await events(undefined), 401, 'missing_api_key');
    assertError(await events('wl_' + 'x'.repeat(43)), 401, 'invalid_api_key');
  });

  test('another tenant\'s feed is separate, with its own sequence', async () => {
    const o = makeTenant();
    const e = await createWalkIn(o.kAll, o.q1);
    const got = await readAll(o.kAll);
    assert.deepEqual(got.events.map((x) => [x.sequence, x.tenantId, x.resourceId]), [[1, o.t, e.id]]);
    const mine = await readAll(t.kAll);
    assert.ok(mine.events.every((x) => x.tenantId === t.t));
    assert.deepEqual(seqs(mine.events), range(1, all.length));
  });
});

describe('cursor errors', () => {
  let t;
  let c1; // kAll cursor after the first event, no filters

  before(async () => {
    t = makeTenant();
    for (const q of [t.q1, t.q2, t.q3]) await createWalkIn(t.kAll, q);
    const r = await events(t.kAll, { limit: 1 });
    assert.equal(r.status, 200, r.text);
    c1 = r.json.nextCursor;
    const ok = await events(t.kAll, { cursor: c1 });
    assert.deepEqual(seqs(ok.json.events), [2, 3]);
  });

  test('a tampered cursor is invalid_cursor', async () => {
    for (const i of [0, 3, Math.floor(c1.length / 2), c1.length - 2]) {
      assertError(await events(t.kAll, { cursor: flip(c1, i) }), 400, 'invalid_cursor');
    }
    assertError(await events(t.kAll, { cursor: c1.slice(0, -4) }), 400, 'invalid_cursor');
    assertError(await events(t.kAll, { cursor: c1 + 'AAAA' }), 400, 'invalid_cursor');
    for (const junk of ['abc', '!!!!', 'A', `${c1}.`]) {
      assertError(await events(t.kAll, { cursor: junk }), 400, 'invalid_cursor');
    }
  });

  test('a position forged into a cursor without its MAC is invalid_cursor', async () => {
    const raw = Buffer.from(c1, 'base64url');
    const text = raw.toString('latin1');
    const at = text.lastIndexOf('\n1');
    if (at > 0) {
      // Keep everything, replace the position digit "1" by "0".
      const forged = Buffer.from(raw);
      forged[at + 1] = '0'.charCodeAt(0);
      assertError(await events(t.kAll, { cursor: forged.toString('base64url') }), 400, 'invalid_cursor');
    }
    assertError(await events(t.kAll, { cursor: Buffer.from('c1\n0\n').toString('base64url') }), 400, 'invalid_cursor');
  });

  test('another tenant\'s cursor is invalid_cursor', async () => {
    const o = makeTenant();
    for (const q of [o.q1, o.q3]) await createWalkIn(o.kAll, q);
    const r = await events(o.kAll, { limit: 1 });
    assert.equal(r.status, 200, r.text);
    assertError(await events(t.kAll, { cursor: r.json.nextCursor }), 400, 'invalid_cursor');
    assertError(await events(o.kAll, { cursor: c1 }), 400, 'invalid_cursor');
  });

  test('a cursor of another route is invalid_cursor', async () => {
    const r = await api('GET', '/waitlist/businesses?limit=1', { key: t.kAll });
    assert.equal(r.status, 200, r.text);
    assert.equal(typeof r.json.nextCursor, 'string', 'two businesses: a second page exists');
    assertError(await events(t.kAll, { cursor: r.json.nextCursor }), 400, 'invalid_cursor');
  });

  test('a cursor used with different filters is invalid_cursor', async () => {
    const typed = (await events(t.kAll, { types: 'waitlist.entry.created', limit: 1 })).json.nextCursor;
    const biz = (await events(t.kAll, { businessId: t.b1, limit: 1 })).json.nextCursor;
    const line = (await events(t.kAll, { queueId: t.q1, limit: 1 })).json.nextCursor;
    // Same filters: fine.
    assert.equal((await events(t.kAll, { types: 'waitlist.entry.created', cursor: typed })).status, 200);
    assert.equal((await events(t.kAll, { businessId: t.b1, cursor: biz })).status, 200);
    assert.equal((await events(t.kAll, { queueId: t.q1, cursor: line })).status, 200);
    // The limit is not a filter.
    assert.equal((await events(t.kAll, { cursor: c1, limit: 5 })).status, 200);
    const bad = [
      [c1, { businessId: t.b1 }],
      [c1, { queueId: t.q1 }],
      [c1, { types: 'waitlist.entry.created' }],
      [typed, {}],
      [typed, { types: 'booking.created' }],
      [typed, { types: 'waitlist.entry.created,booking.created' }],
      [biz, {}],
      [biz, { businessId: t.b2 }],
      [biz, { businessId: t.b1, queueId: t.q1 }],
      [line, {}],
      [line, { queueId: t.q2 }],
    ];
    for (const [cursor, params] of bad) {
      assertError(await events(t.kAll, { ...params, cursor }), 400, 'invalid_cursor');
    }
  });

  test('a cursor over 1024 characters is invalid_cursor', async () => {
    assertError(await events(t.kAll, { cursor: 'A'.repeat(1025) }), 400, 'invalid_cursor');
    assertError(await events(t.kAll, { cursor: c1 + 'A'.repeat(1025 - c1.length) }), 400, 'invalid_cursor');
    assertError(await events(t.kAll, { cursor: 'A'.repeat(5000) }), 400, 'invalid_cursor');
  });
});

describe('retention', () => {
  test('purge drops events older than seven days; older cursors are cursor_expired', async () => {
    const t = makeTenant();
    const k = t.kAll;
    for (const q of [t.q1, t.q2, t.q3]) {
      const e = await createWalkIn(k, q);
      await setStatus(k, e, 'ready');
    }
    assert.deepEqual(storedSeqs(t.t), range(1, 6));
    const cursors = [];
    for (let n = 1; n <= 4; n += 1) {
      const r = await events(k, { limit: n });
      assert.deepEqual(seqs(r.json.events), range(1, n));
      cursors[n] = r.json.nextCursor; // positioned after sequence n
    }
    const filtered = (await events(k, { queueId: t.q1, limit: 1 })).json.nextCursor; // after seq 1

    // Recent events are kept by a purge.
    ctl('purge');
    assert.deepEqual(storedSeqs(t.t), range(1, 6));
    assert.equal((await events(k, { cursor: cursors[1] })).status, 200);

    sql(`UPDATE events SET occurred_at = 1000 WHERE tenant_id = '${t.t}' AND seq <= 3`);
    ctl('purge');
    assert.deepEqual(storedSeqs(t.t), [4, 5, 6]);

    // Cursors behind the window.
    assertError(await events(k, { cursor: cursors[1] }), 400, 'cursor_expired');
    assertError(await events(k, { cursor: cursors[2] }), 400, 'cursor_expired');
    assertError(await events(k, { queueId: t.q1, cursor: filtered }), 400, 'cursor_expired');
    // A cursor at the edge of the window lost nothing.
    const edge = await events(k, { cursor: cursors[3] });
    assert.equal(edge.status, 200, edge.text);
    assert.deepEqual(seqs(edge.json.events), [4, 5, 6]);
    const later = await events(k, { cursor: cursors[4] });
    assert.equal(later.status, 200, later.text);
    assert.deepEqual(seqs(later.json.events), [5, 6]);

    // No cursor: from the oldest remaining event.
    const fresh = await readAll(k);
    assert.deepEqual(seqs(fresh.events), [4, 5, 6]);
    const stored = storedBodies(t.t);
    fresh.raw.forEach((text, i) => assert.equal(text, stored.get(4 + i)));
    const one = await events(k, { limit: 1 });
    assert.deepEqual(seqs(one.json.events), [4]);

    // Numbering goes on; purged numbers are not reused.
    await createWalkIn(k, t.q2);
    const next = await events(k, { cursor: fresh.cursor });
    assert.equal(next.status, 200, next.text);
    assert.deepEqual(seqs(next.json.events), [7]);
    assert.deepEqual(storedSeqs(t.t), [4, 5, 6, 7]);

    // An old event numbered after recent ones (a clock that stepped
    // back) waits for them: the cut never takes an event of the window.
    sql(`UPDATE events SET occurred_at = 1000 WHERE tenant_id = '${t.t}' AND seq = 6`);
    ctl('purge');
    assert.deepEqual(storedSeqs(t.t), [4, 5, 6, 7]);
    assert.equal((await events(k, { cursor: cursors[4] })).status, 200, 'cut past seq 4');
    sql(`UPDATE events SET occurred_at = 1000 WHERE tenant_id = '${t.t}' AND seq IN (4, 5)`);
    ctl('purge');
    assert.deepEqual(storedSeqs(t.t), [7]);
  });
});
