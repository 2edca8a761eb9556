// Rate limits and eligibility gates (SPEC "Limits", "Authentication" 6-8,
// convention 5; DECISIONS "Eligibility, plans and limits", "Errors";
// README "Rate limits").
//
// Limits: fixed one-minute windows aligned to the minute, per key and per
// tenant, reads (GET) and writes (everything else) apart, counted in
// memory shared by every worker of the node.  A refusal is 429
// rate_limited with Retry-After (whole seconds to the end of the window,
// >= 1); every authenticated answer carries RateLimit-Policy and RateLimit.
// Each test pins its requests with X-Test-Now to a minute of its own, so
// the real minute boundary never splits a test's window.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { api, fixture, seed, uniq } from './lib.mjs';
import {
  ALL_SCOPES, assertError, assertOk, assertRateHeaders, countEntries, countEvents, createKey,
  freshMinute, pinned, policyOf, rateLimitOf, tenantSet, walkIn,
} from './util-limits.mjs';

const DEFAULTS = { reads: 600, writes: 120, tenantReads: 3000, tenantWrites: 600 };

// A tenant with these limits and keys k1..kN (every scope, no restriction).
function tenantWith(limits, nKeys = 1) {
  const f = fixture({ limits });
  for (let i = 2; i <= nKeys; i++) {
    f.tenants[0].keys.push({
      ref: `k${i}`, scopes: [...ALL_SCOPES], businesses: [], queues: [], expiresInDays: 365, integrationType: 'api',
    });
  }
  return seed(f);
}

const read = (key, when, path = '/waitlist/businesses') => api('GET', path, { key, headers: pinned(when) });
const write = (refs, key, when, idempotencyKey = uniq('idem')) => api('POST', '/waitlist/entries', {
  key, headers: pinned(when), idempotencyKey, body: walkIn(refs.q1),
});

function assertLimited(res, retryAfter, what) {
  assertError(res, 429, 'rate_limited', what);
  assert.equal(res.headers.get('retry-after'), String(retryAfter), `${what}: Retry-After`);
}

// ---------------------------------------------------------------- reads

test('reads: the key limit is hit exactly at readsPerMinute, 429 rate_limited with Retry-After to the end of the minute', async () => {
  const refs = tenantWith({ readsPerMinute: 5 });
  const m = freshMinute();
  for (let i = 0; i < 5; i++) {
    const res = await read(refs.k1, m.at(10));
    assertOk(res, 200, `read ${i + 1} of 5`);
    assertRateHeaders(res, { keyQ: 5, tenantQ: DEFAULTS.tenantReads, name: 'key', r: 4 - i, t: 50 }, `read ${i + 1}`);
  }
  const refused = await read(refs.k1, m.at(10));
  assertLimited(refused, 50, 'read 6 at :10');
  assertRateHeaders(refused, { keyQ: 5, tenantQ: DEFAULTS.tenantReads, name: 'key', r: 0, t: 50 }, 'read 6');
  // Retry-After counts whole seconds to the end of the window, at least 1.
  assertLimited(await read(refs.k1, m.at(30)), 30, 'read at :30');
  assertLimited(await read(refs.k1, m.at(45.2)), 15, 'read at :45.2');
  assertLimited(await read(refs.k1, m.at(59.5)), 1, 'read at :59.5');
  assertLimited(await read(refs.k1, m.at(59.999)), 1, 'read at :59.999');
  assertLimited(await read(refs.k1, m.at(0)), 60, 'read at :00.000');
  // The next minute is a new window with the whole budget.
  const next = await read(refs.k1, m.at(5, 1));
  assertOk(next, 200, 'first read of the next minute');
  assertRateHeaders(next, { keyQ: 5, tenantQ: DEFAULTS.tenantReads, name: 'key', r: 4, t: 55 }, 'next minute');
});

test('GET /me counts as a read and is limited like any other read', async () => {
  const refs = tenantWith({ readsPerMinute: 3 });
  const m = freshMinute();
  assertOk(await read(refs.k1, m.at(10), '/me'));
  assertOk(await read(refs.k1, m.at(10), '/waitlist/businesses'));
  const third = await read(refs.k1, m.at(10), '/me');
  assertOk(third);
  assertRateHeaders(third, { keyQ: 3, tenantQ: DEFAULTS.tenantReads, name: 'key', r: 0, t: 50 }, 'GET /me');
  assertLimited(await read(refs.k1, m.at(10), '/me'), 50, 'GET /me over the limit');
  assertLimited(await read(refs.k1, m.at(10), `/waitlist/queues/${refs.q1}`), 50, 'GET queue over the limit');
  // Writes keep their own budget.
  assertOk(await write(refs, refs.k1, m.at(10)), 201, 'write after reads ran out');
});

test('two keys of one tenant each have their own key budget', async () => {
  const refs = tenantWith({ readsPerMinute: 3, tenantReadsPerMinute: 100 }, 2);
  const m = freshMinute();
  for (const k of [refs.k1, refs.k2]) {
    for (let i = 0; i < 3; i++) {
      const res = await read(k, m.at(20));
      assertOk(res, 200, `key ${k === refs.k1 ? 1 : 2} read ${i + 1}`);
      assertRateHeaders(res, { keyQ: 3, tenantQ: 100, name: 'key', r: 2 - i, t: 40 });
    }
    assertLimited(await read(k, m.at(20)), 40, `key ${k === refs.k1 ? 1 : 2} read 4`);
  }
});

test('the tenant read budget binds across keys when it is lower than the sum of the key limits', async () => {
  const refs = tenantWith({ readsPerMinute: 4, tenantReadsPerMinute: 6 }, 3);
  const m = freshMinute();
  for (let i = 0; i < 4; i++) {
    const res = await read(refs.k1, m.at(10));
    assertOk(res, 200, `k1 read ${i + 1}`);
    assertRateHeaders(res, { keyQ: 4, tenantQ: 6, name: 'key', r: 3 - i, t: 50 }, `k1 read ${i + 1}`);
  }
  assertLimited(await read(refs.k1, m.at(10)), 50, 'k1 read 5 (key limit)');
  // k2 gets what is left of the tenant budget: 6 - 4 = 2.
  let res = await read(refs.k2, m.at(10));
  assertOk(res, 200, 'k2 read 1');
  assertRateHeaders(res, { keyQ: 4, tenantQ: 6, name: 'tenant', r: 1, t: 50 }, 'k2 read 1');
  res = await read(refs.k2, m.at(10));
  assertOk(res, 200, 'k2 read 2');
  assertRateHeaders(res, { keyQ: 4, tenantQ: 6, name: 'tenant', r: 0, t: 50 }, 'k2 read 2');
  res = await read(refs.k2, m.at(10));
  assertLimited(res, 50, 'k2 read 3 (tenant limit)');
  assertRateHeaders(res, { keyQ: 4, tenantQ: 6, name: 'tenant', r: 0, t: 50 }, 'k2 refused');
  // k3 has not used its key budget, yet the tenant's is spent.
  assertLimited(await read(refs.k3, m.at(10)), 50, 'k3 first read (tenant limit)');
  assertLimited(await read(refs.k3, m.at(10), '/me'), 50, 'k3 GET /me (tenant limit)');
  // Writes are another budget.
  assertOk(await write(refs, refs.k3, m.at(10)), 201, 'k3 write');
  // The next minute the tenant budget is whole again.
  assertOk(await read(refs.k3, m.at(1, 1)), 200, 'k3 read next minute');
});

test('refused requests do not consume the budget', async () => {
  const refs = tenantWith({ readsPerMinute: 3, tenantReadsPerMinute: 5 }, 2);
  const m = freshMinute();
  for (let i = 0; i < 3; i++) assertOk(await read(refs.k1, m.at(10)), 200, `k1 read ${i + 1}`);
  // Ten refusals of k1 must not eat into the tenant's remaining 2.
  for (let i = 0; i < 10; i++) assertLimited(await read(refs.k1, m.at(10)), 50, `k1 refused ${i + 1}`);
  const a = await read(refs.k2, m.at(10));
  assertOk(a, 200, 'k2 read 1 after k1 refusals');
  assertRateHeaders(a, { keyQ: 3, tenantQ: 5, name: 'tenant', r: 1, t: 50 }, 'k2 read 1');
  assertOk(await read(refs.k2, m.at(10)), 200, 'k2 read 2 after k1 refusals');
  assertLimited(await read(refs.k2, m.at(10)), 50, 'k2 read 3');
  // Nor the next window's.
  const next = await read(refs.k1, m.at(10, 1));
  assertOk(next, 200);
  assertRateHeaders(next, { keyQ: 3, tenantQ: 5, name: 'key', r: 2, t: 50 }, 'k1 next minute');
});

test('another tenant is unaffected by a tenant at its limits', async () => {
  const a = tenantWith({ readsPerMinute: 2, tenantReadsPerMinute: 2, writesPerMinute: 1, tenantWritesPerMinute: 1 });
  const b = tenantWith({ readsPerMinute: 2, tenantReadsPerMinute: 2, writesPerMinute: 1, tenantWritesPerMinute: 1 });
  const m = freshMinute();
  assertOk(await read(a.k1, m.at(10)));
  assertOk(await read(a.k1, m.at(10)));
  assertLimited(await read(a.k1, m.at(10)), 50, 'tenant A read 3');
  assertOk(await write(a, a.k1, m.at(10)), 201);
  assertLimited(await write(a, a.k1, m.at(10)), 50, 'tenant A write 2');
  const r = await read(b.k1, m.at(10));
  assertOk(r, 200, 'tenant B read');
  assertRateHeaders(r, { keyQ: 2, tenantQ: 2, name: 'key', r: 1, t: 50 }, 'tenant B read');
  const w = await write(b, b.k1, m.at(10));
  assertOk(w, 201, 'tenant B write');
  assertRateHeaders(w, { keyQ: 1, tenantQ: 1, name: 'key', r: 0, t: 50 }, 'tenant B write');
});

// --------------------------------------------------------------- writes

test('writes: the key limit is hit exactly at writesPerMinute; nothing is written by a refused write', async () => {
  const refs = tenantWith({ writesPerMinute: 3 });
  const m = freshMinute();
  for (let i = 0; i < 3; i++) {
    const res = await write(refs, refs.k1, m.at(10));
    assertOk(res, 201, `write ${i + 1} of 3`);
    assertRateHeaders(res, { keyQ: 3, tenantQ: DEFAULTS.tenantWrites, name: 'key', r: 2 - i, t: 50 }, `write ${i + 1}`);
  }
  const entries = countEntries(refs.t1);
  const events = countEvents(refs.t1);
  assert.equal(entries, 3);
  const refused = await write(refs, refs.k1, m.at(10));
  assertLimited(refused, 50, 'write 4');
  assertRateHeaders(refused, { keyQ: 3, tenantQ: DEFAULTS.tenantWrites, name: 'key', r: 0, t: 50 }, 'write 4');
  // Other write methods share the budget.
  const entryId = (await read(refs.k1, m.at(10), '/waitlist/entries')).json.entries[0].id;
  const patch = await api('PATCH', `/waitlist/entries/${entryId}`, {
    key: refs.k1, headers: pinned(m.at(10)), idempotencyKey: uniq('idem'), body: { expectedVersion: 1, notes: 'x' },
  });
  assertLimited(patch, 50, 'PATCH over the write limit');
  assert.equal(countEntries(refs.t1), entries, 'a refused write created an entry');
  assert.equal(countEvents(refs.t1), events, 'a refused write emitted an event');
  // Reads are untouched by the writes.
  const r = await read(refs.k1, m.at(10));
  assertOk(r);
  assertRateHeaders(r, { keyQ: DEFAULTS.reads, tenantQ: DEFAULTS.tenantReads, name: 'key', r: DEFAULTS.reads - 2, t: 50 }, 'read after writes');
});

test('reads exhausted, writes still go through, and the other way round', async () => {
  const refs = tenantWith({ readsPerMinute: 2, writesPerMinute: 2 });
  const m = freshMinute();
  assertOk(await read(refs.k1, m.at(15)));
  assertOk(await read(refs.k1, m.at(15)));
  assertLimited(await read(refs.k1, m.at(15)), 45, 'read 3');
  assertOk(await write(refs, refs.k1, m.at(15)), 201, 'write 1 with reads exhausted');
  assertOk(await write(refs, refs.k1, m.at(15)), 201, 'write 2 with reads exhausted');
  assertLimited(await write(refs, refs.k1, m.at(15)), 45, 'write 3');
  // The next minute: writes exhausted first, reads still fine.
  assertOk(await write(refs, refs.k1, m.at(15, 1)), 201);
  assertOk(await write(refs, refs.k1, m.at(15, 1)), 201);
  assertLimited(await write(refs, refs.k1, m.at(15, 1)), 45, 'write 3 of the next minute');
  assertOk(await read(refs.k1, m.at(15, 1)), 200, 'read with writes exhausted');
});

test('the tenant write budget binds across keys', async () => {
  const refs = tenantWith({ writesPerMinute: 3, tenantWritesPerMinute: 4 }, 2);
  const m = freshMinute();
  for (let i = 0; i < 3; i++) assertOk(await write(refs, refs.k1, m.at(10)), 201, `k1 write ${i + 1}`);
  assertLimited(await write(refs, refs.k1, m.at(10)), 50, 'k1 write 4 (key limit)');
  const w = await write(refs, refs.k2, m.at(10));
  assertOk(w, 201, 'k2 write 1');
  assertRateHeaders(w, { keyQ: 3, tenantQ: 4, name: 'tenant', r: 0, t: 50 }, 'k2 write 1');
  assertLimited(await write(refs, refs.k2, m.at(10)), 50, 'k2 write 2 (tenant limit)');
  assert.equal(countEntries(refs.t1), 4);
});

test('a write refused with 429 is not stored under its Idempotency-Key: the retry executes', async () => {
  const refs = tenantWith({ writesPerMinute: 1 });
  const m = freshMinute();
  assertOk(await write(refs, refs.k1, m.at(10)), 201);
  const idem = uniq('idem');
  assertLimited(await write(refs, refs.k1, m.at(10), idem), 50, 'write 2');
  const retry = await write(refs, refs.k1, m.at(10, 1), idem);
  assertOk(retry, 201, 'the retry in the next minute');
  assert.equal(retry.headers.get('idempotency-replayed'), null, 'the 429 was replayed from the idempotency store');
  assert.equal(countEntries(refs.t1), 2);
});

// ---------------------------------------------------------- concurrency

test('50 concurrent reads against a limit of 30: exactly 30 pass and 20 are refused', async () => {
  const refs = tenantWith({ readsPerMinute: 30 });
  const m = freshMinute();
  const all = await Promise.all(Array.from({ length: 50 }, () => read(refs.k1, m.at(10))));
  const ok = all.filter((r) => r.status === 200);
  const refused = all.filter((r) => r.status === 429);
  assert.equal(ok.length, 30, `statuses: ${all.map((r) => r.status).join(',')}`);
  assert.equal(refused.length, 20);
  for (const r of refused) assertLimited(r, 50, 'concurrent refusal');
  // Every admitted request saw a distinct count: remaining 29 .. 0 once each.
  const remaining = ok.map((r) => rateLimitOf(r)?.r).sort((x, y) => x - y);
  assert.deepEqual(remaining, Array.from({ length: 30 }, (_, i) => i), 'remaining values of the admitted requests');
  assertLimited(await read(refs.k1, m.at(10)), 50, 'one more afterwards');
});

test('concurrent reads of three keys against the tenant limit: exactly the tenant limit passes', async () => {
  const refs = tenantWith({ readsPerMinute: 100, tenantReadsPerMinute: 40 }, 3);
  const m = freshMinute();
  const jobs = [];
  for (const k of [refs.k1, refs.k2, refs.k3]) for (let i = 0; i < 25; i++) jobs.push(read(k, m.at(10)));
  const all = await Promise.all(jobs);
  assert.equal(all.filter((r) => r.status === 200).length, 40, `statuses: ${all.map((r) => r.status).join(',')}`);
  assert.equal(all.filter((r) => r.status === 429).length, 35);
});

test('concurrent writes against writesPerMinute: exactly the limit is written', async () => {
  const refs = tenantWith({ writesPerMinute: 10 });
  const m = freshMinute();
  const all = await Promise.all(Array.from({ length: 25 }, () => write(refs, refs.k1, m.at(10))));
  assert.equal(all.filter((r) => r.status === 201).length, 10, `statuses: ${all.map((r) => r.status).join(',')}`);
  for (const r of all.filter((x) => x.status !== 201)) assertLimited(r, 50, 'concurrent write refusal');
  assert.equal(countEntries(refs.t1), 10);
});

// -------------------------------------------------------------- headers

test('RateLimit-Policy and RateLimit are on every authenticated answer, errors included, and count down', async () => {
  const refs = tenantWith({ readsPerMinute: 10, tenantReadsPerMinute: 16, writesPerMinute: 4, tenantWritesPerMinute: 8 });
  const readOnly = createKey(refs.t1, ['events:read']);
  const m = freshMinute();
  const R = { keyQ: 10, tenantQ: 16, t: 50 };
  const W = { keyQ: 4, tenantQ: 8, t: 50 };
  let res = await read(refs.k1, m.at(10), '/me');
  assertOk(res);
  assertRateHeaders(res, { ...R, name: 'key', r: 9 }, 'GET /me');
  res = await read(refs.k1, m.at(10), '/waitlist/queues/que_doesnotexist');
  assertError(res, 404, 'not_found');
  assertRateHeaders(res, { ...R, name: 'key', r: 8 }, '404');
  res = await read(refs.k1, m.at(10), '/waitlist/businesses?limit=0');
  assertError(res, 400, 'validation_failed');
  assertRateHeaders(res, { ...R, name: 'key', r: 7 }, '400');
  res = await read(readOnly.key, m.at(10), '/waitlist/businesses');
  assertError(res, 403, 'insufficient_scope');
  assertRateHeaders(res, { ...R, name: 'key', r: 9 }, '403 of another key');
  res = await write(refs, refs.k1, m.at(10));
  assertOk(res, 201);
  assertRateHeaders(res, { ...W, name: 'key', r: 3 }, 'POST 201');
  res = await api('POST', '/waitlist/entries', {
    key: refs.k1, headers: pinned(m.at(10)), idempotencyKey: uniq('idem'), body: { queueId: refs.q1 },
  });
  assertError(res, 400, 'validation_failed');
  assertRateHeaders(res, { ...W, name: 'key', r: 2 }, 'POST 400');
  // DELETE is a write too.
  res = await api('DELETE', '/webhooks/subscriptions/whs_doesnotexist', {
    key: refs.k1, headers: pinned(m.at(10)), idempotencyKey: uniq('idem'),
  });
  assertError(res, 404, 'not_found');
  assertRateHeaders(res, { ...W, name: 'key', r: 1 }, 'DELETE 404');
  // The reset counts down within the window (whole seconds, rounded up).
  res = await read(refs.k1, m.at(45.2), '/me');
  assertRateHeaders(res, { ...R, name: 'key', r: 6, t: 15 }, 'GET /me at :45.2');
  // The tenant's remaining is reported when it is the lower one.
  for (let i = 0; i < 6; i++) assertOk(await read(readOnly.key, m.at(50), '/me'));
  // Reads now: k1 5 of 10 (5 left), tenant 12 of 16 (4 left).
  res = await read(refs.k1, m.at(50), '/me');
  assertRateHeaders(res, { ...R, name: 'tenant', r: 4, t: 10 }, 'tenant lower than key');
});

test('RateLimit-Policy follows the tenant limits at once, and a lowered limit applies within the window', async () => {
  const refs = tenantWith({ readsPerMinute: 10 });
  const m = freshMinute();
  for (let i = 0; i < 5; i++) assertOk(await read(refs.k1, m.at(10)));
  tenantSet(refs.t1, '--limit', 'readsPerMinute=3', '--limit', 'tenantReadsPerMinute=50');
  const res = await read(refs.k1, m.at(10));
  assertLimited(res, 50, 'read 6 after the limit fell to 3');
  const p = policyOf(res);
  assert.equal(p?.key, 3, `RateLimit-Policy ${p?.raw}`);
  assert.equal(p?.tenant, 50, `RateLimit-Policy ${p?.raw}`);
  assert.equal(rateLimitOf(res)?.r, 0);
  tenantSet(refs.t1, '--limit', 'readsPerMinute=7');
  const ok = await read(refs.k1, m.at(10));
  assertOk(ok, 200, 'read 6 after the limit rose to 7');
  assertRateHeaders(ok, { keyQ: 7, tenantQ: 50, name: 'key', r: 1, t: 50 });
});

// ---------------------------------------------------------- eligibility

test('eligibility order when two reasons apply: launch flag, then state, email, billing, plan', async () => {
  const cases = [
    { set: ['--public-api', 'off', '--state', 'disabled'], status: 403, reason: 'launch_disabled' },
    { set: ['--public-api', 'off', '--plan', 'none'], status: 403, reason: 'launch_disabled' },
    { set: ['--state', 'disabled', '--email-verified', 'off'], status: 403, reason: 'disabled_account' },
    { set: ['--state', 'demo', '--billing', 'off'], status: 403, reason: 'demo_account' },
    { set: ['--state', 'demo', '--plan', 'starter'], status: 403, reason: 'demo_account' },
    { set: ['--email-verified', 'off', '--billing', 'off'], status: 403, reason: 'email_verification_required' },
    { set: ['--email-verified', 'off', '--plan', 'none'], status: 403, reason: 'email_verification_required' },
    { set: ['--billing', 'off', '--plan', 'none'], status: 402, reason: 'billing_unavailable' },
    { set: ['--billing', 'off', '--plan', 'starter'], status: 402, reason: 'billing_unavailable' },
  ];
  for (const c of cases) {
    const refs = seed(fixture());
    tenantSet(refs.t1, ...c.set);
    const me = assertOk(await api('GET', '/me', { key: refs.k1 }));
    assert.equal(me.capabilities.unavailableReason, c.reason, c.set.join(' '));
    assertError(await api('GET', '/waitlist/businesses', { key: refs.k1 }), c.status, c.reason, c.set.join(' '));
  }
});

test('eligibility is checked before scope: a key without the scope gets the eligibility code', async () => {
  const refs = seed(fixture());
  const k = createKey(refs.t1, ['events:read']);
  assertError(await api('GET', '/waitlist/businesses', { key: k.key }), 403, 'insufficient_scope', 'eligible tenant');
  tenantSet(refs.t1, '--plan', 'starter');
  assertError(await api('GET', '/waitlist/businesses', { key: k.key }), 402, 'upgrade_required', 'plan starter');
  tenantSet(refs.t1, '--plan', 'pro', '--state', 'disabled');
  assertError(await api('GET', '/waitlist/businesses', { key: k.key }), 403, 'disabled_account', 'state disabled');
});

test('rate limits still apply to an ineligible tenant, GET /me included', async () => {
  const refs = tenantWith({ readsPerMinute: 2 });
  tenantSet(refs.t1, '--billing', 'off');
  const m = freshMinute();
  const me = assertOk(await read(refs.k1, m.at(10), '/me'));
  assert.equal(me.capabilities.unavailableReason, 'billing_unavailable');
  assertError(await read(refs.k1, m.at(10)), 402, 'billing_unavailable', 'read 2');
  assertLimited(await read(refs.k1, m.at(10), '/me'), 50, 'GET /me 3');
  assertLimited(await read(refs.k1, m.at(10)), 50, 'read 4');
});
