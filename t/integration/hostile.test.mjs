// Hostile input against the entry routes: oversized, malformed and
// deeply nested bodies, absurd numbers, injection-looking strings, odd
// paths and ids.  Every answer is a 4xx JSON error (never a 5xx), nothing
// is written, and strings that are accepted come back byte for byte.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { api, sql, uniq } from './lib.mjs';
import {
  assertContiguous, assertError, create, eachCase, entryCount, events, getEntry, mustCreate, rawHttp, setup,
  write,
} from './util-entries.mjs';
import { waitFor } from './util-faults.mjs';

const A = setup({
  customFields: [{ ref: 'f2', label: 'Note', type: 'text', required: false, public: true }],
  q1: { customFields: ['f1', 'f2'] },
});

const post = (rawBody, idempotencyKey = uniq('idem')) =>
  api('POST', '/waitlist/entries', { key: A.key, rawBody, idempotencyKey });

// Runs fn and checks that the tenant's entries and events did not change.
async function unchanged(fn) {
  const before = entryCount(A.tenantId);
  const evBefore = events(A.tenantId).length;
  await fn();
  assert.equal(entryCount(A.tenantId), before, 'an entry was written');
  assert.equal(events(A.tenantId).length, evBefore, 'an event was written');
}

const each = (cases, send, check) => eachCase(cases, send, check, label);

function label(c) {
  const s = typeof c === 'string' ? c : Buffer.isBuffer(c) ? `bytes ${c.toString('hex')}` : JSON.stringify(c);
  return s.length > 160 ? `${s.slice(0, 60)}...${s.slice(-90)} (${s.length} chars)` : s;
}

test('a 70 KiB body is 400 payload_too_large', async () => {
  const e = await mustCreate(A.key, { queueId: A.queueId, partySize: 1, fullName: 'Target' });
  await unchanged(async () => {
    const big = JSON.stringify({ queueId: A.queueId, partySize: 1, fullName: 'Big', notes: 'n'.repeat(70 * 1024) });
    assertError(await post(big), 400, 'payload_too_large');
    const big2 = JSON.stringify({ queueId: A.queueId, partySize: 1, fullName: 'x'.repeat(70 * 1024) });
    assertError(await post(big2), 400, 'payload_too_large');
    assertError(await api('PATCH', `/waitlist/entries/${e.id}`, { key: A.key, idempotencyKey: uniq('i'), rawBody: JSON.stringify({ expectedVersion: 1, notes: 'n'.repeat(70 * 1024) }) }), 400, 'payload_too_large');
    assertError(await api('PATCH', `/waitlist/entries/${e.id}/status`, { key: A.key, idempotencyKey: uniq('i'), rawBody: JSON.stringify({ status: 'ready', expectedStatus: 'waiting', expectedVersion: 1, pad: 'p'.repeat(70 * 1024) }) }), 400, 'payload_too_large');
  });
  assert.equal((await getEntry(A.key, e.id)).version, 1);
});

test('invalid UTF-8 is 400 invalid_json', async () => {
  await unchanged(async () => {
    const seqs = [[0xff], [0xc3, 0x28], [0xe2, 0x82], [0xed, 0xa0, 0x80], [0xc0, 0xaf], [0xf8, 0x88, 0x80, 0x80, 0x80], [0xf4, 0x90, 0x80, 0x80]];
    for (const bytes of seqs) {
      const raw = Buffer.concat([
        Buffer.from(`{"queueId":"${A.queueId}","fullName":"a`), Buffer.from(bytes), Buffer.from('b"}'),
      ]);
      const res = await post(raw);
      assert.equal(res.status, 400, `bytes ${bytes.map((b) => b.toString(16))}: ${res.text}`);
      assertError(res, 400, 'invalid_json');
    }
    // In a member name too.
    const raw = Buffer.concat([Buffer.from(`{"queueId":"${A.queueId}","fullName":"a","`), Buffer.from([0xff]), Buffer.from('":1}')]);
    assertError(await post(raw), 400, 'invalid_json');
  });
});

test('NUL characters are refused, raw or escaped', async () => {
  await unchanged(async () => {
    assertError(await post(`{"queueId":"${A.queueId}","fullName":"Rob\\u0000ert"}`), 400, 'invalid_json');
    assertError(await post(`{"queueId":"${A.queueId}\\u0000","fullName":"Robert"}`), 400, 'invalid_json');
    assertError(await post(`{"queueId":"${A.queueId}","fullName":"Robert","notes":"a\\u0000"}`), 400, 'invalid_json');
    assertError(await post(`{"queueId":"${A.queueId}","full\\u0000Name":"Robert"}`), 400, 'invalid_json');
    const raw = Buffer.concat([Buffer.from(`{"queueId":"${A.queueId}","fullName":"Rob`), Buffer.from([0]), Buffer.from('ert"}')]);
    assertError(await post(raw), 400, 'invalid_json');
  });
});

test('lone surrogate escapes are refused', async () => {
  await unchanged(async () => {
    for (const esc of ['\\ud800', '\\udfff', '\\ud800x', '\\udc00\\ud800']) {
      const res = await post(`{"queueId":"${A.queueId}","fullName":"a${esc}b"}`);
      assertError(res, 400, ['invalid_json', 'validation_failed']);
    }
  });
});

test('deeply nested arrays and objects are refused without a 5xx', async () => {
  const cases = [];
  for (const depth of [100, 2000, 20000]) {
    const arr = '['.repeat(depth) + ']'.repeat(depth);
    const obj = '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
    for (const nested of [arr, obj]) {
      const inField = `{"queueId":"${A.queueId}","partySize":1,"fullName":"Deep","customData":${nested}}`;
      if (inField.length <= 60 * 1024) cases.push(inField);
      if (nested.length <= 60 * 1024) cases.push(nested);
    }
    cases.push('['.repeat(depth));
    cases.push(`{"queueId":"${A.queueId}","partySize":1,"fullName":"Deep","notes":${'['.repeat(depth)}`);
  }
  cases.push(JSON.stringify({ queueId: A.queueId, partySize: 1, fullName: 'Deep', customData: { [A.f2]: JSON.parse('['.repeat(50) + ']'.repeat(50)) } }));
  await unchanged(() => each(cases, (raw) => post(raw), (res) => assertError(res, 400, ['invalid_json', 'validation_failed'])));
});

test('absurd numbers are 400', async () => {
  const e = await mustCreate(A.key, { queueId: A.queueId, partySize: 1, fullName: 'Num target' });
  const party = ['1e400', '-1e400', '1e308', '9007199254740993', '18446744073709551617', '1.0000000000000002', '2.5', '-0.5', '0x10', 'NaN', 'Infinity', '-0', '1e-400', '01', '+1', '.5', '1.'];
  const version = ['1e400', '-1', '0', '1.5', '-1e400', '01', '2147483648', '1e20', '9223372036854775808'];
  const cases = [
    ...party.map((n) => ['POST', '/waitlist/entries', `{"queueId":"${A.queueId}","fullName":"Num","partySize":${n}}`]),
    ...version.map((v) => ['PATCH', `/waitlist/entries/${e.id}`, `{"expectedVersion":${v},"partySize":2}`]),
    ...version.map((v) => ['PATCH', `/waitlist/entries/${e.id}/status`, `{"status":"ready","expectedStatus":"waiting","expectedVersion":${v}}`]),
  ];
  await unchanged(() => each(cases,
    ([m, p, raw]) => api(m, p, { key: A.key, rawBody: raw, idempotencyKey: uniq('i') }),
    (res, [, , raw]) => {
      // Out-of-range integers may also be read as a version that does not match.
      if (res.status === 409 && /2147483648|1e20|9223372036854775808/.test(raw)) assertError(res, 409, 'version_conflict');
      else assertError(res, 400, ['validation_failed', 'invalid_json']);
    }));
  assert.equal((await getEntry(A.key, e.id)).version, 1);
  // 100 written with an exponent is still the number 100.
  const res = await post(`{"queueId":"${A.queueId}","fullName":"Num","partySize":1E2}`);
  assert.equal(res.status, 201, res.text);
  assert.equal(res.json.entry.partySize, 100);
});

test('bodies that are not JSON objects are 400 invalid_json', async () => {
  const cases = ['', ' ', 'null', '[]', '"text"', '42', 'true', '{', '}', '{"a":1}{"b":2}', '{"a":1,}', "{'queueId':'x'}",
    '{"queueId":"x" "fullName":"y"}', '{"queueId":"x",\n"fullName":"y"} trailing', '{"queueId":"x","fullName":"y"}\u0000',
    '{"queueId":"x","fullName":"y",/* c */"notes":"z"}', '{"queueId":"x","fullName":"\\x41"}', '{"queueId":"x","fullName":"\\u12"}',
    '{"queueId":"x","fullName":"tab\there"}', '{"queueId":"x","fullName":"line\nbreak"}',
    `{"queueId":"${A.queueId}","fullName":"x","fullName":"y"}`, `{"queueId":"${A.queueId}","fullName":"x","customData":{"a":1,"a":2}}`];
  await unchanged(() => each(cases, (raw) => post(raw), (res) => assertError(res, 400, 'invalid_json')));
});

test('injection-looking strings are stored and returned verbatim', async () => {
  const strings = {
    fullName: "Robert'); DROP TABLE entries;--",
    notes: '\' OR \'1\'=\'1\'; -- \\" %_ \\\\ `rm -rf /` $(id) <script>alert(1)</script> {{7*7}} ${7*7}',
    externalReference: `x' OR 1=1 -- ${uniq('inj')}`,
  };
  const e = await mustCreate(A.key, { queueId: A.queueId, partySize: 1, ...strings, customData: { [A.f2]: '"; DELETE FROM events; --' } });
  for (const [k, v] of Object.entries(strings)) assert.equal(e[k], v, k);
  assert.deepEqual(e.customData, { [A.f2]: '"; DELETE FROM events; --' });
  const got = await getEntry(A.key, e.id);
  for (const [k, v] of Object.entries(strings)) assert.equal(got[k], v, k);
  const list = await api('GET', `/waitlist/entries?externalReference=${encodeURIComponent(strings.externalReference)}`, { key: A.key });
  assert.equal(list.status, 200, list.text);
  assert.deepEqual(list.json.entries.map((x) => x.id), [e.id]);
  // A wildcard lookup matches nothing.
  for (const wild of ['%', '_', "x' OR 1=1 -- %", '*']) {
    const w = await api('GET', `/waitlist/entries?externalReference=${encodeURIComponent(wild)}`, { key: A.key });
    assert.equal(w.status, 200, w.text);
    assert.deepEqual(w.json.entries, [], `lookup ${wild}`);
  }
  assert.ok(Number(sql('SELECT COUNT(*) FROM entries')[0][0]) > 0, 'the entries table is still there');
  // Editing with more of the same.
  const ed = await write('PATCH', `/waitlist/entries/${e.id}`, A.key, { expectedVersion: 1, fullName: 'Ro"bert\\\'; UPDATE entries SET version=99;--' });
  assert.equal(ed.status, 200, ed.text);
  assert.equal(ed.json.entry.fullName, 'Ro"bert\\\'; UPDATE entries SET version=99;--');
  assert.equal(ed.json.entry.version, 2);
});

test('non-ASCII text round-trips exactly, including 4-byte characters', async () => {
  const name = 'Zoë Ødegård 山田 太郎 👩🏽‍🍳 Ꭰ \u0301e\u0301 \u200b';
  const notes = 'line 1\nline 2\ttabbed — “quoted” 🎉';
  const e = await mustCreate(A.key, { queueId: A.queueId, partySize: 1, fullName: name, notes });
  assert.equal(e.fullName, name);
  assert.equal(e.notes, notes);
  const got = await getEntry(A.key, e.id);
  assert.equal(got.fullName, name);
  assert.equal(got.notes, notes);
  // 200 emoji are 200 characters (400 UTF-16 units, 800 bytes).
  const emoji = '😀'.repeat(200);
  const big = await create(A.key, { queueId: A.queueId, partySize: 1, fullName: emoji });
  assert.equal(big.status, 201, big.text);
  assert.equal(big.json.entry.fullName, emoji);
});

test('control characters are refused, but tabs everywhere and line breaks in free text', async () => {
  const bad = ['\x01', '\x1b[31m', '\x7f'];
  const cases = [];
  for (const c of bad) {
    cases.push({ fullName: `A${c}B` }, { notes: `n${c}` }, { externalReference: uniq(`r${c}`) },
      { customData: { [A.f2]: `t${c}` } });
  }
  cases.push({ fullName: 'line\nbreak' }, { fullName: 'cr\rhere' });
  await unchanged(() => each(cases,
    (extra) => create(A.key, { queueId: A.queueId, partySize: 1, fullName: 'Ctl', ...extra }),
    (res, extra) => assertError(res, 400, 'validation_failed', JSON.stringify(extra))));
  const ok = { fullName: 'Tab\tName', notes: 'a\r\nb\tc', customData: { [A.f2]: 'x\ny\tz' } };
  const e = await mustCreate(A.key, { queueId: A.queueId, partySize: 1, ...ok });
  for (const [k, v] of Object.entries(ok)) assert.deepEqual(e[k], v, k);
});

test('over-long strings are 400, never a database error', async () => {
  const many = {};
  for (let i = 0; i < 2000; i++) many[`cf_${i}`] = i;
  const cases = [
    ['fullName', 'n'.repeat(5000)],
    ['fullName', '😀'.repeat(5000)],
    ['notes', '😀'.repeat(501)],
    ['externalReference', '😀'.repeat(256)],
    ['phone', `+1${'2'.repeat(40)}`],
    ['serviceTypeId', 's'.repeat(5000)],
    ['queueId', 'q'.repeat(5000)],
    ['customData', many],
    ['smsConsent', { source: 's'.repeat(5000), consentedAt: '2026-01-31T12:00:00Z', disclosureVersion: 'v1' }],
  ];
  await unchanged(() => each(cases,
    ([field, value]) => create(A.key, { queueId: A.queueId, partySize: 1, fullName: 'Long', [field]: value }),
    (res, [field]) => assertError(res, field === 'queueId' ? [400, 404].includes(res.status) && res.status : 400,
      field === 'queueId' && res.status === 404 ? 'not_found' : 'validation_failed')));
});

test('path traversal and odd ids are JSON 404s', async () => {
  const ids = [
    '..%2F..%2Fetc', '..%2F..%2F..%2Fetc%2Fpasswd', '%2e%2e%2f%2e%2e%2fetc', '..%5C..%5Cwindows',
    "ent_1'%20OR%20'1'%3D'1", 'ent_1%22%3B%20DROP%20TABLE%20entries%3B--', '%25', '%ff%fe', 'x'.repeat(5000),
    '%2F'.repeat(100), 'ent_%0d%0aSet-Cookie:%20a=b', '%20', 'ent_%C0%AE%C0%AE',
  ];
  const cases = [];
  for (const id of ids) {
    cases.push(['GET', `/waitlist/entries/${id}`, undefined]);
    cases.push(['PATCH', `/waitlist/entries/${id}`, { expectedVersion: 1, partySize: 2 }]);
    cases.push(['PATCH', `/waitlist/entries/${id}/status`, { status: 'ready', expectedStatus: 'waiting', expectedVersion: 1 }]);
    cases.push(['POST', `/bookings/${id}/cancel`, { expectedStatus: 'confirmed', expectedVersion: 1 }]);
    cases.push(['POST', `/bookings/${id}/reschedule`, { scheduledFor: '2030-01-01T10:00:00Z', expectedVersion: 1 }]);
  }
  await unchanged(() => each(cases,
    ([m, p, body]) => api(m, p, { key: A.key, body, idempotencyKey: m === 'GET' ? undefined : uniq('i') }),
    (res) => {
      assertError(res, 404, 'not_found');
      assert.equal(res.headers.get('set-cookie'), null);
    }));
});

// nginx itself refuses a path holding an encoded NUL, before any location
// applies; its error page is the JSON 400 invalid_request, never a 5xx,
// and nothing reaches the service.
test('ids with an encoded NUL are refused by the web server and change nothing', async () => {
  const cases = [];
  for (const id of ['ent_x%00', '%00']) {
    cases.push(['GET', `/waitlist/entries/${id}`, undefined]);
    cases.push(['PATCH', `/waitlist/entries/${id}`, { expectedVersion: 1, partySize: 2 }]);
    cases.push(['PATCH', `/waitlist/entries/${id}/status`, { status: 'ready', expectedStatus: 'waiting', expectedVersion: 1 }]);
    cases.push(['POST', `/bookings/${id}/cancel`, { expectedStatus: 'confirmed', expectedVersion: 1 }]);
  }
  await unchanged(() => each(cases,
    ([m, p, body]) => api(m, p, { key: A.key, body, noValidate: true, idempotencyKey: m === 'GET' ? undefined : uniq('i') }),
    (res) => assertError(res, 400, 'invalid_request')));
});

// A path climbing above the root is refused the same way by nginx.
test('paths climbing above the root are refused by the web server and reveal no file', async () => {
  const paths = ['/waitlist/entries/x/../../../../../../etc/passwd', '/../../../../etc/passwd'];
  await each(paths,
    (p) => rawHttp('GET', p, { headers: [['Authorization', `Bearer ${A.key}`]] }),
    (res) => {
      assert.ok(!res.text.includes('root:'), 'leaked a file');
      assertError(res, 400, 'invalid_request');
    });
});

test('unnormalized paths get JSON answers and reveal no file', async () => {
  const paths = ['/waitlist/entries/../../../etc/passwd', '/waitlist/entries/./x',
    '/waitlist/entries/%2e%2e/%2e%2e/%2e%2e/etc/passwd'];
  await each(paths,
    (p) => rawHttp('GET', p, { headers: [['Authorization', `Bearer ${A.key}`]] }),
    (res) => {
      assert.ok(!res.text.includes('root:'), 'leaked a file');
      assert.ok(res.status < 500, `status ${res.status}`);
      assert.ok(res.json, `not JSON (${res.status}): ${res.text.slice(0, 120)}`);
      assert.ok(res.headers.get('x-request-id'), 'no X-Request-Id');
    });
});

test('an encoded slash or dot-segment in an id reaches no other entry or route', async () => {
  const status = { status: 'cancelled', expectedStatus: 'waiting', expectedVersion: 1 };
  const cases = [
    ['GET', (id) => `/waitlist/entries/%2F${id}`, undefined],
    ['GET', (id) => `/waitlist/entries/x%2F..%2F${id}`, undefined],
    ['GET', (id) => `/waitlist/entries/${id}%2F.`, undefined],
    ['PATCH', (id) => `/waitlist/entries/x%2F..%2F${id}`, { expectedVersion: 1, partySize: 2 }],
    ['PATCH', (id) => `/waitlist/entries/${id}%2Fstatus`, status],
    ['PATCH', (id) => `/waitlist/entries/x%2F..%2F${id}/status`, status],
    ['POST', (id) => `/bookings/x%2F..%2F${id}/cancel`, { expectedStatus: 'waiting', expectedVersion: 1 }],
  ];
  // A fresh target for each request, so that one that gets through does not
  // change the answer to the next.
  const targets = [];
  for (let i = 0; i < cases.length; i++) targets.push(await mustCreate(A.key, { queueId: A.queueId, partySize: 1, fullName: 'Slash target' }));
  await unchanged(() => each(cases.map((c, i) => [c[0], c[1](targets[i].id), c[2]]),
    ([m, p, body]) => api(m, p, { key: A.key, body, idempotencyKey: m === 'GET' ? undefined : uniq('i') }),
    (res) => assertError(res, 404, 'not_found')));
  for (const t of targets) {
    const now = await getEntry(A.key, t.id);
    assert.deepEqual([now.version, now.status], [1, 'waiting'], `entry changed through an encoded path: ${t.id}`);
  }
});

test('a wrong method on an entry route is 405 with Allow', async () => {
  const e = await mustCreate(A.key, { queueId: A.queueId, partySize: 1, fullName: 'Method target' });
  await unchanged(async () => {
    for (const [m, p] of [['DELETE', `/waitlist/entries/${e.id}`], ['PUT', `/waitlist/entries/${e.id}`], ['DELETE', '/waitlist/entries'], ['GET', `/waitlist/entries/${e.id}/status`], ['GET', `/bookings/${e.id}/cancel`]]) {
      const res = await api(m, p, { key: A.key, idempotencyKey: uniq('i') });
      assertError(res, 405, 'method_not_allowed');
      assert.ok(res.headers.get('allow'), `${m} ${p}: no Allow header`);
    }
  });
  assert.equal((await getEntry(A.key, e.id)).version, 1);
});

test('odd query strings on the list are 400 or ignored, never a 5xx', async () => {
  const loose = ['externalReference=', 'limit=99999999999999999999', 'limit=%00', 'cursor=%ff%fe', 'limit=1&limit=2',
    'externalReference=a&externalReference=b', 'cursor=..%2F..%2F', '%zz=1', 'externalReference=%ff', 'a=%'];
  await each(loose, (q) => api('GET', `/waitlist/entries?${q}`, { key: A.key }), (res) => {
    if (res.status !== 200) assertError(res, 400, ['validation_failed', 'invalid_cursor', 'invalid_request']);
  });
  const strict = ['externalReference=%00', `externalReference=${'r'.repeat(300)}`, 'limit=1e400', `cursor=${'A'.repeat(1025)}`,
    'limit=10abc', 'limit=0', 'limit=101', 'limit=-5', 'cursor=%00'];
  await each(strict, (q) => api('GET', `/waitlist/entries?${q}`, { key: A.key }),
    (res) => assertError(res, 400, ['validation_failed', 'invalid_cursor', 'invalid_request']));
});

test('query strings stay out of the web server\'s access log', async () => {
  // A client may put anything in a query string, a guest's name too:
  // t/ops/log-secrets.sh looks for this SECRET-GUEST- value in every log.
  const secret = uniq('SECRET-GUEST-query');
  const res = await api('GET', `/waitlist/entries?externalReference=${secret}&fullName=${secret}`, { key: A.key });
  assert.equal(res.status, 200, res.text);
  const id = res.headers.get('x-request-id');
  const log = join(process.env.WL_VAR, 'log', 'nginx-access.log');
  // nginx writes its log buffer at least every second.
  const line = await waitFor('the request in the access log', 5000,
    () => readFileSync(log, 'utf8').split('\n').find((l) => l.includes(id)));
  assert.match(line, /"GET \/v1\/external\/waitlist\/entries HTTP\/1\.1" 200 /);
  assert.ok(!line.includes(secret), line);
});

test('every hostile request above left the service healthy', async () => {
  const h = await api('GET', '/health');
  assert.equal(h.status, 200, h.text);
  const e = await mustCreate(A.key, { queueId: A.queueId, partySize: 1, fullName: 'Still fine' });
  assert.equal(e.version, 1);
  // No refused request took a number of the tenant's sequence.
  const evs = events(A.tenantId);
  assert.ok(evs.length >= 1);
  assertContiguous(evs);
});
