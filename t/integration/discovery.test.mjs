// Discovery: businesses and lines (SPEC "Business", "Queue", the four GET
// routes and "Pagination rules"; DECISIONS "Queue", "Pagination",
// "Errors"), key restrictions and scopes on them.

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { api, fixture, seed, sql, uniq } from './lib.mjs';
import {
  ALL_SCOPES, DAYS, TIMESTAMP, allPages, assertError, assertKeys, assertOk, createKey,
} from './util-foundation.mjs';

const BUSINESS_KEYS = ['id', 'name', 'slug', 'timeZone', 'createdAt', 'updatedAt', 'services', 'customFields'];
const SERVICE_KEYS = ['id', 'serviceName', 'baseDurationMinutes', 'isActive'];
const QUEUE_KEYS = ['id', 'businessId', 'name', 'activeGuests', 'averageWaitMinutes', 'timeZone',
  'services', 'customFields', 'workingHours', 'availability'];

// Opening hours as the API shows them: every day present.
function hours(enabled, start, end, days = {}) {
  const out = { enabled, start, end, days: {} };
  for (const d of DAYS) out.days[d] = days[d] ?? { enabled, start, end };
  return out;
}

const SEAT_OPTIONS = [{ value: 'in', label: 'Inside' }, { value: 'out', label: 'Outside' }];

// Tenant t1: b1 (Europe/Paris) with an active and an inactive service, two
// public fields and a private one, lines q1 (zone inherited), q2 (own zone,
// per-day hours), q3 (no schedule); b2 (no zone) with q4.  Keys: every
// scope, restricted to b1, restricted to q1, and write-only.
function catalogue() {
  const name = uniq('disc');
  return {
    tenants: [{
      ref: 't1', name, plan: 'pro',
      businesses: [
        {
          ref: 'b1', name: `${name} Paris`, slug: uniq('paris'), timeZone: 'Europe/Paris',
          services: [
            { ref: 's1', serviceName: 'Haircut', baseDurationMinutes: 30, isActive: true },
            { ref: 's2', serviceName: 'Colour', baseDurationMinutes: 45, isActive: false },
          ],
          customFields: [
            { ref: 'f1', label: 'Seat', type: 'select', required: true, public: true, options: SEAT_OPTIONS },
            { ref: 'f2', label: 'Allergies', type: 'text', required: false, public: true },
            { ref: 'f3', label: 'Internal score', type: 'number', required: false, public: false },
          ],
          queues: [
            {
              ref: 'q1', name: 'Main', timeZone: null,
              services: ['s2', 's1'], customFields: ['f2', 'f1', 'f3'],
              workingHours: { enabled: true, start: '00:00', end: '24:00' },
              availability: {
                walkInsEnabled: true, walkInsPaused: false, bookingsEnabled: true, bookingsPaused: false,
                bookingSlotMinutes: 15, bookingHours: { enabled: true, start: '10:00', end: '16:00' },
                bookingCapacity: 2, serviceRequired: false,
              },
            },
            {
              ref: 'q2', name: 'Express', timeZone: 'America/New_York',
              services: ['s1'], customFields: [],
              workingHours: {
                enabled: true, start: '09:00', end: '17:00',
                days: {
                  wed: { enabled: true, start: '12:00', end: '20:00' },
                  sat: { enabled: false, start: '09:00', end: '17:00' },
                  sun: { enabled: false, start: '10:00', end: '12:00' },
                },
              },
              availability: {
                walkInsEnabled: false, walkInsPaused: true, bookingsEnabled: true, bookingsPaused: true,
                bookingSlotMinutes: 20,
                bookingHours: {
                  enabled: true, start: '10:00', end: '16:00',
                  days: { mon: { enabled: false, start: '10:00', end: '16:00' } },
                },
                bookingCapacity: 3, serviceRequired: true,
              },
            },
            {
              ref: 'q3', name: 'No schedule', timeZone: 'Asia/Tokyo',
              services: [], customFields: ['f1'],
              workingHours: { enabled: false, start: '00:00', end: '24:00' },
              availability: {
                walkInsEnabled: true, walkInsPaused: false, bookingsEnabled: false, bookingsPaused: false,
                bookingSlotMinutes: 30, bookingHours: { enabled: false, start: '08:00', end: '12:00' },
                bookingCapacity: 1, serviceRequired: false,
              },
            },
          ],
        },
        {
          ref: 'b2', name: `${name} Nowhere`, slug: uniq('nowhere'), timeZone: null,
          services: [], customFields: [],
          queues: [{
            ref: 'q4', name: 'Solo', timeZone: null, services: [], customFields: [],
            workingHours: { enabled: true, start: '08:00', end: '20:00' },
          }],
        },
      ],
      keys: [
        { ref: 'kAll', scopes: [...ALL_SCOPES], businesses: [], queues: [] },
        { ref: 'kB1', scopes: ['waitlist:read'], businesses: ['b1'], queues: [] },
        { ref: 'kQ1', scopes: ['waitlist:read'], businesses: [], queues: ['q1'] },
        { ref: 'kWrite', scopes: ['waitlist:write', 'guest:read'], businesses: [], queues: [] },
      ],
    }],
  };
}

const FIX = catalogue();
const R = seed(FIX);
const OTHER = seed(fixture());
const T1 = FIX.tenants[0];
const seededAt = Date.now();

const SVC = {
  s1: { id: R.s1, serviceName: 'Haircut', baseDurationMinutes: 30, isActive: true },
  s2: { id: R.s2, serviceName: 'Colour', baseDurationMinutes: 45, isActive: false },
};
const FLD = {
  f1: { id: R.f1, label: 'Seat', type: 'select', required: true, options: SEAT_OPTIONS },
  f2: { id: R.f2, label: 'Allergies', type: 'text', required: false },
};
const byId = (a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
const sorted = (list) => [...list].sort(byId);
const ids = (list) => list.map((x) => x.id).sort();

function checkService(s) {
  assertKeys(s, SERVICE_KEYS, `service ${s.id}`);
}

function checkField(f) {
  assertKeys(f, 'options' in f ? ['id', 'label', 'type', 'required', 'options']
    : ['id', 'label', 'type', 'required'], `custom field ${f.id}`);
  assert.ok(['text', 'number', 'select'].includes(f.type));
  if ('options' in f) {
    assert.ok(Array.isArray(f.options) && f.options.length > 0, `field ${f.id} has empty options`);
    for (const o of f.options) assertKeys(o, ['value', 'label'], 'option');
  }
  assert.notEqual(f.id, R.f3, 'a private custom field is exposed');
}

// A Business object: exactly its fields, well-formed timestamps.
function checkBusiness(b) {
  const keys = Object.keys(b);
  for (const k of keys) assert.ok(BUSINESS_KEYS.includes(k), `unexpected business field ${k}`);
  for (const k of ['id', 'name', 'slug', 'timeZone', 'createdAt', 'updatedAt']) {
    assert.ok(k in b, `business field ${k} missing`);
  }
  assert.ok(b.timeZone === null || typeof b.timeZone === 'string');
  assert.match(b.createdAt, TIMESTAMP);
  assert.match(b.updatedAt, TIMESTAMP);
  assert.ok(Date.parse(b.updatedAt) >= Date.parse(b.createdAt));
  for (const s of b.services ?? []) checkService(s);
  for (const f of b.customFields ?? []) checkField(f);
}

function checkQueue(q) {
  for (const k of QUEUE_KEYS) assert.ok(k in q, `queue field ${k} missing`);
  for (const s of q.services) checkService(s);
  for (const f of q.customFields) checkField(f);
  assertKeys(q.workingHours, ['enabled', 'start', 'end', 'days'], 'workingHours');
  assertKeys(q.workingHours.days, DAYS, 'workingHours.days');
  for (const d of DAYS) assertKeys(q.workingHours.days[d], ['enabled', 'start', 'end'], `workingHours.days.${d}`);
}

test('GET /waitlist/businesses lists exactly the tenant\'s businesses with their fields', async () => {
  const body = assertOk(await api('GET', '/waitlist/businesses', { key: R.kAll }));
  assertKeys(body, ['businesses', 'nextCursor'], 'list envelope');
  assert.equal(body.nextCursor, null);
  assert.deepEqual(ids(body.businesses), [R.b1, R.b2].sort());
  for (const b of body.businesses) checkBusiness(b);
  const b1 = body.businesses.find((b) => b.id === R.b1);
  const b2 = body.businesses.find((b) => b.id === R.b2);
  assert.equal(b1.name, T1.businesses[0].name);
  assert.equal(b1.slug, T1.businesses[0].slug);
  assert.equal(b1.timeZone, 'Europe/Paris');
  assert.ok(Math.abs(Date.parse(b1.createdAt) - seededAt) < 10 * 60 * 1000, b1.createdAt);
  assert.equal(b2.timeZone, null);
  if ('services' in b1) assert.deepEqual(sorted(b1.services), sorted([SVC.s1, SVC.s2]));
  if ('customFields' in b1) assert.deepEqual(sorted(b1.customFields), sorted([FLD.f1, FLD.f2]));
});

test('GET /waitlist/businesses/{id} returns the business with services and public fields only', async () => {
  const body = assertOk(await api('GET', `/waitlist/businesses/${R.b1}`, { key: R.kAll }));
  assertKeys(body, ['business'], 'envelope');
  const b = body.business;
  checkBusiness(b);
  assertKeys(b, BUSINESS_KEYS, 'business');
  assert.equal(b.id, R.b1);
  assert.equal(b.timeZone, 'Europe/Paris');
  assert.deepEqual(sorted(b.services), sorted([SVC.s1, SVC.s2]));
  assert.deepEqual(sorted(b.customFields), sorted([FLD.f1, FLD.f2]));
  assert.ok(!('options' in b.customFields.find((f) => f.id === R.f2)), 'options on a field without options');
  // The list shows the same object.
  const list = assertOk(await api('GET', '/waitlist/businesses', { key: R.kAll }));
  assert.deepEqual(list.businesses.find((x) => x.id === R.b1), b);
  const b2 = assertOk(await api('GET', `/waitlist/businesses/${R.b2}`, { key: R.kAll })).business;
  assert.equal(b2.timeZone, null);
  assert.deepEqual(b2.services, []);
  assert.deepEqual(b2.customFields, []);
});

test('GET /waitlist/businesses/{id}: unknown or foreign is 404, a bad id is 400', async () => {
  assertError(await api('GET', '/waitlist/businesses/biz_does_not_exist', { key: R.kAll }), 404, 'not_found');
  assertError(await api('GET', `/waitlist/businesses/${OTHER.b1}`, { key: R.kAll }), 404, 'not_found');
  assertError(await api('GET', `/waitlist/businesses/${R.q1}`, { key: R.kAll }), 404, 'not_found');
  assertError(await api('GET', `/waitlist/businesses/${'b'.repeat(160)}`, { key: R.kAll }), 404, 'not_found');
  assertError(await api('GET', `/waitlist/businesses/${'b'.repeat(161)}`, { key: R.kAll }),
    400, 'validation_failed');
});

test('GET /waitlist/queues lists the lines of a business with their full description', async () => {
  const body = assertOk(await api('GET', `/waitlist/queues?businessId=${R.b1}`, { key: R.kAll }));
  assertKeys(body, ['queues', 'nextCursor'], 'list envelope');
  assert.equal(body.nextCursor, null);
  assert.deepEqual(ids(body.queues), [R.q1, R.q2, R.q3].sort());
  for (const q of body.queues) {
    checkQueue(q);
    assert.equal(q.businessId, R.b1);
    assert.equal(q.activeGuests, 0);
    assert.equal(q.averageWaitMinutes, 0);
  }
  const q1 = body.queues.find((q) => q.id === R.q1);
  assert.equal(q1.name, 'Main');
  assert.equal(q1.timeZone, 'Europe/Paris', 'a line without a zone takes its business zone');
  assert.deepEqual(sorted(q1.services), sorted([SVC.s1, SVC.s2]));
  assert.deepEqual(sorted(q1.customFields), sorted([FLD.f1, FLD.f2]), 'q1 fields (f3 is private)');
  assert.deepEqual(q1.workingHours, hours(true, '00:00', '24:00'));
  assert.deepEqual(q1.availability, {
    walkInsEnabled: true, walkInsPaused: false, bookingsEnabled: true, bookingsPaused: false,
    bookingWindow: 'same_business_day', bookingSlotMinutes: 15,
    bookingHours: hours(true, '10:00', '16:00'), bookingCapacity: 2, serviceRequired: false,
  });

  const q2 = body.queues.find((q) => q.id === R.q2);
  assert.equal(q2.name, 'Express');
  assert.equal(q2.timeZone, 'America/New_York');
  assert.deepEqual(q2.services, [SVC.s1]);
  assert.deepEqual(q2.customFields, []);
  assert.deepEqual(q2.workingHours, hours(true, '09:00', '17:00', {
    wed: { enabled: true, start: '12:00', end: '20:00' },
    sat: { enabled: false, start: '09:00', end: '17:00' },
    sun: { enabled: false, start: '10:00', end: '12:00' },
  }));
  assert.deepEqual(q2.availability, {
    walkInsEnabled: false, walkInsPaused: true, bookingsEnabled: true, bookingsPaused: true,
    bookingWindow: 'same_business_day', bookingSlotMinutes: 20,
    bookingHours: hours(true, '10:00', '16:00', { mon: { enabled: false, start: '10:00', end: '16:00' } }),
    bookingCapacity: 3, serviceRequired: true,
  });

  const q3 = body.queues.find((q) => q.id === R.q3);
  assert.equal(q3.timeZone, 'Asia/Tokyo');
  assert.deepEqual(q3.customFields, [FLD.f1]);
  assert.equal(q3.workingHours.enabled, false);
  assert.equal(q3.availability.bookingsEnabled, false);
  assert.equal(q3.availability.bookingWindow, 'same_business_day');
});

test('omitted days copy a disabled top level: enabled false every day', async () => {
  const q3 = assertOk(await api('GET', `/waitlist/queues/${R.q3}`, { key: R.kAll })).queue;
  assert.deepEqual(q3.workingHours, hours(false, '00:00', '24:00'));
  assert.deepEqual(q3.availability.bookingHours, hours(false, '08:00', '12:00'));
});

test('a line and its business without a zone are in UTC', async () => {
  const body = assertOk(await api('GET', `/waitlist/queues?businessId=${R.b2}`, { key: R.kAll }));
  assert.deepEqual(ids(body.queues), [R.q4]);
  const q4 = body.queues[0];
  checkQueue(q4);
  assert.equal(q4.timeZone, 'UTC');
  assert.deepEqual(q4.workingHours, hours(true, '08:00', '20:00'));
  assert.equal(q4.businessId, R.b2);
});

test('GET /waitlist/queues/{id} answers {"queue": ...}, the same object the list shows', async () => {
  const list = assertOk(await api('GET', `/waitlist/queues?businessId=${R.b1}`, { key: R.kAll }));
  for (const id of [R.q1, R.q2, R.q3]) {
    const body = assertOk(await api('GET', `/waitlist/queues/${id}`, { key: R.kAll }));
    assertKeys(body, ['queue'], 'envelope');
    checkQueue(body.queue);
    assert.deepEqual(body.queue, list.queues.find((q) => q.id === id));
  }
});

test('GET /waitlist/queues/{id}: unknown or foreign is 404', async () => {
  assertError(await api('GET', '/waitlist/queues/que_does_not_exist', { key: R.kAll }), 404, 'not_found');
  assertError(await api('GET', `/waitlist/queues/${OTHER.q1}`, { key: R.kAll }), 404, 'not_found');
  assertError(await api('GET', `/waitlist/queues/${R.b1}`, { key: R.kAll }), 404, 'not_found');
});

test('GET /waitlist/queues needs a valid businessId of the tenant', async () => {
  const k = R.kAll;
  assertError(await api('GET', '/waitlist/queues', { key: k }), 400, 'validation_failed');
  assertError(await api('GET', '/waitlist/queues?limit=5', { key: k }), 400, 'validation_failed');
  assertError(await api('GET', '/waitlist/queues?businessId=', { key: k }), 400, 'validation_failed');
  assertError(await api('GET', `/waitlist/queues?businessId=${'b'.repeat(161)}`, { key: k }),
    400, 'validation_failed');
  assertError(await api('GET', `/waitlist/queues?businessId=${R.b1}&businessId=${R.b2}`, { key: k }),
    400, 'validation_failed');
  assertError(await api('GET', `/waitlist/queues?businessId=${'b'.repeat(160)}`, { key: k }), 404, 'not_found');
  assertError(await api('GET', '/waitlist/queues?businessId=biz_does_not_exist', { key: k }), 404, 'not_found');
  assertError(await api('GET', `/waitlist/queues?businessId=${OTHER.b1}`, { key: k }), 404, 'not_found');
  // Percent-encoding is decoded.
  const enc = assertOk(await api('GET', `/waitlist/queues?businessId=${encodeURIComponent(R.b2)}`, { key: k }));
  assert.deepEqual(ids(enc.queues), [R.q4]);
});

test('ids with non-ASCII characters are simply not found, never a 500', async () => {
  const enc = encodeURIComponent;
  const unknown = [
    `/waitlist/businesses/${enc('é')}`,
    `/waitlist/businesses/${enc('é'.repeat(160))}`,
    `/waitlist/businesses/${enc('biz_😀')}`,
    `/waitlist/queues/${enc('é')}`,
    `/waitlist/queues?businessId=${enc('é')}`,
    `/waitlist/queues?businessId=${enc('é'.repeat(160))}`,
    `/events?businessId=${enc('é'.repeat(160))}`,
    `/events?queueId=${enc('😀'.repeat(160))}`,
  ];
  for (const path of unknown) {
    const res = await api('GET', path, { key: R.kAll });
    try {
      assertError(res, 404, 'not_found');
    } catch (e) {
      e.message = `GET ${decodeURIComponent(path).slice(0, 60)}: ${e.message}`;
      throw e;
    }
  }
  // Length counts characters, not bytes.
  assertError(await api('GET', `/waitlist/businesses/${enc('é'.repeat(161))}`, { key: R.kAll }),
    400, 'validation_failed');
  assertError(await api('GET', `/waitlist/queues?businessId=${enc('é'.repeat(161))}`, { key: R.kAll }),
    400, 'validation_failed');
  for (const name of ['businessId', 'queueId'])
    assertError(await api('GET', `/events?${name}=${enc('😀'.repeat(161))}`, { key: R.kAll }),
      400, 'validation_failed');
});

test('a key restricted to a business sees only that business and its lines', async () => {
  const k = R.kB1;
  const list = assertOk(await api('GET', '/waitlist/businesses', { key: k }));
  assert.deepEqual(ids(list.businesses), [R.b1]);
  assert.equal(list.nextCursor, null);
  assertOk(await api('GET', `/waitlist/businesses/${R.b1}`, { key: k }));
  assertError(await api('GET', `/waitlist/businesses/${R.b2}`, { key: k }), 404, 'not_found');
  const qs = assertOk(await api('GET', `/waitlist/queues?businessId=${R.b1}`, { key: k }));
  assert.deepEqual(ids(qs.queues), [R.q1, R.q2, R.q3].sort());
  assertError(await api('GET', `/waitlist/queues?businessId=${R.b2}`, { key: k }), 403, 'resource_forbidden');
  assertError(await api('GET', `/waitlist/queues?businessId=${OTHER.b1}`, { key: k }), 404, 'not_found');
  assertOk(await api('GET', `/waitlist/queues/${R.q2}`, { key: k }));
  assertError(await api('GET', `/waitlist/queues/${R.q4}`, { key: k }), 404, 'not_found');
});

test('a key restricted to a line sees only that line and its business', async () => {
  const k = R.kQ1;
  const list = assertOk(await api('GET', '/waitlist/businesses', { key: k }));
  assert.deepEqual(ids(list.businesses), [R.b1]);
  assertOk(await api('GET', `/waitlist/businesses/${R.b1}`, { key: k }));
  assertError(await api('GET', `/waitlist/businesses/${R.b2}`, { key: k }), 404, 'not_found');
  const qs = assertOk(await api('GET', `/waitlist/queues?businessId=${R.b1}`, { key: k }));
  assert.deepEqual(ids(qs.queues), [R.q1]);
  assert.equal(qs.nextCursor, null);
  assertOk(await api('GET', `/waitlist/queues/${R.q1}`, { key: k }));
  for (const q of [R.q2, R.q3, R.q4]) {
    assertError(await api('GET', `/waitlist/queues/${q}`, { key: k }), 404, 'not_found');
  }
  assertError(await api('GET', `/waitlist/queues?businessId=${R.b2}`, { key: k }), 403, 'resource_forbidden');
});

test('discovery needs waitlist:read: 403 insufficient_scope', async () => {
  for (const path of ['/waitlist/businesses', `/waitlist/businesses/${R.b1}`,
    `/waitlist/queues?businessId=${R.b1}`, `/waitlist/queues/${R.q1}`]) {
    const res = await api('GET', path, { key: R.kWrite });
    try {
      assertError(res, 403, 'insufficient_scope');
    } catch (e) {
      e.message = `GET ${path}: ${e.message}`;
      throw e;
    }
  }
});

test('activeGuests counts active entries and averageWaitMinutes today\'s waits until service', async () => {
  const refs = seed(fixture());
  const queue = async () => assertOk(await api('GET', `/waitlist/queues/${refs.q1}`, { key: refs.k1 })).queue;
  const create = async (fullName) => {
    const res = await api('POST', '/waitlist/entries', {
      key: refs.k1, idempotencyKey: uniq('idem'), body: { queueId: refs.q1, fullName, partySize: 1 },
    });
    assert.ok(res.status >= 200 && res.status < 300, res.text);
    return res.json.entry;
  };
  const status = async (entry, to, from) => {
    const cur = assertOk(await api('GET', `/waitlist/entries/${entry.id}`, { key: refs.k1 })).entry;
    assert.equal(cur.status, from);
    const res = await api('PATCH', `/waitlist/entries/${entry.id}/status`, {
      key: refs.k1, idempotencyKey: uniq('idem'),
      body: { status: to, expectedStatus: from, expectedVersion: cur.version },
    });
    assert.equal(res.status, 200, res.text);
  };
  const a = await create('Ada');
  const b = await create('Bea');
  const c = await create('Cy');
  let q = await queue();
  assert.equal(q.activeGuests, 3);
  assert.equal(q.averageWaitMinutes, 0);
  // Ada waited 10 minutes, Bea 20: the mean is 15.
  sql(`UPDATE entries SET created_at = created_at - 10 * 60000 WHERE id = '${a.id}'`);
  sql(`UPDATE entries SET created_at = created_at - 20 * 60000 WHERE id = '${b.id}'`);
  await status(a, 'in_service', 'waiting');
  await status(b, 'in_service', 'waiting');
  await status(c, 'ready', 'waiting');
  q = await queue();
  assert.equal(q.activeGuests, 1, 'in_service is not active; ready is');
  assert.equal(q.averageWaitMinutes, 15);
  await status(c, 'cancelled', 'ready');
  q = await queue();
  assert.equal(q.activeGuests, 0);
  const listed = assertOk(await api('GET', `/waitlist/queues?businessId=${refs.b1}`, { key: refs.k1 }));
  assert.deepEqual(listed.queues[0], q);
});

// --- pagination -----------------------------------------------------------

function manyBusinesses(n, queuesInFirst = 0) {
  const name = uniq('page');
  return {
    tenants: [{
      ref: 't1', name,
      businesses: Array.from({ length: n }, (_, i) => ({
        ref: `b${i}`, name: `${name} shop ${i}`, slug: `${name}-shop-${i}`, timeZone: 'UTC',
        services: [{ ref: `s${i}`, serviceName: `Service of shop ${i}`, baseDurationMinutes: 10 + i }],
        queues: i === 0
          ? Array.from({ length: queuesInFirst }, (_, j) => ({ ref: `q${j}`, name: `Line ${j}` }))
          : [{ ref: `only${i}`, name: `Only line ${i}` }],
      })),
      keys: [{ ref: 'k', scopes: ['waitlist:read'], businesses: [], queues: [] }],
    }],
  };
}

const P = seed(manyBusinesses(7, 5));
const P_IDS = Array.from({ length: 7 }, (_, i) => P[`b${i}`]);
const P_QUEUES = Array.from({ length: 5 }, (_, j) => P[`q${j}`]);
const P2 = seed(manyBusinesses(3, 3));

test('businesses page by limit: 3, 3, 1, then nextCursor null; every business exactly once', async () => {
  const pages = await allPages('/waitlist/businesses?limit=3', P.k, 'businesses');
  assert.deepEqual(pages.map((p) => p.businesses.length), [3, 3, 1]);
  assert.equal(pages.at(-1).nextCursor, null);
  for (const p of pages.slice(0, -1)) {
    assert.equal(typeof p.nextCursor, 'string');
    assert.ok(p.nextCursor.length > 0 && p.nextCursor.length <= 1024);
    assert.match(p.nextCursor, /^[A-Za-z0-9_-]+$/, 'cursor is not base64url');
  }
  const all = pages.flatMap((p) => p.businesses);
  assert.deepEqual(all.map((b) => b.id).sort(), [...P_IDS].sort());
  // Children belong to their own business on every page.
  for (const b of all) {
    checkBusiness(b);
    const i = P_IDS.indexOf(b.id);
    assert.ok(Array.isArray(b.services), `${b.id} has no services`);
    assert.deepEqual(b.services.map((s) => s.serviceName), [`Service of shop ${i}`]);
  }
});

test('limit defaults to 100 and accepts 1 to 100', async () => {
  const def = assertOk(await api('GET', '/waitlist/businesses', { key: P.k }));
  assert.equal(def.businesses.length, 7);
  assert.equal(def.nextCursor, null);
  const hundred = assertOk(await api('GET', '/waitlist/businesses?limit=100', { key: P.k }));
  assert.equal(hundred.businesses.length, 7);
  const one = await allPages('/waitlist/businesses?limit=1', P.k, 'businesses');
  assert.deepEqual(one.flatMap((p) => p.businesses.map((b) => b.id)).sort(), [...P_IDS].sort());
  assert.ok(one.every((p) => p.businesses.length <= 1));
  const seven = await allPages('/waitlist/businesses?limit=7', P.k, 'businesses');
  assert.deepEqual(seven.flatMap((p) => p.businesses.map((b) => b.id)).sort(), [...P_IDS].sort());
});

test('limit outside 1..100 or not an integer is 400 validation_failed', async () => {
  for (const limit of ['0', '101', 'abc', '-1', '1.5', '', '1e1', '1000000000000']) {
    for (const path of [`/waitlist/businesses?limit=${limit}`,
      `/waitlist/queues?businessId=${P.b0}&limit=${limit}`]) {
      const res = await api('GET', path, { key: P.k });
      try {
        assertError(res, 400, 'validation_failed');
      } catch (e) {
        e.message = `GET ${path}: ${e.message}`;
        throw e;
      }
    }
  }
});

test('a cursor is stable: the same cursor gives the same page, and limit may change between pages', async () => {
  const first = assertOk(await api('GET', '/waitlist/businesses?limit=3', { key: P.k }));
  const url = `/waitlist/businesses?limit=3&cursor=${encodeURIComponent(first.nextCursor)}`;
  const a = assertOk(await api('GET', url, { key: P.k }));
  const b = assertOk(await api('GET', url, { key: P.k }));
  assert.deepEqual(a.businesses.map((x) => x.id), b.businesses.map((x) => x.id));
  const two = assertOk(await api('GET',
    `/waitlist/businesses?limit=2&cursor=${encodeURIComponent(first.nextCursor)}`, { key: P.k }));
  assert.equal(two.businesses.length, 2);
  const seen = first.businesses.map((x) => x.id);
  for (const x of two.businesses) assert.ok(!seen.includes(x.id), 'a page repeats an earlier business');
});

test('businesses added while paging appear once, and nothing repeats', async () => {
  const refs = seed(manyBusinesses(7));
  const tenant = refs.t1;
  const late = [`biz_zzzz${randomBytes(6).toString('hex')}`, `biz_zzzz${randomBytes(6).toString('hex')}`];
  const early = `biz_0000${randomBytes(6).toString('hex')}`;
  const now = Date.now();
  const pages = await allPages('/waitlist/businesses?limit=3', refs.k, 'businesses', {
    between: (i) => {
      if (i !== 0) return;
      const values = [...late, early].map((id, n) => `('${id}', '${tenant}', 'Late ${n}', 'late-${n}', NULL, ${now}, ${now})`);
      sql(`INSERT INTO businesses (id, tenant_id, name, slug, time_zone, created_at, updated_at) VALUES ${values.join(', ')}`);
    },
  });
  const got = pages.flatMap((p) => p.businesses.map((b) => b.id));
  assert.equal(new Set(got).size, got.length, `duplicates in ${got}`);
  const original = Array.from({ length: 7 }, (_, i) => refs[`b${i}`]);
  for (const id of [...original, ...late]) {
    assert.equal(got.filter((x) => x === id).length, 1, `${id} not served exactly once`);
  }
  assert.ok(got.every((id) => [...original, ...late, early].includes(id)));
  const lateOne = pages.flatMap((p) => p.businesses).find((b) => b.id === late[0]);
  checkBusiness(lateOne);
  assert.equal(lateOne.timeZone, null);
});

test('lines page by limit too: 2, 2, 1 with every line exactly once', async () => {
  const pages = await allPages(`/waitlist/queues?businessId=${P.b0}&limit=2`, P.k, 'queues');
  assert.deepEqual(pages.map((p) => p.queues.length), [2, 2, 1]);
  assert.equal(pages.at(-1).nextCursor, null);
  const got = pages.flatMap((p) => p.queues);
  assert.deepEqual(got.map((q) => q.id).sort(), [...P_QUEUES].sort());
  for (const q of got) {
    checkQueue(q);
    assert.equal(q.businessId, P.b0);
  }
});

test('tampered, foreign and oversized cursors are 400 invalid_cursor', async () => {
  const bizFirst = assertOk(await api('GET', '/waitlist/businesses?limit=2', { key: P.k }));
  const good = bizFirst.nextCursor;
  assert.equal(typeof good, 'string');
  const queueFirst = assertOk(await api('GET', `/waitlist/queues?businessId=${P.b0}&limit=2`, { key: P.k }));
  const queueCursor = queueFirst.nextCursor;
  assert.equal(typeof queueCursor, 'string');
  const foreign = assertOk(await api('GET', '/waitlist/businesses?limit=1', { key: P2.k })).nextCursor;
  assert.equal(typeof foreign, 'string');
  const mid = Math.floor(good.length / 2);
  const flip = (s, i) => s.slice(0, i) + (s[i] === 'A' ? 'B' : 'A') + s.slice(i + 1);
  const cases = {
    garbage: ['/waitlist/businesses', 'abc'],
    'not base64url': ['/waitlist/businesses', '!!!!'],
    'one character changed': ['/waitlist/businesses', flip(good, mid)],
    'last character changed': ['/waitlist/businesses', flip(good, good.length - 1)],
    truncated: ['/waitlist/businesses', good.slice(0, -4)],
    extended: ['/waitlist/businesses', `${good}AAAA`],
    'from the queue list': ['/waitlist/businesses', queueCursor],
    'from another tenant': ['/waitlist/businesses', foreign],
    'businesses cursor on queues': [`/waitlist/queues?businessId=${P.b0}`, good],
    'queue cursor with another businessId': [`/waitlist/queues?businessId=${P.b1}`, queueCursor],
    'over 1024 characters': ['/waitlist/businesses', 'A'.repeat(1025)],
    'valid cursor padded past 1024': ['/waitlist/businesses', good + 'A'.repeat(1025 - good.length)],
  };
  for (const [what, [path, cursor]] of Object.entries(cases)) {
    const sep = path.includes('?') ? '&' : '?';
    const res = await api('GET', `${path}${sep}limit=2&cursor=${encodeURIComponent(cursor)}`, { key: P.k });
    try {
      assertError(res, 400, 'invalid_cursor');
    } catch (e) {
      e.message = `${what}: ${e.message}`;
      throw e;
    }
  }
  // The genuine cursors still work where they belong.
  assertOk(await api('GET', `/waitlist/businesses?limit=2&cursor=${encodeURIComponent(good)}`, { key: P.k }));
  assertOk(await api('GET', `/waitlist/queues?businessId=${P.b0}&limit=2&cursor=${encodeURIComponent(queueCursor)}`,
    { key: P.k }));
});

test('a restricted key pages only through what it may see', async () => {
  const refs = seed(manyBusinesses(5, 4));
  const k = createKey(refs.t1, ['waitlist:read'],
    { businesses: [refs.b0, refs.b2, refs.b4] });
  const pages = await allPages('/waitlist/businesses?limit=2', k.key, 'businesses');
  assert.deepEqual(pages.flatMap((p) => p.businesses.map((b) => b.id)).sort(),
    [refs.b0, refs.b2, refs.b4].sort());
  const kq = createKey(refs.t1, ['waitlist:read'],
    { queues: [refs.q1, refs.q3] });
  const qp = await allPages(`/waitlist/queues?businessId=${refs.b0}&limit=1`, kq.key, 'queues');
  assert.deepEqual(qp.flatMap((p) => p.queues.map((q) => q.id)).sort(), [refs.q1, refs.q3].sort());
  const bp = await allPages('/waitlist/businesses?limit=1', kq.key, 'businesses');
  assert.deepEqual(bp.flatMap((p) => p.businesses.map((b) => b.id)), [refs.b0]);
});
