// Helpers shared by ratelimit, keys and analytics tests.  Built on lib.mjs
// only (no other test's helpers), so that those files can change freely.
//
// Pinned clock: on a test stack ([server] test_clock = 1) the header
// X-Test-Now pins the clock of one request (rate-limit windows, key
// expiry, creation and status-change times, "today").  Keys expire by the
// pinned clock too, so pinned instants stay close to the real time.

import assert from 'node:assert/strict';
import { createHash, randomInt } from 'node:crypto';
import { api, sql } from './lib.mjs';

export { ALL_SCOPES, assertError, createKey, tenantSet } from './lib.mjs';

export const MINUTE_MS = 60_000;
export const DAY_MS = 86_400_000;

export function assertOk(res, status = 200, what = '') {
  assert.equal(res.status, status, `${what ? `${what}: ` : ''}expected ${status}, got ${res.status}: ${res.text}`);
  assert.ok(res.json, `not JSON: ${res.text}`);
  return res.json;
}

export const sha256hex = (s) => createHash('sha256').update(s).digest('hex');

// A minute of its own for one test: a minute boundary shortly after the
// real time (1 to 240 minutes ahead, at random so that tests of several
// runs on one stack do not share windows).  at(s) is the ISO instant s
// seconds (fractions allowed) into that minute; next(n) another minute.
export function freshMinute() {
  const start = Math.ceil(Date.now() / MINUTE_MS) * MINUTE_MS + randomInt(1, 240) * MINUTE_MS;
  const at = (seconds = 10, minutes = 0) => new Date(start + minutes * MINUTE_MS + Math.round(seconds * 1000)).toISOString();
  return { start, at };
}

export const pinned = (iso, headers = {}) => ({ ...headers, 'x-test-now': iso });

// The RateLimit field: "<name>";r=<remaining>;t=<reset> (IETF draft), as
// {name, r, t}; null when absent or not of that shape.
export function rateLimitOf(res) {
  const v = res.headers.get('ratelimit');
  if (v === null) return null;
  const m = /^"(key|tenant)";r=(\d+);t=(\d+)$/.exec(v.trim());
  return m ? { name: m[1], r: Number(m[2]), t: Number(m[3]), raw: v } : { raw: v };
}

// The RateLimit-Policy field as {key: q, tenant: q} with w checked to be 60.
export function policyOf(res) {
  const v = res.headers.get('ratelimit-policy');
  if (v === null) return null;
  const out = { raw: v };
  for (const part of v.split(',')) {
    const m = /^\s*"(key|tenant)";q=(\d+);w=(\d+)\s*$/.exec(part);
    if (!m) return { raw: v, bad: true };
    out[m[1]] = Number(m[2]);
    out[`${m[1]}W`] = Number(m[3]);
  }
  return out;
}

// Expect the two rate-limit fields with these values.
export function assertRateHeaders(res, { keyQ, tenantQ, name, r, t }, what = '') {
  const label = what ? `${what}: ` : '';
  const p = policyOf(res);
  assert.ok(p, `${label}RateLimit-Policy missing (status ${res.status})`);
  assert.deepEqual(p, { raw: p.raw, key: keyQ, keyW: 60, tenant: tenantQ, tenantW: 60 },
    `${label}RateLimit-Policy ${p.raw}`);
  const rl = rateLimitOf(res);
  assert.ok(rl, `${label}RateLimit missing (status ${res.status})`);
  const want = { raw: rl.raw };
  if (name !== undefined) want.name = name; else want.name = rl.name;
  if (r !== undefined) want.r = r; else want.r = rl.r;
  if (t !== undefined) want.t = t; else want.t = rl.t;
  assert.deepEqual(rl, want, `${label}RateLimit ${rl.raw}`);
}

// A walk-in body for line queueId.
export const walkIn = (queueId, fullName = 'Ada Lovelace', extra = {}) => ({ queueId, fullName, ...extra });

export function countEntries(tenantId) {
  return Number(sql(`SELECT COUNT(*) FROM entries WHERE tenant_id = '${tenantId}'`)[0][0]);
}

export function countEvents(tenantId) {
  return Number(sql(`SELECT COUNT(*) FROM events WHERE tenant_id = '${tenantId}'`)[0][0]);
}

// Offset (ms) of zone tz from UTC at instant ms.
export function zoneOffsetMs(tz, ms) {
  const parts = Object.fromEntries(new Intl.DateTimeFormat('en-US', {
    timeZone: tz, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit',
    hour: '2-digit', minute: '2-digit', second: '2-digit',
  }).formatToParts(new Date(ms)).map((p) => [p.type, p.value]));
  const wall = Date.UTC(Number(parts.year), Number(parts.month) - 1, Number(parts.day),
    Number(parts.hour), Number(parts.minute), Number(parts.second));
  return wall - Math.floor(ms / 1000) * 1000;
}

// The instant of local wall time date (YYYY-MM-DD) hh:mm in zone tz
// (unambiguous times only).
export function localInstant(tz, date, hhmm) {
  const [y, m, d] = date.split('-').map(Number);
  const [hh, mm] = hhmm.split(':').map(Number);
  const wall = Date.UTC(y, m - 1, d, hh, mm);
  let t = wall - zoneOffsetMs(tz, wall);
  t = wall - zoneOffsetMs(tz, t);
  return t;
}

// The local calendar date (YYYY-MM-DD) of instant ms in zone tz.
export function localDate(tz, ms) {
  return new Intl.DateTimeFormat('en-CA', {
    timeZone: tz, year: 'numeric', month: '2-digit', day: '2-digit',
  }).format(new Date(ms));
}

// date (YYYY-MM-DD) plus n calendar days.
export function addDays(date, n) {
  const [y, m, d] = date.split('-').map(Number);
  return new Date(Date.UTC(y, m - 1, d + n)).toISOString().slice(0, 10);
}

export const iso = (ms) => new Date(ms).toISOString();
