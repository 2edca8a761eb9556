// Waitlist entries: creation (fields, defaults, validation, availability of
// the line, allowance), edits, reads, the list with its lookup and
// pagination, positions, and the events each change writes.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { api, running, sleep, sql, sqlSession, uniq } from './lib.mjs';
import {
  ALLOWED, ALL_DAY, TS_RE, assertContiguous, assertError, create, dayZone, entryCount, events,
  getEntry, hours, iso, key, line, moveThrough, mustCreate, nextSlot, setStatus, setup,
  todayKey, write,
} from './util-entries.mjs';

const ZONE = dayZone();

// Tenant A: q1 (select f1, number f2, private text f4; service s1), q2
// (service required, required text field f3), q3 (positions), the
// walk-in-unavailable lines, a key restricted to q2 and one without
// guest:read.
const A = setup({
  q1: { customFields: ['f1', 'f2', 'f4'] },
  services: [{ ref: 's2', serviceName: 'Colour', baseDurationMinutes: 45, isActive: true }],
  customFields: [
    { ref: 'f2', label: 'Age', type: 'number', required: false, public: true },
    { ref: 'f3', label: 'Order', type: 'text', required: true, public: true },
    { ref: 'f4', label: 'Secret', type: 'text', required: false, public: false },
  ],
  queues: [
    line('q2', { services: ['s1'], customFields: ['f3'], availability: { serviceRequired: true } }),
    line('q3', { timeZone: ZONE }),
    line('qNoWalk', { availability: { walkInsEnabled: false } }),
    line('qPaused', { availability: { walkInsPaused: true } }),
    line('qClosedDay', { timeZone: ZONE, workingHours: hours(ALL_DAY, { [todayKey(ZONE)]: { enabled: false } }) }),
    line('qClosedHours', { timeZone: ZONE, workingHours: hours({ enabled: true, start: '00:00', end: '01:00' }) }),
    line('qCached'),
    line('qNoSchedule', { timeZone: ZONE, workingHours: hours({ enabled: false, start: '00:00', end: '01:00' }, Object.fromEntries(['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'].map((d) => [d, { enabled: false }]))) }),
  ],
  keys: [
    key('kq2', { queues: ['q2'] }),
    key('knoguest', { scopes: ['waitlist:read', 'waitlist:write', 'events:read'] }),
  ],
});
// Tenant B: someone else.
const B = setup();

const NAME = `Zelda${uniq('n').replace(/[^a-z0-9]/gi, '')}`;
const PHONE = '+15557654321';
const NOTES = `allergic to peanuts ${uniq('notes')}`;

const base = (over = {}) => ({ queueId: A.queueId, partySize: 1, fullName: NAME, ...over });

test('a minimal walk-in is created waiting with every default', async () => {
  const res = await create(A.key, { queueId: A.queueId, fullName: NAME });
  assert.equal(res.status, 201, res.text);
  assert.deepEqual(Object.keys(res.json), ['entry']);
  const e = res.json.entry;
  assert.match(e.id, /^ent_/);
  assert.match(e.guestId, /^gst_/);
  assert.equal(e.bookingId, null);
  assert.equal(e.version, 1);
  assert.equal(e.status, 'waiting');
  assert.equal(e.queueId, A.queueId);
  assert.equal(e.businessId, A.businessId);
  assert.equal(e.fullName, NAME);
  assert.equal(e.phone, null);
  assert.equal(e.partySize, 1, 'partySize defaults to 1 (DECISIONS: "partySize (integer 1..100, default 1)")');
  assert.equal(e.notes, null);
  assert.equal(e.serviceTypeId, null);
  assert.deepEqual(e.customData, {});
  assert.equal(e.externalReference, null);
  assert.equal(e.isBooking, false);
  assert.equal(e.scheduledFor, null);
  assert.equal(e.smsConsent, null);
  assert.equal(typeof e.position, 'number');
  assert.ok(e.position >= 1);
  assert.equal(e.estimatedWaitMinutes, null);
  assert.match(e.createdAt, TS_RE);
  assert.match(e.updatedAt, TS_RE);
  assert.equal(e.createdAt, e.updatedAt);
  assert.ok(Math.abs(Date.parse(e.createdAt) - Date.now()) < 60000);
  assert.ok(res.headers.get('x-request-id'));
  // The stored entry reads back the same.
  assert.deepEqual(await getEntry(A.key, e.id), e);
});

test('a walk-in with every optional field keeps them, consent normalized to UTC', async () => {
  const ext = uniq('ext');
  const e = await mustCreate(A.key, base({
    phone: PHONE, partySize: 4, notes: NOTES, serviceTypeId: A.s1,
    customData: { [A.f1]: 'out', [A.f2]: 42.5 }, externalReference: ext,
    smsConsent: { source: 'kiosk', consentedAt: '2026-01-31T12:00:00+00:00', disclosureVersion: 'v2' },
  }));
  assert.equal(e.phone, PHONE);
  assert.equal(e.partySize, 4);
  assert.equal(e.notes, NOTES);
  assert.equal(e.serviceTypeId, A.s1);
  assert.deepEqual(e.customData, { [A.f1]: 'out', [A.f2]: 42.5 });
  assert.equal(e.externalReference, ext);
  assert.deepEqual(e.smsConsent, { source: 'kiosk', consentedAt: '2026-01-31T12:00:00.000Z', disclosureVersion: 'v2' });
  const z = await mustCreate(A.key, base({
    smsConsent: { source: 'web', consentedAt: '2026-02-01T08:30:15.5Z', disclosureVersion: '1' },
  }));
  assert.equal(z.smsConsent.consentedAt, '2026-02-01T08:30:15.500Z');
  // Any offset is taken, as for every timestamp sent, and kept in UTC.
  for (const at of ['2026-02-01T08:30:15+0000', '2026-02-01T08:30:15-00:00', '20260201T083015+00',
    '2026-02-01T10:30:15+02:00', '2026-02-01T03:30:15-05', '20260201T093015+0100']) {
    const u = await mustCreate(A.key, base({ smsConsent: { source: 'web', consentedAt: at, disclosureVersion: '1' } }));
    assert.equal(u.smsConsent.consentedAt, '2026-02-01T08:30:15.000Z', at);
  }
  assert.deepEqual(await getEntry(A.key, e.id), e);
});

test('number custom fields keep every digit the client sent', async () => {
  const values = [9007199254740991, 0.30000000000000004, 1.0000000000000002, -0.1, 1e300];
  for (const v of values) {
    const raw = `{"queueId":"${A.queueId}","fullName":"Num","customData":{"${A.f2}":${JSON.stringify(v)}}}`;
    const res = await api('POST', '/waitlist/entries', { key: A.key, idempotencyKey: uniq('idem'), rawBody: raw });
    assert.equal(res.status, 201, res.text);
    assert.match(res.text, new RegExp(`"${A.f2}":${JSON.stringify(v).replace(/[.+]/g, '\\$&')}[,}]`), res.text);
    const got = await api('GET', `/waitlist/entries/${res.json.entry.id}`, { key: A.key });
    assert.equal(got.json.entry.customData[A.f2], v);
    assert.ok(got.text.includes(`"${A.f2}":${JSON.stringify(v)}`), got.text);
  }
});

test('creation writes waitlist.entry.created with ids and states only', async () => {
  const e = await mustCreate(A.key, base({ phone: PHONE, notes: NOTES }));
  const evs = events(A.tenantId).filter((x) => x.body.resourceId === e.id);
  assert.equal(evs.length, 1, JSON.stringify(evs.map((x) => x.type)));
  const ev = evs[0].body;
  assert.equal(ev.type, 'waitlist.entry.created');
  assert.match(ev.id, /^evt_/);
  assert.equal(ev.schemaVersion, '1');
  assert.equal(ev.tenantId, A.tenantId);
  assert.equal(ev.businessId, A.businessId);
  assert.equal(ev.queueId, A.queueId);
  assert.equal(ev.resourceVersion, 1);
  assert.match(ev.occurredAt, TS_RE);
  assert.deepEqual(ev.data, { entryId: e.id, status: 'waiting', isBooking: false });
  for (const secret of [NAME, PHONE, PHONE.slice(1), 'peanuts']) {
    assert.ok(!evs[0].raw.includes(secret), `event body contains guest value ${secret}`);
  }
});

test('without guest:read the guest values are left out everywhere', async () => {
  const ext = uniq('ng');
  const res = await create(A.knoguest, base({ phone: PHONE, notes: NOTES, partySize: 2, externalReference: ext, customData: { [A.f1]: 'in' } }));
  assert.equal(res.status, 201, res.text);
  const check = (e) => {
    for (const k of ['fullName', 'phone', 'notes', 'customData']) assert.ok(!(k in e), `${k} shown without guest:read`);
    assert.ok(!JSON.stringify(e).includes(NAME));
    assert.equal(e.externalReference, ext);
    assert.equal(e.partySize, 2);
  };
  check(res.json.entry);
  const got = await api('GET', `/waitlist/entries/${res.json.entry.id}`, { key: A.knoguest });
  assert.equal(got.status, 200, got.text);
  check(got.json.entry);
  const list = await api('GET', `/waitlist/entries?externalReference=${ext}`, { key: A.knoguest });
  assert.equal(list.status, 200, list.text);
  assert.equal(list.json.entries.length, 1);
  check(list.json.entries[0]);
  // A key with guest:read sees them.
  const full = await getEntry(A.key, res.json.entry.id);
  assert.equal(full.fullName, NAME);
  assert.equal(full.phone, PHONE);
  assert.equal(full.notes, NOTES);
  assert.deepEqual(full.customData, { [A.f1]: 'in' });
});

// Each body is refused with 400 validation_failed and writes nothing.
const INVALID = {
  'missing queueId': () => ({ fullName: NAME }),
  'missing fullName': () => ({ queueId: A.queueId }),
  'empty fullName': () => base({ fullName: '' }),
  'blank fullName': () => base({ fullName: '   ' }),
  'fullName of no-break and ideographic spaces': () => base({ fullName: '\u00a0\u3000' }),
  'fullName of a zero-width space': () => base({ fullName: '\u200b' }),
  'null fullName': () => base({ fullName: null }),
  'unknown body field': () => base({ color: 'red' }),
  'status in the body': () => base({ status: 'ready' }),
  'fullName not a string': () => base({ fullName: 42 }),
  'queueId not a string': () => ({ queueId: 7, partySize: 1, fullName: NAME }),
  'phone without +': () => base({ phone: '15551234567' }),
  'phone with spaces': () => base({ phone: '+1 555 123 4567' }),
  'phone with letters': () => base({ phone: '+1555CALLME' }),
  'phone as a number': () => base({ phone: 15551234567 }),
  'partySize 0': () => base({ partySize: 0 }),
  'partySize 101': () => base({ partySize: 101 }),
  'partySize -1': () => base({ partySize: -1 }),
  'partySize 2.5': () => base({ partySize: 2.5 }),
  'partySize as a string': () => base({ partySize: '3' }),
  'notes of 501 characters': () => base({ notes: 'n'.repeat(501) }),
  'externalReference of 256 characters': () => base({ externalReference: 'r'.repeat(256) }),
  'externalReference not a string': () => base({ externalReference: 12 }),
  'customData not an object': () => base({ customData: ['in'] }),
  'customData with an unknown field id': () => base({ customData: { cf_doesnotexist: 'x' } }),
  'customData with a non-public field': () => base({ customData: { [A.f4]: 'x' } }),
  'customData with a field of another line': () => base({ customData: { [A.f3]: 'x' } }),
  'customData number field given a string': () => base({ customData: { [A.f2]: '12' } }),
  'customData select value not an option': () => base({ customData: { [A.f1]: 'garden' } }),
  'customData select value of the wrong type': () => base({ customData: { [A.f1]: 1 } }),
  'serviceTypeId not attached to the line': () => base({ serviceTypeId: A.s2 }),
  'serviceTypeId unknown': () => base({ serviceTypeId: 'svc_doesnotexist' }),
  'isBooking not a boolean': () => base({ isBooking: 'yes' }),
  'smsConsent without an offset': () => base({ smsConsent: { source: 'web', consentedAt: '2026-01-31T12:00:00', disclosureVersion: 'v1' } }),
  'smsConsent without source': () => base({ smsConsent: { consentedAt: '2026-01-31T12:00:00Z', disclosureVersion: 'v1' } }),
  'smsConsent without consentedAt': () => base({ smsConsent: { source: 'web', disclosureVersion: 'v1' } }),
  'smsConsent without disclosureVersion': () => base({ smsConsent: { source: 'web', consentedAt: '2026-01-31T12:00:00Z' } }),
  'smsConsent with an unknown member': () => base({ smsConsent: { source: 'web', consentedAt: '2026-01-31T12:00:00Z', disclosureVersion: 'v1', ip: '1.2.3.4' } }),
  'smsConsent as true': () => base({ smsConsent: true }),
  // openapi.json's TimestampInput: at most 64 characters, here 65.
  'smsConsent with a consentedAt over 64 characters': () => base({ smsConsent: { source: 'web', consentedAt: `2026-01-31T12:00:00.${'0'.repeat(44)}Z`, disclosureVersion: 'v1' } }),
  'scheduledFor without isBooking': () => base({ scheduledFor: iso(nextSlot()) }),
  'scheduledFor with isBooking false': () => base({ isBooking: false, scheduledFor: iso(nextSlot()) }),
  'isBooking without scheduledFor': () => base({ isBooking: true }),
  'scheduledFor without an offset': () => base({ isBooking: true, scheduledFor: iso(nextSlot()).replace(/\.000Z$/, '') }),
  'scheduledFor not a timestamp': () => base({ isBooking: true, scheduledFor: 'tomorrow at noon' }),
  'serviceTypeId missing on a line that requires it': () => ({ queueId: A.q2, partySize: 1, fullName: NAME, customData: { [A.f3]: 'x' } }),
  'required custom field missing': () => ({ queueId: A.q2, partySize: 1, fullName: NAME, serviceTypeId: A.s1 }),
  'required text field empty': () => ({ queueId: A.q2, partySize: 1, fullName: NAME, serviceTypeId: A.s1, customData: { [A.f3]: '' } }),
  'required text field blank': () => ({ queueId: A.q2, partySize: 1, fullName: NAME, serviceTypeId: A.s1, customData: { [A.f3]: ' \t ' } }),
  'required text field of no-break spaces': () => ({ queueId: A.q2, partySize: 1, fullName: NAME, serviceTypeId: A.s1, customData: { [A.f3]: '\u00a0\u00a0' } }),
};

for (const [name, body] of Object.entries(INVALID)) {
  test(`creation refuses ${name} with 400 validation_failed and writes nothing`, async () => {
    const before = entryCount(A.tenantId);
    const evBefore = events(A.tenantId).length;
    assertError(await create(A.key, body()), 400, 'validation_failed');
    assert.equal(entryCount(A.tenantId), before);
    assert.equal(events(A.tenantId).length, evBefore);
  });
}

test('a line requiring a service and a field accepts an entry that gives both', async () => {
  const e = await mustCreate(A.key, { queueId: A.q2, partySize: 1, fullName: NAME, serviceTypeId: A.s1, customData: { [A.f3]: 'order 1' } });
  assert.equal(e.serviceTypeId, A.s1);
  assert.deepEqual(e.customData, { [A.f3]: 'order 1' });
});

test('malformed bodies are 400 invalid_json and write nothing', async () => {
  const before = entryCount(A.tenantId);
  const bodies = {
    'truncated JSON': `{"queueId": "${A.queueId}", "fullName": `,
    'duplicate keys': `{"queueId":"${A.queueId}","fullName":"a","fullName":"b"}`,
    'invalid UTF-8': Buffer.concat([
      Buffer.from(`{"queueId":"${A.queueId}","fullName":"`), Buffer.from([0xc3, 0x28, 0xff]), Buffer.from('"}'),
    ]),
    'a \\u0000 escape': `{"queueId":"${A.queueId}","fullName":"a\\u0000b"}`,
  };
  for (const [name, rawBody] of Object.entries(bodies)) {
    const res = await api('POST', '/waitlist/entries', { key: A.key, rawBody, idempotencyKey: uniq('idem') });
    assert.equal(res.status, 400, `${name}: ${res.text}`);
    assertError(res, 400, 'invalid_json');
  }
  assert.equal(entryCount(A.tenantId), before);
});

test('an integer sent with digits past a double\'s precision is refused, not rounded', async () => {
  // 99.99999999999999999999 and 0.99999999999999999999 read as the doubles
  // 100 and 1: the text decides, as it does for 1.5 (100.0 and 1e2 are whole).
  const before = entryCount(A.tenantId);
  const evBefore = events(A.tenantId).length;
  const raw = (party) => `{"queueId":"${A.queueId}","fullName":"${NAME}","partySize":${party}}`;
  assertError(await api('POST', '/waitlist/entries', { key: A.key, rawBody: raw('99.99999999999999999999'), idempotencyKey: uniq('idem') }), 400, 'validation_failed');
  assert.equal(entryCount(A.tenantId), before);
  const e = (await api('POST', '/waitlist/entries', { key: A.key, rawBody: raw('1e1'), idempotencyKey: uniq('idem') })).json.entry;
  assert.equal(e.partySize, 10);
  const status = `{"status":"ready","expectedStatus":"waiting","expectedVersion":0.99999999999999999999}`;
  assertError(await api('PATCH', `/waitlist/entries/${e.id}/status`, { key: A.key, rawBody: status, idempotencyKey: uniq('idem') }), 400, 'validation_failed');
  const now = await api('GET', `/waitlist/entries/${e.id}`, { key: A.key });
  assert.equal(now.json.entry.version, 1);
  assert.equal(now.json.entry.status, 'waiting');
  assert.equal(events(A.tenantId).length, evBefore + 1);
});

test('a long unknown member is quoted whole characters at a time', async () => {
  const euros = (n) => '\u20ac'.repeat(n); // three bytes each
  const res = await create(A.key, base({ [euros(40)]: 1 }));
  assertError(res, 400, 'validation_failed');
  assert.ok(res.json.error.startsWith(`${euros(33)} is not a field`), res.json.error);
  const cd = await create(A.key, { queueId: A.q2, fullName: NAME, serviceTypeId: A.s1,
    customData: { [A.f3]: 'x', [euros(30)]: 1 } });
  assertError(cd, 400, 'validation_failed');
  assert.ok(cd.json.error.startsWith(`customData.${euros(20)} is not a public field`), cd.json.error);
});

test('a line of another tenant, an unknown line and a line outside the key are 404', async () => {
  const before = entryCount(A.tenantId);
  assertError(await create(A.key, base({ queueId: B.queueId })), 404, 'not_found');
  assertError(await create(A.key, base({ queueId: 'que_doesnotexist' })), 404, 'not_found');
  assertError(await create(A.kq2, base({ queueId: A.queueId })), 404, 'not_found');
  assert.equal(entryCount(A.tenantId), before);
  assert.equal(entryCount(B.tenantId), 0);
});

for (const [ref, why] of [
  ['qNoWalk', 'walkInsEnabled false'],
  ['qPaused', 'walkInsPaused true'],
  ['qClosedDay', 'today closed in workingHours.days'],
  ['qClosedHours', 'now outside workingHours'],
]) {
  test(`a walk-in is 409 queue_unavailable when ${why}`, async () => {
    const before = entryCount(A.tenantId);
    assertError(await create(A.key, base({ queueId: A[ref] })), 409, 'queue_unavailable');
    assert.equal(entryCount(A.tenantId), before);
  });
}

// A worker reuses a line's lookup (its row, services and fields) like a
// key's: for key_cache_seconds (1), or until waitlistctl tells the node.
test('a line changed in the database is seen within key_cache_seconds, at once when the workers are told', async () => {
  const burst = () => Promise.all(Array.from({ length: 16 }, () => create(A.key, base({ queueId: A.qCached }))));
  (await burst()).forEach((r) => assert.equal(r.status, 201, r.text));
  sql(`UPDATE queues SET walk_ins_paused = 1 WHERE id = '${A.qCached}'`, { tellWorkers: false });
  const changed = Date.now();
  for (;;) {
    const codes = (await burst()).map((r) => r.json?.code ?? r.status);
    if (codes.every((c) => c === 'queue_unavailable')) break;
    assert.ok(codes.every((c) => c === 'queue_unavailable' || c === 201), codes.join(','));
    assert.ok(Date.now() - changed < 3000, `still taking walk-ins ${Date.now() - changed} ms after the change`);
    await sleep(100);
  }
  sql(`UPDATE queues SET walk_ins_paused = 0 WHERE id = '${A.qCached}'`);
  (await burst()).forEach((r) => assert.equal(r.status, 201, r.text));
});

test('workingHours.enabled false enforces no schedule', async () => {
  const e = await mustCreate(A.key, base({ queueId: A.qNoSchedule }));
  assert.equal(e.status, 'waiting');
});

test('the guest allowance refuses the N+1-th guest of the month with 402', async () => {
  const T = setup({ tenant: { guestAllowance: 2 } });
  const b = (n) => ({ queueId: T.queueId, partySize: 1, fullName: `Guest ${n}` });
  // A refused request does not count.
  assertError(await create(T.key, { ...b(0), partySize: 0 }), 400, 'validation_failed');
  await mustCreate(T.key, b(1));
  await mustCreate(T.key, b(2));
  assertError(await create(T.key, b(3)), 402, 'guest_allowance_exceeded');
  assertError(await create(T.key, b(4)), 402, 'guest_allowance_exceeded');
  assert.equal(entryCount(T.tenantId), 2);
  assert.equal(events(T.tenantId).length, 2);
});

test('GET of an entry of another tenant, or an unknown one, is 404', async () => {
  const e = await mustCreate(B.key, { queueId: B.queueId, partySize: 1, fullName: 'Other tenant' });
  assertError(await api('GET', `/waitlist/entries/${e.id}`, { key: A.key }), 404, 'not_found');
  assertError(await api('GET', '/waitlist/entries/ent_doesnotexist', { key: A.key }), 404, 'not_found');
  assert.equal((await getEntry(B.key, e.id)).id, e.id);
});

// ---- PATCH /waitlist/entries/{id} ----

test('an edit changes the fields, bumps the version and emits one updated event', async () => {
  const e = await mustCreate(A.key, base({ phone: PHONE, notes: NOTES, customData: { [A.f1]: 'in' } }));
  await sleep(5);
  const newName = `${NAME}Renamed`;
  const res = await write('PATCH', `/waitlist/entries/${e.id}`, A.key, {
    expectedVersion: 1, fullName: newName, phone: '+447700900123', partySize: 3,
    notes: 'window seat', serviceTypeId: A.s1, customData: { [A.f2]: 7 }, externalReference: 'edited-ref',
  });
  assert.equal(res.status, 200, res.text);
  assert.deepEqual(Object.keys(res.json), ['entry']);
  const u = res.json.entry;
  assert.equal(u.version, 2);
  assert.equal(u.fullName, newName);
  assert.equal(u.phone, '+447700900123');
  assert.equal(u.partySize, 3);
  assert.equal(u.notes, 'window seat');
  assert.equal(u.serviceTypeId, A.s1);
  assert.deepEqual(u.customData, { [A.f1]: 'in', [A.f2]: 7 }, 'customData is merged per field id');
  assert.equal(u.externalReference, 'edited-ref');
  assert.equal(u.status, 'waiting');
  assert.equal(u.createdAt, e.createdAt);
  assert.ok(Date.parse(u.updatedAt) > Date.parse(e.updatedAt));
  assert.deepEqual(await getEntry(A.key, e.id), u);

  const evs = events(A.tenantId).filter((x) => x.body.resourceId === e.id);
  assert.deepEqual(evs.map((x) => x.type), ['waitlist.entry.created', 'waitlist.entry.updated']);
  const ev = evs[1];
  assert.equal(ev.body.resourceVersion, 2);
  assert.deepEqual(ev.body.data, {
    entryId: e.id,
    changedFields: ['fullName', 'phone', 'partySize', 'notes', 'serviceTypeId', 'customData', 'externalReference'],
  });
  for (const secret of [newName, NAME, '447700900123', 'window seat', PHONE.slice(1), 'peanuts']) {
    assert.ok(!ev.raw.includes(secret), `updated event contains guest value ${secret}`);
  }
});

test('an edit of one field lists only that field and keeps the others', async () => {
  const e = await mustCreate(A.key, base({ phone: PHONE, notes: NOTES, partySize: 2 }));
  const res = await write('PATCH', `/waitlist/entries/${e.id}`, A.key, { expectedVersion: 1, partySize: 5 });
  assert.equal(res.status, 200, res.text);
  const u = res.json.entry;
  assert.equal(u.partySize, 5);
  assert.equal(u.fullName, NAME);
  assert.equal(u.phone, PHONE);
  assert.equal(u.notes, NOTES);
  const ev = events(A.tenantId).filter((x) => x.body.resourceId === e.id).at(-1);
  assert.deepEqual(ev.body.data, { entryId: e.id, changedFields: ['partySize'] });
});

test('customData null removes an optional field; optional values can be cleared', async () => {
  const e = await mustCreate(A.key, base({ phone: PHONE, notes: NOTES, externalReference: uniq('x'), customData: { [A.f1]: 'in', [A.f2]: 3 } }));
  const res = await write('PATCH', `/waitlist/entries/${e.id}`, A.key, {
    expectedVersion: 1, customData: { [A.f1]: null }, phone: null, notes: null, externalReference: null,
  });
  assert.equal(res.status, 200, res.text);
  assert.deepEqual(res.json.entry.customData, { [A.f2]: 3 });
  assert.equal(res.json.entry.phone, null);
  assert.equal(res.json.entry.notes, null);
  assert.equal(res.json.entry.externalReference, null);
  // A required field of the line cannot be removed.
  const r = await mustCreate(A.key, { queueId: A.q2, partySize: 1, fullName: NAME, serviceTypeId: A.s1, customData: { [A.f3]: 'o' } });
  assertError(await write('PATCH', `/waitlist/entries/${r.id}`, A.key, { expectedVersion: 1, customData: { [A.f3]: null } }), 400, 'validation_failed');
  assertError(await write('PATCH', `/waitlist/entries/${r.id}`, A.key, { expectedVersion: 1, customData: { [A.f3]: '  ' } }), 400, 'validation_failed');
  assertError(await write('PATCH', `/waitlist/entries/${r.id}`, A.key, { expectedVersion: 1, serviceTypeId: null }), 400, 'validation_failed');
  assert.equal((await getEntry(A.key, r.id)).version, 1);
});

const BAD_EDITS = {
  'status': { status: 'ready' },
  'queueId': { queueId: 'que_x' },
  'scheduledFor': { scheduledFor: '2030-01-01T10:00:00Z' },
  'isBooking': { isBooking: true },
  'an unknown key': { shoeSize: 44 },
  'smsConsent': { smsConsent: null },
  'no editable field': {},
  'fullName null': { fullName: null },
  'blank fullName': { fullName: ' ' },
  'fullName of a no-break space': { fullName: '\u00a0' },
  'partySize null': { partySize: null },
  'partySize 0': { partySize: 0 },
  'an invalid phone': { phone: '555' },
  'notes of 501 characters': { notes: 'x'.repeat(501) },
  'a service not attached to the line': { serviceTypeId: 'SERVICE_S2' },
  'an unknown custom field': { customData: { cf_nope: 1 } },
  'customData null': { customData: null },
  'customData not an object': { customData: ['in'] },
  'a select value not among the options': { customData: { SELECT_F1: 'roof' } },
};

for (const [name, extra] of Object.entries(BAD_EDITS)) {
  test(`an edit with ${name} is 400 and changes nothing`, async () => {
    const e = await mustCreate(A.key, base());
    const body = JSON.parse(JSON.stringify({ expectedVersion: 1, ...extra })
      .replace('SERVICE_S2', A.s2).replace('SELECT_F1', A.f1));
    const res = await write('PATCH', `/waitlist/entries/${e.id}`, A.key, body);
    assertError(res, 400, ['validation_failed', 'invalid_request']);
    assert.deepEqual(await getEntry(A.key, e.id), e);
    assert.equal(events(A.tenantId).filter((x) => x.body.resourceId === e.id).length, 1);
  });
}

test('an edit without expectedVersion is 400', async () => {
  const e = await mustCreate(A.key, base());
  assertError(await write('PATCH', `/waitlist/entries/${e.id}`, A.key, { partySize: 2 }), 400, 'validation_failed');
  assertError(await write('PATCH', `/waitlist/entries/${e.id}`, A.key, { expectedVersion: '1', partySize: 2 }), 400, 'validation_failed');
  assert.equal((await getEntry(A.key, e.id)).version, 1);
});

test('an edit with a stale version is 409 version_conflict and changes nothing', async () => {
  const e = await mustCreate(A.key, base());
  const ok = await write('PATCH', `/waitlist/entries/${e.id}`, A.key, { expectedVersion: 1, partySize: 2 });
  assert.equal(ok.status, 200, ok.text);
  for (const v of [1, 3, 99]) {
    assertError(await write('PATCH', `/waitlist/entries/${e.id}`, A.key, { expectedVersion: v, partySize: 9 }), 409, 'version_conflict');
  }
  const now = await getEntry(A.key, e.id);
  assert.equal(now.version, 2);
  assert.equal(now.partySize, 2);
  assert.equal(events(A.tenantId).filter((x) => x.body.resourceId === e.id).length, 2);
});

for (const [terminal, path] of [
  ['completed', ['in_service', 'completed']], ['cancelled', ['cancelled']], ['no_show', ['no_show']],
]) {
  test(`editing a ${terminal} entry is 400 invalid_transition`, async () => {
    const e = await moveThrough(A.key, await mustCreate(A.key, base()), path);
    const res = await write('PATCH', `/waitlist/entries/${e.id}`, A.key, { expectedVersion: e.version, notes: 'late' });
    assertError(res, 400, 'invalid_transition');
    assert.deepEqual(await getEntry(A.key, e.id), e);
  });
}

test('edits of an entry of another tenant, unknown or outside the key are 404', async () => {
  const other = await mustCreate(B.key, { queueId: B.queueId, partySize: 1, fullName: 'B guest' });
  assertError(await write('PATCH', `/waitlist/entries/${other.id}`, A.key, { expectedVersion: 1, partySize: 2 }), 404, 'not_found');
  assertError(await write('PATCH', '/waitlist/entries/ent_nope', A.key, { expectedVersion: 1, partySize: 2 }), 404, 'not_found');
  const mine = await mustCreate(A.key, base());
  assertError(await write('PATCH', `/waitlist/entries/${mine.id}`, A.kq2, { expectedVersion: 1, partySize: 2 }), 404, 'not_found');
  assertError(await api('GET', `/waitlist/entries/${mine.id}`, { key: A.kq2 }), 404, 'not_found');
  assert.equal((await getEntry(B.key, other.id)).version, 1);
  assert.equal((await getEntry(A.key, mine.id)).version, 1);
});

test('writes without the Idempotency-Key header are 400 idempotency_key_required', async () => {
  const before = entryCount(A.tenantId);
  assertError(await api('POST', '/waitlist/entries', { key: A.key, body: base() }), 400, 'idempotency_key_required');
  const e = await mustCreate(A.key, base());
  assertError(await api('PATCH', `/waitlist/entries/${e.id}`, { key: A.key, body: { expectedVersion: 1, partySize: 2 } }), 400, 'idempotency_key_required');
  assertError(await api('PATCH', `/waitlist/entries/${e.id}/status`, { key: A.key, body: { status: 'ready', expectedStatus: 'waiting', expectedVersion: 1 } }), 400, 'idempotency_key_required');
  assert.equal(entryCount(A.tenantId), before + 1);
  assert.equal((await getEntry(A.key, e.id)).version, 1);
});

// ---- positions and waits ----

test('position counts active walk-ins of the line by creation; estimatedWaitMinutes follows served walk-ins', async () => {
  const q = A.q3;
  const w = [];
  for (let i = 0; i < 3; i++) {
    w.push(await mustCreate(A.key, { queueId: q, partySize: 1, fullName: `P${i}` }));
    await sleep(3);
  }
  assert.deepEqual(w.map((e) => e.position), [1, 2, 3]);
  assert.deepEqual(w.map((e) => e.estimatedWaitMinutes), [null, null, null]);
  const bk = await mustCreate(A.key, { queueId: q, partySize: 1, fullName: 'Booked', isBooking: true, scheduledFor: iso(nextSlot()) });
  assert.equal(bk.position, null, 'a booking has no position');
  assert.equal(bk.estimatedWaitMinutes, null);

  const served = await moveThrough(A.key, w[0], ['in_service']);
  assert.equal(served.position, null, 'an in_service entry has no position');
  assert.equal(served.estimatedWaitMinutes, null);
  const w1 = await getEntry(A.key, w[1].id);
  const w2 = await getEntry(A.key, w[2].id);
  assert.equal(w1.position, 1);
  assert.equal(w2.position, 2);
  for (const e of [w1, w2]) {
    assert.ok(Number.isInteger(e.estimatedWaitMinutes) && e.estimatedWaitMinutes >= 0,
      `estimatedWaitMinutes after a walk-in was served: ${e.estimatedWaitMinutes}`);
  }
  // ready is still active: the place is kept.
  const r1 = await moveThrough(A.key, w1, ['ready']);
  assert.equal(r1.position, 1);
  await moveThrough(A.key, r1, ['cancelled']);
  const last = await getEntry(A.key, w[2].id);
  assert.equal(last.position, 1);
  assert.equal((await getEntry(A.key, bk.id)).position, null);
});

test('walk-ins created at once answer the positions 1..n, each what a read then finds', async () => {
  const T = setup({ q1: { timeZone: dayZone() } });
  const made = await Promise.all(Array.from({ length: 24 }, (_, i) => mustCreate(T.key, { queueId: T.queueId, fullName: `C${i}` })));
  assert.deepEqual(made.map((e) => e.position).sort((a, b) => a - b), Array.from({ length: 24 }, (_, i) => i + 1));
  for (const e of made) assert.deepEqual(await getEntry(T.key, e.id), e);
});

test('positions follow a model through out-of-turn departures and returns to the line', async () => {
  // A fresh line; each step moves a random walk-in along an allowed
  // transition (seeded, so a failure repeats), then every walk-in's
  // position, read alone and in the list, must equal its place among the
  // active walk-ins in creation order.  Bookings in the line hold none.
  const T = setup({ q1: { timeZone: dayZone() } });
  let seed = 20261121;
  const rand = (n) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n; };
  const active = (e) => ['waiting', 'ready', 'confirmed'].includes(e.status);
  const model = () => {
    let n = 0;
    return new Map(entries.map((e) => [e.id, active(e) ? ++n : null]));
  };
  const entries = [];
  for (let i = 0; i < 10; i++) {
    const e = await mustCreate(T.key, { queueId: T.queueId, partySize: 1, fullName: `M${i}` });
    assert.equal(e.position, entries.filter(active).length + 1, 'a new walk-in is last in line');
    entries.push(e);
    if (i === 4) {
      await mustCreate(T.key, { queueId: T.queueId, partySize: 1, fullName: 'Booked', isBooking: true, scheduledFor: iso(nextSlot()) });
    }
  }
  const check = async (step) => {
    const want = model();
    for (const e of entries) {
      assert.equal((await getEntry(T.key, e.id)).position, want.get(e.id), `step ${step}: GET ${e.id}`);
    }
    const list = await api('GET', '/waitlist/entries?limit=100', { key: T.key });
    assert.equal(list.status, 200, list.text);
    for (const e of list.json.entries) {
      if (!e.isBooking) assert.equal(e.position, want.get(e.id), `step ${step}: list ${e.id}`);
      else assert.equal(e.position, null);
    }
  };
  await check('start');
  for (let step = 0; step < 24; step++) {
    const open = entries.filter((e) => ALLOWED[e.status].length > 0);
    if (open.length === 0) break;
    const e = open[rand(open.length)];
    // Favour the head of the line and returns from in_service, the cases
    // that move the line's lowest active ticket.
    const to = e.status === 'in_service' && rand(2) === 0 ? 'waiting' : ALLOWED[e.status][rand(ALLOWED[e.status].length)];
    const moved = await moveThrough(T.key, e, [to]);
    entries[entries.indexOf(e)] = moved;
    assert.equal(moved.position, model().get(moved.id), `step ${step}: the reply of ${e.status} -> ${to}`);
    await check(step);
  }
});

// line_tickets.head of line q (migrations/011), as text.
const lineHead = (q) => sql(`SELECT head FROM line_tickets WHERE queue_id = '${q}'`)[0][0];

test('the head of a line follows it emptying, refilling and a return ahead of the newest', async () => {
  const T = setup();
  const q = T.queueId;
  const a = await mustCreate(T.key, { queueId: q, partySize: 1, fullName: 'A' });
  const servedA = await moveThrough(T.key, a, ['in_service']);
  const b = await mustCreate(T.key, { queueId: q, partySize: 1, fullName: 'B' });
  assert.equal(b.position, 1, 'the first walk-in of an emptied line is first');
  const c = await mustCreate(T.key, { queueId: q, partySize: 1, fullName: 'C' });
  assert.equal(c.position, 2);
  // A returns from service with the lowest ticket: first again.
  const back = await moveThrough(T.key, servedA, ['waiting']);
  assert.equal(back.position, 1, 'a return ahead of the head is first');
  assert.equal((await getEntry(T.key, b.id)).position, 2);
  assert.equal((await getEntry(T.key, c.id)).position, 3);
  // The head leaves, then the next one: the last is first.
  await moveThrough(T.key, back, ['cancelled']);
  await moveThrough(T.key, await getEntry(T.key, b.id), ['no_show']);
  assert.equal((await getEntry(T.key, c.id)).position, 1);
  await moveThrough(T.key, await getEntry(T.key, c.id), ['in_service', 'completed']);
  const d = await mustCreate(T.key, { queueId: q, partySize: 1, fullName: 'D' });
  assert.equal(d.position, 1);
  const e = await mustCreate(T.key, { queueId: q, partySize: 1, fullName: 'E' });
  const f = await mustCreate(T.key, { queueId: q, partySize: 1, fullName: 'F' });
  await moveThrough(T.key, e, ['cancelled']);
  const head = () => lineHead(q);
  assert.equal(head(), '4', 'D, ticket 4, is the head');
  // A head that lags below the lowest active ticket (a departure that
  // raced a write on another Galera node) changes no position, and the
  // next departure takes the head again.
  sql(`UPDATE line_tickets SET head = 1 WHERE queue_id = '${q}'`);
  assert.equal((await getEntry(T.key, d.id)).position, 1);
  assert.equal((await getEntry(T.key, f.id)).position, 2);
  await moveThrough(T.key, await getEntry(T.key, d.id), ['no_show']);
  assert.equal(head(), '6', 'F, ticket 6, is the head again');
  assert.equal((await getEntry(T.key, f.id)).position, 1);
  // A head above an active ticket (a return made by a program older than
  // migration 011 leaves it so) is mended by the line's next departure.
  const g = await mustCreate(T.key, { queueId: q, partySize: 1, fullName: 'G' });
  sql(`UPDATE line_tickets SET head = 7 WHERE queue_id = '${q}'`);
  await moveThrough(T.key, g, ['cancelled']);
  assert.equal(head(), '6', 'the departure takes the lowest active ticket');
  assert.equal((await getEntry(T.key, f.id)).position, 1);
  await moveThrough(T.key, await getEntry(T.key, f.id), ['in_service']);
  assert.equal(head(), '8', 'an empty line\'s head is its next ticket');
  const h = await mustCreate(T.key, { queueId: q, partySize: 1, fullName: 'H' });
  assert.equal(h.position, 1);
});

test('a departure takes the next head once the line\'s lock is granted: a walk-in that left meanwhile is not it', async () => {
  const T = setup();
  const q = T.queueId;
  const a = await mustCreate(T.key, { queueId: q, partySize: 1, fullName: 'A' });
  const b = await mustCreate(T.key, { queueId: q, partySize: 1, fullName: 'B' });
  const c = await mustCreate(T.key, { queueId: q, partySize: 1, fullName: 'C' });
  // The service's statement waiting for the line's row (InnoDB gives up
  // after 5 s: innodb_lock_wait_timeout in lib/sql.c).
  const waiting = () => running('UPDATE line_tickets').length;
  const s = sqlSession();
  let res;
  try {
    // Hold the line's row; A (the head) leaves and waits for it; B
    // leaves and commits meanwhile; then the row is let go.
    await s.run('BEGIN');
    await s.run(`SELECT head FROM line_tickets WHERE queue_id = '${q}' FOR UPDATE`);
    const pending = setStatus(T.key, a, 'cancelled');
    for (let i = 0; i < 60 && waiting() === 0; i++) await sleep(25);
    assert.equal(waiting(), 1, 'the departure waits for the line\'s row');
    await s.run(`UPDATE entries SET status = 'cancelled', version = version + 1 WHERE id = '${b.id}'`);
    await s.run('COMMIT');
    res = await pending;
  } finally {
    await s.close();
  }
  assert.equal(res.status, 200, res.text);
  assert.equal(lineHead(q), '3', 'C, not B, is the head');
  assert.equal((await getEntry(T.key, c.id)).position, 1);
});

test('estimatedWaitMinutes is the line\'s moving average wait, each newly served walk-in weighing 1/5, reset after 24 hours without one', async () => {
  const T = setup();
  const q = T.queueId;
  const now = Date.now();
  const MIN = 60_000;
  const at = (ms) => ({ 'x-test-now': new Date(ms).toISOString() });
  // Created and served at pinned instants; returns the entry in service.
  const serve = async (createdAt, servedAt) => {
    const res = await api('POST', '/waitlist/entries', {
      key: T.key, idempotencyKey: uniq('idem'), headers: at(createdAt),
      body: { queueId: q, partySize: 1, fullName: 'Served' },
    });
    assert.equal(res.status, 201, res.text);
    const e = res.json.entry;
    const moved = await api('PATCH', `/waitlist/entries/${e.id}/status`, {
      key: T.key, idempotencyKey: uniq('idem'), headers: at(servedAt),
      body: { status: 'in_service', expectedStatus: 'waiting', expectedVersion: e.version },
    });
    assert.equal(moved.status, 200, moved.text);
    return moved.json.entry;
  };
  const waiting = await mustCreate(T.key, { queueId: q, partySize: 1, fullName: 'Waiting' });
  // Read at the pinned instant `now`, however long the test takes.
  const estimateOf = async (id) => {
    const res = await api('GET', `/waitlist/entries/${id}`, { key: T.key, headers: at(now) });
    assert.equal(res.status, 200, res.text);
    return res.json.entry.estimatedWaitMinutes;
  };
  const estimate = () => estimateOf(waiting.id);

  // Served 25 hours ago after an hour: too long ago to count.
  await serve(now - 26 * 60 * MIN, now - 25 * 60 * MIN);
  assert.equal(await estimate(), null, 'no walk-in served in the last 24 hours');
  // The next one served restarts the average: 10 minutes.
  await serve(now - 30 * MIN, now - 20 * MIN);
  assert.equal(await estimate(), 10);
  // 20 minutes: 10 * 4/5 + 20 * 1/5 = 12.
  await serve(now - 30 * MIN, now - 10 * MIN);
  assert.equal(await estimate(), 12);
  // A walk-in served a second time does not count again.
  const again = await serve(now - 15 * MIN, now - 14 * MIN);
  assert.equal(await estimate(), 10, '12 * 4/5 + 1 * 1/5 = 9.8');
  const back = await moveThrough(T.key, again, ['waiting']);
  await moveThrough(T.key, back, ['in_service']);
  assert.equal(await estimate(), 10, 'the second service of the same walk-in is not a new wait');
  // Minutes already waited come off the estimate.
  const createEarly = (key) => api('POST', '/waitlist/entries', {
    key: T.key, idempotencyKey: key, headers: at(now - 4 * MIN),
    body: { queueId: q, partySize: 1, fullName: 'Early' },
  });
  const earlyKey = uniq('idem');
  const early = await createEarly(earlyKey);
  assert.equal(early.status, 201, early.text);
  // The create's own answer takes the line's wait from the new ticket.
  assert.equal(early.json.entry.estimatedWaitMinutes, 10, 'the answer to the create: 9.8, rounded');
  assert.equal(early.json.entry.position, 2, 'behind Waiting');
  assert.equal(await estimateOf(early.json.entry.id), 6, '9.8 - 4, rounded');
  // Its replay, after Waiting has left, is still the create's answer.
  await setStatus(T.key, await getEntry(T.key, waiting.id), 'cancelled');
  assert.equal((await getEntry(T.key, early.json.entry.id)).position, 1);
  const replayed = await createEarly(earlyKey);
  assert.equal(replayed.status, 201, replayed.text);
  assert.equal(replayed.headers.get('idempotency-replayed'), 'true');
  assert.equal(replayed.text, early.text);
});

test('a new walk-in\'s answer gives the position its reads give, however the line moved', async () => {
  const T = setup();
  const q = T.queueId;
  const made = [];
  for (let i = 0; i < 6; i++) made.push(await mustCreate(T.key, { queueId: q, partySize: 1, fullName: `P${i}` }));
  assert.deepEqual(made.map((e) => e.position), [1, 2, 3, 4, 5, 6]);
  // Out of turn: the fifth leaves, the second is served and comes back.
  await moveThrough(T.key, made[4], ['cancelled']);
  const back = await moveThrough(T.key, made[1], ['in_service']);
  let next = await mustCreate(T.key, { queueId: q, partySize: 1, fullName: 'N1' });
  assert.equal(next.position, 5);
  assert.equal((await getEntry(T.key, next.id)).position, 5);
  await moveThrough(T.key, back, ['waiting']);
  next = await mustCreate(T.key, { queueId: q, partySize: 1, fullName: 'N2' });
  assert.equal(next.position, 7);
  assert.equal((await getEntry(T.key, next.id)).position, 7);
});

test('reads that alternate between a line left out of turn and one in order give every position', async () => {
  // A read counts the departures out of turn only in a line that has
  // some; each worker remembers which read the tenant last needed, so
  // reads of the two lines take turns at being the other kind.
  const T = setup({ queues: [line('qOrder')] });
  const left = [];
  const kept = [];
  const ref = uniq('order');
  for (let i = 0; i < 4; i++) left.push(await mustCreate(T.key, { queueId: T.queueId, partySize: 1, fullName: `L${i}`, externalReference: `${ref}-L${i}` }));
  for (let i = 0; i < 3; i++) kept.push(await mustCreate(T.key, { queueId: T.qOrder, partySize: 1, fullName: `K${i}`, externalReference: `${ref}-K${i}` }));
  await moveThrough(T.key, left[1], ['cancelled']);
  const want = [[left[0], 1], [kept[0], 1], [left[2], 2], [kept[1], 2], [left[3], 3], [kept[2], 3]];
  const byRef = async (e) => {
    const res = await api('GET', `/waitlist/entries?externalReference=${e.externalReference}`, { key: T.key });
    assert.equal(res.status, 200, res.text);
    return res.json.entries[0].position;
  };
  for (let round = 0; round < 8; round++) {
    for (const [e, position] of want) {
      assert.equal((await getEntry(T.key, e.id)).position, position, `round ${round}: ${e.fullName}`);
      assert.equal(await byRef(e), position, `round ${round}: ${e.fullName} by its reference`);
    }
    const list = await api('GET', '/waitlist/entries?limit=100', { key: T.key });
    assert.equal(list.status, 200, list.text);
    const listed = new Map(list.json.entries.map((e) => [e.id, e.position]));
    for (const [e, position] of want) assert.equal(listed.get(e.id), position, `round ${round}: ${e.fullName} in the list`);
  }
  // The line in order loses its head: still in order, one place up.
  await moveThrough(T.key, kept[0], ['in_service']);
  for (let round = 0; round < 4; round++) {
    assert.equal((await getEntry(T.key, left[3].id)).position, 3);
    assert.equal((await getEntry(T.key, kept[2].id)).position, 2);
  }
});

test('a line\'s count of active walk-ins gone astray is mended once the line is left empty', async () => {
  const T = setup();
  const q = T.queueId;
  const a = await mustCreate(T.key, { queueId: q, partySize: 1, fullName: 'A' });
  const b = await mustCreate(T.key, { queueId: q, partySize: 1, fullName: 'B' });
  assert.equal(b.position, 2);
  // As a program older than the count would leave it.
  sql(`UPDATE line_tickets SET active = 40 WHERE queue_id = '${q}'`);
  await moveThrough(T.key, b, ['cancelled']);
  await moveThrough(T.key, a, ['in_service', 'completed']);
  const c = await mustCreate(T.key, { queueId: q, partySize: 1, fullName: 'C' });
  assert.equal(c.position, 1);
  const d = await mustCreate(T.key, { queueId: q, partySize: 1, fullName: 'D' });
  assert.equal(d.position, 2);
  assert.equal((await getEntry(T.key, d.id)).position, 2);
});

test('concurrent departures and arrivals in one line leave every position right', async () => {
  const T = setup();
  const q = T.queueId;
  const made = [];
  for (let i = 0; i < 12; i++) made.push(await mustCreate(T.key, { queueId: q, partySize: 1, fullName: `C${i}` }));
  // The first six leave at once (the head among them) while six arrive.
  const leaving = made.slice(0, 6);
  const results = await Promise.all([
    ...leaving.map((e, i) => setStatus(T.key, e, i % 2 ? 'cancelled' : 'in_service')),
    ...Array.from({ length: 6 }, (_, i) => create(T.key, { queueId: q, partySize: 1, fullName: `N${i}` })),
  ]);
  for (const r of results) assert.ok(r.status === 200 || r.status === 201, r.text);
  const arrived = results.slice(6).map((r) => r.json.entry);
  const stay = [...made.slice(6), ...arrived.sort((x, y) => x.createdAt.localeCompare(y.createdAt) || 0)];
  const got = [];
  for (const e of stay) got.push((await getEntry(T.key, e.id)).position);
  assert.deepEqual(got.slice(0, 6), [1, 2, 3, 4, 5, 6], 'those who stayed lead the line');
  assert.deepEqual([...got.slice(6)].sort((x, y) => x - y), [7, 8, 9, 10, 11, 12], 'the arrivals follow');
  // Returns from service race with the rest of the line leaving.
  const inService = results.slice(0, 6).filter((r) => r.json.entry.status === 'in_service').map((r) => r.json.entry);
  const second = await Promise.all([
    ...inService.map((e) => setStatus(T.key, e, 'waiting')),
    ...stay.slice(0, 4).map(async (e) => setStatus(T.key, await getEntry(T.key, e.id), 'no_show')),
  ]);
  for (const r of second) assert.equal(r.status, 200, r.text);
  const list = await api('GET', '/waitlist/entries?limit=100', { key: T.key });
  assert.equal(list.status, 200, list.text);
  const active = list.json.entries.filter((e) => ['waiting', 'ready', 'confirmed'].includes(e.status));
  // 12 in the line, 4 gone as no-shows, the returns back among them.
  assert.equal(active.length, 12 - 4 + inService.length, list.text);
  for (const e of active) {
    assert.equal((await getEntry(T.key, e.id)).position, e.position, `GET and list agree on ${e.id}`);
  }
  assert.deepEqual(active.map((e) => e.position).sort((x, y) => x - y), active.map((_, i) => i + 1));
  for (const e of inService) {
    assert.ok((await getEntry(T.key, e.id)).position <= 3, 'a returned walk-in has its old place, ahead of the rest');
  }
});

// ---- GET /waitlist/entries ----

test('the list is ordered by updatedAt then id and pages with limit and cursor', async () => {
  const T = setup();
  const made = [];
  for (let i = 0; i < 5; i++) {
    made.push(await mustCreate(T.key, { queueId: T.queueId, partySize: 1, fullName: `L${i}` }));
    await sleep(3);
  }
  // Editing the first moves it to the end.
  const ed = await write('PATCH', `/waitlist/entries/${made[0].id}`, T.key, { expectedVersion: 1, partySize: 2 });
  assert.equal(ed.status, 200, ed.text);
  const expected = [made[1], made[2], made[3], made[4], made[0]].map((e) => e.id);

  const all = await api('GET', '/waitlist/entries', { key: T.key });
  assert.equal(all.status, 200, all.text);
  assert.deepEqual(all.json.entries.map((e) => e.id), expected);
  assert.equal(all.json.nextCursor, null);
  assert.equal(all.json.entries[4].version, 2);

  const seen = [];
  let cursor = null;
  let pages = 0;
  do {
    const q = `/waitlist/entries?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const res = await api('GET', q, { key: T.key });
    assert.equal(res.status, 200, res.text);
    assert.ok(res.json.entries.length <= 2);
    seen.push(...res.json.entries.map((e) => e.id));
    cursor = res.json.nextCursor;
    if (cursor !== null) assert.equal(typeof cursor, 'string');
    pages += 1;
    assert.ok(pages < 10);
  } while (cursor !== null);
  assert.deepEqual(seen, expected);
  assert.equal(pages, 3);

  const items = all.json.entries;
  for (let i = 1; i < items.length; i++) {
    const a = items[i - 1]; const b = items[i];
    assert.ok(a.updatedAt < b.updatedAt || (a.updatedAt === b.updatedAt && a.id < b.id), 'order by updatedAt, id');
  }
});

test('list parameters are validated: limit 1..100, cursor integrity and binding', async () => {
  const T = setup();
  for (let i = 0; i < 3; i++) await mustCreate(T.key, { queueId: T.queueId, partySize: 1, fullName: `C${i}`, externalReference: 'same' });
  for (const bad of ['limit=0', 'limit=101', 'limit=abc', 'limit=-1', 'cursor=not-a-cursor', `cursor=${'a'.repeat(1025)}`]) {
    const res = await api('GET', `/waitlist/entries?${bad}`, { key: T.key });
    assertError(res, 400, ['validation_failed', 'invalid_cursor', 'invalid_request']);
  }
  const p = await api('GET', '/waitlist/entries?limit=1&externalReference=same', { key: T.key });
  assert.equal(p.status, 200, p.text);
  assert.equal(p.json.entries.length, 1);
  const c = p.json.nextCursor;
  assert.equal(typeof c, 'string');
  // The cursor is bound to its filters and to the tenant.
  assertError(await api('GET', `/waitlist/entries?limit=1&cursor=${encodeURIComponent(c)}`, { key: T.key }), 400, 'invalid_cursor');
  assertError(await api('GET', `/waitlist/entries?limit=1&externalReference=other&cursor=${encodeURIComponent(c)}`, { key: T.key }), 400, 'invalid_cursor');
  assertError(await api('GET', `/waitlist/entries?limit=1&externalReference=same&cursor=${encodeURIComponent(c)}`, { key: B.key }), 400, 'invalid_cursor');
  const tampered = c.slice(0, -2) + (c.endsWith('AA') ? 'BB' : 'AA');
  assertError(await api('GET', `/waitlist/entries?limit=1&externalReference=same&cursor=${encodeURIComponent(tampered)}`, { key: T.key }), 400, 'invalid_cursor');
  const n = await api('GET', `/waitlist/entries?limit=1&externalReference=same&cursor=${encodeURIComponent(c)}`, { key: T.key });
  assert.equal(n.status, 200, n.text);
  assert.equal(n.json.entries.length, 1);
  assert.notEqual(n.json.entries[0].id, p.json.entries[0].id);
});

test('a reference of 255 characters of any width is found by its exact value', async () => {
  const T = setup();
  // 255 characters each: two, three and four bytes in UTF-8.
  for (const ch of ['é', '€', '😀']) {
    const ref = ch.repeat(254) + uniq('x').slice(-1);
    const e = await mustCreate(T.key, { queueId: T.queueId, partySize: 1, fullName: 'Wide', externalReference: ref });
    assert.equal(e.externalReference, ref);
    const res = await api('GET', `/waitlist/entries?externalReference=${encodeURIComponent(ref)}`, { key: T.key });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.json.entries.map((x) => x.id), [e.id], `${ch}: found by its reference`);
    const more = await api('GET', `/waitlist/entries?externalReference=${encodeURIComponent(ref + ch)}`, { key: T.key });
    assertError(more, 400, 'validation_failed', `${ch}: 256 characters`);
  }
});

test('externalReference looks up equal references only, across the tenant', async () => {
  const ref = uniq('ord');
  const a = await mustCreate(A.key, base({ externalReference: ref }));
  await mustCreate(A.key, base({ externalReference: `${ref}-2` }));
  await mustCreate(A.key, base({ externalReference: `x${ref}` }));
  const b = await mustCreate(A.key, { queueId: A.q2, partySize: 1, fullName: 'Q2', serviceTypeId: A.s1, customData: { [A.f3]: 'o' }, externalReference: ref });
  await mustCreate(B.key, { queueId: B.queueId, partySize: 1, fullName: 'B', externalReference: ref });
  const res = await api('GET', `/waitlist/entries?externalReference=${encodeURIComponent(ref)}`, { key: A.key });
  assert.equal(res.status, 200, res.text);
  assert.deepEqual(res.json.entries.map((e) => e.id).sort(), [a.id, b.id].sort());
  assert.equal(res.json.nextCursor, null);
  const none = await api('GET', `/waitlist/entries?externalReference=${encodeURIComponent(uniq('none'))}`, { key: A.key });
  assert.equal(none.status, 200, none.text);
  assert.deepEqual(none.json.entries, []);
  assert.equal(none.json.nextCursor, null);
});

test('externalReference lookup is exact: no case, accent or trailing-space folding', async () => {
  const ref = `Ord${uniq('r').replace(/-/g, '')}`;
  const exact = await mustCreate(A.key, base({ externalReference: `${ref}-é` }));
  const upper = await mustCreate(A.key, base({ externalReference: `${ref.toUpperCase()}-é` }));
  const plain = await mustCreate(A.key, base({ externalReference: `${ref}-e` }));
  const spaced = await mustCreate(A.key, base({ externalReference: `${ref}-é ` }));
  const res = await api('GET', `/waitlist/entries?externalReference=${encodeURIComponent(`${ref}-é`)}`, { key: A.key });
  assert.equal(res.status, 200, res.text);
  const got = res.json.entries.map((e) => e.externalReference);
  assert.deepEqual(res.json.entries.map((e) => e.id), [exact.id],
    `exact lookup of "${ref}-é" also returned ${JSON.stringify(got)} (other ids: ${[upper.id, plain.id, spaced.id]})`);
});

test('a key restricted to a line lists only that line\'s entries', async () => {
  const ref = uniq('rst');
  await mustCreate(A.key, base({ externalReference: ref }));
  const inQ2 = await mustCreate(A.key, { queueId: A.q2, partySize: 1, fullName: 'Q2', serviceTypeId: A.s1, customData: { [A.f3]: 'o' }, externalReference: ref });
  const res = await api('GET', `/waitlist/entries?externalReference=${ref}`, { key: A.kq2 });
  assert.equal(res.status, 200, res.text);
  assert.deepEqual(res.json.entries.map((e) => e.id), [inQ2.id]);
  // Without a filter, every entry it sees is on q2.
  let cursor = null; let n = 0;
  do {
    const page = await api('GET', `/waitlist/entries?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, { key: A.kq2 });
    assert.equal(page.status, 200, page.text);
    for (const e of page.json.entries) assert.equal(e.queueId, A.q2);
    n += page.json.entries.length;
    cursor = page.json.nextCursor;
  } while (cursor);
  assert.ok(n >= 1);
  // Another tenant's list never shows A's entries.
  const other = await api('GET', `/waitlist/entries?externalReference=${ref}`, { key: B.key });
  assert.deepEqual(other.json.entries, []);
});

// ---- events ----

test('8 concurrent writers keep the tenant sequence contiguous', async () => {
  const T = setup();
  const made = await Promise.all(Array.from({ length: 8 }, (_, i) =>
    create(T.key, { queueId: T.queueId, partySize: 1, fullName: `Conc ${i}` })));
  for (const r of made) assert.equal(r.status, 201, r.text);
  const entries = made.map((r) => r.json.entry);
  const moved = await Promise.all(entries.map((e) => setStatus(T.key, e, 'ready')));
  for (const r of moved) assert.equal(r.status, 200, r.text);
  const edited = await Promise.all(entries.map((e) =>
    write('PATCH', `/waitlist/entries/${e.id}`, T.key, { expectedVersion: 2, partySize: 2 })));
  for (const r of edited) assert.equal(r.status, 200, r.text);
  const evs = events(T.tenantId);
  assert.equal(evs.length, 24);
  assertContiguous(evs);
  const ids = new Set(evs.map((e) => e.body.id));
  assert.equal(ids.size, 24, 'event ids are distinct');
  for (const e of entries) {
    const mine = evs.filter((x) => x.body.resourceId === e.id);
    assert.deepEqual(mine.map((x) => x.type), ['waitlist.entry.created', 'waitlist.entry.status_changed', 'waitlist.entry.updated']);
    assert.deepEqual(mine.map((x) => x.body.resourceVersion), [1, 2, 3]);
    assert.deepEqual(mine[1].body.data, { entryId: e.id, status: 'ready', previousStatus: 'waiting' });
  }
});

test('tenant A\'s events are contiguous and never carry a guest\'s name, phone or notes', async () => {
  const evs = events(A.tenantId);
  assert.ok(evs.length > 10);
  assertContiguous(evs);
  for (const e of evs) {
    for (const secret of [NAME, PHONE.slice(1), '447700900123', 'peanuts', 'window seat']) {
      assert.ok(!e.raw.includes(secret), `event ${e.seq} (${e.type}) contains ${secret}`);
    }
    assert.equal(e.body.tenantId, A.tenantId);
    assert.equal(e.body.sequence, e.seq);
  }
  assert.deepEqual(events(B.tenantId).map((e) => e.seq), events(B.tenantId).map((_, i) => i + 1));
});
