// The contract: openapi.json lints clean, documents exactly the service's
// route table (lib/router.c), is what GET /openapi.json serves, and every
// documented operation answers as documented (api() validates each answer
// through ../contract.mjs; this file makes sure each operation is reached).

import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { api, fixture, seed, sleep, uniq } from './lib.mjs';
import {
  documentedRoutes, lintOpenapi, OPENAPI_FILE, validateResponse, validateSchema,
} from '../contract.mjs';

const REPO = process.env.WL_REPO;

test('openapi.json passes redocly lint with no error and no warning', () => {
  const r = lintOpenapi();
  assert.ok(r.ok, `redocly lint: ${JSON.stringify(r.totals)}\n${r.report}`);
});

// {WL_GET, "/waitlist/entries/{}", ...} entries of the route table.
function routerRoutes() {
  const src = readFileSync(join(REPO, 'lib', 'router.c'), 'utf8');
  const found = [...src.matchAll(/\{\s*WL_(GET|POST|PATCH|PUT|DELETE)\s*,\s*"([^"]+)"/g)]
    .map(([, method, path]) => `${method} ${path}`);
  assert.ok(found.length > 0, 'no routes parsed from lib/router.c');
  return found;
}

test('openapi.json documents exactly the routes of lib/router.c', () => {
  const code = new Set(routerRoutes());
  const doc = new Set(documentedRoutes());
  const undocumented = [...code].filter((r) => !doc.has(r));
  const unimplemented = [...doc].filter((r) => !code.has(r));
  assert.deepEqual(
    { undocumented, unimplemented }, { undocumented: [], unimplemented: [] },
    'routes of lib/router.c missing from openapi.json (undocumented), and documented routes the router lacks (unimplemented)',
  );
});

test('every operation declares bearer security, optional only on the public routes', () => {
  const doc = JSON.parse(readFileSync(OPENAPI_FILE, 'utf8'));
  const PUBLIC = ['GET /health', 'GET /openapi.json'];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      const name = `${method.toUpperCase()} ${path}`;
      assert.ok(Array.isArray(op.security), `${name} declares no security`);
      assert.deepEqual(op.security, PUBLIC.includes(name) ? [{ bearer: [] }, {}] : [{ bearer: [] }], name);
      assert.ok(op.responses['405'], `${name} documents no 405`);
    }
  }
  assert.equal(doc.components.securitySchemes.bearer.scheme, 'bearer');
});

test('GET /openapi.json serves the file verbatim', async () => {
  const res = await api('GET', '/openapi.json');
  assert.equal(res.status, 200, res.text);
  assert.equal(res.text, readFileSync(OPENAPI_FILE, 'utf8'));
  assert.equal(res.json.openapi, '3.1.0');
  assert.equal(res.json.info.version, '1.0.0');
});

test('the validator refuses answers the document does not describe', () => {
  const h = (extra = {}) => ({ 'x-request-id': 'req_1', 'content-type': 'application/json', ...extra });
  const err = (code, requestId = 'req_1') => ({ error: 'x', code, requestId });
  const ok = (...a) => assert.doesNotThrow(() => validateResponse(...a));
  const bad = (re, ...a) => assert.throws(() => validateResponse(...a), re);

  ok('GET', '/health', 200, { status: 'ok' }, h());
  ok('GET', '/v1/external/me?x=1', 401, err('missing_api_key'), h());
  ok('GET', 'http://host/v1/external/waitlist/entries/ent_1', 404, err('not_found'), h());
  bad(/not documented in openapi\.json/, 'GET', '/nope', 200, {}, h());
  bad(/status 418 is not documented/, 'GET', '/health', 418, {}, h());
  bad(/no X-Request-Id/, 'GET', '/health', 200, { status: 'ok' }, {});
  bad(/differs from X-Request-Id/, 'GET', '/me', 401, err('missing_api_key', 'req_2'), h());
  bad(/body does not match/, 'GET', '/me', 401, { ...err('missing_api_key'), extra: 1 }, h());
  bad(/body does not match/, 'GET', '/me', 401, err('not_found'), h());
  bad(/body does not match/, 'GET', '/health', 200, { status: 'fine' }, h());
  bad(/empty or not JSON/, 'GET', '/health', 200, null, h(), 'ok');
  bad(/Retry-After is missing/, 'GET', '/me', 429, err('rate_limited'), h());
  ok('GET', '/me', 429, err('rate_limited'), h({ 'retry-after': '3' }));
  bad(/Retry-After/, 'GET', '/me', 429, err('rate_limited'), h({ 'retry-after': '0' }));
  // Answers any path may give.
  ok('GET', '/nope', 404, err('not_found'), h());
  ok('POST', '/me', 400, err('payload_too_large'), h());
  ok('PUT', '/me', 405, err('method_not_allowed'), h({ allow: 'GET' }));
  bad(/Allow header/, 'PUT', '/waitlist/entries', 405, err('method_not_allowed'), h({ allow: 'GET' }));
  bad(/method PUT is not documented/, 'PUT', '/me', 200, {}, h());
  // Schemas by name.
  assert.throws(() => validateSchema('Event', { id: 'evt_1', type: 'booking.created' }), /does not match schema Event/);
});

// A time zone in which it is around midday now, so that today still has
// bookable slots: whole-hour Etc/GMT zones keep the 15-minute grid.
function middayZone() {
  let offset = 12 - new Date().getUTCHours();
  if (offset < -12) offset += 24;
  if (offset > 14) offset -= 24;
  if (offset === 0) return 'UTC';
  return offset > 0 ? `Etc/GMT-${offset}` : `Etc/GMT+${-offset}`;
}

test('every documented operation answers as documented', async () => {
  const f = fixture();
  f.tenants[0].businesses[0].timeZone = middayZone();
  const r = seed(f);
  const key = r.k1;
  const reached = new Set();
  // api() throws on an answer openapi.json does not describe.
  const call = async (method, template, path, opts, status) => {
    const res = await api(method, path, { key, ...opts });
    assert.equal(res.status, status, `${method} ${path}: ${res.text}`);
    reached.add(`${method} ${template}`);
    return res;
  };
  const idem = () => ({ idempotencyKey: uniq('contract') });

  // A receiver for the webhook deliveries: the first attempt of each
  // event fails so that a delivery record can be retried.
  const received = [];
  const seenIds = new Set();
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => { raw += c; });
    req.on('end', () => {
      received.push({ headers: req.headers, raw });
      const id = req.headers['webhook-id'];
      res.statusCode = seenIds.has(id) ? 204 : 500;
      seenIds.add(id);
      res.end();
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    await call('GET', '/health', '/health', { key: undefined }, 200);
    await call('GET', '/openapi.json', '/openapi.json', { key: undefined }, 200);
    await call('GET', '/me', '/me', {}, 200);
    await call('GET', '/waitlist/businesses', '/waitlist/businesses?limit=10', {}, 200);
    await call('GET', '/waitlist/businesses/{}', `/waitlist/businesses/${r.b1}`, {}, 200);
    await call('GET', '/waitlist/queues', `/waitlist/queues?businessId=${r.b1}`, {}, 200);
    await call('GET', '/waitlist/queues/{}', `/waitlist/queues/${r.q1}`, {}, 200);
    const av = await call('GET', '/waitlist/queues/{}/availability', `/waitlist/queues/${r.q1}/availability?serviceTypeId=${r.s1}`, {}, 200);

    const sub = await call('POST', '/webhooks/subscriptions', '/webhooks/subscriptions', {
      body: { url: `http://127.0.0.1:${server.address().port}/hook`, eventTypes: ['waitlist.entry.created', 'booking.cancelled'], description: 'contract' },
      ...idem(),
    }, 201);
    const subId = sub.json.subscription.id;

    const walkIn = await call('POST', '/waitlist/entries', '/waitlist/entries', {
      body: { queueId: r.q1, fullName: 'Ada Lovelace', externalReference: uniq('ext'), customData: { [r.f1]: 'in' } }, ...idem(),
    }, 201);
    const entry = walkIn.json.entry;
    await call('GET', '/waitlist/entries', `/waitlist/entries?externalReference=${encodeURIComponent(entry.externalReference)}&limit=5`, {}, 200);
    await call('GET', '/waitlist/entries/{}', `/waitlist/entries/${entry.id}`, {}, 200);
    await call('PATCH', '/waitlist/entries/{}', `/waitlist/entries/${entry.id}`, { body: { expectedVersion: 1, partySize: 3, notes: 'window' }, ...idem() }, 200);
    await call('PATCH', '/waitlist/entries/{}/status', `/waitlist/entries/${entry.id}/status`, {
      body: { status: 'ready', expectedStatus: 'waiting', expectedVersion: 2 }, ...idem(),
    }, 200);

    const slots = av.json.availability.slots;
    assert.ok(slots.length >= 3, `need three bookable slots today: ${av.text}`);
    const booking = (await call('POST', '/waitlist/entries', '/waitlist/entries', {
      body: { queueId: r.q1, fullName: 'Grace Hopper', isBooking: true, serviceTypeId: r.s1, scheduledFor: slots[1].startsAt }, ...idem(),
    }, 201)).json.entry;
    await call('POST', '/bookings/{}/reschedule', `/bookings/${booking.id}/reschedule`, {
      body: { scheduledFor: slots[slots.length - 1].startsAt, expectedVersion: 1 }, ...idem(),
    }, 200);
    await call('POST', '/bookings/{}/cancel', `/bookings/${booking.id}/cancel`, {
      body: { expectedStatus: 'confirmed', expectedVersion: 2, reason: 'contract test' }, ...idem(),
    }, 200);
    await call('GET', '/analytics/queues/{}/summary', `/analytics/queues/${r.q1}/summary`, {}, 200);
    const feed = await call('GET', '/events', '/events?limit=100&types=waitlist.entry.created,booking.cancelled', {}, 200);
    assert.ok(feed.json.events.length >= 2, feed.text);

    await call('GET', '/webhooks/subscriptions', '/webhooks/subscriptions?limit=5', {}, 200);
    await call('GET', '/webhooks/subscriptions/{}', `/webhooks/subscriptions/${subId}`, {}, 200);
    let deliveries = [];
    for (let i = 0; i < 150 && deliveries.length === 0; i++) {
      deliveries = (await call('GET', '/webhooks/subscriptions/{}/deliveries', `/webhooks/subscriptions/${subId}/deliveries`, {}, 200)).json.deliveries;
      if (deliveries.length === 0) await sleep(100);
    }
    assert.ok(deliveries.length > 0, 'no delivery record appeared (is the deliverer running?)');
    await call('POST', '/webhooks/deliveries/{}/retry', `/webhooks/deliveries/${deliveries[0].id}/retry`, { ...idem() }, 202);
    await call('POST', '/webhooks/subscriptions/{}/rotate-secret', `/webhooks/subscriptions/${subId}/rotate-secret`, { ...idem() }, 200);
    await call('POST', '/webhooks/subscriptions/{}/resume', `/webhooks/subscriptions/${subId}/resume`, { ...idem() }, 200);

    // Webhook bodies are Events, announced by their headers.
    for (let i = 0; i < 100 && received.length === 0; i++) await sleep(100);
    assert.ok(received.length > 0, 'no webhook delivery arrived');
    for (const { headers, raw } of received) {
      const event = JSON.parse(raw);
      validateSchema('Event', event);
      assert.equal(headers['webhook-id'], event.id);
      assert.match(headers['webhook-timestamp'], /^[0-9]+$/);
      assert.match(headers['webhook-signature'], /^v1,[A-Za-z0-9+/]+={0,2}( v1,[A-Za-z0-9+/]+={0,2})*$/);
    }

    await call('DELETE', '/webhooks/subscriptions/{}', `/webhooks/subscriptions/${subId}`, { ...idem() }, 204);
  } finally {
    server.close();
  }

  const missed = documentedRoutes().filter((route) => !reached.has(route));
  assert.deepEqual(missed, [], 'documented operations this test did not reach');
});
