// Helpers for the webhook tests (webhooks.test.mjs, deliverer.test.mjs):
// a recording receiver on 127.0.0.1 with a programmable answer script,
// Standard Webhooks verification through the npm package standardwebhooks,
// and comparison of every delivered body with the stored event.
//
// Answers of the webhook routes are checked against openapi.json like every
// api() answer, but a mismatch is collected (contractProblems) instead of
// thrown, so that a behaviour test reports the behaviour and the file's last
// test reports the contract.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { validateResponse, validateSchema } from '../contract.mjs';
import {
  BASE, HIGH_LIMITS, api, businessCopy, ctl, fixture, seed, sleep, sql, uniq,
} from './lib.mjs';

export { ALL_SCOPES, HIGH_LIMITS, TS_RE, assertError } from './lib.mjs';

// Exact key sets (DECISIONS "Webhooks").
export const SUB_KEYS = [
  'businessIds', 'createdAt', 'description', 'eventTypes', 'id', 'queueIds',
  'status', 'statusReason', 'updatedAt', 'url',
].sort();
export const SUB_KEYS_WITH_SECRET = [...SUB_KEYS, 'secret'].sort();
export const DELIVERY_KEYS = [
  'attemptCount', 'attempts', 'createdAt', 'eventId', 'eventType', 'id',
  'lastAttemptAt', 'nextAttemptAt', 'status', 'subscriptionId',
].sort();
export const ATTEMPT_KEYS = ['attemptedAt', 'durationMs', 'errorClass', 'responseStatus'].sort();
export const SECRET_RE = /^whsec_[A-Za-z0-9+/]{43}=$/;

// ---------------------------------------------------------------------
// API calls

export const contractProblems = [];

// api() with the contract check collected rather than thrown.
export async function wh(method, path, opts = {}) {
  const res = await api(method, path, { ...opts, noValidate: true });
  try {
    validateResponse(method, BASE + path, res.status, res.json, res.headers, res.text);
  } catch (e) {
    contractProblems.push(`${method} ${path.replace(/\?.*/, '')} -> ${res.status}: ${e.message}`);
  }
  return res;
}

// Subscriptions made through createSub(), for dropSubs().
const made = new Set();

export async function createSub(key, body, { idempotencyKey = uniq('idem') } = {}) {
  const res = await wh('POST', '/webhooks/subscriptions', { key, body, idempotencyKey });
  if (res.status === 201) made.add(res.json.subscription.id);
  return res;
}

// Removes every subscription this file made, with its deliveries, so that
// nothing keeps retrying against a receiver that is gone when later test
// files run.
export function dropSubs() {
  const list = [...made].map((id) => `'${safeId(id)}'`).join(',');
  made.clear();
  if (!list) return;
  sql(`DELETE FROM deliveries WHERE subscription_id IN (${list})`);
  sql(`DELETE FROM webhook_subscriptions WHERE id IN (${list})`);
}

// Creates a subscription that must succeed; returns {subscription} with
// its secret.
export async function mustCreateSub(key, body) {
  const res = await createSub(key, body);
  assert.equal(res.status, 201, `create subscription: ${res.status} ${res.text}`);
  return res.json.subscription;
}

export async function getSub(key, id) {
  const res = await wh('GET', `/webhooks/subscriptions/${id}`, { key });
  assert.equal(res.status, 200, `GET subscription ${id}: ${res.status} ${res.text}`);
  return res.json.subscription;
}

// Every delivery record of a subscription (all pages).
export async function listDeliveries(key, subId, query = '') {
  const out = [];
  let cursor = null;
  for (let i = 0; i < 100; i += 1) {
    const q = [query, cursor ? `cursor=${encodeURIComponent(cursor)}` : '', 'limit=100']
      .filter(Boolean).join('&');
    const res = await wh('GET', `/webhooks/subscriptions/${subId}/deliveries?${q}`, { key });
    assert.equal(res.status, 200, `deliveries of ${subId}: ${res.status} ${res.text}`);
    out.push(...res.json.deliveries);
    cursor = res.json.nextCursor;
    if (!cursor) return out;
  }
  throw new Error('deliveries: too many pages');
}

export async function walkIn(key, queueId, extra = {}) {
  const res = await api('POST', '/waitlist/entries', {
    key, idempotencyKey: uniq('idem'),
    body: { queueId, fullName: 'Webhook Guest', ...extra },
  });
  assert.ok(res.status === 200 || res.status === 201, `create entry: ${res.status} ${res.text}`);
  return res.json.entry;
}

export async function setStatus(key, entry, status) {
  const res = await api('PATCH', `/waitlist/entries/${entry.id}/status`, {
    key, idempotencyKey: uniq('idem'),
    body: { status, expectedStatus: entry.status, expectedVersion: entry.version },
  });
  assert.equal(res.status, 200, `status change: ${res.status} ${res.text}`);
  return res.json.entry;
}

const ID_RE = /^[A-Za-z0-9_]+$/;
function safeId(id) {
  assert.match(String(id), ID_RE, `unexpected id ${id}`);
  return id;
}

// Events of an entry in commit order: [{id, type}].
export function eventsOf(entryId) {
  return sql(`SELECT id, type FROM events WHERE resource_id = '${safeId(entryId)}' ORDER BY seq`)
    .map(([id, type]) => ({ id, type }));
}

// Ids of a tenant's events of one type.
export function eventIdsOfTenant(tenantId, type) {
  assert.match(type, /^[a-z_.]+$/);
  return sql(`SELECT id FROM events WHERE tenant_id = '${safeId(tenantId)}' AND type = '${type}'`)
    .map(([id]) => id);
}

// The stored body of an event, byte for byte.
export function storedBody(eventId) {
  const rows = sql(`SELECT HEX(body) FROM events WHERE id = '${safeId(eventId)}'`);
  assert.equal(rows.length, 1, `event ${eventId} is not stored`);
  return Buffer.from(rows[0][0], 'hex');
}

// The event as GET /events shows it: its exact text inside the page and the
// parsed object.
export async function feedEvent(key, eventId, type) {
  let cursor = null;
  for (let i = 0; i < 1000; i += 1) {
    const q = [`types=${type}`, 'limit=100', cursor ? `cursor=${encodeURIComponent(cursor)}` : '']
      .filter(Boolean).join('&');
    const res = await api('GET', `/events?${q}`, { key });
    assert.equal(res.status, 200, `GET /events: ${res.status} ${res.text}`);
    const ev = res.json.events.find((e) => e.id === eventId);
    if (ev) return { event: ev, pageText: res.text };
    if (!res.json.hasMore) break;
    cursor = res.json.nextCursor;
  }
  throw new Error(`event ${eventId} is not in GET /events`);
}

// ---------------------------------------------------------------------
// Tenants and keys

// A fresh tenant from lib.mjs fixture() with high rate limits; extra
// tenant fields (limits merge with HIGH_LIMITS).
export function newTenant(overrides = {}) {
  const { limits = {}, ...rest } = overrides;
  const fx = fixture({ limits: { ...HIGH_LIMITS, ...limits }, ...rest });
  return seed(fx);
}

// A fixture with a second business b2 and line q2 (on top of b1/q1).
export function newTenantTwoBusinesses(overrides = {}, extraKeys = []) {
  const { limits = {}, ...rest } = overrides;
  const fx = fixture({ limits: { ...HIGH_LIMITS, ...limits }, ...rest });
  const t = fx.tenants[0];
  t.businesses.push(businessCopy(t.businesses[0], 2));
  t.keys.push(...extraKeys);
  return seed(fx);
}

// A key made by waitlistctl: {id, key}.
export function makeKey(tenantId, scopes, { type = 'api', businesses, queues, expiresInDays } = {}) {
  const args = ['key', 'create', '--tenant', tenantId, '--scopes', scopes.join(',')];
  if (businesses) args.push('--businesses', businesses.join(','));
  if (queues) args.push('--queues', queues.join(','));
  if (expiresInDays) args.push('--expires-in-days', String(expiresInDays));
  args.push('--type', type);
  return ctl(...args);
}

// ---------------------------------------------------------------------
// Waiting

export async function waitUntil(fn, timeoutMs, what) {
  const end = Date.now() + timeoutMs;
  let last;
  for (;;) {
    last = await fn();
    if (last) return last;
    if (Date.now() > end) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${typeof what === 'function' ? what() : what}`);
    }
    await sleep(100);
  }
}

// ---------------------------------------------------------------------
// The receiver

// A recording HTTP server on 127.0.0.1 (random port).  Each endpoint is a
// path /hook/<name>; recv.url(name) gives its address.  Every request is
// kept with its headers and exact raw body.  Answers follow a per-endpoint
// script: recv.plan(url, {status, headers, delayMs, bodyDelayMs, body}, ...)
// queues answers (bodyDelayMs: the status line at once, the body that much
// later); after the queue, recv.setDefault(url, step) (else 200).  A step
// may be a function of the request's record, returning the answer.
export async function startReceiver() {
  const requests = [];
  const plans = new Map();
  const defaults = new Map();
  const server = createServer((req, res) => {
    const chunks = [];
    const receivedAt = Date.now();
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const record = {
        method: req.method, path: req.url, headers: { ...req.headers },
        rawHeaders: req.rawHeaders, body: Buffer.concat(chunks), receivedAt,
        answeredAt: null, answered: null,
      };
      requests.push(record);
      const q = plans.get(req.url);
      const planned = q && q.length ? q.shift() : defaults.get(req.url);
      const step = (typeof planned === 'function' ? planned(record) : planned) || { status: 200 };
      const send = () => {
        if (res.destroyed) return;
        res.writeHead(step.status, { 'content-type': 'text/plain', ...(step.headers || {}) });
        record.answeredAt = Date.now();
        record.answered = step.status;
        if (!step.bodyDelayMs) return res.end(step.body ?? 'ok');
        res.flushHeaders(); // the status line now, the body later
        setTimeout(() => res.destroyed || res.end(step.body ?? 'ok'), step.bodyDelayMs);
      };
      if (step.delayMs) setTimeout(send, step.delayMs);
      else send();
    });
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address();
  const pathOf = (url) => new URL(url).pathname;
  return {
    port,
    requests,
    url: (name) => `http://127.0.0.1:${port}/hook/${name}`,
    plan(url, ...steps) {
      const p = pathOf(url);
      plans.set(p, [...(plans.get(p) || []), ...steps]);
    },
    setDefault(url, step) {
      defaults.set(pathOf(url), step);
    },
    at(url) {
      const p = pathOf(url);
      return requests.filter((r) => r.path === p);
    },
    async waitFor(url, n, timeoutMs = 15000) {
      await waitUntil(() => this.at(url).length >= n, timeoutMs,
        () => `${n} request(s) at ${url} (have ${this.at(url).length})`);
      return this.at(url);
    },
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

// ---------------------------------------------------------------------
// Checking a delivery

// Standard Webhooks verification of one received request with secret;
// returns the parsed payload (throws WebhookVerificationError otherwise).
export function verifyWith(secret, req) {
  return new Webhook(secret).verify(req.body.toString('utf8'), req.headers);
}

// Everything a single delivered request must satisfy: a POST with the
// Standard Webhooks headers, verified with secret against the raw body,
// webhook-id is the event id, the body is the stored event byte for byte,
// and webhook-timestamp is close to the time it was received.
export function checkDelivery(secret, req, { type } = {}) {
  assert.equal(req.method, 'POST');
  const id = req.headers['webhook-id'];
  assert.match(id || '', /^evt_/, `webhook-id: ${id}`);
  assert.match(req.headers['webhook-timestamp'] || '', /^\d+$/);
  assert.match(req.headers['webhook-signature'] || '', /^v1,[A-Za-z0-9+/]{43}=( v1,[A-Za-z0-9+/]{43}=)*$/);
  assert.match(req.headers['content-type'] || '', /^application\/json\b/);
  const ts = Number(req.headers['webhook-timestamp']);
  assert.ok(Math.abs(ts * 1000 - req.receivedAt) < 5000,
    `webhook-timestamp ${ts} is not the time of the attempt (${req.receivedAt})`);
  let payload;
  assert.doesNotThrow(() => { payload = verifyWith(secret, req); },
    `standardwebhooks rejected delivery ${id}`);
  assert.equal(payload.id, id, 'webhook-id equals the event id');
  if (type) assert.equal(payload.type, type);
  const stored = storedBody(id);
  assert.ok(stored.equals(req.body),
    `body differs from the stored event:\n  got    ${req.body}\n  stored ${stored}`);
  try {
    validateSchema('Event', payload);
  } catch (e) {
    contractProblems.push(`webhook body ${payload.type}: ${e.message}`);
  }
  return payload;
}

// The event's text in GET /events equals the delivered body byte for byte.
export async function checkAgainstFeed(key, req) {
  const body = req.body.toString('utf8');
  const payload = JSON.parse(body);
  const { event, pageText } = await feedEvent(key, payload.id, payload.type);
  assert.deepEqual(payload, event, 'body is the event as the feed shows it');
  assert.ok(pageText.includes(body), `the feed page does not contain the delivered text ${body}`);
}

export function headerTs(req) {
  return Number(req.headers['webhook-timestamp']);
}

// The deliverer's pid, from the stack's pid file.
export function delivererPid(varDir) {
  return Number(readFileSync(join(varDir, 'run', 'deliverer.pid'), 'utf8').trim());
}

// The stack's deliverer's lines about an attempt for subscription subId
// that hold what (e.g. '"httpStatus":410').
export function attemptLines(subId, what) {
  return readFileSync(join(process.env.WL_VAR, 'log', 'deliverer.log'), 'utf8').split('\n')
    .filter((l) => l.includes(`"subscriptionId":"${subId}"`) && l.includes(what));
}

