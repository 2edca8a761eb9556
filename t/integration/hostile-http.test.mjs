// Hostile input over HTTP against every mutating route, with real targets
// (an entry, a booking, a subscription, a delivery), complementing
// hostile.test.mjs (the entry routes' own fields in depth): malformed
// JSON, deep nesting, absurd numbers, duplicate members, invalid UTF-8,
// NUL bytes, overlong strings, injection in structured fields, CRLF and
// control bytes in headers, path traversal in subscription and delivery
// ids, oversize headers.  Every answer is a 4xx with the JSON error body
// (nginx's own answers to a request it cannot parse excepted: those are
// 4xx too), no worker dies, and nothing changes: the tenant's entries,
// events, subscriptions and deliveries stay as they were.

import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { after, before, test } from 'node:test';
import { api, BASE, sql, sleep, uniq } from './lib.mjs';
import {
  assertError, dayZone, eachCase, iso, mustCreate, nextSlot, rawExchange, rawHttp, setup,
} from './util-entries.mjs';
import { fullPool, masterPid, waitFor, workers } from './util-faults.mjs';

let A;
let server;
const T = {}; // the targets: entry, booking, sub, delivery (ids)
let pids;

// Rows of the tenant that no hostile request may change.
function snapshot() {
  const t = A.tenantId;
  return {
    counts: sql(`SELECT (SELECT COUNT(*) FROM entries WHERE tenant_id='${t}'),
      (SELECT COUNT(*) FROM events WHERE tenant_id='${t}'),
      (SELECT COUNT(*) FROM webhook_subscriptions WHERE tenant_id='${t}'),
      (SELECT COUNT(*) FROM deliveries WHERE tenant_id='${t}')`)[0],
    entries: sql(`SELECT id, version, status, updated_at, full_name, scheduled_for FROM entries WHERE tenant_id='${t}' ORDER BY id`),
    subs: sql(`SELECT id, status, key_id, secret_enc, COALESCE(previous_secret_enc, ''), updated_at FROM webhook_subscriptions WHERE tenant_id='${t}'`),
    deliveries: sql(`SELECT id, status, attempt_count, manual_retry, next_attempt_at FROM deliveries WHERE tenant_id='${t}' ORDER BY id`),
  };
}

before(async () => {
  A = setup({ q1: { timeZone: dayZone() } });
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => { res.writeHead(200); res.end('ok'); });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const sub = await api('POST', '/webhooks/subscriptions', {
    key: A.key, idempotencyKey: uniq('sub'),
    body: { url: `http://127.0.0.1:${server.address().port}/hook`, eventTypes: ['waitlist.entry.created', 'booking.created'] },
  });
  assert.equal(sub.status, 201, sub.text);
  T.sub = sub.json.subscription.id;
  T.entry = (await mustCreate(A.key, { queueId: A.queueId, partySize: 1, fullName: 'Hostile Target' })).id;
  T.booking = (await mustCreate(A.key, {
    queueId: A.queueId, partySize: 1, fullName: 'Hostile Booking', isBooking: true, scheduledFor: iso(nextSlot()),
  })).id;
  T.slot = iso(nextSlot() + 15 * 60 * 1000);
  // Every event of both creations delivered, so that nothing moves.
  const wanted = Number(sql(`SELECT COUNT(*) FROM events WHERE tenant_id='${A.tenantId}'
    AND type IN ('waitlist.entry.created', 'booking.created')`)[0][0]);
  await waitFor(`${wanted} deliveries succeeded`, 20000, () => {
    const rows = sql(`SELECT id, status FROM deliveries WHERE subscription_id='${T.sub}'`);
    return rows.length === wanted && rows.every(([, s]) => s === 'succeeded') && rows;
  });
  T.delivery = sql(`SELECT id FROM deliveries WHERE subscription_id='${T.sub}' LIMIT 1`)[0][0];
  pids = await fullPool();
});

after(async () => {
  sql(`DELETE FROM deliveries WHERE subscription_id='${T.sub}'`);
  sql(`DELETE FROM webhook_subscriptions WHERE id='${T.sub}'`);
  await new Promise((resolve) => server.close(resolve));
});

// Every mutating route, with a body that would succeed (never sent as
// is) and the members whose invalid values must be refused.
function routes() {
  return [
    { m: 'POST', p: '/waitlist/entries', body: { queueId: A.queueId, fullName: 'Hostile', partySize: 1 }, ids: ['queueId'], strs: ['fullName'], nums: ['partySize'] },
    { m: 'PATCH', p: `/waitlist/entries/${T.entry}`, body: { expectedVersion: 1, partySize: 2 }, nums: ['expectedVersion', 'partySize'] },
    { m: 'PATCH', p: `/waitlist/entries/${T.entry}/status`, body: { status: 'ready', expectedStatus: 'waiting', expectedVersion: 1 }, enums: ['status', 'expectedStatus'], nums: ['expectedVersion'] },
    { m: 'POST', p: `/bookings/${T.booking}/reschedule`, body: { scheduledFor: T.slot, expectedVersion: 1 }, enums: ['scheduledFor'], nums: ['expectedVersion'] },
    { m: 'POST', p: `/bookings/${T.booking}/cancel`, body: { expectedStatus: 'confirmed', expectedVersion: 1 }, enums: ['expectedStatus'], nums: ['expectedVersion'] },
    { m: 'POST', p: '/webhooks/subscriptions', body: { url: `http://127.0.0.1:${server.address().port}/other`, eventTypes: ['booking.cancelled'] }, enums: ['url'], arrays: ['eventTypes'] },
    { m: 'DELETE', p: `/webhooks/subscriptions/${T.sub}`, body: {} },
    { m: 'POST', p: `/webhooks/subscriptions/${T.sub}/resume`, body: {} },
    { m: 'POST', p: `/webhooks/subscriptions/${T.sub}/rotate-secret`, body: {} },
    { m: 'POST', p: `/webhooks/deliveries/${T.delivery}/retry`, body: {} },
  ];
}

const INJECTION = "x' OR '1'='1'; DROP TABLE entries; -- \" `id` $(id)";

// Raw bodies no route may accept.
function generic() {
  const deepArr = '['.repeat(10000);
  return [
    '{', '}', '{"a":}', '{"a" 1}', '{"a":1,}', '{"a":1}{"b":2}', '{"a":1} x', "{'a':1}", '{a:1}',
    '{"a":"\\x41"}', '{"a":"\\u12"}', '{"a":"unterminated}', '{"a":01}', '{"a":.5}', '{"a":+1}',
    '{"a":NaN}', '{"a":Infinity}', '/* c */{}', '\ufeff{}', 'null', '[]', '"text"', '42', 'true', ' ',
    deepArr, deepArr + ']'.repeat(10000), `{"a":${deepArr}${']'.repeat(10000)}}`,
    '{"a":'.repeat(6000) + '1' + '}'.repeat(6000),
    '{"a":1e999999}', `{"a":${'9'.repeat(5000)}}`, '{"a":-1e-999999}',
    '{"a":1,"a":1}', '{"a":{"b":1,"b":2}}',
    Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]), // {"a":"\xff\xfe"}
    Buffer.from([0x7b, 0x22, 0xc0, 0xaf, 0x22, 0x3a, 0x31, 0x7d]), // overlong '/' as a key
    Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xed, 0xa0, 0x80, 0x22, 0x7d]), // a surrogate
    Buffer.from('{"a":"b\u0000c"}'), // a raw NUL
    '{"a":"b\\u0000c"}', '{"a\\u0000":1}', '{"a":"\\ud800"}',
  ];
}

// Bodies made from the route's valid body with one member broken.
function specific(r) {
  const out = [];
  const put = (k, v) => JSON.stringify({ ...r.body, [k]: '@@' }).replace('"@@"', v);
  const keys = Object.keys(r.body);
  if (keys.length) {
    const first = keys[0];
    out.push(JSON.stringify(r.body).replace(/}$/, `,${JSON.stringify(first)}:${JSON.stringify(r.body[first])}}`)); // duplicate
  }
  for (const k of [...(r.strs ?? []), ...(r.enums ?? []), ...(r.ids ?? [])]) {
    out.push(put(k, JSON.stringify('x'.repeat(60000)))); // overlong, within 64 KiB
    out.push(put(k, '1e400'));
    out.push(put(k, JSON.stringify(`${r.body[k]}\u0000`)));
  }
  for (const k of [...(r.enums ?? []), ...(r.ids ?? [])]) out.push(put(k, JSON.stringify(k === 'url' ? `https://evil.example/${INJECTION}` : INJECTION)));
  for (const k of r.nums ?? []) {
    for (const v of ['1e400', '-1e400', '9007199254740993', '1e308', '123456789012345678901234567890', '-0', '0.5', '"1"', '[1]', '{}', 'true', '2147483648']) {
      out.push(put(k, v));
    }
  }
  for (const k of r.arrays ?? []) {
    out.push(put(k, JSON.stringify([INJECTION])));
    out.push(put(k, JSON.stringify(Array.from({ length: 5000 }, () => 'booking.cancelled')).slice(0, 60000).replace(/,?"[^"]*$/, ']')));
    out.push(put(k, '[' + '['.repeat(5000) + ']'.repeat(5000) + ']'));
  }
  if (!keys.length) out.push('{"unexpected":1}', `{"reason":${JSON.stringify(INJECTION)}}`, '{"x":1e400}');
  return out;
}

function label(b) {
  const s = Buffer.isBuffer(b) ? `bytes ${b.toString('hex')}` : b;
  return s.length > 100 ? `${s.slice(0, 50)}...${s.slice(-30)} (${s.length})` : s;
}

// A 4xx with exactly the error body and its request id.
function assertJson4xx(res, what) {
  assert.ok(res.status >= 400 && res.status < 500, `${what}: ${res.status} ${res.text.slice(0, 200)}`);
  assert.ok(res.json, `${what}: not JSON: ${res.text.slice(0, 200)}`);
  assert.deepEqual(Object.keys(res.json).sort(), ['code', 'error', 'requestId'], `${what}: ${res.text.slice(0, 200)}`);
  assert.equal(res.headers.get('x-request-id'), res.json.requestId, what);
  assert.equal(res.headers.get('cache-control'), 'no-store', what);
}

const each = (cases, send, check) => eachCase(cases, send, check, (c) => c.what ?? label(c));

async function unchanged(fn) {
  const s0 = snapshot();
  await fn();
  assert.deepEqual(snapshot(), s0, 'a hostile request changed the tenant\'s data');
  assert.deepEqual(workers(masterPid()).sort(), [...pids].sort(), 'a worker died');
}

test('malformed, deep, absurd and mangled bodies on every mutating route are JSON 4xx and change nothing', async () => {
  const cases = [];
  for (const r of routes()) {
    for (const b of [...generic(), ...specific(r)]) cases.push({ r, b, what: `${r.m} ${r.p.replace(/[a-z]+_[0-9a-z]{26}/g, '{id}')} ${label(b)}` });
  }
  await unchanged(() => each(cases,
    ({ r, b }) => api(r.m, r.p, { key: A.key, rawBody: b, idempotencyKey: uniq('h') }),
    (res, c) => assertJson4xx(res, c.what)));
});

test('a valid body with another Content-Type, and an over-large body, are 400 on every mutating route', async () => {
  const cases = [];
  for (const r of routes()) {
    cases.push({ r, ct: 'text/plain', b: JSON.stringify(r.body), code: 'invalid_request', what: `${r.m} ${r.p} text/plain` });
    cases.push({ r, ct: 'application/x-www-form-urlencoded', b: 'a=1', code: 'invalid_request', what: `${r.m} ${r.p} form` });
    cases.push({ r, ct: 'application/json', b: JSON.stringify({ ...r.body, pad: 'p'.repeat(100 * 1024) }), code: 'payload_too_large', what: `${r.m} ${r.p} 100 KiB` });
    cases.push({ r, ct: 'application/json', b: JSON.stringify({ ...r.body, fullName: 'n'.repeat(100000) }), code: 'payload_too_large', what: `${r.m} ${r.p} fullName of 100k` });
  }
  await unchanged(() => each(cases,
    ({ r, ct, b }) => api(r.m, r.p, { key: A.key, rawBody: b, headers: { 'content-type': ct }, idempotencyKey: uniq('h') }),
    (res, c) => {
      assertJson4xx(res, c.what);
      assert.equal(res.status, 400, c.what);
      assert.equal(res.json.code, c.code, `${c.what}: ${res.text}`);
    }));
});

test('CRLF and control bytes in Idempotency-Key and X-Request-Id are refused and never echoed as headers', async () => {
  const bad = JSON.stringify({ queueId: A.queueId, fullName: 'x'.repeat(300) }); // refused by validation anyway
  const values = [
    'k\r\nSet-Cookie: injected=1', 'k\r\nX-Injected: 1', 'k\r\n\r\n<html>', 'k\rX-Injected: 1', 'k\nX-Injected: 1',
    'k\r\n X-Folded: 1', 'k\x00', 'k\x01\x02\x1b[31m', 'k\x7f', '\x80\xff\xfe', 'k'.repeat(256), ' ', 'k\tv',
    '%0d%0aSet-Cookie:%20injected=1', '../../../../etc/passwd', "k' OR '1'='1",
  ];
  // A value with CRLF CRLF ends the header block early, leaving a request
  // without its body: the targets are such that no request can succeed.
  const targets = [['POST', '/waitlist/entries', bad], ['POST', '/webhooks/subscriptions/whs_none/rotate-secret', '{"x":1}']];
  const cases = [];
  for (const v of values) {
    for (const [m, p, body] of targets) {
      cases.push({ what: `Idempotency-Key ${JSON.stringify(v)} on ${m} ${p}`, m, p, body, headers: [['Idempotency-Key', v]] });
      cases.push({ what: `X-Request-Id ${JSON.stringify(v)} on ${m} ${p}`, m, p, body, headers: [['Idempotency-Key', uniq('h')], ['X-Request-Id', v]], rid: v });
    }
  }
  await unchanged(() => each(cases,
    (c) => rawHttp(c.m, c.p, { headers: [['Authorization', `Bearer ${A.key}`], ['Content-Type', 'application/json'], ...c.headers], body: c.body }),
    (res, c) => {
      assert.ok(res.status >= 400 && res.status < 500, `${res.status} ${res.text.slice(0, 200)}`);
      assert.equal(res.headers.get('set-cookie'), null, 'Set-Cookie in the answer');
      assert.equal(res.headers.get('x-injected'), null, 'an injected header in the answer');
      assert.equal(res.headers.get('x-folded'), null, 'an injected header in the answer');
      const rid = res.headers.get('x-request-id');
      if (res.json) {
        // The service (or nginx's JSON error pages) answered.
        assert.deepEqual(Object.keys(res.json).sort(), ['code', 'error', 'requestId'], res.text);
        assert.equal(rid, res.json.requestId);
      }
      if (rid !== null) {
        assert.match(rid, /^[A-Za-z0-9_-]{1,63}$/, `X-Request-Id ${JSON.stringify(rid)}`);
        if (c.rid) assert.notEqual(rid, c.rid, 'the client\'s X-Request-Id was echoed');
      }
    }));
});

test('path traversal and odd ids in subscription and delivery routes are JSON 404s and reach nothing', async () => {
  const ids = [
    '..%2F..%2Fetc%2Fpasswd', '%2e%2e%2f%2e%2e%2fetc', '..%5C..%5Cwindows', "whs_1'%20OR%20'1'%3D'1", '%25', '%ff%fe',
    'x'.repeat(3000), '%2F'.repeat(50), 'whs_%0d%0aSet-Cookie:%20a=b', '%20', 'whs_%C0%AE%C0%AE',
    `x%2F..%2F${T.sub}`, `${T.sub}%2F.`, `${T.sub}%2Fresume`, `.%2F${T.sub}`, `${T.sub.toUpperCase()}`, `%20${T.sub}`,
    `${T.sub}%20`, `${T.sub};x=1`, `x%2F..%2F${T.delivery}`,
    // Fills the worker's buffer of segments to its last byte; each empty
    // segment after it needs a terminator of its own.
    `${'a'.repeat(2011)}${'/'.repeat(13)}`,
  ];
  // nginx refuses an encoded NUL itself (see hostile.test.mjs).
  const nul = ['whs_x%00', '%00', `${T.sub}%00`, `${T.delivery}%00`];
  const cases = [];
  for (const id of ids) {
    cases.push(['GET', `/webhooks/subscriptions/${id}`]);
    cases.push(['DELETE', `/webhooks/subscriptions/${id}`]);
    cases.push(['POST', `/webhooks/subscriptions/${id}/resume`]);
    cases.push(['POST', `/webhooks/subscriptions/${id}/rotate-secret`]);
    cases.push(['GET', `/webhooks/subscriptions/${id}/deliveries`]);
    cases.push(['POST', `/webhooks/deliveries/${id}/retry`]);
  }
  await unchanged(() => each(cases.map(([m, p]) => ({ m, p, what: `${m} ${p.slice(0, 120)}` })),
    // A valid (empty) body: only the id stands between the request and a change.
    ({ m, p }) => api(m, p, { key: A.key, idempotencyKey: m === 'GET' ? undefined : uniq('h') }),
    (res, c) => {
      assertJson4xx(res, c.what);
      assert.equal(res.status, 404, `${c.what}: ${res.text}`);
      assert.equal(res.json.code, 'not_found');
      assert.equal(res.headers.get('set-cookie'), null);
    }));
  const nulCases = [];
  for (const id of nul) {
    nulCases.push({ m: 'POST', p: `/webhooks/subscriptions/${id}/rotate-secret`, what: `rotate ${id}` });
    nulCases.push({ m: 'DELETE', p: `/webhooks/subscriptions/${id}`, what: `delete ${id}` });
    nulCases.push({ m: 'POST', p: `/webhooks/deliveries/${id}/retry`, what: `retry ${id}` });
  }
  await unchanged(() => each(nulCases,
    ({ m, p }) => api(m, p, { key: A.key, noValidate: true, idempotencyKey: uniq('h') }),
    (res, c) => {
      assert.equal(res.status, 400, `${c.what}: ${res.status} ${res.text.slice(0, 100)}`);
      assertError(res, 400, 'invalid_request');
    }));
});

test('oversize headers are refused with a 4xx, JSON where nginx can shape it', async () => {
  const body = '{"x":1}';
  const cases = [
    { what: 'one 100 KB header', headers: [['X-Pad', 'a'.repeat(100 * 1024)]], json: true },
    { what: 'a 16 KB cookie', headers: [['Cookie', `a=${'b'.repeat(16 * 1024)}`]], json: true },
    { what: '300 headers of 200 bytes', headers: Array.from({ length: 300 }, (_, i) => [`X-H${i}`, 'v'.repeat(200)]), json: true },
    { what: 'a 7 KB Authorization', headers: [['Authorization', `Bearer wl_${'A'.repeat(7000)}`]], json: true, status: 401 },
    { what: 'a 20 KB Idempotency-Key', headers: [['Idempotency-Key', 'k'.repeat(20 * 1024)]], json: true },
  ];
  await unchanged(() => each(cases,
    (c) => rawHttp('POST', `/webhooks/subscriptions/${T.sub}/rotate-secret`, {
      headers: [...(c.status ? [] : [['Authorization', `Bearer ${A.key}`]]), ['Content-Type', 'application/json'], ['Idempotency-Key', uniq('h')], ...c.headers],
      body,
    }),
    (res, c) => {
      assert.ok(res.status >= 400 && res.status < 500, `${res.status} ${res.text.slice(0, 200)}`);
      if (c.status) assert.equal(res.status, c.status, res.text);
      if (c.json) {
        assert.ok(res.json, `not JSON: ${res.text.slice(0, 200)}`);
        assert.deepEqual(Object.keys(res.json).sort(), ['code', 'error', 'requestId']);
      }
    }));
  // A request line longer than nginx takes is a malformed request.
  for (const n of [9 * 1024, 40 * 1024]) {
    const long = await rawHttp('GET', `/waitlist/entries?x=${'a'.repeat(n)}`, { headers: [['Authorization', `Bearer ${A.key}`]] });
    assertError(long, 400, 'invalid_request');
  }
});

test('requests the web server cannot parse are answered with the JSON 400', async () => {
  const path = new URL(BASE).pathname;
  const requests = [
    'GARBAGE\r\n\r\n',
    `GET ${path}/me extra words HTTP/1.1\r\nHost: x\r\n\r\n`,
    `GET ${path}/me HTTP/1.1\r\n\r\n`, // HTTP/1.1 without Host
    `GET ${path}/me HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n`,
    `GET ${path}/me%00 HTTP/1.0\r\n\r\n`,
    `GET ${path}/../../../../etc/passwd HTTP/1.0\r\n\r\n`,
    `GET \x01\x02 HTTP/1.0\r\n\r\n`,
    `GET ${path}/me HTTP/2.5\r\nHost: x\r\n\r\n`, // nginx's 505
    `POST ${path}/waitlist/entries HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n`, // nginx's 501
  ];
  await unchanged(() => each(requests.map((r) => ({ r, what: JSON.stringify(r.slice(0, 60)) })),
    (c) => rawExchange(Buffer.from(c.r, 'latin1')),
    (res, c) => {
      assert.ok(!res.text.includes('root:'), `${c.what}: leaked a file`);
      assertError(res, 400, 'invalid_request');
    }));
  // The page itself is not reachable from outside.
  assertError(await rawExchange(Buffer.from('GET /.errors/400 HTTP/1.0\r\n\r\n')), 404, 'not_found');
});

test('TRACE and CONNECT, which nginx refuses itself, are the JSON 405 with the route\'s Allow, or 404 off the routes', async () => {
  for (const method of ['TRACE', 'CONNECT']) {
    const res = await rawHttp(method, '/me', { headers: [['Authorization', `Bearer ${A.key}`]] });
    assertError(res, 405, 'method_not_allowed');
    assert.equal(res.headers.get('allow'), 'GET', method);
    const entry = await rawHttp(method, `/waitlist/entries/${T.entry}`, { headers: [['Authorization', `Bearer ${A.key}`]] });
    assertError(entry, 405, 'method_not_allowed');
    assert.equal(entry.headers.get('allow'), 'GET, PATCH', method);
    assertError(await rawHttp(method, '/nope', {}), 404, 'not_found');
  }
});

test('nginx\'s own answers are JSON whatever the extension of the path', async () => {
  const origin = new URL(BASE).origin;
  for (const path of ['/index.html', '/logo.gif', '/x.jpg', '/v1/external.html']) {
    const res = await fetch(`${origin}${path}`);
    assert.equal(res.status, 404, path);
    assert.equal(res.headers.get('content-type'), 'application/json', path);
    assert.equal((await res.json()).code, 'not_found', path);
  }
});

test('the service is healthy after every hostile request, with the same workers', async () => {
  await sleep(100);
  assert.deepEqual(workers(masterPid()).sort(), [...pids].sort(), 'a worker died');
  const h = await api('GET', '/health');
  assert.equal(h.status, 200, h.text);
  // The targets still work: the valid bodies that were never sent succeed.
  const ok = await api('PATCH', `/waitlist/entries/${T.entry}`, { key: A.key, idempotencyKey: uniq('h'), body: { expectedVersion: 1, partySize: 2 } });
  assert.equal(ok.status, 200, ok.text);
  const rot = await api('POST', `/webhooks/subscriptions/${T.sub}/rotate-secret`, { key: A.key, idempotencyKey: uniq('h'), rawBody: '{}' });
  assert.equal(rot.status, 200, rot.text);
});
