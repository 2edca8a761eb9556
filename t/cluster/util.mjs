// Helpers for the cluster tests (t/cluster/run starts the stack).  Built on
// the integration suite's lib.mjs, which talks to the balanced port
// (WL_BASE_URL); at(n, path) addresses one app node through its own nginx
// port instead:
//   WL_NODE1_URL, WL_NODE2_URL  .../v1/external of app node 1 and 2 only
//   WL_CLUSTER                  the harness directory (t/cluster/node)

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { BASE, api, fixture, seed, uniq } from '../integration/lib.mjs';

export { BASE, api, seed, uniq };
export { sleep, sql } from '../integration/lib.mjs';

const NODE_URL = { 0: BASE, 1: process.env.WL_NODE1_URL, 2: process.env.WL_NODE2_URL };
const CL = process.env.WL_CLUSTER;
const REPO = process.env.WL_REPO;
if (!NODE_URL[1] || !NODE_URL[2] || !CL) throw new Error('run the cluster tests through script/test --cluster');

// A full URL of path on app node n (1, 2), or on the balanced port (0).
export const at = (n, path) => NODE_URL[n] + path;

// Which app node served an answer (nginx adds the upstream's socket).
export function servedBy(res) {
  const up = res.headers.get('x-waitlist-upstream') ?? '';
  const m = [...up.matchAll(/\/app([12])\/run\//g)].map((x) => Number(x[1]));
  return m.length ? m[m.length - 1] : 0;
}

// Acts on the cluster through t/cluster/node (db-kill N, db-start N, ...).
export function node(cmd, arg, ...rest) {
  return execFileSync(join(REPO, 't', 'cluster', 'node'), [CL, cmd, String(arg), ...rest], { encoding: 'utf8' }).trim();
}

// A query on database node n; rows as arrays of strings.
export function sqlOn(n, query) {
  return node('sql', n, query).split('\n').filter((l) => l !== '').map((l) => l.split('\t'));
}

export const HIGH_LIMITS = {
  readsPerMinute: 1000000, writesPerMinute: 1000000,
  tenantReadsPerMinute: 1000000, tenantWritesPerMinute: 1000000,
};

// A fresh tenant (lib.mjs fixture: business b1, line q1, key k1) with high
// limits unless limits are given; tenant overrides, a capacity for q1 and
// a time zone for b1.
export function tenant({ limits = HIGH_LIMITS, capacity, zone, ...over } = {}) {
  const fx = fixture({ limits, guestAllowance: 1000000, ...over });
  const b1 = fx.tenants[0].businesses[0];
  if (capacity !== undefined) b1.queues[0].availability.bookingCapacity = capacity;
  if (zone) b1.timeZone = zone;
  const refs = seed(fx);
  return { ...refs, key: refs.k1, tenantId: refs.t1, queueId: refs.q1 };
}

export function write(n, method, path, key, body, idempotencyKey = uniq('idem')) {
  return api(method, at(n, path), { key, body, idempotencyKey });
}

// Every error is {"error", "code", "requestId"}; code may be a list.
export function assertError(res, status, code) {
  assert.equal(res.status, status, `expected ${status} ${code}, got ${res.status}: ${res.text}`);
  assert.ok(res.json, `not JSON: ${res.text}`);
  assert.deepEqual(Object.keys(res.json).sort(), ['code', 'error', 'requestId'], res.text);
  const codes = Array.isArray(code) ? code : [code];
  assert.ok(codes.includes(res.json.code), `code ${res.json.code} not in ${codes}: ${res.text}`);
}

// Waits until fn() is truthy (polled every 100 ms).
export async function waitUntil(fn, timeoutMs, what) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

// Runs jobs (functions returning promises) with at most `width` at once.
export async function pool(jobs, width) {
  const out = new Array(jobs.length);
  let next = 0;
  const lane = async () => {
    while (next < jobs.length) {
      const i = next++;
      out[i] = await jobs[i]();
    }
  };
  await Promise.all(Array.from({ length: width }, lane));
  return out;
}

// A zone whose local time now is between 12:00 and 12:59 (a whole-hour
// offset, so the 15-minute slot grid is the UTC grid): bookings up to
// eleven hours ahead stay on today's local business day.
export function middayZone(now = new Date()) {
  const offset = 12 - now.getUTCHours(); // hours east of UTC: -11..12
  if (offset === 0) return 'UTC';
  // Etc/GMT signs are inverted: Etc/GMT-5 is UTC+5.
  return offset > 0 ? `Etc/GMT-${offset}` : `Etc/GMT+${-offset}`;
}

export const SLOT_MS = 15 * 60 * 1000;
export const iso = (ms) => new Date(ms).toISOString();

// A 15-minute boundary at least 20 minutes ahead.
export function nextSlot(minAheadMs = 20 * 60 * 1000) {
  return Math.ceil((Date.now() + minAheadMs) / SLOT_MS) * SLOT_MS;
}

// A webhook receiver on 127.0.0.1 that answers 200 to everything and keeps
// each request's webhook-id and arrival time.
export async function receiver() {
  const { createServer } = await import('node:http');
  const got = [];
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      got.push({ id: req.headers['webhook-id'], path: req.url, at: Date.now() });
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('ok');
    });
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address();
  return {
    got,
    url: (name) => `http://127.0.0.1:${port}/hook/${name}`,
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

// A minute of its own, 2 to 240 minutes ahead (at random), for requests
// pinned with X-Test-Now: the real minute boundary cannot split a test's
// rate-limit window.  at(s, k) is the header for s seconds into the k-th
// minute after it (another window of the same test).
export function freshMinute() {
  const base = Math.floor(Date.now() / 60000) * 60000;
  const start = base + (2 + Math.floor(Math.random() * 238)) * 60000;
  return { at: (s, k = 0) => ({ 'x-test-now': iso(start + k * 60000 + Math.round(s * 1000)) }) };
}

// The harness's log file of a component (fcgi1, deliverer2, ...).
export function logOf(name) {
  return join(CL, 'log', `${name}.log`);
}
