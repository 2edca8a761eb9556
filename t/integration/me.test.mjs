// GET /me: the Connection object (SPEC "Connection"), its limits
// (DECISIONS defaults, fixture overrides), and the eligibility rules it
// reports while every other route refuses (DECISIONS "Eligibility, plans
// and limits").

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { CTL_ARGV, api, fixture, seed, sql } from './lib.mjs';
import {
  ALL_SCOPES, DEFAULT_LIMITS, assertError, assertKeys, assertOk, createKey, tenantSet,
} from './util-foundation.mjs';

const CAPABILITY_KEYS = [
  'publicApiEnabled', 'zapierEnabled', 'webhooksEnabled', 'canManageIntegrations',
  'unavailableReason', 'limits',
];
const REASONS = [
  'launch_disabled', 'billing_unavailable', 'disabled_account', 'demo_account',
  'subscription_required', 'upgrade_required', 'email_verification_required',
  'management_forbidden',
];

async function me(key) {
  return assertOk(await api('GET', '/me', { key }));
}

// The parts of the Connection every answer must have, whatever the key.
function assertConnectionShape(c) {
  for (const k of ['integrationType', 'tenant', 'scopes', 'restrictions', 'capabilities', 'limits']) {
    assert.ok(k in c, `${k} missing from the Connection`);
  }
  assert.ok(['api', 'zapier'].includes(c.integrationType), c.integrationType);
  assertKeys(c.tenant, ['id', 'name'], 'tenant');
  assert.equal(typeof c.tenant.id, 'string');
  assert.equal(typeof c.tenant.name, 'string');
  assert.ok(Array.isArray(c.scopes));
  for (const s of c.scopes) assert.ok(ALL_SCOPES.includes(s), `unknown scope ${s}`);
  assertKeys(c.restrictions, ['businessIds', 'queueIds'], 'restrictions');
  assert.ok(Array.isArray(c.restrictions.businessIds));
  assert.ok(Array.isArray(c.restrictions.queueIds));
  const cap = c.capabilities;
  // migrationExpiresAt is the one optional capability (string or null).
  const extra = Object.keys(cap).filter((k) => !CAPABILITY_KEYS.includes(k));
  assert.deepEqual(extra.filter((k) => k !== 'migrationExpiresAt'), [], 'unexpected capability fields');
  for (const k of CAPABILITY_KEYS) assert.ok(k in cap, `capabilities.${k} missing`);
  if ('migrationExpiresAt' in cap) {
    assert.ok(cap.migrationExpiresAt === null || typeof cap.migrationExpiresAt === 'string');
  }
  for (const k of ['publicApiEnabled', 'zapierEnabled', 'webhooksEnabled', 'canManageIntegrations']) {
    assert.equal(typeof cap[k], 'boolean', `capabilities.${k}`);
  }
  assert.ok(cap.unavailableReason === null || REASONS.includes(cap.unavailableReason),
    `unavailableReason ${cap.unavailableReason}`);
  assertKeys(c.limits, Object.keys(DEFAULT_LIMITS), 'limits');
  for (const [k, v] of Object.entries(c.limits)) assert.equal(typeof v, 'number', `limits.${k}`);
  assert.deepEqual(cap.limits, c.limits, 'capabilities.limits differs from limits');
}

test('GET /me describes the connection of a fully entitled key', async () => {
  const f = fixture();
  const refs = seed(f);
  const c = await me(refs.k1);
  assertConnectionShape(c);
  assert.equal(c.integrationType, 'api');
  assert.deepEqual(c.tenant, { id: refs.t1, name: f.tenants[0].name });
  assert.deepEqual(c.scopes, ALL_SCOPES);
  assert.deepEqual(c.restrictions, { businessIds: [], queueIds: [] });
  assert.equal(c.capabilities.publicApiEnabled, true);
  assert.equal(c.capabilities.webhooksEnabled, true);
  assert.equal(c.capabilities.zapierEnabled, false);
  assert.equal(c.capabilities.unavailableReason, null);
  assert.deepEqual(c.limits, DEFAULT_LIMITS);
  assert.deepEqual(c.capabilities.limits, DEFAULT_LIMITS);
});

test('GET /me lists scopes in canonical order whatever order they were granted in', async () => {
  const refs = seed(fixture());
  const k = createKey(refs.t1, ['analytics:read', 'events:read', 'waitlist:read', 'guest:read']);
  const c = await me(k.key);
  assert.deepEqual(c.scopes, ['waitlist:read', 'guest:read', 'events:read', 'analytics:read']);
});

test('GET /me needs no scope: a key without any scope still identifies itself', async () => {
  const f = fixture();
  f.tenants[0].keys.push({ ref: 'k0', scopes: [], businesses: [], queues: [] });
  const refs = seed(f);
  const c = await me(refs.k0);
  assertConnectionShape(c);
  assert.deepEqual(c.scopes, []);
  assert.equal(c.tenant.id, refs.t1);
});

test('GET /me reports the key restrictions', async () => {
  const f = fixture();
  f.tenants[0].keys.push(
    { ref: 'kb', scopes: ['waitlist:read'], businesses: ['b1'], queues: [] },
    { ref: 'kq', scopes: ['waitlist:read'], businesses: [], queues: ['q1'] },
  );
  const refs = seed(f);
  const b = await me(refs.kb);
  assert.deepEqual(b.restrictions, { businessIds: [refs.b1], queueIds: [] });
  assert.deepEqual(b.scopes, ['waitlist:read']);
  const q = await me(refs.kq);
  assert.deepEqual(q.restrictions, { businessIds: [], queueIds: [refs.q1] });
});

test('GET /me reports a zapier key and the zapier and webhook entitlements', async () => {
  const f = fixture({ zapier: true, webhooks: false });
  f.tenants[0].keys.push({
    ref: 'kz', scopes: ['waitlist:read'], businesses: [], queues: [], integrationType: 'zapier',
  });
  const refs = seed(f);
  const z = await me(refs.kz);
  assertConnectionShape(z);
  assert.equal(z.integrationType, 'zapier');
  assert.equal(z.capabilities.zapierEnabled, true);
  assert.equal(z.capabilities.webhooksEnabled, false);
  assert.equal(z.capabilities.publicApiEnabled, true);
  assert.equal(z.capabilities.unavailableReason, null);
  const a = await me(refs.k1);
  assert.equal(a.integrationType, 'api');
});

test('GET /me limits take the fixture overrides and keep the other defaults', async () => {
  const refs = seed(fixture({ limits: { readsPerMinute: 1234, activeKeys: 3, maximumKeyExpiryDays: 400 } }));
  const c = await me(refs.k1);
  const expected = { ...DEFAULT_LIMITS, readsPerMinute: 1234, activeKeys: 3, maximumKeyExpiryDays: 400 };
  assert.deepEqual(c.limits, expected);
  assert.deepEqual(c.capabilities.limits, expected);
});

test('GET /me limits follow waitlistctl tenant set --limit at once', async () => {
  const refs = seed(fixture());
  assert.deepEqual((await me(refs.k1)).limits, DEFAULT_LIMITS);
  tenantSet(refs.t1, '--limit', 'writesPerMinute=77', '--limit', 'webhookSubscriptions=4');
  const c = await me(refs.k1);
  const expected = { ...DEFAULT_LIMITS, writesPerMinute: 77, webhookSubscriptions: 4 };
  assert.deepEqual(c.limits, expected);
  assert.deepEqual(c.capabilities.limits, expected);
});

test('waitlistctl takes --config anywhere (also as --config=FILE) and several NAME=N after one --limit', async () => {
  const refs = seed(fixture());
  const [bin, flag, conf] = CTL_ARGV;
  assert.equal(flag, '--config');
  const run = (...args) => {
    const r = spawnSync(bin, args, { encoding: 'utf8', env: { ...process.env, WAITLIST_CONFIG: '/nonexistent.conf' } });
    assert.equal(r.status, 0, `${args.join(' ')}: ${r.stderr}`);
  };
  run('tenant', 'set', refs.t1, '--config', conf, '--limit', 'writesPerMinute=55', 'activeKeys=7');
  run('tenant', 'set', refs.t1, `--config=${conf}`, '--limit', 'webhookSubscriptions=3', '--plan', 'pro');
  const expected = { ...DEFAULT_LIMITS, writesPerMinute: 55, activeKeys: 7, webhookSubscriptions: 3 };
  assert.deepEqual((await me(refs.k1)).limits, expected);
  const missing = spawnSync(bin, ['purge', '--config'], { encoding: 'utf8' });
  assert.equal(missing.status, 2, missing.stderr);
  assert.match(missing.stderr, /--config needs a file/);
});

test('GET /me returns only the calling connection, never another tenant', async () => {
  const a = seed(fixture());
  const b = seed(fixture());
  const ca = await me(a.k1);
  const cb = await me(b.k1);
  assert.equal(ca.tenant.id, a.t1);
  assert.equal(cb.tenant.id, b.t1);
  assert.notEqual(ca.tenant.id, cb.tenant.id);
});

// Each reason: how to cause it, the status and code of other routes.
const INELIGIBLE = [
  { reason: 'launch_disabled', status: 403, set: ['--public-api', 'off'] },
  { reason: 'disabled_account', status: 403, set: ['--state', 'disabled'] },
  { reason: 'demo_account', status: 403, set: ['--state', 'demo'] },
  { reason: 'email_verification_required', status: 403, set: ['--email-verified', 'off'] },
  { reason: 'billing_unavailable', status: 402, set: ['--billing', 'off'] },
  { reason: 'subscription_required', status: 402, set: ['--plan', 'none'] },
  { reason: 'upgrade_required', status: 402, set: ['--plan', 'starter'] },
];

test('an account state the service does not know, written by hand, counts as disabled', async () => {
  const refs = seed(fixture());
  assertOk(await api('GET', '/waitlist/businesses', { key: refs.k1 }));
  sql(`UPDATE tenants SET state = 'Suspended' WHERE id = '${refs.t1}'`);
  assert.equal((await me(refs.k1)).capabilities.unavailableReason, 'disabled_account');
  assertError(await api('GET', '/waitlist/businesses', { key: refs.k1 }), 403, 'disabled_account');
});

for (const { reason, status, set } of INELIGIBLE) {
  test(`${reason}: GET /me answers 200 with the reason, other routes ${status} ${reason}`, async () => {
    const refs = seed(fixture());
    // Entitled first, so that a cached answer would show.
    assertOk(await api('GET', '/waitlist/businesses', { key: refs.k1 }));
    tenantSet(refs.t1, ...set);
    const c = await me(refs.k1);
    assertConnectionShape(c);
    assert.equal(c.capabilities.unavailableReason, reason);
    assert.equal(c.capabilities.publicApiEnabled, false);
    assert.equal(c.tenant.id, refs.t1);
    assert.deepEqual(c.limits, DEFAULT_LIMITS);
    // Eligibility applies to every request, reads and writes alike, and
    // the refusal still carries the rate-limit headers.
    const routes = [
      '/waitlist/businesses', `/waitlist/businesses/${refs.b1}`,
      `/waitlist/queues?businessId=${refs.b1}`, `/waitlist/queues/${refs.q1}`,
      '/waitlist/entries', '/events', `/analytics/queues/${refs.q1}/summary`,
      '/webhooks/subscriptions',
    ];
    for (const path of routes) {
      const res = await api('GET', path, { key: refs.k1 });
      assertError(res, status, reason, `GET ${path}`);
      assert.ok(res.headers.get('ratelimit-policy'), `GET ${path}: RateLimit-Policy missing`);
    }
    assertError(await api('POST', '/waitlist/entries', {
      key: refs.k1, idempotencyKey: `idem-${reason}`, body: { queueId: refs.q1, fullName: 'Ada' },
    }), status, reason, 'POST /waitlist/entries');
    assert.deepEqual(sql(`SELECT COUNT(*) FROM entries WHERE tenant_id = '${refs.t1}'`), [['0']],
      'an ineligible tenant wrote an entry');
  });
}

test('the same reasons come from the fixture as from tenant set', async () => {
  const refs = seed(fixture({ publicApi: false }));
  assert.equal((await me(refs.k1)).capabilities.unavailableReason, 'launch_disabled');
  const d = seed(fixture({ state: 'demo' }));
  assert.equal((await me(d.k1)).capabilities.unavailableReason, 'demo_account');
  const p = seed(fixture({ plan: 'none' }));
  assert.equal((await me(p.k1)).capabilities.unavailableReason, 'subscription_required');
  assertError(await api('GET', '/waitlist/businesses', { key: p.k1 }), 402, 'subscription_required');
});

test('every API plan is eligible: pro, business, enterprise, premium', async () => {
  const refs = seed(fixture());
  for (const plan of ['business', 'enterprise', 'premium', 'pro']) {
    tenantSet(refs.t1, '--plan', plan);
    const c = await me(refs.k1);
    assert.equal(c.capabilities.unavailableReason, null, plan);
    assert.equal(c.capabilities.publicApiEnabled, true, plan);
    assertOk(await api('GET', '/waitlist/businesses', { key: refs.k1 }));
  }
});

test('eligibility reasons are checked in order: launch, state, email, billing, plan', async () => {
  const refs = seed(fixture());
  const reason = async () => (await me(refs.k1)).capabilities.unavailableReason;
  // Everything wrong at once: the launch flag wins.
  tenantSet(refs.t1, '--public-api', 'off', '--state', 'disabled', '--email-verified', 'off',
    '--billing', 'off', '--plan', 'starter');
  assert.equal(await reason(), 'launch_disabled');
  tenantSet(refs.t1, '--public-api', 'on');
  assert.equal(await reason(), 'disabled_account');
  tenantSet(refs.t1, '--state', 'demo');
  assert.equal(await reason(), 'demo_account');
  assertError(await api('GET', '/waitlist/businesses', { key: refs.k1 }), 403, 'demo_account');
  tenantSet(refs.t1, '--state', 'active');
  assert.equal(await reason(), 'email_verification_required');
  tenantSet(refs.t1, '--email-verified', 'on');
  assert.equal(await reason(), 'billing_unavailable');
  assertError(await api('GET', '/waitlist/businesses', { key: refs.k1 }), 402, 'billing_unavailable');
  tenantSet(refs.t1, '--billing', 'on');
  assert.equal(await reason(), 'upgrade_required');
  tenantSet(refs.t1, '--plan', 'none');
  assert.equal(await reason(), 'subscription_required');
  tenantSet(refs.t1, '--plan', 'enterprise');
  assert.equal(await reason(), null);
  assertOk(await api('GET', '/waitlist/businesses', { key: refs.k1 }));
});

test('restoring eligibility restores access at once', async () => {
  const refs = seed(fixture());
  tenantSet(refs.t1, '--public-api', 'off');
  assertError(await api('GET', '/waitlist/businesses', { key: refs.k1 }), 403, 'launch_disabled');
  tenantSet(refs.t1, '--public-api', 'on');
  const c = await me(refs.k1);
  assert.equal(c.capabilities.unavailableReason, null);
  assert.equal(c.capabilities.publicApiEnabled, true);
  assertOk(await api('GET', '/waitlist/businesses', { key: refs.k1 }));
});

test('an ineligible tenant does not affect another tenant', async () => {
  const a = seed(fixture());
  const b = seed(fixture());
  tenantSet(a.t1, '--billing', 'off');
  assertError(await api('GET', '/waitlist/businesses', { key: a.k1 }), 402, 'billing_unavailable');
  assert.equal((await me(b.k1)).capabilities.unavailableReason, null);
  assertOk(await api('GET', '/waitlist/businesses', { key: b.k1 }));
});

test('GET /me refuses other methods with 405 and Allow: GET', async () => {
  const refs = seed(fixture());
  for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
    const res = await api(method, '/me', { key: refs.k1, body: method === 'DELETE' ? undefined : {} });
    assertError(res, 405, 'method_not_allowed');
    assert.equal(res.headers.get('allow'), 'GET', method);
  }
});
