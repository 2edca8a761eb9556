// The request pipeline every call passes (DECISIONS "Errors", "Eligibility,
// plans and limits", "Idempotency"): routing (404, 405 with Allow), the
// error body and X-Request-Id, request bodies (size, Content-Type, JSON),
// the order of the checks, and rate limits.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BASE, ORIGIN, api, ctl, fixture, seed, sql, uniq } from './lib.mjs';
import {
  allowOf, assertError, assertOk, createKey, rawRequest, tenantSet,
} from './util-foundation.mjs';

test('unknown routes are JSON 404 not_found, with or without a key', async () => {
  const refs = seed(fixture());
  const paths = [
    '/nope', '/waitlist', '/waitlist/businesses/x/extra', '/waitlist/queues/q/x/y',
    '/bookings', '/bookings/x', '/me/x', `${ORIGIN}/v1/external`, `${ORIGIN}/v1/externalx`,
    `${ORIGIN}/v2/external/me`, `${ORIGIN}/`,
  ];
  for (const path of paths) {
    for (const key of [undefined, refs.k1]) {
      const res = await api('GET', path, { key });
      try {
        assertError(res, 404, 'not_found');
      } catch (e) {
        e.message = `GET ${path} (${key ? 'with' : 'without'} key): ${e.message}`;
        throw e;
      }
    }
  }
});

test('a known path with another method is 405 method_not_allowed with Allow', async () => {
  const refs = seed(fixture());
  const cases = [
    ['POST', '/me', ['GET']],
    ['OPTIONS', '/me', ['GET']],
    ['POST', '/health', ['GET']],
    ['DELETE', '/openapi.json', ['GET']],
    ['DELETE', '/waitlist/businesses', ['GET']],
    ['POST', `/waitlist/businesses/${refs.b1}`, ['GET']],
    ['PUT', '/waitlist/queues', ['GET']],
    ['PATCH', `/waitlist/queues/${refs.q1}`, ['GET']],
    ['PUT', '/waitlist/entries', ['GET', 'POST']],
    ['DELETE', '/waitlist/entries/ent_x', ['GET', 'PATCH']],
    ['GET', '/waitlist/entries/ent_x/status', ['PATCH']],
    ['GET', '/bookings/ent_x/reschedule', ['POST']],
    ['PATCH', '/bookings/ent_x/cancel', ['POST']],
  ];
  for (const [method, path, allow] of cases) {
    const withBody = ['POST', 'PUT', 'PATCH'].includes(method);
    const res = await api(method, path, {
      key: refs.k1, body: withBody ? {} : undefined, idempotencyKey: withBody ? uniq('idem') : undefined,
    });
    try {
      assertError(res, 405, 'method_not_allowed');
      assert.deepEqual(allowOf(res), allow, 'Allow header');
    } catch (e) {
      e.message = `${method} ${path}: ${e.message}`;
      throw e;
    }
  }
});

test('routing comes before authentication: 404 and 405 without a key', async () => {
  assertError(await api('GET', '/no/such/route'), 404, 'not_found');
  const res = await api('DELETE', '/me');
  assertError(res, 405, 'method_not_allowed');
  assert.deepEqual(allowOf(res), ['GET']);
});

test('every answer carries a fresh X-Request-Id', async () => {
  const refs = seed(fixture());
  const answers = [
    await api('GET', '/me', { key: refs.k1 }),
    await api('GET', '/waitlist/businesses', { key: refs.k1 }),
    await api('GET', '/me'),
    await api('GET', '/nope'),
    await api('POST', '/me', { body: {} }),
    await api('GET', `${ORIGIN}/elsewhere`),
    await api('GET', '/health'),
    await api('GET', '/openapi.json'),
  ];
  const ids = answers.map((r) => r.headers.get('x-request-id'));
  for (const [i, id] of ids.entries()) {
    assert.ok(id && id.length >= 8, `answer ${i} (${answers[i].status}) lacks X-Request-Id`);
    if (answers[i].status >= 400) assert.equal(answers[i].json?.requestId, id);
  }
  assert.equal(new Set(ids).size, ids.length, 'request ids repeat');
});

test('Content-Type must be application/json on writes', async () => {
  const refs = seed(fixture());
  const body = JSON.stringify({ queueId: refs.q1, fullName: 'Ada', partySize: 1 });
  const auth = { authorization: `Bearer ${refs.k1}` };
  for (const ct of [undefined, 'text/plain', 'application/x-www-form-urlencoded', 'application/jsonp']) {
    const headers = { ...auth, 'idempotency-key': uniq('idem') };
    if (ct) headers['content-type'] = ct;
    const res = await rawRequest('POST', '/waitlist/entries', { headers, body: new TextEncoder().encode(body) });
    try {
      assertError(res, 400, 'invalid_request');
    } catch (e) {
      e.message = `Content-Type ${ct}: ${e.message}`;
      throw e;
    }
  }
  assert.equal(sql(`SELECT COUNT(*) FROM entries WHERE tenant_id = '${refs.t1}'`)[0][0], '0');
  // Parameters and letter case of the media type are fine.
  for (const ct of ['application/json; charset=utf-8', 'Application/JSON']) {
    const res = await rawRequest('POST', '/waitlist/entries', {
      headers: { ...auth, 'idempotency-key': uniq('idem'), 'content-type': ct }, body,
    });
    assert.ok(res.status >= 200 && res.status < 300, `Content-Type ${ct}: ${res.status} ${res.text}`);
    assert.ok(res.json?.entry?.id, res.text);
  }
});

test('a body that is not a JSON object is 400 invalid_json', async () => {
  const refs = seed(fixture());
  const bodies = ['{', '{"queueId":}', '', 'null', '[]', '"text"', '42', '{"a":1}{"b":2}',
    Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d])];
  for (const rawBody of bodies) {
    const res = await api('POST', '/waitlist/entries', { key: refs.k1, idempotencyKey: uniq('idem'), rawBody });
    try {
      assertError(res, 400, 'invalid_json');
    } catch (e) {
      e.message = `body ${JSON.stringify(String(rawBody))}: ${e.message}`;
      throw e;
    }
  }
  assert.equal(sql(`SELECT COUNT(*) FROM entries WHERE tenant_id = '${refs.t1}'`)[0][0], '0');
});

test('bodies above 64 KiB are 400 payload_too_large; 64 KiB exactly is read', async () => {
  const refs = seed(fixture());
  // A JSON entry of exactly n bytes, padded in notes; notes over 500
  // characters fail validation, so a body that is read is a 400
  // validation_failed, and one that is not is payload_too_large.
  const sized = (n) => {
    const head = JSON.stringify({ queueId: refs.q1, fullName: 'Ada', notes: '' });
    const s = head.slice(0, -2) + 'x'.repeat(n - head.length) + '"}';
    assert.equal(Buffer.byteLength(s), n);
    return s;
  };
  const over = await api('POST', '/waitlist/entries', {
    key: refs.k1, idempotencyKey: uniq('idem'), rawBody: sized(64 * 1024 + 1),
  });
  assertError(over, 400, 'payload_too_large');
  const exact = await api('POST', '/waitlist/entries', {
    key: refs.k1, idempotencyKey: uniq('idem'), rawBody: sized(64 * 1024),
  });
  assert.equal(exact.status, 400, exact.text);
  assert.notEqual(exact.json?.code, 'payload_too_large', 'a 64 KiB body was refused as too large');
  assert.equal(exact.json?.code, 'validation_failed', exact.text);
  // The service refuses the large body before anything else, even the key.
  assertError(await api('POST', '/waitlist/entries', { rawBody: sized(100 * 1024) }), 400, 'payload_too_large');
  assert.equal(sql(`SELECT COUNT(*) FROM entries WHERE tenant_id = '${refs.t1}'`)[0][0], '0');
});

test('a chunked request body (no Content-Length) is read like any other', async () => {
  const refs = seed(fixture());
  const text = JSON.stringify({ queueId: refs.q1, fullName: 'Chunky', partySize: 1 });
  const stream = new ReadableStream({
    start(c) {
      const bytes = new TextEncoder().encode(text);
      c.enqueue(bytes.slice(0, 10));
      c.enqueue(bytes.slice(10));
      c.close();
    },
  });
  const res = await fetch(`${BASE}/waitlist/entries`, {
    method: 'POST',
    duplex: 'half',
    headers: {
      authorization: `Bearer ${refs.k1}`, 'content-type': 'application/json', 'idempotency-key': uniq('idem'),
    },
    body: stream,
  });
  const json = await res.json();
  assert.ok(res.status >= 200 && res.status < 300, `${res.status} ${JSON.stringify(json)}`);
  assert.equal(json.entry.fullName, 'Chunky');
});

test('writes without an Idempotency-Key are 400 idempotency_key_required', async () => {
  const refs = seed(fixture());
  const res = await api('POST', '/waitlist/entries', { key: refs.k1, body: { queueId: refs.q1, fullName: 'Ada' } });
  assertError(res, 400, 'idempotency_key_required');
  const st = await api('PATCH', '/waitlist/entries/ent_x/status', {
    key: refs.k1, body: { status: 'ready', expectedStatus: 'waiting', expectedVersion: 1 },
  });
  assertError(st, 400, 'idempotency_key_required');
  assert.equal(sql(`SELECT COUNT(*) FROM entries WHERE tenant_id = '${refs.t1}'`)[0][0], '0');
});

test('checks run in order: key, then eligibility, then scope, then body', async () => {
  const refs = seed(fixture());
  const readOnly = createKey(refs.t1, ['waitlist:read']);
  const revoked = createKey(refs.t1, ['waitlist:read', 'waitlist:write']);
  // Scope before body: a key without waitlist:write never gets its body read.
  assertError(await api('POST', '/waitlist/entries', {
    key: readOnly.key, idempotencyKey: uniq('idem'), rawBody: '{not json',
  }), 403, 'insufficient_scope');
  assertError(await api('POST', '/waitlist/entries', {
    key: readOnly.key, rawBody: '{"x":1}', headers: { 'content-type': 'text/plain' },
  }), 403, 'insufficient_scope');
  tenantSet(refs.t1, '--public-api', 'off');
  // Eligibility before scope and body.
  assertError(await api('POST', '/waitlist/entries', {
    key: readOnly.key, idempotencyKey: uniq('idem'), rawBody: '{not json',
  }), 403, 'launch_disabled');
  assertError(await api('POST', '/waitlist/entries', { key: refs.k1, rawBody: '{not json' }),
    403, 'launch_disabled');
  // The key before eligibility.
  ctl('key', 'revoke', revoked.id);
  assertError(await api('GET', '/waitlist/businesses', { key: revoked.key }), 401, 'revoked_api_key');
  assertError(await api('GET', '/waitlist/businesses'), 401, 'missing_api_key');
  // Even GET /me needs a valid key.
  assertError(await api('GET', '/me', { key: revoked.key }), 401, 'revoked_api_key');
});

// Rate limits: fixed per-minute windows may roll over during a burst, so
// each test sends enough requests that one window cannot take them all.

test('readsPerMinute: a key over its read limit gets 429 rate_limited with Retry-After; GET /me counts', async () => {
  const refs = seed(fixture({ limits: { readsPerMinute: 3 } }));
  const answers = [];
  for (let i = 0; i < 10; i++) answers.push(await api('GET', '/me', { key: refs.k1 }));
  assert.deepEqual(answers.slice(0, 3).map((r) => r.status), [200, 200, 200]);
  const limited = answers.filter((r) => r.status === 429);
  assert.ok(limited.length >= 4, `only ${limited.length} of 10 reads were limited at 3 per minute`);
  for (const r of limited) {
    assertError(r, 429, 'rate_limited');
    const ra = r.headers.get('retry-after');
    assert.match(ra ?? '', /^\d+$/, `Retry-After ${ra}`);
    assert.ok(Number(ra) >= 1 && Number(ra) <= 60, `Retry-After ${ra}`);
  }
  // Another key of the tenant has its own budget.
  const other = createKey(refs.t1, ['waitlist:read']);
  assertOk(await api('GET', '/waitlist/businesses', { key: other.key }));
});

test('tenantReadsPerMinute limits all keys of a tenant together', async () => {
  const refs = seed(fixture({ limits: { tenantReadsPerMinute: 4 } }));
  const other = createKey(refs.t1, ['waitlist:read']);
  const statuses = [];
  for (let i = 0; i < 6; i++) statuses.push((await api('GET', '/waitlist/businesses', { key: refs.k1 })).status);
  for (let i = 0; i < 6; i++) statuses.push((await api('GET', '/waitlist/businesses', { key: other.key })).status);
  assert.ok(statuses.filter((s) => s === 429).length >= 4, `statuses ${statuses}`);
  assert.ok(statuses.every((s) => s === 200 || s === 429), `statuses ${statuses}`);
});

test('writesPerMinute counts writes only, and a limited write creates nothing', async () => {
  const refs = seed(fixture({ limits: { writesPerMinute: 2 } }));
  for (let i = 0; i < 8; i++) assertOk(await api('GET', '/waitlist/businesses', { key: refs.k1 }));
  const writes = [];
  for (let i = 0; i < 7; i++) {
    const idem = uniq('idem');
    writes.push({ idem, res: await api('POST', '/waitlist/entries', {
      key: refs.k1, idempotencyKey: idem, body: { queueId: refs.q1, fullName: `Guest ${i}`, partySize: 1 },
    }) });
  }
  assert.ok(writes[0].res.status < 300 && writes[1].res.status < 300,
    `first writes: ${writes[0].res.text} ${writes[1].res.text}`);
  const limited = writes.filter((w) => w.res.status === 429);
  assert.ok(limited.length >= 3, `only ${limited.length} of 7 writes limited at 2 per minute`);
  for (const w of limited) assertError(w.res, 429, 'rate_limited');
  const created = Number(sql(`SELECT COUNT(*) FROM entries WHERE tenant_id = '${refs.t1}'`)[0][0]);
  assert.equal(created, 7 - limited.length);
});
