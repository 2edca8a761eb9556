// Tenant isolation: tenant B's key, with every scope, walks every route of
// lib/router.c's table against tenant A's ids (business, line, entry,
// booking, subscription, delivery).  Each answer is 404 (DECISIONS: an
// entity of another tenant is not revealed), a list shows nothing of A, a
// cursor or an Idempotency-Key of A's gives B nothing of A's, and A's data
// is unchanged.  A route added to the table without a case here fails the
// last test.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { api, sql, uniq } from './lib.mjs';
import { dayZone, iso, mustCreate, nextSlot, setup } from './util-entries.mjs';
import { waitFor } from './util-faults.mjs';

const GUEST = `Guest of A ${uniq('name')}`; // must never show up in B's answers
let A;
let B;
let server;
const T = {};
const walked = new Set(); // "METHOD pattern" of every route a case used

before(async () => {
  A = setup({ q1: { timeZone: dayZone() } });
  B = setup({ q1: { timeZone: dayZone() } });
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => { res.writeHead(200); res.end(); });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  T.url = `http://127.0.0.1:${server.address().port}/a-only`;
  const sub = await api('POST', '/webhooks/subscriptions', {
    key: A.key, idempotencyKey: uniq('sub'), body: { url: T.url, eventTypes: ['waitlist.entry.created'] },
  });
  assert.equal(sub.status, 201, sub.text);
  T.sub = sub.json.subscription.id;
  T.ref = uniq('a-ref');
  T.idem = uniq('a-idem');
  T.createBody = { queueId: A.queueId, fullName: GUEST, partySize: 1, externalReference: T.ref };
  const created = await api('POST', '/waitlist/entries', { key: A.key, idempotencyKey: T.idem, body: T.createBody });
  assert.equal(created.status, 201, created.text);
  T.entry = created.json.entry.id;
  T.booking = (await mustCreate(A.key, {
    queueId: A.queueId, fullName: GUEST, partySize: 1, isBooking: true, scheduledFor: iso(nextSlot()),
  })).id;
  // Both creations emit waitlist.entry.created: wait until both deliveries
  // are done, so that the deliverer changes nothing of A's during the tests.
  const done = await waitFor('both deliveries of A\'s subscription', 20000, () => {
    const rows = sql(`SELECT id, status FROM deliveries WHERE subscription_id='${T.sub}' ORDER BY id`);
    return rows.length === 2 && rows.every((r) => r[1] === 'succeeded') && rows;
  });
  T.delivery = done[0][0];
});

after(async () => {
  sql(`DELETE FROM deliveries WHERE subscription_id='${T.sub}'`);
  sql(`DELETE FROM webhook_subscriptions WHERE id='${T.sub}'`);
  await new Promise((resolve) => server.close(resolve));
});

// A's rows that B must not be able to change.
function snapshotA() {
  const t = A.tenantId;
  return {
    entries: sql(`SELECT id, version, status, updated_at, full_name, scheduled_for FROM entries WHERE tenant_id='${t}' ORDER BY id`),
    events: sql(`SELECT COUNT(*), MAX(seq) FROM events WHERE tenant_id='${t}'`),
    subs: sql(`SELECT id, status, key_id, secret_enc, COALESCE(previous_secret_enc, ''), high_water_seq, updated_at FROM webhook_subscriptions WHERE tenant_id='${t}'`),
    deliveries: sql(`SELECT id, status, attempt_count, manual_retry, next_attempt_at FROM deliveries WHERE tenant_id='${t}' ORDER BY id`),
  };
}

// Nothing of A's in an answer to B.
function assertNothingOfA(res, what) {
  for (const secret of [A.tenantId, GUEST, T.url, T.ref]) {
    assert.ok(!res.text.includes(secret), `${what}: the answer reveals ${secret}: ${res.text.slice(0, 300)}`);
  }
}

function assertNotFound(res, what) {
  assert.equal(res.status, 404, `${what}: ${res.status} ${res.text.slice(0, 300)}`);
  assert.equal(res.json?.code, 'not_found', `${what}: ${res.text}`);
  assertNothingOfA(res, what);
}

// B's request on route `pattern`; records the route as walked.
function asB(method, pattern, path, opts = {}) {
  walked.add(`${method} ${pattern}`);
  const write = method !== 'GET';
  return api(method, path, { key: B.key, idempotencyKey: write ? uniq('b') : undefined, ...opts });
}

test('B\'s key on A\'s ids: every id route is 404 and A\'s data does not change', async () => {
  const before = snapshotA();
  const slot = iso(nextSlot() + 15 * 60 * 1000);
  const cases = [
    ['GET', '/waitlist/businesses/{}', `/waitlist/businesses/${A.businessId}`],
    ['GET', '/waitlist/queues', `/waitlist/queues?businessId=${A.businessId}`],
    ['GET', '/waitlist/queues/{}', `/waitlist/queues/${A.queueId}`],
    ['GET', '/waitlist/queues/{}/availability', `/waitlist/queues/${A.queueId}/availability`],
    ['POST', '/waitlist/entries', '/waitlist/entries', { queueId: A.queueId, fullName: 'Intruder', partySize: 1 }],
    ['POST', '/waitlist/entries', '/waitlist/entries', { queueId: A.queueId, fullName: 'Intruder', isBooking: true, scheduledFor: slot }],
    ['GET', '/waitlist/entries/{}', `/waitlist/entries/${T.entry}`],
    ['GET', '/waitlist/entries/{}', `/waitlist/entries/${T.booking}`],
    ['PATCH', '/waitlist/entries/{}', `/waitlist/entries/${T.entry}`, { expectedVersion: 1, fullName: 'Hijacked' }],
    ['PATCH', '/waitlist/entries/{}/status', `/waitlist/entries/${T.entry}/status`, { status: 'cancelled', expectedStatus: 'waiting', expectedVersion: 1 }],
    ['POST', '/bookings/{}/reschedule', `/bookings/${T.booking}/reschedule`, { scheduledFor: slot, expectedVersion: 1 }],
    ['POST', '/bookings/{}/cancel', `/bookings/${T.booking}/cancel`, { expectedStatus: 'confirmed', expectedVersion: 1 }],
    ['GET', '/events', `/events?businessId=${A.businessId}`],
    ['GET', '/events', `/events?queueId=${A.queueId}`],
    ['GET', '/webhooks/subscriptions/{}', `/webhooks/subscriptions/${T.sub}`],
    ['DELETE', '/webhooks/subscriptions/{}', `/webhooks/subscriptions/${T.sub}`],
    ['POST', '/webhooks/subscriptions/{}/resume', `/webhooks/subscriptions/${T.sub}/resume`],
    ['POST', '/webhooks/subscriptions/{}/rotate-secret', `/webhooks/subscriptions/${T.sub}/rotate-secret`],
    ['GET', '/webhooks/subscriptions/{}/deliveries', `/webhooks/subscriptions/${T.sub}/deliveries`],
    ['POST', '/webhooks/deliveries/{}/retry', `/webhooks/deliveries/${T.delivery}/retry`],
    ['GET', '/analytics/queues/{}/summary', `/analytics/queues/${A.queueId}/summary`],
  ];
  const problems = [];
  for (const [m, pattern, path, body] of cases) {
    try {
      assertNotFound(await asB(m, pattern, path, { body }), `${m} ${path}`);
    } catch (e) {
      problems.push(e.message.split('\n')[0]);
    }
  }
  assert.deepEqual(problems, []);
  assert.deepEqual(snapshotA(), before, 'B changed A\'s data');
  // And B's own data holds nothing of A's either.
  assert.equal(sql(`SELECT COUNT(*) FROM entries WHERE tenant_id='${B.tenantId}'`)[0][0], '0');
});

test('B cannot point a subscription at A\'s businesses or lines', async () => {
  const before = snapshotA();
  const url = `http://127.0.0.1:${server.address().port}/b`;
  for (const filter of [{ businessIds: [A.businessId] }, { queueIds: [A.queueId] }, { businessIds: [B.businessId], queueIds: [A.queueId] }]) {
    const res = await asB('POST', '/webhooks/subscriptions', '/webhooks/subscriptions', { body: { url, eventTypes: ['waitlist.entry.created'], ...filter } });
    assert.ok([400, 403, 404].includes(res.status), `${JSON.stringify(filter)}: ${res.status} ${res.text}`);
    assert.deepEqual(Object.keys(res.json).sort(), ['code', 'error', 'requestId']);
  }
  assert.equal(sql(`SELECT COUNT(*) FROM webhook_subscriptions WHERE tenant_id='${B.tenantId}'`)[0][0], '0');
  assert.deepEqual(snapshotA(), before);
});

test('B\'s lists and feed show nothing of A\'s', async () => {
  const lists = [
    ['GET', '/me', '/me'],
    ['GET', '/waitlist/businesses', '/waitlist/businesses'],
    ['GET', '/waitlist/queues', `/waitlist/queues?businessId=${B.businessId}`],
    ['GET', '/waitlist/entries', '/waitlist/entries'],
    ['GET', '/waitlist/entries', `/waitlist/entries?externalReference=${encodeURIComponent(T.ref)}`],
    ['GET', '/events', '/events'],
    ['GET', '/webhooks/subscriptions', '/webhooks/subscriptions'],
  ];
  for (const [m, pattern, path] of lists) {
    const res = await asB(m, pattern, path);
    assert.equal(res.status, 200, `${path}: ${res.text}`);
    assertNothingOfA(res, path);
    for (const id of [A.businessId, A.queueId, T.entry, T.booking, T.sub]) assert.ok(!res.text.includes(id), `${path} lists ${id}`);
  }
  const entries = await asB('GET', '/waitlist/entries', `/waitlist/entries?externalReference=${encodeURIComponent(T.ref)}`);
  assert.deepEqual(entries.json.entries, []);
  const me = await asB('GET', '/me', '/me');
  assert.ok(me.text.includes(B.tenantId));
});

test('A\'s cursors are refused on B\'s key', async () => {
  // A second subscription of A's makes a second page of them.  (A has one
  // business: discovery.test.mjs takes business cursors across tenants.)
  const extra = await api('POST', '/webhooks/subscriptions', {
    key: A.key, idempotencyKey: uniq('sub'), body: { url: `${T.url}-2`, eventTypes: ['booking.created'] },
  });
  assert.equal(extra.status, 201, extra.text);
  const pages = [
    ['/waitlist/entries', '/waitlist/entries?limit=1'],
    ['/events', '/events?limit=1'],
    ['/webhooks/subscriptions', '/webhooks/subscriptions?limit=1'],
  ];
  try {
    for (const [pattern, path] of pages) {
      const a = await api('GET', path, { key: A.key });
      assert.equal(a.status, 200, a.text);
      assert.equal(typeof a.json.nextCursor, 'string', `${path}: a single page, no cursor to steal`);
      const res = await asB('GET', pattern, `${path}&cursor=${encodeURIComponent(a.json.nextCursor)}`);
      assert.equal(res.status, 400, `${path}: ${res.status} ${res.text}`);
      assert.equal(res.json.code, 'invalid_cursor');
    }
  } finally {
    const del = await api('DELETE', `/webhooks/subscriptions/${extra.json.subscription.id}`, {
      key: A.key, idempotencyKey: uniq('del'),
    });
    assert.equal(del.status, 204, del.text);
  }
});

test('A\'s Idempotency-Key replays nothing of A\'s to B', async () => {
  // The very request A made, same key, same path, same body: for B it is
  // a request of its own, for a line it cannot see.
  const res = await asB('POST', '/waitlist/entries', '/waitlist/entries', { body: T.createBody, idempotencyKey: T.idem });
  assert.equal(res.headers.get('idempotency-replayed'), null);
  assertNotFound(res, 'A\'s create replayed with B\'s key');
  // Another key A used, now sent by B for B's own line: B's own entry.
  const idem2 = uniq('a-idem');
  const a2 = await api('POST', '/waitlist/entries', { key: A.key, idempotencyKey: idem2, body: { ...T.createBody, externalReference: uniq('a-ref') } });
  assert.equal(a2.status, 201, a2.text);
  const own = await asB('POST', '/waitlist/entries', '/waitlist/entries', { body: { queueId: B.queueId, fullName: 'B guest', partySize: 1 }, idempotencyKey: idem2 });
  assert.equal(own.status, 201, own.text);
  assertNothingOfA(own, 'B\'s create under a key A used');
  assert.equal(own.headers.get('idempotency-replayed'), null);
  assert.notEqual(own.json.entry.id, T.entry);
  assert.equal(sql(`SELECT tenant_id FROM entries WHERE id='${own.json.entry.id}'`)[0][0], B.tenantId);
  // A's own retry still replays A's entry.
  const again = await api('POST', '/waitlist/entries', { key: A.key, idempotencyKey: T.idem, body: T.createBody });
  assert.equal(again.status, 201, again.text);
  assert.equal(again.headers.get('idempotency-replayed'), 'true');
  assert.equal(again.json.entry.id, T.entry);
});

test('every route of the router table was walked with another tenant\'s key', () => {
  const src = readFileSync(join(process.env.WL_REPO, 'lib', 'router.c'), 'utf8');
  const re = /\[R_\w+\]\s*=\s*\{WL_(\w+),\s*"([^"]+)",\s*\w+,\s*([\w |]+),/g;
  const routes = [];
  for (let m = re.exec(src); m; m = re.exec(src)) {
    if (!m[3].includes('F_PUBLIC')) routes.push(`${m[1]} ${m[2]}`);
  }
  assert.ok(routes.length >= 20, `only ${routes.length} routes read from lib/router.c`);
  assert.deepEqual(routes.filter((r) => !walked.has(r)), [], 'routes no cross-tenant case walked');
});
