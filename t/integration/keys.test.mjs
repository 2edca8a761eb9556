// Key lifecycle and the guest allowance (SPEC "Authentication" 2, "Limits",
// POST /waitlist/entries rule 6; DECISIONS "Identifiers and formats",
// "Eligibility, plans and limits", "Errors"; OPERATIONS "waitlistctl").
//
// waitlistctl key create: expiry defaults to the tenant's
// defaultKeyExpiryDays and may not exceed maximumKeyExpiryDays; at most
// activeKeys unrevoked, unexpired keys per tenant; errors exit non-zero
// with a message on stderr.  Expired and revoked keys are 401 with their
// codes.  Guests per calendar month are capped by the guest allowance
// (402 guest_allowance_exceeded, nothing written).

import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import {
  CTL_ARGV, api, businessCopy, ctl, ctlFail, fixture, running, seed, sleep, sql, sqlSession, uniq,
} from './lib.mjs';
import {
  ALL_SCOPES, DAY_MS, assertError, assertOk, countEntries, countEvents, createKey, freshMinute, pinned,
  sha256hex, tenantSet, walkIn,
} from './util-limits.mjs';

// waitlistctl run without blocking the event loop; resolves to its exit
// code and stderr.
function ctlAsync(...args) {
  return new Promise((resolve) => {
    const p = spawn(CTL_ARGV[0], [...CTL_ARGV.slice(1), ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    p.stderr.on('data', (d) => { err += d; });
    p.on('close', (code) => resolve({ code, err }));
  });
}

const keyCount = (tenantId) => Number(sql(`SELECT COUNT(*) FROM api_keys WHERE tenant_id = '${tenantId}'`)[0][0]);
const listed = (tenantId, id) => ctl('key', 'list', '--tenant', tenantId).keys.find((k) => k.id === id);

test('a key created without --expires-in-days expires after defaultKeyExpiryDays (90 by default)', async () => {
  const refs = seed(fixture());
  const me = assertOk(await api('GET', '/me', { key: refs.k1 }));
  assert.equal(me.limits.defaultKeyExpiryDays, 90);
  assert.equal(me.limits.maximumKeyExpiryDays, 365);
  const before = Date.now();
  const k = createKey(refs.t1, ['waitlist:read']);
  const after = Date.now();
  const row = listed(refs.t1, k.id);
  assert.ok(row, 'key list does not show the new key');
  assert.equal(row.status, 'active');
  const created = Date.parse(row.createdAt);
  const expires = Date.parse(row.expiresAt);
  assert.equal(expires - created, 90 * DAY_MS, `createdAt ${row.createdAt} expiresAt ${row.expiresAt}`);
  assert.ok(expires >= before + 90 * DAY_MS - 1000 && expires <= after + 90 * DAY_MS + 1000,
    `expiresAt ${row.expiresAt} is not now + 90 days`);
  assertOk(await api('GET', '/me', { key: k.key }));
});

test('the default expiry and the maximum follow the tenant limits', async () => {
  const refs = seed(fixture());
  tenantSet(refs.t1, '--limit', 'defaultKeyExpiryDays=14', '--limit', 'maximumKeyExpiryDays=30');
  const def = createKey(refs.t1, ['waitlist:read']);
  let row = listed(refs.t1, def.id);
  assert.equal(Date.parse(row.expiresAt) - Date.parse(row.createdAt), 14 * DAY_MS, 'default of 14 days');
  const max = createKey(refs.t1, ['waitlist:read'], { expiresInDays: 30 });
  row = listed(refs.t1, max.id);
  assert.equal(Date.parse(row.expiresAt) - Date.parse(row.createdAt), 30 * DAY_MS, '30 days asked');
  const n = keyCount(refs.t1);
  const r = ctlFail('key', 'create', '--tenant', refs.t1, '--scopes', 'waitlist:read', '--expires-in-days', '31');
  assert.notEqual(r.code, 0, 'a key beyond maximumKeyExpiryDays 30 was created');
  assert.match(r.stderr, /30/, `the message does not name the maximum: ${r.stderr}`);
  assert.equal(keyCount(refs.t1), n);
});

test('without --expires-in-days a key takes the maximum when it is below the default', async () => {
  const refs = seed(fixture({ limits: { maximumKeyExpiryDays: 30 }, keys: [{ ref: 'k1', scopes: ['waitlist:read'] }] }));
  for (const id of [ctl('key', 'list', '--tenant', refs.t1).keys[0].id, createKey(refs.t1, ['waitlist:read']).id]) {
    const row = listed(refs.t1, id);
    assert.equal(Date.parse(row.expiresAt) - Date.parse(row.createdAt), 30 * DAY_MS, 'the maximum of 30 days');
  }
});

test('a per-minute or key expiry limit of 0 is refused by tenant set and by seed, and changes nothing', async () => {
  const refs = seed(fixture());
  for (const name of ['readsPerMinute', 'writesPerMinute', 'tenantReadsPerMinute', 'tenantWritesPerMinute',
    'defaultKeyExpiryDays', 'maximumKeyExpiryDays']) {
    const r = ctlFail('tenant', 'set', refs.t1, '--limit', `${name}=0`);
    assert.notEqual(r.code, 0, `${name}=0 accepted`);
    assert.match(r.stderr, new RegExp(`${name} must be at least 1`));
  }
  const me = await api('GET', '/me', { key: refs.k1 });
  assert.equal(me.json.limits.readsPerMinute, 600);
  assert.equal(me.json.limits.maximumKeyExpiryDays, 365);
  const dir = mkdtempSync(join(tmpdir(), 'waitlist-fixture-'));
  try {
    for (const name of ['writesPerMinute', 'maximumKeyExpiryDays']) {
      const f = fixture({ limits: { [name]: 0 } });
      const file = join(dir, 'fixture.json');
      writeFileSync(file, JSON.stringify(f));
      const r = ctlFail('seed', file);
      assert.notEqual(r.code, 0, 'seeded');
      assert.match(r.stderr, new RegExp(`${name} must be at least 1`));
      assert.equal(sql(`SELECT COUNT(*) FROM tenants WHERE name = '${f.tenants[0].name}'`)[0][0], '0');
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  // A 0 stored before the rule does not block other settings.
  sql(`UPDATE tenants SET reads_per_minute = 0 WHERE id = '${refs.t1}'`);
  assert.equal(tenantSet(refs.t1, '--plan', 'business').limits.readsPerMinute, 0);
  tenantSet(refs.t1, '--limit', 'readsPerMinute=600');
  // activeKeys 0: none allowed.
  tenantSet(refs.t1, '--limit', 'activeKeys=0');
  assert.notEqual(ctlFail('key', 'create', '--tenant', refs.t1, '--scopes', 'waitlist:read').code, 0);
});

test('tenant set --limit takes only the eight limits, and a refusal changes nothing', async () => {
  const refs = seed(fixture());
  for (const setting of ['publicApi=off', 'plan=pro', 'guestAllowance=7', 'state=disabled']) {
    const r = ctlFail('tenant', 'set', refs.t1, '--limit', 'readsPerMinute=9', '--limit', setting);
    assert.notEqual(r.code, 0, `--limit ${setting} accepted`);
    assert.match(r.stderr, new RegExp(`unknown limit ${setting.split('=')[0]}; the limits are readsPerMinute`));
  }
  const bare = ctlFail('tenant', 'set', refs.t1, '--limit', 'readsPerMinute');
  assert.notEqual(bare.code, 0, '--limit without =N accepted');
  assert.match(bare.stderr, /--limit takes NAME=N/);
  const me = await api('GET', '/me', { key: refs.k1 });
  assert.equal(me.status, 200);
  assert.equal(me.json.capabilities.publicApiEnabled, true);
  assert.equal(me.json.limits.readsPerMinute, 600);
  assert.equal(tenantSet(refs.t1, '--limit', 'readsPerMinute=9').limits.readsPerMinute, 9);
});

test('key create stores each scope once', () => {
  const refs = seed(fixture());
  const k = createKey(refs.t1, ['guest:read', 'waitlist:read', 'guest:read']);
  assert.deepEqual(listed(refs.t1, k.id).scopes, ['waitlist:read', 'guest:read']);
});

test('--expires-in-days above maximumKeyExpiryDays exits non-zero with a clear message and creates nothing', async () => {
  const refs = seed(fixture());
  const n = keyCount(refs.t1);
  const r = ctlFail('key', 'create', '--tenant', refs.t1, '--scopes', 'waitlist:read', '--expires-in-days', '366');
  assert.notEqual(r.code, 0, 'a key of 366 days was created over maximumKeyExpiryDays 365');
  assert.match(r.stderr, /expir/i, `unclear message: ${r.stderr}`);
  assert.match(r.stderr, /365/, `the message does not name the maximum: ${r.stderr}`);
  assert.equal(keyCount(refs.t1), n, 'a key row was written');
  const k = createKey(refs.t1, ['waitlist:read'], { expiresInDays: 365 });
  const row = listed(refs.t1, k.id);
  assert.equal(Date.parse(row.expiresAt) - Date.parse(row.createdAt), 365 * DAY_MS);
});

test('activeKeys limits the active keys: the key over the limit fails, revoking one frees a slot', async () => {
  const refs = seed(fixture({ limits: { activeKeys: 2 } }));
  assert.equal(assertOk(await api('GET', '/me', { key: refs.k1 })).limits.activeKeys, 2);
  const second = createKey(refs.t1, ['waitlist:read']);
  const n = keyCount(refs.t1);
  const r = ctlFail('key', 'create', '--tenant', refs.t1, '--scopes', 'waitlist:read');
  assert.notEqual(r.code, 0, 'a third key was created over activeKeys 2');
  assert.match(r.stderr, /activeKeys|active keys/i, `unclear message: ${r.stderr}`);
  assert.equal(keyCount(refs.t1), n, 'a key row was written');
  ctl('key', 'revoke', second.id);
  const third = createKey(refs.t1, ['waitlist:read']);
  assertOk(await api('GET', '/me', { key: third.key }));
  assert.notEqual(ctlFail('key', 'create', '--tenant', refs.t1, '--scopes', 'waitlist:read').code, 0,
    'a key was created over activeKeys 2 after the revoked one was replaced');
  // An expired key does not count either.
  sql(`UPDATE api_keys SET expires_at = 1000 WHERE id = '${third.id}'`);
  const fourth = createKey(refs.t1, ['waitlist:read']);
  assertOk(await api('GET', '/me', { key: fourth.key }));
});

test('keys created at once do not pass activeKeys together', async () => {
  const refs = seed(fixture({ limits: { activeKeys: 4 } }));
  const run = () => ctlAsync('key', 'create', '--tenant', refs.t1, '--scopes', 'waitlist:read');
  const results = await Promise.all(Array.from({ length: 12 }, run));
  const made = results.filter((r) => r.code === 0).length;
  for (const r of results.filter((x) => x.code !== 0)) assert.match(r.err, /activeKeys|active keys/i, r.err);
  assert.equal(made, 3, `${made} of 12 concurrent creations succeeded with 1 of 4 keys taken`);
  assert.equal(keyCount(refs.t1), 4);
});

test('tenant set keeps a change of the tenant that commits while it runs', async () => {
  // tenant set writes the tenant's whole row back: one that read the row
  // before another change committed would undo that change.  A session
  // changes the tenant as a second tenant set would (its counter row,
  // then the state) and commits once this one waits.
  const refs = seed(fixture());
  const session = sqlSession();
  try {
    await session.run(`START TRANSACTION;
      UPDATE tenant_counters SET key_lock = key_lock + 1 WHERE tenant_id = '${refs.t1}';
      UPDATE tenants SET state = 'disabled' WHERE id = '${refs.t1}'`);
    const setting = ctlAsync('tenant', 'set', refs.t1, '--limit', 'readsPerMinute=100');
    for (let i = 0; i < 200 && running('UPDATE tenant_counters').length + running('UPDATE tenants').length === 0; i++) {
      await sleep(25);
    }
    assert.ok(running('UPDATE tenant_counters').length + running('UPDATE tenants').length > 0,
      'tenant set never waited for the session');
    await session.run('COMMIT');
    const r = await setting;
    assert.equal(r.code, 0, r.err);
  } finally {
    await session.close();
  }
  assert.deepEqual(sql(`SELECT state, reads_per_minute FROM tenants WHERE id = '${refs.t1}'`), [['disabled', '100']]);
});

test('key list shows no secret and no digest, and reports each key status', async () => {
  const refs = seed(fixture());
  const a = createKey(refs.t1, ['waitlist:read', 'guest:read']);
  const b = createKey(refs.t1, ['waitlist:read']);
  const c = createKey(refs.t1, ['events:read']);
  ctl('key', 'revoke', b.id);
  sql(`UPDATE api_keys SET expires_at = 1000 WHERE id = '${c.id}'`);
  const out = ctl('key', 'list', '--tenant', refs.t1);
  const text = JSON.stringify(out);
  for (const k of [a, b, c]) {
    assert.ok(!text.includes(k.key), 'key list prints a plaintext key');
    assert.ok(!text.includes(k.key.slice(3)), 'key list prints the secret part of a key');
    assert.ok(!text.includes(sha256hex(k.key)), 'key list prints a key digest');
  }
  for (const row of out.keys) {
    for (const f of ['key', 'digest', 'secret', 'hash']) assert.ok(!(f in row), `key list shows ${f}`);
  }
  assert.equal(out.keys.find((k) => k.id === a.id)?.status, 'active');
  assert.deepEqual(out.keys.find((k) => k.id === a.id)?.scopes, ['waitlist:read', 'guest:read']);
  assert.equal(out.keys.find((k) => k.id === b.id)?.status, 'revoked');
  assert.equal(out.keys.find((k) => k.id === c.id)?.status, 'expired');
  assert.equal(out.keys.length, 4);
});

test('a revoked key is 401 revoked_api_key; the other keys of the tenant keep working', async () => {
  const refs = seed(fixture());
  const k = createKey(refs.t1, ALL_SCOPES);
  assertOk(await api('GET', '/waitlist/businesses', { key: k.key }));
  ctl('key', 'revoke', k.id);
  assertError(await api('GET', '/me', { key: k.key }), 401, 'revoked_api_key', 'GET /me');
  assertError(await api('GET', '/waitlist/businesses', { key: k.key }), 401, 'revoked_api_key', 'GET businesses');
  const entries = countEntries(refs.t1);
  assertError(await api('POST', '/waitlist/entries', {
    key: k.key, idempotencyKey: uniq('idem'), body: walkIn(refs.q1),
  }), 401, 'revoked_api_key', 'POST entries');
  assert.equal(countEntries(refs.t1), entries);
  assertOk(await api('GET', '/me', { key: refs.k1 }));
});

test('an expired key is 401 expired_api_key', async () => {
  const refs = seed(fixture());
  const k = createKey(refs.t1, ALL_SCOPES);
  assertOk(await api('GET', '/me', { key: k.key }));
  sql(`UPDATE api_keys SET expires_at = 1000 WHERE id = '${k.id}'`);
  assertError(await api('GET', '/me', { key: k.key }), 401, 'expired_api_key', 'GET /me');
  assertError(await api('GET', `/waitlist/queues/${refs.q1}`, { key: k.key }), 401, 'expired_api_key', 'GET queue');
  assertError(await api('POST', '/waitlist/entries', {
    key: k.key, idempotencyKey: uniq('idem'), body: walkIn(refs.q1),
  }), 401, 'expired_api_key', 'POST entries');
  assertOk(await api('GET', '/me', { key: refs.k1 }));
});

test('a key stops working at its expiresAt (request clock pinned around it)', async () => {
  const refs = seed(fixture());
  const k = createKey(refs.t1, ['waitlist:read'], { expiresInDays: 1 });
  const expiresAt = Date.parse(listed(refs.t1, k.id).expiresAt);
  const at = (ms) => ({ key: k.key, headers: pinned(new Date(ms).toISOString()) });
  assertOk(await api('GET', '/me', at(expiresAt - 1000)), 200, 'a second before expiresAt');
  assertError(await api('GET', '/me', at(expiresAt)), 401, 'expired_api_key', 'at expiresAt');
  assertError(await api('GET', '/waitlist/businesses', at(expiresAt + DAY_MS)), 401, 'expired_api_key', 'a day later');
});

test('key create --type zapier makes a zapier connection; the default type is api', async () => {
  const refs = seed(fixture());
  const z = createKey(refs.t1, ['waitlist:read'], { type: 'zapier' });
  const a = createKey(refs.t1, ['waitlist:read']);
  assert.equal(assertOk(await api('GET', '/me', { key: z.key })).integrationType, 'zapier');
  assert.equal(assertOk(await api('GET', '/me', { key: a.key })).integrationType, 'api');
  assert.equal(listed(refs.t1, z.id).integrationType, 'zapier');
});

test('key create refuses an unknown scope or type with a non-zero exit and creates nothing', async () => {
  const refs = seed(fixture());
  const n = keyCount(refs.t1);
  for (const args of [
    ['--scopes', 'waitlist:admin'],
    ['--scopes', 'waitlist:read,bogus'],
    ['--scopes', 'waitlist:read', '--type', 'robot'],
  ]) {
    const r = ctlFail('key', 'create', '--tenant', refs.t1, ...args);
    assert.notEqual(r.code, 0, `key create ${args.join(' ')} succeeded`);
    assert.match(r.stderr, /\S/, `no message for ${args.join(' ')}`);
  }
  assert.equal(keyCount(refs.t1), n, 'a key row was written');
});

test('seed refuses a ref that names nothing of its kind in the fixture, and creates nothing', () => {
  const dir = mkdtempSync(join(tmpdir(), 'waitlist-fixture-'));
  const cases = {
    'a key restricted to an unknown business ref': (t) => { t.keys[0].businesses = ['nope']; },
    'a key restricted to a line ref given as a business': (t) => { t.keys[0].businesses = ['q1']; },
    'a key restricted to an unknown line ref': (t) => { t.keys[0].queues = ['b1']; },
    'a line listing an unknown service ref': (t) => { t.businesses[0].queues[0].services = ['s9']; },
    'a line listing a service as a custom field': (t) => { t.businesses[0].queues[0].customFields = ['s1']; },
  };
  try {
    for (const [what, change] of Object.entries(cases)) {
      const f = fixture();
      change(f.tenants[0]);
      const file = join(dir, 'fixture.json');
      writeFileSync(file, JSON.stringify(f));
      const r = ctlFail('seed', file);
      assert.notEqual(r.code, 0, `${what}: seeded`);
      assert.match(r.stderr, /is not the ref of one of the fixture's .* of the (line's business|key's tenant)/, `${what}: ${r.stderr}`);
      const n = sql(`SELECT COUNT(*) FROM tenants WHERE name = '${f.tenants[0].name}'`)[0][0];
      assert.equal(n, '0', `${what}: the tenant was written`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('seed refuses a time zone that is not an IANA zone, though the zone database holds a file of its name', () => {
  // right/UTC counts leap seconds (its clock runs 27 s behind); localtime
  // is the machine's own zone; Factory is a placeholder.
  const dir = mkdtempSync(join(tmpdir(), 'waitlist-fixture-'));
  try {
    for (const zone of ['right/UTC', 'right/Europe/Paris', 'posix/Europe/Paris', 'localtime', 'posixrules', 'Factory']) {
      for (const where of ['business', 'line']) {
        const f = fixture();
        const b = f.tenants[0].businesses[0];
        if (where === 'business') b.timeZone = zone;
        else b.queues[0].timeZone = zone;
        const file = join(dir, 'fixture.json');
        writeFileSync(file, JSON.stringify(f));
        const r = ctlFail('seed', file);
        assert.notEqual(r.code, 0, `${zone} on a ${where}: seeded`);
        assert.match(r.stderr, /timeZone must be an IANA zone or null/, `${zone} on a ${where}: ${r.stderr}`);
        assert.equal(sql(`SELECT COUNT(*) FROM tenants WHERE name = '${f.tenants[0].name}'`)[0][0], '0');
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('seed refuses refs across tenants and businesses, and creates nothing', () => {
  const dir = mkdtempSync(join(tmpdir(), 'waitlist-fixture-'));
  // Two tenants; the second's business b2 has its own service s2 and line q2.
  const two = () => {
    const f = fixture();
    const g = fixture();
    const t2 = g.tenants[0];
    t2.ref = 't2';
    t2.businesses = [businessCopy(t2.businesses[0], 2)];
    t2.keys[0].ref = 'k2';
    f.tenants.push(t2);
    return f;
  };
  const cases = {
    "a line listing another tenant's service": (f) => { f.tenants[1].businesses[0].queues[0].services = ['s1']; },
    "a line listing another tenant's custom field": (f) => { f.tenants[1].businesses[0].queues[0].customFields = ['f1']; },
    "a key restricted to another tenant's business": (f) => { f.tenants[1].keys[0].businesses = ['b1']; },
    "a key restricted to another tenant's line": (f) => { f.tenants[1].keys[0].queues = ['q1']; },
    "a line listing a service of another business of its tenant": (f) => {
      const b3 = businessCopy(f.tenants[0].businesses[0], 3);
      b3.queues[0].services = ['s1'];
      f.tenants[0].businesses.push(b3);
    },
  };
  try {
    const ok = two();
    const refs = seed(ok);
    assert.match(refs.q2, /^que_/, 'the two-tenant fixture itself seeds');
    for (const [what, change] of Object.entries(cases)) {
      const f = two();
      change(f);
      const file = join(dir, 'fixture.json');
      writeFileSync(file, JSON.stringify(f));
      const r = ctlFail('seed', file);
      assert.notEqual(r.code, 0, `${what}: seeded`);
      assert.match(r.stderr, /is not the ref of one of the fixture's/, `${what}: ${r.stderr}`);
      for (const t of f.tenants) {
        const n = sql(`SELECT COUNT(*) FROM tenants WHERE name = '${t.name}'`)[0][0];
        assert.equal(n, '0', `${what}: tenant ${t.ref} was written`);
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a fixture of refs alone seeds with every default: names from the refs, a working key', async () => {
  const refs = seed({ tenants: [{
    ref: 't1',
    businesses: [{ ref: 'b1', services: [{ ref: 's1' }], customFields: [{ ref: 'f1' }], queues: [{ ref: 'q1', services: ['s1'], customFields: ['f1'] }] }],
    keys: [{ ref: 'k1' }],
  }] });
  const me = assertOk(await api('GET', '/me', { key: refs.k1 }));
  assert.deepEqual(me.tenant, { id: refs.t1, name: 't1' });
  const biz = assertOk(await api('GET', `/waitlist/businesses/${refs.b1}`, { key: refs.k1 })).business;
  assert.equal(biz.name, 'b1');
  assert.deepEqual(biz.services.map((x) => [x.id, x.serviceName, x.baseDurationMinutes, x.isActive]), [[refs.s1, 's1', 30, true]]);
  assert.deepEqual(biz.customFields.map((x) => [x.id, x.label, x.type, x.required]), [[refs.f1, 'f1', 'text', false]]);
  const q = assertOk(await api('GET', `/waitlist/queues/${refs.q1}`, { key: refs.k1 })).queue;
  assert.equal(q.name, 'q1');
  // Without refs either: the kind's name.
  const bare = seed({ tenants: [{ businesses: [{ queues: [{}] }], keys: [{ ref: 'k' }] }] });
  const list = assertOk(await api('GET', '/waitlist/businesses', { key: bare.k })).businesses;
  assert.deepEqual(list.map((b) => b.name), ['Business']);
});

test('seed names each unknown member on stderr and seeds the rest', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'waitlist-fixture-'));
  try {
    const f = fixture();
    const t = f.tenants[0];
    f.bogusTop = 1;
    t.billing = false; // the tenant set option's name, not the fixture's
    t.businesses[0].services[0].colour = 'red';
    t.businesses[0].customFields[0].options[0].extra = true;
    const q = t.businesses[0].queues[0];
    q.workingHours = { enabled: true, start: '00:00', end: '24:00', days: { funday: {}, mon: { enabled: true, opens: '09:00' } } };
    q.availability.bookingWindow = 'week';
    t.keys[0].note = 'x';
    const file = join(dir, 'fixture.json');
    writeFileSync(file, JSON.stringify(f));
    const r = spawnSync(CTL_ARGV[0], [...CTL_ARGV.slice(1), 'seed', file], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    const refs = JSON.parse(r.stdout).refs;
    assert.match(refs.t1, /^ten_/);
    for (const [where, name] of [
      ['fixture', 'bogusTop'], ['fixture.tenants[0]', 'billing'],
      ['fixture.tenants[0].businesses[0].services[0]', 'colour'],
      ['fixture.tenants[0].businesses[0].customFields[0].options[0]', 'extra'],
      ['fixture.tenants[0].businesses[0].queues[0].workingHours.days', 'funday'],
      ['fixture.tenants[0].businesses[0].queues[0].workingHours.days.mon', 'opens'],
      ['fixture.tenants[0].businesses[0].queues[0].availability', 'bookingWindow'],
      ['fixture.tenants[0].keys[0]', 'note'],
    ]) {
      assert.ok(r.stderr.includes(`${where}: unknown member "${name}" ignored`), `${where} ${name} not named:\n${r.stderr}`);
    }
    assert.equal(r.stderr.trim().split('\n').length, 8, r.stderr);
    // Ignored means not served either.
    const biz = assertOk(await api('GET', `/waitlist/businesses/${refs.b1}`, { key: refs.k1 })).business;
    assert.deepEqual(Object.keys(biz.services[0]).sort(), ['id', 'serviceName', 'baseDurationMinutes', 'isActive'].sort(), JSON.stringify(biz.services[0]));
    const opts = biz.customFields.find((x) => x.options).options;
    for (const o of opts) assert.deepEqual(Object.keys(o), ['value', 'label'], JSON.stringify(o));
    // A fixture of known members only says nothing.
    writeFileSync(file, JSON.stringify(fixture()));
    const quiet = spawnSync(CTL_ARGV[0], [...CTL_ARGV.slice(1), 'seed', file], { encoding: 'utf8' });
    assert.equal(quiet.status, 0, quiet.stderr);
    assert.equal(quiet.stderr, '');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("key create refuses a business or line that is not the tenant's, and creates nothing", () => {
  const a = seed(fixture());
  const b = seed(fixture());
  const before = keyCount(a.t1);
  const cases = [
    ['--businesses', b.b1], ['--queues', b.q1], ['--businesses', 'biz_nosuch'],
    ['--queues', 'que_nosuch'], ['--businesses', `${a.b1},${b.b1}`], ['--queues', a.b1],
  ];
  for (const [opt, ids] of cases) {
    const r = ctlFail('key', 'create', '--tenant', a.t1, '--scopes', 'waitlist:read', opt, ids);
    assert.equal(r.code, 1, `${opt} ${ids}: ${r.stderr}`);
    assert.match(r.stderr, /is not one of tenant/, `${opt} ${ids}`);
  }
  assert.equal(keyCount(a.t1), before, 'a key was created');
  const k = ctl('key', 'create', '--tenant', a.t1, '--scopes', 'waitlist:read', '--businesses', a.b1, '--queues', a.q1);
  assert.match(k.key, /^wl_/);
});

test('key list of an unknown tenant exits 1 and names it', () => {
  const r = ctlFail('key', 'list', '--tenant', 'ten_nosuch');
  assert.equal(r.code, 1);
  assert.match(r.stderr, /tenant ten_nosuch not found/);
});

test('waitlistctl help, --help and -h print the usage on stdout and exit 0', () => {
  for (const h of ['help', '--help', '-h']) {
    const r = spawnSync(CTL_ARGV[0], [...CTL_ARGV.slice(1), h], { encoding: 'utf8' });
    assert.equal(r.status, 0, `${h}: ${r.stderr}`);
    assert.match(r.stdout, /^usage: waitlistctl/, h);
    assert.match(r.stdout, /key create --tenant ID --scopes/, h);
  }
  const r = ctlFail('nosuch');
  assert.equal(r.code, 2);
  assert.match(r.stderr, /unknown command/);
});

// --------------------------------------------------------- guest allowance

// First day of the UTC month after ms, at 12:00 (safely inside the next
// calendar month in any zone).
function nextMonthMidday(ms) {
  const d = new Date(ms);
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 15, 12)).toISOString();
}

test('guest allowance: 3 walk-ins pass, the 4th is 402 guest_allowance_exceeded with nothing written; the next month starts afresh', async () => {
  const refs = seed(fixture({ guestAllowance: 3 }));
  const m = freshMinute();
  const now = m.at(10);
  const create = (when, name = 'Grace Hopper') => api('POST', '/waitlist/entries', {
    key: refs.k1, headers: pinned(when), idempotencyKey: uniq('idem'), body: walkIn(refs.q1, name),
  });
  for (let i = 0; i < 3; i++) assertOk(await create(now), 201, `walk-in ${i + 1} of 3`);
  const entries = countEntries(refs.t1);
  const events = countEvents(refs.t1);
  assert.equal(entries, 3);
  const refused = await create(now, 'Fourth Guest');
  assertError(refused, 402, 'guest_allowance_exceeded', 'walk-in 4');
  assert.equal(countEntries(refs.t1), entries, 'the refused guest was written');
  assert.equal(countEvents(refs.t1), events, 'the refused guest emitted an event');
  assert.equal(sql(`SELECT COUNT(*) FROM entries WHERE tenant_id = '${refs.t1}' AND full_name = 'Fourth Guest'`)[0][0], '0');
  // A booking is a guest too: made at 12:00 UTC (the line's zone) of the
  // same day, for 13:00, so that the slot is today whatever the hour.
  const day = new Date(Date.parse(now));
  const noon = Date.UTC(day.getUTCFullYear(), day.getUTCMonth(), day.getUTCDate(), 12);
  const slot = new Date(noon + 60 * 60_000).toISOString();
  const booking = await api('POST', '/waitlist/entries', {
    key: refs.k1, headers: pinned(new Date(noon).toISOString()), idempotencyKey: uniq('idem'),
    body: { queueId: refs.q1, fullName: 'Booked Guest', isBooking: true, scheduledFor: slot },
  });
  assertError(booking, 402, 'guest_allowance_exceeded', 'booking over the allowance');
  assert.equal(countEntries(refs.t1), entries);
  // The next calendar month has the whole allowance again.
  const later = nextMonthMidday(Date.parse(now));
  for (let i = 0; i < 3; i++) assertOk(await create(later), 201, `next month walk-in ${i + 1}`);
  assertError(await create(later), 402, 'guest_allowance_exceeded', 'next month walk-in 4');
  assert.equal(countEntries(refs.t1), entries + 3);
});

test('guest allowance under concurrency: walk-ins on eight lines at once take exactly the allowance', async () => {
  // A walk-in reads the month's count with its insert and bumps it with
  // its commit: those that read it below the allowance at once race to
  // the bump, where the ones past it run again and are refused.  Eight
  // tenants at once, each at its allowance once.
  const tenants = Array.from({ length: 8 }, () => {
    const f = fixture({ guestAllowance: 4 });
    const b = f.tenants[0].businesses;
    for (let n = 2; n <= 8; n++) b.push(businessCopy(b[0], n));
    return seed(f);
  });
  const now = freshMinute().at(10);
  const res = await Promise.all(tenants.flatMap((refs) => Array.from({ length: 32 }, (_, i) =>
    api('POST', '/waitlist/entries', {
      key: refs.k1, headers: pinned(now), idempotencyKey: uniq('idem'), body: walkIn(refs[`q${1 + (i % 8)}`]),
    }))));
  for (const r of res) if (r.status !== 201) assertError(r, 402, 'guest_allowance_exceeded');
  tenants.forEach((refs, t) => {
    const created = res.slice(t * 32, t * 32 + 32).filter((r) => r.status === 201);
    assert.equal(created.length, 4, `tenant ${t + 1}: walk-ins created`);
    assert.equal(countEntries(refs.t1), 4);
    assert.equal(countEvents(refs.t1), 4);
    assert.equal(sql(`SELECT guests FROM tenant_usage WHERE tenant_id = '${refs.t1}'`)[0][0], '4');
  });
});

test('raising the guest allowance with tenant set takes effect at once', async () => {
  const refs = seed(fixture({ guestAllowance: 1 }));
  const now = freshMinute().at(10);
  const create = () => api('POST', '/waitlist/entries', {
    key: refs.k1, headers: pinned(now), idempotencyKey: uniq('idem'), body: walkIn(refs.q1),
  });
  assertOk(await create(), 201);
  assertError(await create(), 402, 'guest_allowance_exceeded');
  tenantSet(refs.t1, '--guest-allowance', '3');
  assertOk(await create(), 201, 'after raising the allowance to 3');
  assertOk(await create(), 201, 'after raising the allowance to 3');
  assertError(await create(), 402, 'guest_allowance_exceeded', 'over the raised allowance');
  assert.equal(countEntries(refs.t1), 3);
});
