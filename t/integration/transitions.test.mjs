// PATCH /waitlist/entries/{id}/status: the whole transition table of
// DECISIONS.md, the order of the checks, and concurrent changes.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  ALLOWED, STATUSES, assertContiguous, assertError, entryCount, events, getEntry, key, line,
  moveThrough, mustCreate, setStatus, setup, write,
} from './util-entries.mjs';

const A = setup({ queues: [line('q2')], keys: [key('kq2', { queues: ['q2'] })] });
const B = setup();

// How to reach each status from a new walk-in (waiting), by allowed moves.
const PATH = {
  waiting: [],
  ready: ['ready'],
  confirmed: ['confirmed'],
  in_service: ['in_service'],
  completed: ['in_service', 'completed'],
  cancelled: ['cancelled'],
  no_show: ['no_show'],
};

const walkIn = () => mustCreate(A.key, { queueId: A.queueId, partySize: 1, fullName: 'Transition Guest' });

for (const from of STATUSES) {
  for (const to of STATUSES) {
    const allowed = ALLOWED[from].includes(to);
    test(`${from} -> ${to} is ${allowed ? 'allowed' : '400 invalid_transition'}`, async () => {
      const e = await moveThrough(A.key, await walkIn(), PATH[from]);
      assert.equal(e.status, from);
      assert.equal(e.version, 1 + PATH[from].length);
      const before = events(A.tenantId).filter((x) => x.body.resourceId === e.id);
      const res = await setStatus(A.key, e, to);
      if (allowed) {
        assert.equal(res.status, 200, res.text);
        assert.deepEqual(Object.keys(res.json), ['entry']);
        const n = res.json.entry;
        assert.equal(n.id, e.id);
        assert.equal(n.status, to);
        assert.equal(n.version, e.version + 1);
        assert.ok(n.updatedAt >= e.updatedAt);
        assert.deepEqual(await getEntry(A.key, e.id), n);
        const after = events(A.tenantId).filter((x) => x.body.resourceId === e.id);
        assert.equal(after.length, before.length + 1, 'a status change writes one event (walk-in)');
        const ev = after.at(-1).body;
        assert.equal(ev.type, 'waitlist.entry.status_changed');
        assert.equal(ev.resourceVersion, n.version);
        assert.equal(ev.queueId, A.queueId);
        assert.deepEqual(ev.data, { entryId: e.id, status: to, previousStatus: from });
      } else {
        assertError(res, 400, 'invalid_transition');
        assert.deepEqual(await getEntry(A.key, e.id), e);
        assert.equal(events(A.tenantId).filter((x) => x.body.resourceId === e.id).length, before.length);
      }
    });
  }
}

test('the checks run in order: 404, status_conflict, version_conflict, invalid_transition', async () => {
  // 404 comes first whatever the body says.
  assertError(await write('PATCH', '/waitlist/entries/ent_nope/status', A.key,
    { status: 'ready', expectedStatus: 'completed', expectedVersion: 99 }), 404, 'not_found');
  const e = await walkIn();
  // Wrong status and wrong version: the status is reported.
  assertError(await setStatus(A.key, e, 'ready', { expectedStatus: 'ready', expectedVersion: 5 }), 409, 'status_conflict');
  // Right status, wrong version.
  assertError(await setStatus(A.key, e, 'ready', { expectedVersion: 2 }), 409, 'version_conflict');
  // Both right but an invalid move (also a stale version is reported before an invalid move).
  assertError(await setStatus(A.key, e, 'completed', { expectedVersion: 3 }), 409, 'version_conflict');
  assertError(await setStatus(A.key, e, 'completed', { expectedStatus: 'in_service' }), 409, 'status_conflict');
  assertError(await setStatus(A.key, e, 'completed'), 400, 'invalid_transition');
  assertError(await setStatus(A.key, e, 'waiting'), 400, 'invalid_transition');
  assert.deepEqual(await getEntry(A.key, e.id), e);
  // A terminal entry: conflicts still come before the transition check.
  const done = await moveThrough(A.key, await walkIn(), ['cancelled']);
  assertError(await setStatus(A.key, done, 'waiting', { expectedStatus: 'waiting' }), 409, 'status_conflict');
  assertError(await setStatus(A.key, done, 'waiting', { expectedVersion: 1 }), 409, 'version_conflict');
  assertError(await setStatus(A.key, done, 'waiting'), 400, 'invalid_transition');
});

test('a stale version after a real change is a version_conflict', async () => {
  const e = await walkIn();
  const r = await moveThrough(A.key, e, ['ready', 'waiting']);
  assert.equal(r.status, 'waiting');
  assert.equal(r.version, 3);
  // The caller read version 1 with status waiting: the status matches, the version does not.
  assertError(await setStatus(A.key, e, 'ready'), 409, 'version_conflict');
  assert.equal((await getEntry(A.key, e.id)).version, 3);
});

const BAD_BODIES = {
  'without status': { expectedStatus: 'waiting', expectedVersion: 1 },
  'without expectedStatus': { status: 'ready', expectedVersion: 1 },
  'without expectedVersion': { status: 'ready', expectedStatus: 'waiting' },
  'with an unknown status': { status: 'seated', expectedStatus: 'waiting', expectedVersion: 1 },
  'with an unknown expectedStatus': { status: 'ready', expectedStatus: 'queued', expectedVersion: 1 },
  'with a status in the wrong case': { status: 'READY', expectedStatus: 'waiting', expectedVersion: 1 },
  'with expectedVersion as a string': { status: 'ready', expectedStatus: 'waiting', expectedVersion: '1' },
  'with a fractional expectedVersion': { status: 'ready', expectedStatus: 'waiting', expectedVersion: 1.5 },
  'with a null status': { status: null, expectedStatus: 'waiting', expectedVersion: 1 },
  'with an extra field': { status: 'ready', expectedStatus: 'waiting', expectedVersion: 1, reason: 'x' },
  'with a guest field': { status: 'ready', expectedStatus: 'waiting', expectedVersion: 1, fullName: 'x' },
};

for (const [name, payload] of Object.entries(BAD_BODIES)) {
  test(`a status change ${name} is 400 and changes nothing`, async () => {
    const e = await walkIn();
    assertError(await write('PATCH', `/waitlist/entries/${e.id}/status`, A.key, payload), 400, ['validation_failed', 'invalid_request']);
    assert.deepEqual(await getEntry(A.key, e.id), e);
  });
}

test('a status change of another tenant\'s entry or outside the key is 404', async () => {
  const other = await mustCreate(B.key, { queueId: B.queueId, partySize: 1, fullName: 'B guest' });
  assertError(await setStatus(A.key, other, 'ready'), 404, 'not_found');
  const mine = await walkIn();
  assertError(await setStatus(A.kq2, mine, 'ready'), 404, 'not_found');
  assert.equal((await getEntry(B.key, other.id)).status, 'waiting');
  assert.equal((await getEntry(A.key, mine.id)).status, 'waiting');
  // The restricted key can move entries of its own line.
  const q2 = await mustCreate(A.key, { queueId: A.q2, partySize: 1, fullName: 'On q2' });
  const ok = await setStatus(A.kq2, q2, 'ready');
  assert.equal(ok.status, 200, ok.text);
});

test('10 concurrent status changes with the same expectedVersion: exactly one wins', async () => {
  const e = await walkIn();
  const targets = ['ready', 'confirmed', 'in_service', 'cancelled', 'no_show'];
  const results = await Promise.all(Array.from({ length: 10 }, (_, i) => setStatus(A.key, e, targets[i % 5])));
  const ok = results.filter((r) => r.status === 200);
  assert.equal(ok.length, 1, results.map((r) => `${r.status} ${r.json?.code ?? ''}`).join(', '));
  for (const r of results) {
    if (r.status !== 200) assertError(r, 409, ['status_conflict', 'version_conflict']);
  }
  const now = await getEntry(A.key, e.id);
  assert.equal(now.version, 2);
  assert.equal(now.status, ok[0].json.entry.status);
  const evs = events(A.tenantId).filter((x) => x.body.resourceId === e.id);
  assert.deepEqual(evs.map((x) => x.type), ['waitlist.entry.created', 'waitlist.entry.status_changed']);
});

test('10 concurrent identical moves with distinct keys: exactly one wins', async () => {
  const e = await walkIn();
  const results = await Promise.all(Array.from({ length: 10 }, () => setStatus(A.key, e, 'ready')));
  assert.equal(results.filter((r) => r.status === 200).length, 1, results.map((r) => r.status).join(','));
  for (const r of results) if (r.status !== 200) assertError(r, 409, ['status_conflict', 'version_conflict']);
  assert.equal((await getEntry(A.key, e.id)).version, 2);
});

test('a long walk through the table bumps the version by one per change', async () => {
  const e = await walkIn();
  const steps = ['ready', 'confirmed', 'waiting', 'in_service', 'waiting', 'ready', 'in_service', 'completed'];
  const end = await moveThrough(A.key, e, steps);
  assert.equal(end.version, 1 + steps.length);
  const evs = events(A.tenantId).filter((x) => x.body.resourceId === e.id);
  assert.deepEqual(evs.map((x) => x.body.resourceVersion), Array.from({ length: steps.length + 1 }, (_, i) => i + 1));
  const changes = evs.slice(1).map((x) => [x.body.data.previousStatus, x.body.data.status]);
  const expected = steps.map((s, i) => [i === 0 ? 'waiting' : steps[i - 1], s]);
  assert.deepEqual(changes, expected);
});

test('the tenant\'s event sequence stays contiguous across every change here', async () => {
  const evs = events(A.tenantId);
  assertContiguous(evs);
  assert.ok(evs.length > 100);
  assert.equal(entryCount(A.tenantId), new Set(evs.filter((e) => e.type === 'waitlist.entry.created').map((e) => e.body.resourceId)).size);
  for (const e of evs) assert.ok(!e.raw.includes('Transition Guest'), `event ${e.seq} carries the guest name`);
});
