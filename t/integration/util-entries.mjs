// Shared helpers for the entry, idempotency, transition, booking and
// hostile-input integration tests.  Each test file seeds its own tenants.

import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { ALL_SCOPES, BASE, HIGH_LIMITS, api, fixture, seed, sql, uniq } from './lib.mjs';

export { ALL_DAY, ALL_SCOPES, HIGH_LIMITS, TS_RE, assertError, line } from './lib.mjs';

export const STATUSES = [
  'waiting', 'ready', 'confirmed', 'in_service', 'completed', 'cancelled', 'no_show',
];

// DECISIONS.md "States and transitions".
export const ALLOWED = {
  waiting: ['ready', 'confirmed', 'in_service', 'cancelled', 'no_show'],
  ready: ['waiting', 'confirmed', 'in_service', 'cancelled', 'no_show'],
  confirmed: ['waiting', 'ready', 'in_service', 'cancelled', 'no_show'],
  in_service: ['waiting', 'completed'],
  completed: [],
  cancelled: [],
  no_show: [],
};

const DAY_KEYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];

// A mutating call with a fresh Idempotency-Key (unless one is given).
export function write(method, path, key, body, idempotencyKey = uniq('idem')) {
  return api(method, path, { key, body, idempotencyKey });
}

export function create(key, body, idempotencyKey) {
  return write('POST', '/waitlist/entries', key, body, idempotencyKey);
}

// Creates an entry and returns it, failing the test on anything but 201.
export async function mustCreate(key, body) {
  const res = await create(key, body);
  assert.equal(res.status, 201, res.text);
  return res.json.entry;
}

export async function getEntry(key, id) {
  const res = await api('GET', `/waitlist/entries/${id}`, { key });
  assert.equal(res.status, 200, res.text);
  return res.json.entry;
}

export function setStatus(key, entry, status, over = {}) {
  return write('PATCH', `/waitlist/entries/${entry.id}/status`, key, {
    status, expectedStatus: entry.status, expectedVersion: entry.version, ...over,
  });
}

// Moves an entry along allowed steps; returns the final entry.
export async function moveThrough(key, entry, steps) {
  let e = entry;
  for (const s of steps) {
    const res = await setStatus(key, e, s);
    assert.equal(res.status, 200, `moving ${e.status} -> ${s}: ${res.text}`);
    e = res.json.entry;
  }
  return e;
}

// Rows of the events table of a tenant, parsed.
export function events(tenantId) {
  return sql(`SELECT seq, type, body FROM events WHERE tenant_id='${tenantId}' ORDER BY seq`)
    .map(([seq, type, body]) => ({ seq: Number(seq), type, raw: body, body: JSON.parse(body) }));
}

export function assertContiguous(evs) {
  evs.forEach((e, i) => {
    assert.equal(e.seq, i + 1, `event sequence has a gap: ${evs.map((x) => x.seq).join(',')}`);
    assert.equal(e.body.sequence, e.seq, `body.sequence ${e.body.sequence} != seq ${e.seq}`);
  });
}

export function entryCount(tenantId) {
  return Number(sql(`SELECT COUNT(*) FROM entries WHERE tenant_id='${tenantId}'`)[0][0]);
}

// Local wall clock of a zone at instant ms.
export function localParts(zone, ms = Date.now()) {
  const f = new Intl.DateTimeFormat('en-US', {
    timeZone: zone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit',
    hour: '2-digit', minute: '2-digit', weekday: 'short',
  });
  const p = Object.fromEntries(f.formatToParts(new Date(ms)).map((x) => [x.type, x.value]));
  return {
    date: `${p.year}-${p.month}-${p.day}`,
    hour: Number(p.hour), minute: Number(p.minute),
    wday: p.weekday.toLowerCase().slice(0, 3),
  };
}

// A whole-hour-offset zone whose local time now is between 02:00 and
// 19:00, so that "later today" leaves room for slots and tests.
export function dayZone() {
  for (const z of ['UTC', 'Asia/Tokyo', 'America/Los_Angeles', 'Europe/London']) {
    const { hour } = localParts(z);
    if (hour >= 2 && hour < 19) return z;
  }
  throw new Error('no suitable time zone');
}

export const SLOT_MS = 15 * 60 * 1000;

// The next 15-minute boundary at least 20 minutes ahead (a multiple of
// 15 minutes since the epoch is on the local grid of a whole-hour zone).
export function nextSlot(minAheadMs = 20 * 60 * 1000) {
  return Math.ceil((Date.now() + minAheadMs) / SLOT_MS) * SLOT_MS;
}

export const iso = (ms) => new Date(ms).toISOString();

// Instant of local HH:MM today in zone (whole-hour-offset zones only).
export function localTodayAt(zone, hh, mm) {
  const now = Date.now();
  const { hour, minute } = localParts(zone, now);
  const base = Math.floor(now / 60000) * 60000 - (hour * 60 + minute) * 60000;
  return base + (hh * 60 + mm) * 60000;
}

export function todayKey(zone) {
  return localParts(zone).wday;
}

export function yesterdayKey(zone) {
  const i = DAY_KEYS.indexOf(todayKey(zone));
  return DAY_KEYS[(i + 6) % 7];
}

// Hours object with every day set to `day`, optionally overriding some.
export function hours(day, overrides = {}) {
  const days = {};
  for (const d of DAY_KEYS) days[d] = { ...day, ...(overrides[d] ?? {}) };
  return { ...day, days };
}

// Seeds a fixture tenant with high limits; extra lines, services, fields
// and keys can be given.  Returns the refs plus convenient names.
export function setup({ tenant = {}, q1 = {}, queues = [], services = [], customFields = [], keys = [] } = {}) {
  const fx = fixture({ limits: HIGH_LIMITS, ...tenant });
  const t = fx.tenants[0];
  const b = t.businesses[0];
  b.services.push(...services);
  b.customFields.push(...customFields);
  const { availability: q1avail = {}, ...q1rest } = q1;
  Object.assign(b.queues[0], q1rest);
  Object.assign(b.queues[0].availability, q1avail);
  b.queues.push(...queues);
  t.keys.push(...keys);
  const refs = seed(fx);
  return { ...refs, key: refs.k1, tenantId: refs.t1, queueId: refs.q1, businessId: refs.b1 };
}

export function key(ref, over = {}) {
  return {
    ref, scopes: [...ALL_SCOPES], businesses: [], queues: [],
    expiresInDays: 365, integrationType: 'api', ...over,
  };
}

// Sends each case and checks its answer with check(res, c), collecting
// every failure (contract violations that api() throws included) so that
// one test reports all of them, each under name(c), not only the first.
export async function eachCase(cases, send, check, name) {
  const problems = [];
  for (const c of cases) {
    try {
      check(await send(c), c);
    } catch (err) {
      problems.push(`${name(c)}: ${err.message.split('\n').filter(Boolean).slice(0, 4).join(' | ').slice(0, 400)}`);
    }
  }
  assert.deepEqual(problems, [], `${problems.length} of ${cases.length} hostile requests answered wrongly`);
}

// One HTTP/1.1 exchange over a bare socket, for requests fetch refuses to
// send (odd header bytes, unnormalized paths).  path is appended to the
// base path as is; headers is an array of [name, value] with value a
// string of byte values (latin1).  Returns {status, headers, text, json}.
export function rawHttp(method, path, { headers = [], body } = {}) {
  const url = new URL(BASE);
  const payload = body === undefined ? null : Buffer.isBuffer(body) ? body : Buffer.from(body);
  const lines = [`${method} ${url.pathname}${path} HTTP/1.1`, `Host: ${url.host}`, 'Connection: close'];
  for (const [n, v] of headers) lines.push(`${n}: ${v}`);
  if (payload) lines.push(`Content-Length: ${payload.length}`);
  const head = Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1');
  return rawExchange(payload ? Buffer.concat([head, payload]) : head);
}

// Sends bytes as they are to the stack's HTTP port and reads the answer
// to the end of the connection: {status, headers, text, json}.
export function rawExchange(bytes) {
  const url = new URL(BASE);
  return new Promise((resolve, reject) => {
    const sock = connect({ host: url.hostname, port: Number(url.port || 80) });
    const chunks = [];
    // write, not end: nginx takes a half-closed client for one that left.
    sock.on('connect', () => sock.write(bytes));
    sock.on('data', (c) => chunks.push(c));
    sock.on('error', reject);
    sock.on('end', () => {
      sock.end();
      const all = Buffer.concat(chunks);
      const sep = all.indexOf('\r\n\r\n');
      const headText = all.subarray(0, sep).toString('latin1');
      let rest = all.subarray(sep + 4);
      const [statusLine, ...hl] = headText.split('\r\n');
      const h = new Map(hl.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
      if ((h.get('transfer-encoding') ?? '').includes('chunked')) {
        const parts = [];
        for (;;) {
          const eol = rest.indexOf('\r\n');
          const size = parseInt(rest.subarray(0, eol).toString(), 16);
          if (!size) break;
          parts.push(rest.subarray(eol + 2, eol + 2 + size));
          rest = rest.subarray(eol + 2 + size + 2);
        }
        rest = Buffer.concat(parts);
      }
      const text = rest.toString('utf8');
      let json = null;
      try { json = JSON.parse(text); } catch { /* not JSON */ }
      resolve({ status: Number(statusLine.split(' ')[1]), headers: { get: (n) => h.get(n.toLowerCase()) ?? null }, text, json });
    });
  });
}
