// Webhooks end to end: the subscription API (DECISIONS "Webhooks"), and
// delivery by the running deliverer to a receiver inside this test (SPEC
// "Webhook delivery", Authentication rule 9).  Every delivery is verified
// with the npm package standardwebhooks and compared byte for byte with the
// stored event and the feed.  The local stack allows loopback over http and
// retries after 1 s (cap 10 s).

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createServer } from 'node:net';
import { Webhook } from 'standardwebhooks';
import {
  ctl, running, sleep, sql, sqlSession, uniq,
} from './lib.mjs';
import {
  ALL_SCOPES, ATTEMPT_KEYS, DELIVERY_KEYS, SECRET_RE, SUB_KEYS,
  SUB_KEYS_WITH_SECRET, TS_RE, assertError, attemptLines, checkAgainstFeed, checkDelivery,
  contractProblems, createSub, dropSubs, eventsOf, getSub, headerTs, listDeliveries,
  makeKey, mustCreateSub, newTenant, newTenantTwoBusinesses, setStatus,
  startReceiver, verifyWith, waitUntil, walkIn, wh,
} from './util-webhooks.mjs';

const CREATED = 'waitlist.entry.created';
const STATUS_CHANGED = 'waitlist.entry.status_changed';

let rx;
before(async () => {
  rx = await startReceiver();
});
after(async () => {
  dropSubs();
  await rx.close();
});

// The id of the entry's event of the given type.
function eventId(entry, type = CREATED) {
  const ev = eventsOf(entry.id).find((e) => e.type === type);
  assert.ok(ev, `no ${type} event for ${entry.id}`);
  return ev.id;
}

const ids = (reqs) => reqs.map((r) => r.headers['webhook-id']);

async function waitSub(key, id, status, reason, timeoutMs = 10000) {
  let last;
  await waitUntil(async () => {
    last = await getSub(key, id);
    return last.status === status && last.statusReason === reason;
  }, timeoutMs, `subscription ${id} to become ${status}/${reason} (is ${last && last.status}/${last && last.statusReason})`);
  return last;
}

async function waitDelivery(key, subId, pred, what, timeoutMs = 15000) {
  let found;
  await waitUntil(async () => {
    const list = await listDeliveries(key, subId);
    found = list.find(pred);
    return found;
  }, timeoutMs, what);
  return found;
}

function post(key, path, body) {
  return wh('POST', path, { key, body, idempotencyKey: uniq('idem') });
}

// ---------------------------------------------------------------------

describe('subscription API', () => {
  test('create answers 201 with exactly the documented fields and the secret, shown this once', async () => {
    const t = newTenant();
    const url = rx.url(uniq('api'));
    const res = await createSub(t.k1, {
      url, eventTypes: [CREATED, STATUS_CHANGED], description: 'CRM sync',
    });
    assert.equal(res.status, 201, res.text);
    const s = res.json.subscription;
    assert.deepEqual(Object.keys(res.json), ['subscription']);
    assert.deepEqual(Object.keys(s).sort(), SUB_KEYS_WITH_SECRET);
    assert.match(s.id, /^whs_/);
    assert.equal(s.url, url);
    assert.deepEqual(s.eventTypes, [CREATED, STATUS_CHANGED]);
    assert.deepEqual(s.businessIds, []);
    assert.deepEqual(s.queueIds, []);
    assert.equal(s.description, 'CRM sync');
    assert.equal(s.status, 'active');
    assert.equal(s.statusReason, null);
    assert.match(s.createdAt, TS_RE);
    assert.match(s.updatedAt, TS_RE);
    assert.match(s.secret, SECRET_RE);
    assert.equal(Buffer.from(s.secret.slice(6), 'base64').length, 32);

    const got = await wh('GET', `/webhooks/subscriptions/${s.id}`, { key: t.k1 });
    assert.equal(got.status, 200, got.text);
    assert.deepEqual(Object.keys(got.json), ['subscription']);
    assert.deepEqual(Object.keys(got.json.subscription).sort(), SUB_KEYS);
    const { secret, ...shown } = s;
    assert.deepEqual(got.json.subscription, shown);
    assert.ok(!got.text.includes(secret.slice(6)), 'GET shows the secret');

    const list = await wh('GET', '/webhooks/subscriptions', { key: t.k1 });
    assert.equal(list.status, 200, list.text);
    assert.deepEqual(Object.keys(list.json).sort(), ['nextCursor', 'subscriptions']);
    assert.equal(list.json.nextCursor, null);
    assert.deepEqual(list.json.subscriptions, [shown]);
    assert.ok(!list.text.includes(secret.slice(6)), 'the list shows the secret');

    // Not kept in the clear either.
    const [[enc]] = sql(`SELECT secret_enc FROM webhook_subscriptions WHERE id = '${s.id}'`);
    assert.ok(!enc.includes(secret.slice(6)), 'the secret is stored in the clear');

    // Without a description: null.
    const plain = await mustCreateSub(t.k1, { url, eventTypes: [CREATED] });
    assert.equal(plain.description, null);
    assert.notEqual(plain.secret, secret);
  });

  test('the same Idempotency-Key and body replay the creation; another body is a conflict', async () => {
    const t = newTenant();
    const body = { url: rx.url(uniq('idem')), eventTypes: [CREATED] };
    const idempotencyKey = uniq('idem');
    const first = await createSub(t.k1, body, { idempotencyKey });
    assert.equal(first.status, 201, first.text);
    const again = await createSub(t.k1, body, { idempotencyKey });
    assert.equal(again.status, 201, again.text);
    assert.equal(again.headers.get('idempotency-replayed'), 'true');
    assert.equal(again.json.subscription.id, first.json.subscription.id);
    const other = await createSub(t.k1, { ...body, description: 'other' }, { idempotencyKey });
    assertError(other, 409, 'idempotency_conflict');
    const list = await wh('GET', '/webhooks/subscriptions', { key: t.k1 });
    assert.deepEqual(list.json.subscriptions.map((s) => s.id), [first.json.subscription.id]);
  });

  test('the list pages with limit and cursor', async () => {
    const t = newTenant();
    const made = [];
    for (let i = 0; i < 3; i += 1) {
      made.push((await mustCreateSub(t.k1, { url: rx.url(uniq('page')), eventTypes: [CREATED] })).id);
    }
    const p1 = await wh('GET', '/webhooks/subscriptions?limit=2', { key: t.k1 });
    assert.equal(p1.status, 200, p1.text);
    assert.equal(p1.json.subscriptions.length, 2);
    assert.equal(typeof p1.json.nextCursor, 'string');
    const p2 = await wh('GET', `/webhooks/subscriptions?limit=2&cursor=${encodeURIComponent(p1.json.nextCursor)}`, { key: t.k1 });
    assert.equal(p2.status, 200, p2.text);
    assert.equal(p2.json.subscriptions.length, 1);
    assert.equal(p2.json.nextCursor, null);
    const seen = [...p1.json.subscriptions, ...p2.json.subscriptions].map((s) => s.id);
    assert.deepEqual([...seen].sort(), [...made].sort());
    const bad = await wh('GET', '/webhooks/subscriptions?cursor=garbage', { key: t.k1 });
    assertError(bad, 400, 'invalid_cursor');
  });

  test('delete answers 204; afterwards the subscription is 404', async () => {
    const t = newTenant();
    const s = await mustCreateSub(t.k1, { url: rx.url(uniq('del')), eventTypes: [CREATED] });
    const del = await wh('DELETE', `/webhooks/subscriptions/${s.id}`, { key: t.k1, idempotencyKey: uniq('idem') });
    assert.equal(del.status, 204, del.text);
    assert.equal(del.text, '');
    assertError(await wh('GET', `/webhooks/subscriptions/${s.id}`, { key: t.k1 }), 404, 'not_found');
    assertError(await wh('GET', `/webhooks/subscriptions/${s.id}/deliveries`, { key: t.k1 }), 404, 'not_found');
    assertError(await wh('DELETE', `/webhooks/subscriptions/${s.id}`, { key: t.k1, idempotencyKey: uniq('idem') }), 404, 'not_found');
    const list = await wh('GET', '/webhooks/subscriptions', { key: t.k1 });
    assert.deepEqual(list.json.subscriptions, []);
  });

  test('DELETEs of one subscription at once: one 204, the others 404', async () => {
    const t = newTenant();
    for (let round = 0; round < 3; round++) {
      const s = await mustCreateSub(t.k1, { url: rx.url(uniq('delrace')), eventTypes: [CREATED] });
      const answers = await Promise.all(Array.from({ length: 10 }, () =>
        wh('DELETE', `/webhooks/subscriptions/${s.id}`, { key: t.k1, idempotencyKey: uniq('idem') })));
      assert.deepEqual(answers.map((a) => a.status).sort(), [204, ...Array(9).fill(404)], `round ${round}`);
      for (const a of answers) if (a.status !== 204) assertError(a, 404, 'not_found');
    }
  });

  test('reads need webhooks:read, changes need webhooks:write (403 insufficient_scope)', async () => {
    const t = newTenant();
    const s = await mustCreateSub(t.k1, { url: rx.url(uniq('scope')), eventTypes: [CREATED] });
    const kRead = makeKey(t.t1, ['webhooks:read', 'events:read']).key;
    const kWrite = makeKey(t.t1, ['webhooks:write', 'events:read']).key;
    const kNone = makeKey(t.t1, ['waitlist:read', 'events:read']).key;
    const body = { url: rx.url(uniq('scope')), eventTypes: [CREATED] };

    // webhooks:read: reads only.
    assert.equal((await wh('GET', `/webhooks/subscriptions/${s.id}`, { key: kRead })).status, 200);
    assert.equal((await wh('GET', '/webhooks/subscriptions', { key: kRead })).status, 200);
    assert.equal((await wh('GET', `/webhooks/subscriptions/${s.id}/deliveries`, { key: kRead })).status, 200);
    assertError(await createSub(kRead, body), 403, 'insufficient_scope');
    assertError(await wh('DELETE', `/webhooks/subscriptions/${s.id}`, { key: kRead, idempotencyKey: uniq('idem') }), 403, 'insufficient_scope');
    assertError(await post(kRead, `/webhooks/subscriptions/${s.id}/rotate-secret`), 403, 'insufficient_scope');
    assertError(await post(kRead, `/webhooks/subscriptions/${s.id}/resume`), 403, 'insufficient_scope');

    // webhooks:write: changes only.
    assertError(await wh('GET', `/webhooks/subscriptions/${s.id}`, { key: kWrite }), 403, 'insufficient_scope');
    assertError(await wh('GET', '/webhooks/subscriptions', { key: kWrite }), 403, 'insufficient_scope');
    assertError(await wh('GET', `/webhooks/subscriptions/${s.id}/deliveries`, { key: kWrite }), 403, 'insufficient_scope');
    assert.equal((await createSub(kWrite, body)).status, 201);

    // neither
    assertError(await wh('GET', '/webhooks/subscriptions', { key: kNone }), 403, 'insufficient_scope');
    assertError(await createSub(kNone, body), 403, 'insufficient_scope');

    // The subscription is untouched by the refused changes.
    const still = await getSub(t.k1, s.id);
    assert.equal(still.status, 'active');
    assert.equal(still.updatedAt, s.updatedAt);
  });

  test('a key without events:read cannot subscribe (403)', async () => {
    const t = newTenant();
    const k = makeKey(t.t1, ['webhooks:read', 'webhooks:write', 'waitlist:read']).key;
    assertError(await createSub(k, { url: rx.url(uniq('noev')), eventTypes: [CREATED] }), 403, 'insufficient_scope');
    const list = await wh('GET', '/webhooks/subscriptions', { key: t.k1 });
    assert.deepEqual(list.json.subscriptions, []);
  });

  test('filters must lie within the key\'s restrictions (403 resource_forbidden); restricted keys see only covered subscriptions', async () => {
    const t = newTenantTwoBusinesses();
    const kB1 = makeKey(t.t1, ALL_SCOPES, { businesses: [t.b1] }).key;
    const url = rx.url(uniq('restr'));
    assertError(await createSub(kB1, { url, eventTypes: [CREATED], businessIds: [t.b2] }), 403, 'resource_forbidden');
    assertError(await createSub(kB1, { url, eventTypes: [CREATED], businessIds: [t.b1, t.b2] }), 403, 'resource_forbidden');

    const own = await mustCreateSub(kB1, { url, eventTypes: [CREATED], businessIds: [t.b1] });
    assert.deepEqual(own.businessIds, [t.b1]);
    // Without filters, a restricted key's subscription stays inside them.
    const implicit = await mustCreateSub(kB1, { url, eventTypes: [CREATED] });
    assert.deepEqual(implicit.businessIds, [t.b1]);

    // A tenant-wide subscription is outside kB1's restrictions: not shown.
    const wide = await mustCreateSub(t.k1, { url, eventTypes: [CREATED] });
    assertError(await wh('GET', `/webhooks/subscriptions/${wide.id}`, { key: kB1 }), 404, 'not_found');
    assertError(await wh('DELETE', `/webhooks/subscriptions/${wide.id}`, { key: kB1, idempotencyKey: uniq('idem') }), 404, 'not_found');
    assertError(await wh('GET', `/webhooks/subscriptions/${wide.id}/deliveries`, { key: kB1 }), 404, 'not_found');
    const list = await wh('GET', '/webhooks/subscriptions', { key: kB1 });
    assert.equal(list.status, 200, list.text);
    assert.deepEqual(list.json.subscriptions.map((s) => s.id).sort(), [own.id, implicit.id].sort());
    // The unrestricted key sees all three.
    const all = await wh('GET', '/webhooks/subscriptions', { key: t.k1 });
    assert.equal(all.json.subscriptions.length, 3);

    // Another tenant's subscription does not exist for this tenant.
    const other = newTenant();
    const foreign = await mustCreateSub(other.k1, { url, eventTypes: [CREATED] });
    assertError(await wh('GET', `/webhooks/subscriptions/${foreign.id}`, { key: t.k1 }), 404, 'not_found');
    assertError(await post(t.k1, `/webhooks/subscriptions/${foreign.id}/rotate-secret`), 404, 'not_found');
  });

  test('a business-restricted key sees a subscription filtered to lines of its businesses only', async () => {
    const t = newTenantTwoBusinesses();
    const kB1 = makeKey(t.t1, ALL_SCOPES, { businesses: [t.b1] }).key;
    const url = rx.url(uniq('restrline'));
    const inside = await mustCreateSub(t.k1, { url, eventTypes: [CREATED], queueIds: [t.q1] });
    assert.deepEqual(inside.businessIds, []);
    const outside = await mustCreateSub(t.k1, { url, eventTypes: [CREATED], queueIds: [t.q2] });
    const got = await wh('GET', `/webhooks/subscriptions/${inside.id}`, { key: kB1 });
    assert.equal(got.status, 200, got.text);
    assert.equal(got.json.subscription.id, inside.id);
    const dl = await wh('GET', `/webhooks/subscriptions/${inside.id}/deliveries`, { key: kB1 });
    assert.equal(dl.status, 200, dl.text);
    const list = await wh('GET', '/webhooks/subscriptions', { key: kB1 });
    assert.deepEqual(list.json.subscriptions.map((x) => x.id), [inside.id]);
    assertError(await wh('GET', `/webhooks/subscriptions/${outside.id}`, { key: kB1 }), 404, 'not_found');
    const resumed = await post(kB1, `/webhooks/subscriptions/${inside.id}/resume`);
    assert.equal(resumed.status, 200, resumed.text);
  });

  test('a restricted key\'s pages hold only what it sees and are never empty before the end', async () => {
    const t = newTenantTwoBusinesses();
    const kB1 = makeKey(t.t1, ALL_SCOPES, { businesses: [t.b1] }).key;
    const url = rx.url(uniq('restrpage'));
    const seen = [];
    for (let i = 0; i < 2; i += 1) {
      await mustCreateSub(t.k1, { url, eventTypes: [CREATED] }); // tenant-wide: not kB1's
      seen.push((await mustCreateSub(kB1, { url, eventTypes: [CREATED] })).id);
    }
    await mustCreateSub(t.k1, { url, eventTypes: [CREATED] });
    const pages = [];
    let cursor = null;
    do {
      const q = cursor ? `&cursor=${encodeURIComponent(cursor)}` : '';
      const res = await wh('GET', `/webhooks/subscriptions?limit=1${q}`, { key: kB1 });
      assert.equal(res.status, 200, res.text);
      pages.push(res.json.subscriptions.map((x) => x.id));
      cursor = res.json.nextCursor;
    } while (cursor && pages.length < 10);
    assert.deepEqual(pages, seen.map((id) => [id]));
  });

  test('a line filter outside a business-restricted key\'s businesses is 403 resource_forbidden', async () => {
    // Like GET /events?queueId= (DECISIONS "Errors": a list filtered to a
    // line outside the restrictions is 403 resource_forbidden).
    const t = newTenantTwoBusinesses();
    const kB1 = makeKey(t.t1, ALL_SCOPES, { businesses: [t.b1] }).key;
    const url = rx.url(uniq('restrq'));
    const feed = await wh('GET', `/events?queueId=${t.q2}`, { key: kB1 });
    assertError(feed, 403, 'resource_forbidden');
    assertError(await createSub(kB1, { url, eventTypes: [CREATED], queueIds: [t.q2] }), 403, 'resource_forbidden');
    assertError(await createSub(kB1, { url, eventTypes: [CREATED], businessIds: [t.b1], queueIds: [t.q2] }), 403, 'resource_forbidden');
    const list = await wh('GET', '/webhooks/subscriptions', { key: t.k1 });
    assert.deepEqual(list.json.subscriptions, []);
  });

  test('a business filter outside a line-restricted key\'s lines is 403 resource_forbidden', async () => {
    const t = newTenantTwoBusinesses();
    const kQ1 = makeKey(t.t1, ALL_SCOPES, { queues: [t.q1] }).key;
    const url = rx.url(uniq('restrb'));
    assertError(await wh('GET', `/events?businessId=${t.b2}`, { key: kQ1 }), 403, 'resource_forbidden');
    assertError(await createSub(kQ1, { url, eventTypes: [CREATED], businessIds: [t.b2] }), 403, 'resource_forbidden');
    assertError(await createSub(kQ1, { url, eventTypes: [CREATED], businessIds: [t.b2], queueIds: [t.q1] }), 403, 'resource_forbidden');
    // Its own line's business is within them.
    const ok = await createSub(kQ1, { url, eventTypes: [CREATED], businessIds: [t.b1] });
    assert.equal(ok.status, 201, ok.text);
    assert.deepEqual(ok.json.subscription.queueIds, [t.q1]);
  });

  test('a line filter outside the business filter is 400 validation_failed, and hidden from keys of that business', async () => {
    const t = newTenantTwoBusinesses();
    const other = (await wh('GET', `/waitlist/queues?businessId=${t.b2}&limit=100`, { key: t.k1 })).json.queues[0].id;
    const url = rx.url(uniq('mismatch'));
    const bad = await createSub(t.k1, { url, eventTypes: [CREATED], businessIds: [t.b1], queueIds: [t.q1, other] });
    assertError(bad, 400, 'validation_failed');
    assert.match(bad.json.error, new RegExp(`^queueIds: ${other} `));
    const both = await mustCreateSub(t.k1, { url, eventTypes: [CREATED], businessIds: [t.b1, t.b2], queueIds: [t.q1, other] });
    assert.deepEqual(both.queueIds, [t.q1, other]);
    const kB1 = makeKey(t.t1, ALL_SCOPES, { businesses: [t.b1] }).key;
    const seen = await wh('GET', '/webhooks/subscriptions', { key: kB1 });
    assert.deepEqual(seen.json.subscriptions, [], 'nothing names a line of b2 to a key of b1');
  });

  test('an unknown id of 160 four-byte characters is quoted whole in the 400', async () => {
    const t = newTenant();
    const id = '\u{1F600}'.repeat(160);
    for (const field of ['businessIds', 'queueIds']) {
      const res = await createSub(t.k1, { url: rx.url(uniq('longid')), eventTypes: [CREATED], [field]: [id] });
      assertError(res, 400, 'validation_failed');
      assert.ok(res.json.error.startsWith(`${field}: ${id} is not`), res.json.error.slice(0, 40));
    }
  });

  test('a repeated business or line id counts once; more than 100 is 400 validation_failed', async () => {
    const t = newTenant();
    const url = rx.url(uniq('dups'));
    const s = await mustCreateSub(t.k1, { url, eventTypes: [CREATED, CREATED], businessIds: [t.b1, t.b1], queueIds: [t.q1, t.q1, t.q1] });
    assert.deepEqual([s.eventTypes, s.businessIds, s.queueIds], [[CREATED], [t.b1], [t.q1]]);
    const many = Array.from({ length: 101 }, (_, i) => `biz_${i}`);
    assertError(await createSub(t.k1, { url, eventTypes: [CREATED], businessIds: many }), 400, 'validation_failed');
    assertError(await createSub(t.k1, { url, eventTypes: [CREATED], queueIds: many }), 400, 'validation_failed');
  });

  test('unknown event types and malformed bodies are 400 validation_failed', async () => {
    const t = newTenant();
    const url = rx.url(uniq('val'));
    assertError(await createSub(t.k1, { url, eventTypes: ['waitlist.entry.exploded'] }), 400, 'validation_failed');
    assertError(await createSub(t.k1, { url, eventTypes: [CREATED, 'nope'] }), 400, 'validation_failed');
    assertError(await createSub(t.k1, { url, eventTypes: [] }), 400, 'validation_failed');
    assertError(await createSub(t.k1, { url, eventTypes: CREATED }), 400, 'validation_failed');
    assertError(await createSub(t.k1, { url }), 400, 'validation_failed');
    assertError(await createSub(t.k1, { eventTypes: [CREATED] }), 400, 'validation_failed');
    assertError(await createSub(t.k1, { url, eventTypes: [CREATED], businessIds: 'x' }), 400, 'validation_failed');
    const extra = await createSub(t.k1, { url, eventTypes: [CREATED], secret: 'whsec_mine' });
    assertError(extra, 400);
    const list = await wh('GET', '/webhooks/subscriptions', { key: t.k1 });
    assert.deepEqual(list.json.subscriptions, []);
  });

  test('destinations outside the policy are 400 destination_not_allowed', async () => {
    const t = newTenant({ zapier: true });
    const port = rx.port;
    const refused = [
      ['https://example.com/hook', /example\.com is not an allowed webhook/], // not in allowed_hosts
      ['http://10.0.0.5/x', /10\.0\.0\.5 is not an allowed webhook/], // not in allowed_hosts either
      [`http://user:pw@127.0.0.1:${port}/hook/creds`, /./], // credentials
      [`ftp://127.0.0.1:${port}/hook/ftp`, /./], // not http(s)
      ['http://127.0.0.1:0/hook/zero', /port must be 1 to 65535/], // nothing listens on port 0
      ['http://127.0.0.1:00/hook/zero', /port must be 1 to 65535/],
    ];
    for (const [url, why] of refused) {
      const res = await createSub(t.k1, { url, eventTypes: [CREATED] });
      assertError(res, 400, 'destination_not_allowed');
      assert.match(res.json.error, why, url);
    }
    assertError(await createSub(t.k1, { url: 'not a url', eventTypes: [CREATED] }), 400);
    // A Zapier connection may only use Zapier's callback hosts.
    const zap = makeKey(t.t1, ALL_SCOPES, { type: 'zapier' }).key;
    assertError(await createSub(zap, { url: rx.url(uniq('zap')), eventTypes: [CREATED] }), 400, 'destination_not_allowed');
    assertError(await createSub(zap, { url: 'https://example.com/hook', eventTypes: [CREATED] }), 400, 'destination_not_allowed');
    const list = await wh('GET', '/webhooks/subscriptions', { key: t.k1 });
    assert.deepEqual(list.json.subscriptions, []);
    // The same key type api to the receiver is fine.
    const ok = await mustCreateSub(t.k1, { url: rx.url(uniq('ok')), eventTypes: [CREATED] });
    // Resuming binds it to the calling key: a Zapier key may not take it
    // over, and it stays bound to the key it had.
    const boundTo = () => sql(`SELECT key_id FROM webhook_subscriptions WHERE id = '${ok.id}'`)[0][0];
    const before = boundTo();
    const resumed = await post(zap, `/webhooks/subscriptions/${ok.id}/resume`);
    assertError(resumed, 400, 'destination_not_allowed');
    assert.equal((await getSub(t.k1, ok.id)).status, 'active');
    assert.equal(boundTo(), before, 'rebound to the Zapier key');
    const again = await post(t.k1, `/webhooks/subscriptions/${ok.id}/resume`);
    assert.equal(again.status, 200, again.text);
  });

  test('limits.webhookSubscriptions caps the tenant\'s subscriptions (409 limit_reached)', async () => {
    const t = newTenant({ limits: { webhookSubscriptions: 2 } });
    const k2 = makeKey(t.t1, ALL_SCOPES).key;
    const body = () => ({ url: rx.url(uniq('lim')), eventTypes: [CREATED] });
    const a = await mustCreateSub(t.k1, body());
    await mustCreateSub(k2, body());
    // Per tenant, whichever key asks.
    assertError(await createSub(t.k1, body()), 409, 'limit_reached');
    assertError(await createSub(k2, body()), 409, 'limit_reached');
    const del = await wh('DELETE', `/webhooks/subscriptions/${a.id}`, { key: t.k1, idempotencyKey: uniq('idem') });
    assert.equal(del.status, 204);
    await mustCreateSub(t.k1, body());
  });

  test('every change needs an Idempotency-Key (400 idempotency_key_required)', async () => {
    const t = newTenant();
    const s = await mustCreateSub(t.k1, { url: rx.url(uniq('idk')), eventTypes: [CREATED] });
    const body = { url: rx.url(uniq('idk')), eventTypes: [CREATED] };
    assertError(await wh('POST', '/webhooks/subscriptions', { key: t.k1, body }), 400, 'idempotency_key_required');
    assertError(await wh('DELETE', `/webhooks/subscriptions/${s.id}`, { key: t.k1 }), 400, 'idempotency_key_required');
    assertError(await wh('POST', `/webhooks/subscriptions/${s.id}/rotate-secret`, { key: t.k1 }), 400, 'idempotency_key_required');
    assertError(await wh('POST', `/webhooks/subscriptions/${s.id}/resume`, { key: t.k1 }), 400, 'idempotency_key_required');
    const list = await wh('GET', '/webhooks/subscriptions', { key: t.k1 });
    assert.deepEqual(list.json.subscriptions.map((x) => x.id), [s.id]);
  });
});

// ---------------------------------------------------------------------

describe('delivery', () => {
  test('an event is delivered once, signed, with the feed\'s exact body; its record is redacted', async () => {
    const t = newTenant();
    const url = rx.url(uniq('deliver'));
    await walkIn(t.k1, t.q1); // before the subscription: never sent to it
    const s = await mustCreateSub(t.k1, { url, eventTypes: [CREATED] });
    const entry = await walkIn(t.k1, t.q1);
    const evId = eventId(entry);
    const [req] = await rx.waitFor(url, 1, 10000);
    assert.equal(req.headers['webhook-id'], evId);
    const payload = checkDelivery(s.secret, req, { type: CREATED });
    assert.equal(payload.resourceId, entry.id);
    assert.equal(req.headers['webhook-signature'].split(' ').length, 1, 'one signature without rotation');
    await checkAgainstFeed(t.k1, req);
    // Another secret does not verify it.
    const stranger = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
    assert.throws(() => verifyWith(stranger, req));

    const d = await waitDelivery(t.k1, s.id, (x) => x.eventId === evId && x.status === 'succeeded', 'the delivery record to succeed');
    const list = await wh('GET', `/webhooks/subscriptions/${s.id}/deliveries`, { key: t.k1 });
    assert.deepEqual(Object.keys(list.json).sort(), ['deliveries', 'nextCursor']);
    assert.equal(list.json.deliveries.length, 1);
    assert.deepEqual(Object.keys(d).sort(), DELIVERY_KEYS);
    assert.match(d.id, /^dlv_/);
    assert.equal(d.subscriptionId, s.id);
    assert.equal(d.eventType, CREATED);
    assert.equal(d.attemptCount, 1);
    assert.equal(d.nextAttemptAt, null);
    assert.match(d.lastAttemptAt, TS_RE);
    assert.match(d.createdAt, TS_RE);
    assert.equal(d.attempts.length, 1);
    assert.deepEqual(Object.keys(d.attempts[0]).sort(), ATTEMPT_KEYS);
    assert.match(d.attempts[0].attemptedAt, TS_RE);
    assert.equal(d.attempts[0].responseStatus, 200);
    assert.equal(d.attempts[0].errorClass, null);
    assert.ok(Number.isInteger(d.attempts[0].durationMs) && d.attempts[0].durationMs >= 0);
    // Redacted: nothing of the payload, headers or response.
    assert.ok(!list.text.includes(entry.id), 'delivery record shows the event body');
    for (const word of ['payload', 'headers', 'body', 'data', 'signature', 'secret', 'responseBody']) {
      assert.ok(!list.text.includes(`"${word}"`), `delivery record shows ${word}`);
    }

    // The status filter.
    const ok = await wh('GET', `/webhooks/subscriptions/${s.id}/deliveries?status=succeeded`, { key: t.k1 });
    assert.deepEqual(ok.json.deliveries.map((x) => x.id), [d.id]);
    const pending = await wh('GET', `/webhooks/subscriptions/${s.id}/deliveries?status=pending`, { key: t.k1 });
    assert.deepEqual(pending.json.deliveries, []);
    assertError(await wh('GET', `/webhooks/subscriptions/${s.id}/deliveries?status=bogus`, { key: t.k1 }), 400, 'validation_failed');

    // Exactly once (no second attempt after a 200).
    await sleep(1500);
    assert.equal(rx.at(url).length, 1);
  });

  test('only the subscribed event types, businesses and lines are delivered', async () => {
    const t = newTenantTwoBusinesses();
    const urlA = rx.url(uniq('filterA'));
    const urlB = rx.url(uniq('filterB'));
    const a = await mustCreateSub(t.k1, { url: urlA, eventTypes: [STATUS_CHANGED], queueIds: [t.q1] });
    const b = await mustCreateSub(t.k1, { url: urlB, eventTypes: [CREATED], businessIds: [t.b2] });
    const e1 = await walkIn(t.k1, t.q1);
    const e2 = await walkIn(t.k1, t.q2);
    await setStatus(t.k1, e1, 'ready');
    await setStatus(t.k1, e2, 'ready');
    const [ra] = await rx.waitFor(urlA, 1, 10000);
    const [rb] = await rx.waitFor(urlB, 1, 10000);
    await sleep(1500);
    assert.deepEqual(ids(rx.at(urlA)), [eventId(e1, STATUS_CHANGED)]);
    assert.deepEqual(ids(rx.at(urlB)), [eventId(e2, CREATED)]);
    const pa = checkDelivery(a.secret, ra, { type: STATUS_CHANGED });
    assert.equal(pa.data.status, 'ready');
    assert.equal(pa.queueId, t.q1);
    checkDelivery(b.secret, rb, { type: CREATED });
    await checkAgainstFeed(t.k1, ra);
    await checkAgainstFeed(t.k1, rb);
  });

  test('a restricted key\'s subscription only receives events inside its restrictions', async () => {
    const t = newTenantTwoBusinesses();
    const kB1 = makeKey(t.t1, ALL_SCOPES, { businesses: [t.b1] }).key;
    const url = rx.url(uniq('restricted'));
    const s = await mustCreateSub(kB1, { url, eventTypes: [CREATED] });
    const out = await walkIn(t.k1, t.q2);
    const inside = await walkIn(t.k1, t.q1);
    await rx.waitFor(url, 1, 10000);
    await sleep(1500);
    assert.deepEqual(ids(rx.at(url)), [eventId(inside)], `got the event of ${out.id} in another business`);
    checkDelivery(s.secret, rx.at(url)[0], { type: CREATED });
  });

  test('deleting a subscription stops its retries', async () => {
    const t = newTenant();
    const url = rx.url(uniq('delretry'));
    rx.setDefault(url, { status: 500 });
    const s = await mustCreateSub(t.k1, { url, eventTypes: [CREATED] });
    await walkIn(t.k1, t.q1);
    await rx.waitFor(url, 1, 10000);
    const del = await wh('DELETE', `/webhooks/subscriptions/${s.id}`, { key: t.k1, idempotencyKey: uniq('idem') });
    assert.equal(del.status, 204);
    const n = rx.at(url).length;
    await sleep(3000);
    assert.equal(rx.at(url).length, n, 'retried after the subscription was deleted');
  });

  test('delivery gives up after 32 attempts (status failed)', async () => {
    const t = newTenant();
    const url = rx.url(uniq('giveup'));
    // Retry-After keeps the next attempt 3 s away while the count is moved.
    rx.setDefault(url, { status: 500, headers: { 'retry-after': '3' } });
    const s = await mustCreateSub(t.k1, { url, eventTypes: [CREATED] });
    await walkIn(t.k1, t.q1);
    await rx.waitFor(url, 1, 10000);
    const d = await waitDelivery(t.k1, s.id, (x) => x.attemptCount === 1, 'the first attempt to be recorded');
    assert.equal(d.status, 'pending');
    // As if 30 more attempts had failed.
    sql(`UPDATE deliveries SET attempt_count = 31 WHERE id = '${d.id}'`);
    await rx.waitFor(url, 2, 10000);
    const done = await waitDelivery(t.k1, s.id, (x) => x.attemptCount === 32, 'the 32nd attempt to be recorded');
    assert.equal(done.status, 'failed');
    assert.equal(done.nextAttemptAt, null);
    await sleep(4000);
    assert.equal(rx.at(url).length, 2, 'a 33rd attempt was made');
  });

  test('delivery gives up after 24 hours (status failed)', async () => {
    const t = newTenant();
    const url = rx.url(uniq('giveupage'));
    rx.setDefault(url, { status: 503, headers: { 'retry-after': '3' } });
    const s = await mustCreateSub(t.k1, { url, eventTypes: [CREATED] });
    await walkIn(t.k1, t.q1);
    await rx.waitFor(url, 1, 10000);
    const d = await waitDelivery(t.k1, s.id, (x) => x.attemptCount === 1, 'the first attempt to be recorded');
    assert.equal(d.status, 'pending');
    // As if it had been created a day ago (less two seconds).
    sql(`UPDATE deliveries SET created_at = ${Date.now() - 86400000 + 2000} WHERE id = '${d.id}'`);
    await rx.waitFor(url, 2, 10000);
    const done = await waitDelivery(t.k1, s.id, (x) => x.attemptCount === 2, 'the second attempt to be recorded');
    assert.equal(done.status, 'failed', 'retried past 24 hours');
    await sleep(4000);
    assert.equal(rx.at(url).length, 2);
  });

  test('a 5xx answer is retried with the same webhook-id and a new timestamp', async () => {
    const t = newTenant();
    const url = rx.url(uniq('retry500'));
    rx.plan(url, { status: 500 }, { status: 200 });
    const s = await mustCreateSub(t.k1, { url, eventTypes: [CREATED] });
    const entry = await walkIn(t.k1, t.q1);
    const [r1, r2] = await rx.waitFor(url, 2, 15000);
    assert.equal(r1.headers['webhook-id'], eventId(entry));
    assert.equal(r2.headers['webhook-id'], r1.headers['webhook-id']);
    assert.ok(headerTs(r2) > headerTs(r1), `timestamps ${headerTs(r1)} then ${headerTs(r2)}`);
    assert.ok(r2.receivedAt - r1.receivedAt >= 900, `retried after ${r2.receivedAt - r1.receivedAt} ms`);
    assert.ok(r1.body.equals(r2.body), 'a retry sends the same body');
    checkDelivery(s.secret, r1, { type: CREATED });
    checkDelivery(s.secret, r2, { type: CREATED });
    const d = await waitDelivery(t.k1, s.id, (x) => x.status === 'succeeded', 'the delivery to succeed');
    assert.equal(d.attemptCount, 2);
    assert.equal(d.attempts.length, 2);
    assert.deepEqual({ ...d.attempts[0], attemptedAt: 0, durationMs: 0 },
      { attemptedAt: 0, durationMs: 0, responseStatus: 500, errorClass: 'http' });
    assert.deepEqual({ ...d.attempts[1], attemptedAt: 0, durationMs: 0 },
      { attemptedAt: 0, durationMs: 0, responseStatus: 200, errorClass: null });
    assert.equal(d.lastAttemptAt, d.attempts[1].attemptedAt);
    await sleep(1500);
    assert.equal(rx.at(url).length, 2);
  });

  test('408 and 503 are retried too', async () => {
    const t = newTenant();
    const url = rx.url(uniq('retry408'));
    rx.plan(url, { status: 408 }, { status: 503 }, { status: 204 });
    const s = await mustCreateSub(t.k1, { url, eventTypes: [CREATED] });
    await walkIn(t.k1, t.q1);
    const reqs = await rx.waitFor(url, 3, 25000);
    assert.equal(new Set(ids(reqs)).size, 1);
    for (const r of reqs) checkDelivery(s.secret, r, { type: CREATED });
    const d = await waitDelivery(t.k1, s.id, (x) => x.status === 'succeeded', 'the delivery to succeed');
    assert.deepEqual(d.attempts.map((a) => [a.responseStatus, a.errorClass]), [[408, 'http'], [503, 'http'], [204, null]]);
  });

  test('429 with Retry-After is retried no sooner than asked', async () => {
    const t = newTenant();
    const url = rx.url(uniq('retry429'));
    // 3 s: longer than the stack's 1 s first backoff, so honouring it shows.
    rx.plan(url, { status: 429, headers: { 'retry-after': '3' } }, { status: 200 });
    const s = await mustCreateSub(t.k1, { url, eventTypes: [CREATED] });
    await walkIn(t.k1, t.q1);
    const [r1, r2] = await rx.waitFor(url, 2, 20000);
    const gap = r2.receivedAt - r1.receivedAt;
    assert.ok(gap >= 2900, `retried after ${gap} ms despite Retry-After: 3`);
    assert.ok(gap < 9000, `retried only after ${gap} ms`);
    assert.equal(r2.headers['webhook-id'], r1.headers['webhook-id']);
    checkDelivery(s.secret, r2, { type: CREATED });
    const d = await waitDelivery(t.k1, s.id, (x) => x.status === 'succeeded', 'the delivery to succeed');
    assert.equal(d.attempts[0].responseStatus, 429);
    assert.equal(d.attempts[0].errorClass, 'http');
  });

  test('a 429 with an HTTP-date Retry-After is honoured', async () => {
    const t = newTenant();
    const url = rx.url(uniq('retrydate'));
    rx.setDefault(url, { status: 200 });
    const s = await mustCreateSub(t.k1, { url, eventTypes: [CREATED] });
    // The date is computed when the request arrives: 4 s later.
    const step = { status: 429, headers: {} };
    rx.plan(url, step);
    Object.defineProperty(step.headers, 'retry-after', {
      enumerable: true, get: () => new Date(Date.now() + 4000).toUTCString(),
    });
    await walkIn(t.k1, t.q1);
    const [r1, r2] = await rx.waitFor(url, 2, 20000);
    const gap = r2.receivedAt - r1.receivedAt;
    // HTTP dates have whole seconds: at least 3 s remain.
    assert.ok(gap >= 2900, `retried after ${gap} ms despite an HTTP-date Retry-After 4 s ahead`);
    checkDelivery(s.secret, r2, { type: CREATED });
  });

  test('a status line within 10 s is the answer, however late its body; no status line is a timeout', { timeout: 60000 }, async () => {
    const t = newTenant();
    const slowBody = rx.url(uniq('slowbody'));
    const goneSlowly = rx.url(uniq('goneslowly'));
    const noAnswer = rx.url(uniq('noanswer'));
    rx.plan(slowBody, { status: 200, bodyDelayMs: 12000 });
    rx.setDefault(goneSlowly, { status: 410, bodyDelayMs: 12000 });
    rx.setDefault(noAnswer, { status: 200, delayMs: 12000 });
    const a = await mustCreateSub(t.k1, { url: slowBody, eventTypes: [CREATED] });
    const b = await mustCreateSub(t.k1, { url: noAnswer, eventTypes: [CREATED] });
    const c = await mustCreateSub(t.k1, { url: goneSlowly, eventTypes: [CREATED] });
    await walkIn(t.k1, t.q1);
    await waitSub(t.k1, c.id, 'disabled', 'endpoint_gone', 25000);
    const ok = await waitDelivery(t.k1, a.id, (x) => x.status === 'succeeded', 'the slow-bodied 200 to count', 25000);
    assert.equal(ok.attemptCount, 1);
    assert.equal(ok.attempts[0].responseStatus, 200);
    assert.equal(ok.attempts[0].errorClass, null);
    const late = await waitDelivery(t.k1, b.id, (x) => x.attemptCount >= 1, 'the unanswered attempt to end', 25000);
    assert.equal(late.status, 'pending');
    assert.equal(late.attempts[0].responseStatus, null);
    assert.equal(late.attempts[0].errorClass, 'timeout');
    assert.ok(late.attempts[0].durationMs >= 9900, `timed out after ${late.attempts[0].durationMs} ms`);
    await wh('DELETE', `/webhooks/subscriptions/${b.id}`, { key: t.k1, idempotencyKey: uniq('idem') });
    assert.equal(rx.at(slowBody).length, 1, 'the 200 was not sent again');
  });

  test('network errors are retried and recorded with errorClass network', async () => {
    const t = newTenant();
    // A port nobody listens on.
    const srv = createServer();
    await new Promise((r) => srv.listen(0, '127.0.0.1', r));
    const { port } = srv.address();
    await new Promise((r) => srv.close(r));
    const s = await mustCreateSub(t.k1, { url: `http://127.0.0.1:${port}/gone`, eventTypes: [CREATED] });
    await walkIn(t.k1, t.q1);
    const d = await waitDelivery(t.k1, s.id, (x) => x.attemptCount >= 2, 'two failed attempts', 20000);
    assert.equal(d.status, 'pending');
    assert.match(d.nextAttemptAt, TS_RE);
    assert.equal(d.attempts.length, d.attemptCount, 'an attempt without its record');
    for (const a of d.attempts) {
      assert.equal(a.responseStatus, null);
      assert.equal(a.errorClass, 'network');
    }
    await wh('DELETE', `/webhooks/subscriptions/${s.id}`, { key: t.k1, idempotencyKey: uniq('idem') });
  });

  // Two walk-ins delivered to url, answered by the two steps: each
  // delivery fails at its first attempt and is never retried.
  async function failsAtOnce(name, ...steps) {
    const t = newTenant();
    const url = rx.url(uniq(name));
    rx.plan(url, ...steps);
    const s = await mustCreateSub(t.k1, { url, eventTypes: [CREATED] });
    await walkIn(t.k1, t.q1);
    await walkIn(t.k1, t.q1);
    await rx.waitFor(url, 2, 10000);
    await sleep(2500);
    assert.equal(rx.at(url).length, 2, 'a failed delivery was retried');
    const list = await listDeliveries(t.k1, s.id);
    assert.equal(list.length, 2);
    for (const d of list) {
      assert.equal(d.status, 'failed');
      assert.equal(d.attemptCount, 1);
      assert.equal(d.nextAttemptAt, null);
      assert.equal(d.attempts[0].errorClass, 'http');
    }
    assert.deepEqual(list.map((d) => d.attempts[0].responseStatus).sort(), steps.map((x) => x.status).sort());
    return { t, s };
  }

  test('another 4xx, or a redirect, fails at once without a retry', async () => {
    const target = rx.url(uniq('redirect-target'));
    const { t, s } = await failsAtOnce('fail400', { status: 400 }, { status: 302, headers: { location: target } });
    assert.equal(rx.at(target).length, 0, 'the redirect was followed');
    const p1 = await wh('GET', `/webhooks/subscriptions/${s.id}/deliveries?limit=1`, { key: t.k1 });
    assert.equal(p1.json.deliveries.length, 1);
    assert.equal(typeof p1.json.nextCursor, 'string');
    const p2 = await wh('GET', `/webhooks/subscriptions/${s.id}/deliveries?limit=1&cursor=${encodeURIComponent(p1.json.nextCursor)}`, { key: t.k1 });
    assert.equal(p2.status, 200, p2.text);
    assert.equal(p2.json.deliveries.length, 1);
    assert.notEqual(p2.json.deliveries[0].id, p1.json.deliveries[0].id);
    assert.equal(p2.json.nextCursor, null);
    const mixed = await wh('GET', `/webhooks/subscriptions/${s.id}/deliveries?limit=1&status=failed&cursor=${encodeURIComponent(p1.json.nextCursor)}`, { key: t.k1 });
    assertError(mixed, 400, 'invalid_cursor');
    // The subscription itself stays active.
    assert.equal((await getSub(t.k1, s.id)).status, 'active');
  });

  test('a status past 599 is not a 5xx: it fails at once without a retry', async () => {
    await failsAtOnce('fail999', { status: 999 }, { status: 600 });
  });

  test('410 disables the subscription (endpoint_gone) and nothing more is sent to it', async () => {
    const t = newTenant();
    const url = rx.url(uniq('gone'));
    rx.setDefault(url, { status: 410 });
    const s = await mustCreateSub(t.k1, { url, eventTypes: [CREATED] });
    await walkIn(t.k1, t.q1);
    await rx.waitFor(url, 1, 10000);
    const got = await waitSub(t.k1, s.id, 'disabled', 'endpoint_gone');
    assert.deepEqual(Object.keys(got).sort(), SUB_KEYS);
    const [d] = await listDeliveries(t.k1, s.id);
    assert.equal(d.status, 'failed');
    assert.equal(d.attempts[0].responseStatus, 410);
    await walkIn(t.k1, t.q1);
    await walkIn(t.k1, t.q1);
    await sleep(3000);
    assert.equal(rx.at(url).length, 1, 'delivered to a disabled subscription');
    assert.equal((await getSub(t.k1, s.id)).status, 'disabled');
  });

  test('after a 410, the events claimed for that endpoint and waiting for room are not sent', async () => {
    // 16 at once per endpoint (the test stack's deliverer_per_endpoint):
    // the first 16 are in flight when the slow 410s come back; the rest
    // were claimed before the subscription was disabled.
    const t = newTenant();
    const url = rx.url(uniq('gone-burst'));
    rx.setDefault(url, { status: 410, delayMs: 1500 });
    const s = await mustCreateSub(t.k1, { url, eventTypes: [CREATED] });
    await Promise.all(Array.from({ length: 40 }, () => walkIn(t.k1, t.q1)));
    await rx.waitFor(url, 1, 10000);
    await waitSub(t.k1, s.id, 'disabled', 'endpoint_gone');
    await sleep(3000);
    // At most those in flight when the first 410 came back.
    const sent = rx.at(url).length;
    assert.ok(sent <= 16, `${sent} of 40 events sent to an endpoint that answered 410 to the first ones`);
  });

  test('a 410 in flight when another 410 disabled the subscription is recorded too', async () => {
    const t = newTenant();
    const url = rx.url(uniq('gone-both'));
    // Both answers wait, the first less: the two events may be claimed in
    // one look or in two (a look can come between their commits), and
    // either way the second is in flight when the first 410 disables the
    // subscription.
    rx.plan(url, { status: 410, delayMs: 1000 }, { status: 410, delayMs: 2500 });
    const s = await mustCreateSub(t.k1, { url, eventTypes: [CREATED] });
    await Promise.all([walkIn(t.k1, t.q1), walkIn(t.k1, t.q1)]);
    await rx.waitFor(url, 2, 10000);
    await waitSub(t.k1, s.id, 'disabled', 'endpoint_gone');
    assert.ok(rx.at(url).some((r) => r.answeredAt === null), 'the second attempt was not in flight when the first 410 disabled the subscription');
    await waitUntil(() => attemptLines(s.id, '"httpStatus":410').length === 2, 10000, 'both 410s to be settled');
    const records = await listDeliveries(t.k1, s.id);
    assert.equal(records.length, 2, JSON.stringify(records));
    for (const d of records) {
      assert.equal(d.status, 'failed');
      assert.equal(d.attempts[0].responseStatus, 410);
    }
  });

  test('a 410 to an attempt made before a resume disables nothing, even with no event since the last resume', async () => {
    // Two deliveries fail (400), then a third event's 410 disables the
    // subscription, which is resumed.  The two are retried by hand: the
    // first is answered 410 4 s later, the second at once, which disables
    // the subscription again.  It is resumed before the first's 410 comes
    // back, with no event since the last resume: only the count of resumes
    // tells that answer from one to an attempt made since.
    const t = newTenant();
    const url = rx.url(uniq('gone-retried'));
    rx.plan(url, { status: 400 }, { status: 400 }, { status: 410 }, { status: 410, delayMs: 4000 }, { status: 410 });
    const s = await mustCreateSub(t.k1, { url, eventTypes: [CREATED] });
    await walkIn(t.k1, t.q1);
    await walkIn(t.k1, t.q1);
    await waitUntil(async () => (await listDeliveries(t.k1, s.id)).filter((d) => d.status === 'failed').length === 2,
      15000, 'both deliveries to fail');
    const [d1, d2] = await listDeliveries(t.k1, s.id);
    await walkIn(t.k1, t.q1);
    await waitSub(t.k1, s.id, 'disabled', 'endpoint_gone');
    assert.equal((await post(t.k1, `/webhooks/subscriptions/${s.id}/resume`)).status, 200);
    assert.equal((await post(t.k1, `/webhooks/deliveries/${d1.id}/retry`)).status, 202);
    await rx.waitFor(url, 4, 10000);
    assert.equal((await post(t.k1, `/webhooks/deliveries/${d2.id}/retry`)).status, 202);
    await waitSub(t.k1, s.id, 'disabled', 'endpoint_gone');
    const res = await post(t.k1, `/webhooks/subscriptions/${s.id}/resume`);
    assert.equal(res.status, 200, res.text);
    assert.equal(rx.at(url)[3].answeredAt, null, 'the first 410 came back before the resume');
    await waitUntil(() => attemptLines(s.id, '"httpStatus":410').length === 3, 15000, 'the late 410 to be settled');
    const got = await getSub(t.k1, s.id);
    assert.equal(got.status, 'active', `disabled again by a 410 from before the resume (${got.statusReason})`);
  });

  test('a 410 disables the subscription though its secret was rotated while the attempt was in flight', async () => {
    // Only a resume makes an answer in flight one from before: any other
    // change of the subscription leaves the 410 the endpoint's word.
    const t = newTenant();
    const url = rx.url(uniq('gone-rotated'));
    rx.setDefault(url, { status: 410, delayMs: 3000 });
    const s = await mustCreateSub(t.k1, { url, eventTypes: [CREATED] });
    await walkIn(t.k1, t.q1);
    await rx.waitFor(url, 1, 10000);
    const rot = await post(t.k1, `/webhooks/subscriptions/${s.id}/rotate-secret`);
    assert.equal(rot.status, 200, rot.text);
    assert.equal(rx.at(url)[0].answeredAt, null, 'the 410 was answered before the rotation');
    await waitSub(t.k1, s.id, 'disabled', 'endpoint_gone');
  });

  test('a 410 to an attempt made before a resume does not disable the subscription again', async () => {
    // Two attempts in flight: the first answers 410 after 1 s and
    // disables the subscription, which is resumed before the second's 410
    // comes back 5 s after it was sent.  That answer is the endpoint's
    // from before the resume.  (The first waits so that the second is
    // sent even when a look comes between the two events' commits.)
    const t = newTenant();
    const url = rx.url(uniq('gone-late'));
    rx.plan(url, { status: 410, delayMs: 1000 }, { status: 410, delayMs: 5000 });
    rx.setDefault(url, { status: 200 });
    const s = await mustCreateSub(t.k1, { url, eventTypes: [CREATED] });
    await Promise.all([walkIn(t.k1, t.q1), walkIn(t.k1, t.q1)]);
    await rx.waitFor(url, 2, 10000);
    await waitSub(t.k1, s.id, 'disabled', 'endpoint_gone');
    const [late] = rx.at(url).filter((r) => r.answeredAt === null);
    assert.ok(late, 'the second attempt was answered before the resume');
    const res = await post(t.k1, `/webhooks/subscriptions/${s.id}/resume`);
    assert.equal(res.status, 200, res.text);
    // Its event is from before the resume: the outcome is recorded (the
    // attempt was made), and disables nothing.
    await waitUntil(() => attemptLines(s.id, '"httpStatus":410').length === 2,
      15000, 'the late 410 to be settled');
    const records = await listDeliveries(t.k1, s.id);
    assert.equal(records.length, 2, JSON.stringify(records));
    for (const d of records) assert.equal(d.attempts.at(-1).responseStatus, 410);
    const got = await getSub(t.k1, s.id);
    assert.equal(got.status, 'active', `disabled again by a 410 from before the resume (${got.statusReason})`);
    // The deliverer that saw the 410s holds back, for 10 s after the last
    // (deliverer.c, GONE_MS), only what it read before the resume: the
    // next event goes out at once.
    const e3 = await walkIn(t.k1, t.q1);
    await rx.waitFor(url, 3, 5000);
    assert.equal(rx.at(url)[2].headers['webhook-id'], eventId(e3));
  });
});

// ---------------------------------------------------------------------

describe('secret rotation', () => {
  test('after rotation deliveries carry current and previous signatures; both secrets verify', async () => {
    const t = newTenant();
    const url = rx.url(uniq('rotate'));
    const s = await mustCreateSub(t.k1, { url, eventTypes: [CREATED] });
    const s0 = s.secret;

    const rot = await post(t.k1, `/webhooks/subscriptions/${s.id}/rotate-secret`);
    assert.equal(rot.status, 200, rot.text);
    assert.deepEqual(Object.keys(rot.json), ['subscription']);
    assert.deepEqual(Object.keys(rot.json.subscription).sort(), SUB_KEYS_WITH_SECRET);
    const s1 = rot.json.subscription.secret;
    assert.match(s1, SECRET_RE);
    assert.notEqual(s1, s0);
    assert.equal(rot.json.subscription.id, s.id);
    assert.equal(rot.json.subscription.status, 'active');
    const got = await getSub(t.k1, s.id);
    assert.deepEqual(Object.keys(got).sort(), SUB_KEYS);

    await walkIn(t.k1, t.q1);
    const [r1] = await rx.waitFor(url, 1, 10000);
    const sigs = r1.headers['webhook-signature'].split(' ');
    assert.equal(sigs.length, 2, `expected two signatures: ${r1.headers['webhook-signature']}`);
    checkDelivery(s1, r1, { type: CREATED });
    assert.doesNotThrow(() => verifyWith(s0, r1), 'the previous secret does not verify during the overlap');
    // Current first, then previous.
    const when = new Date(headerTs(r1) * 1000);
    const body = r1.body.toString('utf8');
    assert.equal(sigs[0], new Webhook(s1).sign(r1.headers['webhook-id'], when, body));
    assert.equal(sigs[1], new Webhook(s0).sign(r1.headers['webhook-id'], when, body));

    // A second rotation: the previous secret is now s1, s0 is gone.
    const rot2 = await post(t.k1, `/webhooks/subscriptions/${s.id}/rotate-secret`);
    assert.equal(rot2.status, 200, rot2.text);
    const s2 = rot2.json.subscription.secret;
    await walkIn(t.k1, t.q1);
    const [, r2] = await rx.waitFor(url, 2, 10000);
    assert.equal(r2.headers['webhook-signature'].split(' ').length, 2);
    checkDelivery(s2, r2, { type: CREATED });
    assert.doesNotThrow(() => verifyWith(s1, r2));
    assert.throws(() => verifyWith(s0, r2), 'a secret two rotations old still verifies');

    // The previous secret signs for 24 hours.
    const [[until]] = sql(`SELECT previous_secret_until FROM webhook_subscriptions WHERE id = '${s.id}'`);
    const day = Number(until) - Date.now();
    assert.ok(day > 86400000 - 120000 && day <= 86400000, `previous secret kept for ${day} ms`);
    // Once that has passed, only the current secret signs.
    sql(`UPDATE webhook_subscriptions SET previous_secret_until = ${Date.now() - 1000} WHERE id = '${s.id}'`);
    await walkIn(t.k1, t.q1);
    const [, , r3] = await rx.waitFor(url, 3, 10000);
    assert.equal(r3.headers['webhook-signature'].split(' ').length, 1);
    checkDelivery(s2, r3, { type: CREATED });
    assert.throws(() => verifyWith(s1, r3));
  });
});

// ---------------------------------------------------------------------

describe('loss of access pauses delivery', () => {
  test('attempts in flight when the subscription pauses are recorded with their outcome; a retry they would have had is given up', async () => {
    // Two subscriptions, each with a first attempt answered 2 s late: a
    // 200 and a 503.  Webhooks are switched off meanwhile, and the next
    // event makes the deliverer pause both.
    const t = newTenant();
    const okUrl = rx.url(uniq('inflight-ok'));
    const badUrl = rx.url(uniq('inflight-503'));
    rx.setDefault(okUrl, { status: 200, delayMs: 2000 });
    rx.setDefault(badUrl, { status: 503, delayMs: 2000 });
    const ok = await mustCreateSub(t.k1, { url: okUrl, eventTypes: [CREATED] });
    const bad = await mustCreateSub(t.k1, { url: badUrl, eventTypes: [CREATED] });
    const e1 = await walkIn(t.k1, t.q1);
    await rx.waitFor(okUrl, 1, 10000);
    await rx.waitFor(badUrl, 1, 10000);
    ctl('tenant', 'set', t.t1, '--webhooks', 'off');
    await walkIn(t.k1, t.q1);
    await waitSub(t.k1, ok.id, 'paused', 'access_lost');
    await waitSub(t.k1, bad.id, 'paused', 'access_lost');
    assert.equal(rx.at(okUrl)[0].answeredAt, null, 'answered before the pause');
    await waitUntil(() => attemptLines(ok.id, '"httpStatus":200').length === 1
      && attemptLines(bad.id, '"httpStatus":503').length === 1, 10000, 'both attempts to be settled');
    const [dOk] = await listDeliveries(t.k1, ok.id);
    assert.equal(dOk?.eventId, eventId(e1), 'the 200 has no record');
    assert.equal(dOk.status, 'succeeded');
    assert.equal(dOk.attempts[0].responseStatus, 200);
    const [dBad] = await listDeliveries(t.k1, bad.id);
    assert.equal(dBad?.eventId, eventId(e1), 'the 503 has no record');
    assert.equal(dBad.status, 'failed');
    assert.equal(dBad.nextAttemptAt, null);
    assert.equal(dBad.attempts[0].responseStatus, 503);
    // Given up with the pause: not sent again, even on purpose.
    ctl('tenant', 'set', t.t1, '--webhooks', 'on');
    assert.equal((await post(t.k1, `/webhooks/subscriptions/${bad.id}/resume`)).status, 200);
    const retry = await post(t.k1, `/webhooks/deliveries/${dBad.id}/retry`);
    assertError(retry, 400, 'invalid_request');
    assert.match(retry.json.error, /given up when its subscription was paused/);
  });

  test('revoking the bound key pauses the subscription; resume rebinds it and only later events go out', async () => {
    const t = newTenant();
    const bound = makeKey(t.t1, ALL_SCOPES);
    const url = rx.url(uniq('revoke'));
    const s = await mustCreateSub(bound.key, { url, eventTypes: [CREATED] });

    const e1 = await walkIn(t.k1, t.q1);
    await rx.waitFor(url, 1, 10000);

    ctl('key', 'revoke', bound.id);
    const e2 = await walkIn(t.k1, t.q1);
    const paused = await waitSub(t.k1, s.id, 'paused', 'access_lost');
    assert.deepEqual(Object.keys(paused).sort(), SUB_KEYS);
    const e3 = await walkIn(t.k1, t.q1); // during the pause
    await sleep(2500);
    assert.deepEqual(ids(rx.at(url)), [eventId(e1)], 'delivered after the bound key was revoked');

    // The revoked key cannot resume it; another key with the scopes can.
    assertError(await post(bound.key, `/webhooks/subscriptions/${s.id}/resume`), 401, 'revoked_api_key');
    const rebind = makeKey(t.t1, ALL_SCOPES);
    const res = await post(rebind.key, `/webhooks/subscriptions/${s.id}/resume`);
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(Object.keys(res.json), ['subscription']);
    assert.deepEqual(Object.keys(res.json.subscription).sort(), SUB_KEYS, 'resume shows the secret');
    assert.equal(res.json.subscription.status, 'active');
    assert.equal(res.json.subscription.statusReason, null);

    const e4 = await walkIn(t.k1, t.q1);
    await rx.waitFor(url, 2, 10000);
    await sleep(2000);
    const got = rx.at(url);
    assert.deepEqual(ids(got), [eventId(e1), eventId(e4)],
      `events of the paused period were delivered (e2 ${eventId(e2)}, e3 ${eventId(e3)})`);
    checkDelivery(s.secret, got[1], { type: CREATED });

    for (const d of await listDeliveries(t.k1, s.id)) {
      if (d.eventId === eventId(e1) || d.eventId === eventId(e4)) assert.equal(d.status, 'succeeded');
      else {
        assert.notEqual(d.status, 'succeeded');
        assert.notEqual(d.status, 'pending', `delivery of ${d.eventId} still pending after the pause`);
        assert.equal(d.attemptCount, 0);
      }
    }

    // Bound to the resuming key now: revoking that one pauses it again.
    ctl('key', 'revoke', rebind.id);
    await walkIn(t.k1, t.q1);
    await waitSub(t.k1, s.id, 'paused', 'access_lost');
    await sleep(1500);
    assert.equal(rx.at(url).length, 2);
  });

  test('an expired bound key pauses the subscription', async () => {
    const t = newTenant();
    const bound = makeKey(t.t1, ALL_SCOPES);
    const url = rx.url(uniq('expire'));
    const s = await mustCreateSub(bound.key, { url, eventTypes: [CREATED] });
    await walkIn(t.k1, t.q1);
    await rx.waitFor(url, 1, 10000);
    sql(`UPDATE api_keys SET expires_at = ${Date.now() - 1000} WHERE id = '${bound.id}'`);
    await walkIn(t.k1, t.q1);
    await waitSub(t.k1, s.id, 'paused', 'access_lost');
    await sleep(1500);
    assert.equal(rx.at(url).length, 1, 'delivered after the bound key expired');
  });

  test('a pause decided on what was read before the subscription was bound to another key does not apply', async () => {
    // The deliverer reads the subscription, finds its bound key revoked,
    // and pauses it.  Bound to another key in between (a resume by that
    // key), it stays active and gets the event.  A session holds the
    // subscription's row, so that the pause waits for it, and binds it
    // to the new key as a resume does, then lets the pause go on.
    const t = newTenant();
    const bound = makeKey(t.t1, ALL_SCOPES);
    const other = makeKey(t.t1, ALL_SCOPES);
    const url = rx.url(uniq('stale-pause'));
    const s = await mustCreateSub(bound.key, { url, eventTypes: [CREATED] });
    const session = sqlSession();
    try {
      await session.run(`START TRANSACTION; SELECT id FROM webhook_subscriptions WHERE id = '${s.id}' FOR UPDATE`);
      ctl('key', 'revoke', bound.id);
      const e1 = await walkIn(t.k1, t.q1);
      await waitUntil(() => running('UPDATE webhook_subscriptions SET status').length > 0, 15000,
        'the pause to wait for the row');
      await session.run(`UPDATE webhook_subscriptions SET key_id = '${other.id}', updated_at = ${Date.now()} WHERE id = '${s.id}'; COMMIT`);
      await rx.waitFor(url, 1, 15000);
      assert.deepEqual(ids(rx.at(url)), [eventId(e1)]);
      const got = await getSub(t.k1, s.id);
      assert.equal(got.status, 'active', `paused on a stale read (${got.statusReason})`);
    } finally {
      await session.close();
    }
  });

  test('losing API entitlement pauses delivery before the next attempt', async () => {
    const t = newTenant();
    const url = rx.url(uniq('publicapi'));
    // First attempt fails; the retry (3 s later) finds the API switched off.
    rx.plan(url, { status: 500, headers: { 'retry-after': '3' } });
    const s = await mustCreateSub(t.k1, { url, eventTypes: [CREATED] });
    await walkIn(t.k1, t.q1);
    await rx.waitFor(url, 1, 10000);
    ctl('tenant', 'set', t.t1, '--public-api', 'off');
    try {
      await sleep(5000);
      assert.equal(rx.at(url).length, 1, 'retried while the tenant has no API access');
    } finally {
      ctl('tenant', 'set', t.t1, '--public-api', 'on');
    }
    const got = await getSub(t.k1, s.id);
    assert.equal(got.status, 'paused');
    assert.equal(got.statusReason, 'access_lost');
    await sleep(1500);
    assert.equal(rx.at(url).length, 1, 'sent after access came back without a resume');
  });

  test('resuming an active subscription only rebinds it: its pending retry stays due and goes out', async () => {
    const t = newTenant();
    const first = makeKey(t.t1, ALL_SCOPES);
    const second = makeKey(t.t1, ALL_SCOPES);
    const url = rx.url(uniq('resumeactive'));
    // Retry-After keeps the retry 3 s away while the resume is made.
    rx.plan(url, { status: 500, headers: { 'retry-after': '3' } }, { status: 200 });
    rx.setDefault(url, { status: 200 });
    const s = await mustCreateSub(first.key, { url, eventTypes: [CREATED] });
    const e1 = await walkIn(t.k1, t.q1);
    const d = await waitDelivery(t.k1, s.id, (x) => x.attemptCount === 1, 'the first attempt to be recorded');
    assert.equal(d.status, 'pending');

    const res = await post(second.key, `/webhooks/subscriptions/${s.id}/resume`);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json.subscription.status, 'active');
    const still = (await listDeliveries(t.k1, s.id)).find((x) => x.id === d.id);
    assert.equal(still.status, 'pending', 'the resume gave up a pending delivery');
    assert.equal(still.attemptCount, 1);

    const [r1, r2] = await rx.waitFor(url, 2, 15000);
    assert.equal(r2.headers['webhook-id'], r1.headers['webhook-id']);
    assert.equal(r1.headers['webhook-id'], eventId(e1));
    await waitDelivery(t.k1, s.id, (x) => x.id === d.id && x.status === 'succeeded', 'the retry to succeed');

    // Bound to the second key now: revoking the first pauses nothing.
    ctl('key', 'revoke', first.id);
    const e2 = await walkIn(t.k1, t.q1);
    await rx.waitFor(url, 3, 10000);
    assert.equal(rx.at(url)[2].headers['webhook-id'], eventId(e2));
    assert.equal((await getSub(t.k1, s.id)).status, 'active');
  });

  test('resume needs a key whose scopes and restrictions cover the subscription', async () => {
    const t = newTenantTwoBusinesses();
    const bound = makeKey(t.t1, ALL_SCOPES);
    const url = rx.url(uniq('resumecover'));
    const s = await mustCreateSub(bound.key, { url, eventTypes: [CREATED] });
    ctl('key', 'revoke', bound.id);
    await walkIn(t.k1, t.q1);
    await waitSub(t.k1, s.id, 'paused', 'access_lost');
    const kB1 = makeKey(t.t1, ALL_SCOPES, { businesses: [t.b1] }).key;
    assertError(await post(kB1, `/webhooks/subscriptions/${s.id}/resume`), 404, 'not_found');
    const kNoEv = makeKey(t.t1, ALL_SCOPES.filter((x) => x !== 'events:read')).key;
    assertError(await post(kNoEv, `/webhooks/subscriptions/${s.id}/resume`), 403, 'insufficient_scope');
    const still = await getSub(t.k1, s.id);
    assert.equal(still.status, 'paused');
    assert.equal((await post(t.k1, `/webhooks/subscriptions/${s.id}/resume`)).status, 200);
    assert.equal((await getSub(t.k1, s.id)).status, 'active');
  });

  test('webhooks switched off for the tenant pause delivery; switching them on neither resumes nor replays', async () => {
    const t = newTenant();
    const url = rx.url(uniq('flag'));
    const s = await mustCreateSub(t.k1, { url, eventTypes: [CREATED] });
    const e1 = await walkIn(t.k1, t.q1);
    await rx.waitFor(url, 1, 10000);

    ctl('tenant', 'set', t.t1, '--webhooks', 'off');
    const e2 = await walkIn(t.k1, t.q1);
    await sleep(3000);
    assert.equal(rx.at(url).length, 1, 'delivered while webhooks are off');
    // Not entitled: resume and new subscriptions are refused.
    assertError(await post(t.k1, `/webhooks/subscriptions/${s.id}/resume`), 403);
    assertError(await createSub(t.k1, { url: rx.url(uniq('flagoff')), eventTypes: [CREATED] }), 403);

    ctl('tenant', 'set', t.t1, '--webhooks', 'on');
    const paused = await getSub(t.k1, s.id);
    assert.equal(paused.status, 'paused');
    assert.equal(paused.statusReason, 'access_lost');
    const e3 = await walkIn(t.k1, t.q1); // access back, not resumed
    await sleep(2500);
    assert.equal(rx.at(url).length, 1, 'delivered before an explicit resume');

    const res = await post(t.k1, `/webhooks/subscriptions/${s.id}/resume`);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.json.subscription.status, 'active');
    const e4 = await walkIn(t.k1, t.q1);
    await rx.waitFor(url, 2, 10000);
    await sleep(2000);
    assert.deepEqual(ids(rx.at(url)), [eventId(e1), eventId(e4)],
      `paused-period events went out (e2 ${eventId(e2)}, e3 ${eventId(e3)})`);
    checkDelivery(s.secret, rx.at(url)[1], { type: CREATED });
    // A paused-period event has no delivery record: nothing to retry.
    assert.deepEqual((await listDeliveries(t.k1, s.id)).map((d) => d.eventId).sort(),
      [eventId(e1), eventId(e4)].sort());
  });

  test('a retry pending when the subscription pauses never goes out, nor on a deliberate retry', async () => {
    const t = newTenant();
    const url = rx.url(uniq('pausedretry'));
    rx.plan(url, { status: 500, headers: { 'retry-after': '2' } });
    const s = await mustCreateSub(t.k1, { url, eventTypes: [CREATED] });
    await walkIn(t.k1, t.q1);
    await waitDelivery(t.k1, s.id, (x) => x.status === 'pending' && x.attemptCount === 1, 'the first attempt to fail');
    ctl('tenant', 'set', t.t1, '--webhooks', 'off');
    const paused = await waitSub(t.k1, s.id, 'paused', 'access_lost');
    assert.equal(paused.status, 'paused');
    ctl('tenant', 'set', t.t1, '--webhooks', 'on');
    const [skipped] = await listDeliveries(t.k1, s.id);
    assert.equal(skipped.status, 'failed');
    assert.equal(skipped.attemptCount, 1);
    // Paused, the retry is refused whatever the delivery; resumed, for
    // what it is: given up with the pause.
    assertError(await post(t.k1, `/webhooks/deliveries/${skipped.id}/retry`), 400, 'invalid_request');
    assert.equal((await post(t.k1, `/webhooks/subscriptions/${s.id}/resume`)).status, 200);
    const retry = await post(t.k1, `/webhooks/deliveries/${skipped.id}/retry`);
    assertError(retry, 400, 'invalid_request');
    assert.match(retry.json.error, /given up when its subscription was paused/);
    await sleep(1500);
    assert.equal(rx.at(url).length, 1, 'a retry of the paused period went out');
  });
});

// ---------------------------------------------------------------------

describe('manual retry', () => {
  test('a failed delivery can be retried: 202, same webhook-id, new timestamp', async () => {
    const t = newTenant();
    const url = rx.url(uniq('manual'));
    rx.plan(url, { status: 400 });
    const s = await mustCreateSub(t.k1, { url, eventTypes: [CREATED] });
    const entry = await walkIn(t.k1, t.q1);
    const [r1] = await rx.waitFor(url, 1, 10000);
    const failed = await waitDelivery(t.k1, s.id, (x) => x.status === 'failed', 'the delivery to fail');
    assert.equal(failed.attemptCount, 1);
    await sleep(1100); // so that the new attempt's second differs

    assertError(await wh('POST', `/webhooks/deliveries/${failed.id}/retry`, { key: t.k1 }), 400, 'idempotency_key_required');
    const kRead = makeKey(t.t1, ['webhooks:read', 'events:read']).key;
    assertError(await post(kRead, `/webhooks/deliveries/${failed.id}/retry`), 403, 'insufficient_scope');
    assertError(await post(t.k1, '/webhooks/deliveries/dlv_01aaaaaaaaaaaaaaaaaaaaaaaa/retry'), 404, 'not_found');
    const other = newTenant();
    assertError(await post(other.k1, `/webhooks/deliveries/${failed.id}/retry`), 404, 'not_found');

    const res = await post(t.k1, `/webhooks/deliveries/${failed.id}/retry`);
    assert.equal(res.status, 202, res.text);
    assert.deepEqual(Object.keys(res.json), ['delivery']);
    assert.deepEqual(Object.keys(res.json.delivery).sort(), DELIVERY_KEYS);
    assert.equal(res.json.delivery.id, failed.id);
    assert.equal(res.json.delivery.eventId, eventId(entry));

    const [, r2] = await rx.waitFor(url, 2, 10000);
    assert.equal(r2.headers['webhook-id'], r1.headers['webhook-id']);
    assert.ok(headerTs(r2) > headerTs(r1), `timestamps ${headerTs(r1)} then ${headerTs(r2)}`);
    checkDelivery(s.secret, r2, { type: CREATED });
    assert.ok(r1.body.equals(r2.body));
    const done = await waitDelivery(t.k1, s.id, (x) => x.id === failed.id && x.status === 'succeeded', 'the retried delivery to succeed');
    assert.equal(done.attemptCount, 2);
    assert.deepEqual(done.attempts.map((a) => a.responseStatus), [400, 200]);
    await sleep(1000);
    assert.equal(rx.at(url).length, 2);
  });
});

describe('manual retry of a pending delivery', () => {
  test('sends an attempt now and keeps the automatic schedule', async () => {
    const t = newTenant();
    const url = rx.url(uniq('manualpending'));
    // The first answer puts the next automatic attempt an hour away.
    rx.plan(url, { status: 429, headers: { 'retry-after': '3600' } }, { status: 500 }, { status: 200 });
    const s = await mustCreateSub(t.k1, { url, eventTypes: [CREATED] });
    await walkIn(t.k1, t.q1);
    await rx.waitFor(url, 1, 10000);
    const waiting = await waitDelivery(t.k1, s.id, (x) => x.attemptCount === 1, 'the first attempt to be recorded');
    assert.equal(waiting.status, 'pending');
    assert.ok(Date.parse(waiting.nextAttemptAt) - Date.now() > 3000 * 1000, waiting.nextAttemptAt);
    const res = await post(t.k1, `/webhooks/deliveries/${waiting.id}/retry`);
    assert.equal(res.status, 202, res.text);
    // The retry's 500 is retried on the schedule, and the third succeeds.
    await rx.waitFor(url, 3, 15000);
    const done = await waitDelivery(t.k1, s.id, (x) => x.status === 'succeeded', 'the delivery to succeed');
    assert.deepEqual(done.attempts.map((a) => a.responseStatus), [429, 500, 200]);
  });
});

describe('manual retry of a succeeded or an in-flight delivery', () => {
  test('a succeeded delivery gets one attempt, not a new schedule', async () => {
    const t = newTenant();
    const url = rx.url(uniq('againok'));
    rx.plan(url, { status: 200 }, { status: 500 });
    const s = await mustCreateSub(t.k1, { url, eventTypes: [CREATED] });
    await walkIn(t.k1, t.q1);
    const ok = await waitDelivery(t.k1, s.id, (x) => x.status === 'succeeded', 'the delivery to succeed');
    const res = await post(t.k1, `/webhooks/deliveries/${ok.id}/retry`);
    assert.equal(res.status, 202, res.text);
    const failed = await waitDelivery(t.k1, s.id, (x) => x.status === 'failed', 'the retry to fail');
    assert.deepEqual(failed.attempts.map((a) => a.responseStatus), [200, 500]);
    assert.equal(failed.nextAttemptAt, null);
    await sleep(3000); // past the stack's first backoff
    assert.equal(rx.at(url).length, 2, 'the failed retry was retried');
  });

  test('a delivery whose event has left the feed is not sent again: 400, the record unchanged', async () => {
    const t = newTenant();
    const url = rx.url(uniq('purged'));
    const s = await mustCreateSub(t.k1, { url, eventTypes: [CREATED] });
    await walkIn(t.k1, t.q1);
    const ok = await waitDelivery(t.k1, s.id, (x) => x.status === 'succeeded', 'the delivery to succeed');
    sql(`UPDATE events SET occurred_at = 1000 WHERE id = '${ok.eventId}'`);
    ctl('purge');
    const res = await post(t.k1, `/webhooks/deliveries/${ok.id}/retry`);
    assertError(res, 400, 'invalid_request');
    assert.match(res.json.error, /seven-day window/);
    const [after] = await listDeliveries(t.k1, s.id);
    assert.deepEqual(after, ok);
    await sleep(1500);
    assert.equal(rx.at(url).length, 1, 'nothing more was sent');
  });

  test('a retry while an attempt is in flight is that attempt: nothing is sent twice or lost', async () => {
    // A delivery's record is written with its first attempt's outcome:
    // the attempt in flight here is the second.
    const t = newTenant();
    const url = rx.url(uniq('inflight'));
    rx.plan(url, { status: 503 }, { status: 200, delayMs: 2500 });
    const s = await mustCreateSub(t.k1, { url, eventTypes: [CREATED] });
    await walkIn(t.k1, t.q1);
    await rx.waitFor(url, 2, 15000); // the second arrived, not yet answered
    const [d] = await listDeliveries(t.k1, s.id);
    assert.equal(d.attemptCount, 1);
    const res = await post(t.k1, `/webhooks/deliveries/${d.id}/retry`);
    assert.equal(res.status, 202, res.text);
    assert.equal(res.json.delivery.status, 'pending');
    const done = await waitDelivery(t.k1, s.id, (x) => x.status === 'succeeded', 'the attempt in flight to be recorded');
    assert.equal(done.attemptCount, 2);
    await sleep(1500);
    assert.equal(rx.at(url).length, 2, 'sent twice');
  });

  test('a first attempt in flight has no record yet; its outcome creates it', async () => {
    const t = newTenant();
    const url = rx.url(uniq('firstflight'));
    rx.plan(url, { status: 200, delayMs: 2000 });
    const s = await mustCreateSub(t.k1, { url, eventTypes: [CREATED] });
    const e = await walkIn(t.k1, t.q1);
    await rx.waitFor(url, 1, 10000);
    assert.deepEqual(await listDeliveries(t.k1, s.id), []);
    const d = await waitDelivery(t.k1, s.id, (x) => x.status === 'succeeded', 'the first attempt to be recorded');
    assert.equal(d.eventId, eventId(e));
    assert.equal(d.attemptCount, 1);
  });

  test('a first attempt in flight when its subscription is deleted creates no record; one of another subscription does', async () => {
    const t = newTenant();
    const gone = rx.url(uniq('flightgone'));
    const kept = rx.url(uniq('flightkept'));
    rx.plan(gone, { status: 200, delayMs: 2000 });
    rx.plan(kept, { status: 200, delayMs: 2000 });
    const a = await mustCreateSub(t.k1, { url: gone, eventTypes: [CREATED] });
    const b = await mustCreateSub(t.k1, { url: kept, eventTypes: [CREATED] });
    const e = await walkIn(t.k1, t.q1);
    await rx.waitFor(gone, 1, 10000);
    await rx.waitFor(kept, 1, 10000);
    const del = await wh('DELETE', `/webhooks/subscriptions/${a.id}`, { key: t.k1, idempotencyKey: uniq('idem') });
    assert.equal(del.status, 204, del.text);
    const d = await waitDelivery(t.k1, b.id, (x) => x.status === 'succeeded', 'the kept subscription\'s attempt to be recorded');
    assert.equal(d.eventId, eventId(e));
    await waitUntil(async () => sql(`SELECT COUNT(*) FROM delivery_ranges WHERE subscription_id IN ('${a.id}', '${b.id}')`)[0][0] === '0',
      10000, 'both ranges to be let go of');
    assert.deepEqual(sql(`SELECT COUNT(*) FROM deliveries WHERE subscription_id = '${a.id}'`), [['0']], 'a record of a deleted subscription');
  });
});

describe('delivery records', () => {
  test('a page cursor holds to its subscription', async () => {
    const t = newTenant();
    const a = await mustCreateSub(t.k1, { url: rx.url(uniq('cura')), eventTypes: [CREATED] });
    const b = await mustCreateSub(t.k1, { url: rx.url(uniq('curb')), eventTypes: [CREATED] });
    await walkIn(t.k1, t.q1);
    await walkIn(t.k1, t.q1);
    await waitUntil(async () => (await listDeliveries(t.k1, a.id)).length === 2, 15000, 'two deliveries of a');
    const page = await wh('GET', `/webhooks/subscriptions/${a.id}/deliveries?limit=1`, { key: t.k1 });
    assert.equal(page.status, 200, page.text);
    assert.equal(typeof page.json.nextCursor, 'string', page.text);
    const cursor = encodeURIComponent(page.json.nextCursor);
    assert.equal((await wh('GET', `/webhooks/subscriptions/${a.id}/deliveries?limit=1&cursor=${cursor}`, { key: t.k1 })).status, 200);
    assertError(await wh('GET', `/webhooks/subscriptions/${b.id}/deliveries?limit=1&cursor=${cursor}`, { key: t.k1 }), 400, 'invalid_cursor');
  });

  test('purge drops finished records seven days after their last change, and keeps pending and recently changed ones', async () => {
    const t = newTenant();
    const s = await mustCreateSub(t.k1, { url: rx.url(uniq('purge')), eventTypes: [CREATED] });
    for (let i = 0; i < 3; i += 1) await walkIn(t.k1, t.q1);
    await waitUntil(async () => (await listDeliveries(t.k1, s.id)).filter((x) => x.status === 'succeeded').length === 3,
      15000, 'three deliveries to succeed');
    const [made, pendingMade, retriedMade] = (await listDeliveries(t.k1, s.id)).map((d) => d.id);
    // Made and last changed eight days ago, as its id says too (its first
    // ten characters after the prefix are the time it was made).
    const eight = Date.now() - 8 * 86400 * 1000;
    const madeAt = (id, ms) => id.slice(0, 4) + [45, 40, 35, 30, 25, 20, 15, 10, 5, 0]
      .map((shift) => '0123456789abcdefghjkmnpqrstvwxyz'[Math.floor(ms / 2 ** shift) % 32]).join('') + id.slice(14);
    const [old, pending, retried] = [made, pendingMade, retriedMade].map((id) => madeAt(id, eight));
    for (const [from, to] of [[made, old], [pendingMade, pending], [retriedMade, retried]]) {
      sql(`UPDATE deliveries SET id = '${to}', updated_at = ${eight} WHERE id = '${from}'`);
    }
    // Still pending eight days on; made then and changed since.
    sql(`UPDATE deliveries SET status = 'pending', next_attempt_at = ${Date.now() + 86400 * 1000} WHERE id = '${pending}'`);
    sql(`UPDATE deliveries SET updated_at = ${Date.now() - 86400 * 1000} WHERE id = '${retried}'`);
    const out = ctl('purge');
    assert.deepEqual(Object.keys(out).sort(), ['deliveryRecords', 'events', 'idempotencyRecords']);
    assert.ok(out.deliveryRecords >= 1, JSON.stringify(out));
    const left = (await listDeliveries(t.k1, s.id)).map((d) => d.id);
    assert.deepEqual(left.sort(), [pending, retried].sort());
  });
});

// Last: the answers gathered above, against openapi.json.
test('every webhook answer and delivered body matched openapi.json', () => {
  assert.deepEqual(contractProblems, []);
});
