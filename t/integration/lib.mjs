// Helpers for the integration tests, which run under script/test against a
// real stack.  It passes the stack in through the environment:
//   WL_BASE_URL  http://127.0.0.1:PORT/v1/external
//   WL_VAR       the stack directory (MariaDB socket, logs, config)
//   WL_REPO      the repository root
//   WL_CTL       the waitlistctl command line, with --config
// Node 20.19+; api() checks every answer against openapi.json through
// ../contract.mjs (npm dev dependencies in t/package.json).

import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  closeSync, existsSync, mkdtempSync, openSync, readFileSync, readSync, rmSync, writeFileSync, writeSync,
} from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { validateResponse } from '../contract.mjs';

function env(name) {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run the tests through script/test`);
  return value;
}

export const BASE = env('WL_BASE_URL').replace(/\/+$/, '');
export const ORIGIN = new URL(BASE).origin;
const VAR = env('WL_VAR');
const REPO = env('WL_REPO');
// waitlistctl's command line, as argv.
export const CTL_ARGV = env('WL_CTL').split(' ').filter(Boolean);

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// A process that runs: signal 0 reaches it and, where /proc tells, it is
// not a zombie (a killed child its parent has not reaped yet, which
// signal 0 still reaches).
export function alive(pid) {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat[stat.lastIndexOf(')') + 2]; // it follows "(comm) "
    return state !== 'Z' && state !== 'X';
  } catch (err) {
    return err.code !== 'ENOENT' || !existsSync('/proc/self/stat'); // gone, or no /proc
  }
}

let counter = 0;
// A string no other test (or earlier run on the same database) has used.
export function uniq(prefix = 'x') {
  counter += 1;
  return `${prefix}-${process.pid}-${counter}-${randomBytes(3).toString('hex')}`;
}

// One HTTP call.  path is relative to BASE unless it is a full URL.
// body is sent as JSON; rawBody (string or Buffer) is sent as is.  The
// answer must match openapi.json (it throws otherwise) unless noValidate is
// set, for requests nginx itself answers in ways the document leaves out.
export async function api(method, path, { key, body, rawBody, headers = {}, idempotencyKey, noValidate = false } = {}) {
  const h = new Headers(headers);
  let payload;
  if (rawBody !== undefined) payload = rawBody;
  else if (body !== undefined) payload = JSON.stringify(body);
  if (payload !== undefined && !h.has('content-type')) h.set('content-type', 'application/json');
  if (key) h.set('authorization', `Bearer ${key}`);
  if (idempotencyKey) h.set('idempotency-key', idempotencyKey);
  const url = /^https?:\/\//.test(path) ? path : BASE + path;
  // No answer within a minute is a failure, never a run that hangs.
  const res = await fetch(url, { method, headers: h, body: payload, signal: AbortSignal.timeout(60000) });
  // Strict: a body that is not valid UTF-8 throws here, in any test.
  const text = new TextDecoder('utf-8', { fatal: true }).decode(await res.arrayBuffer());
  let json = null;
  try {
    json = JSON.parse(text);
  } catch {
    // Not JSON: tests that care look at text.
  }
  if (!noValidate) validateResponse(method, url, res.status, json, res.headers, text);
  return { status: res.status, headers: res.headers, text, json };
}

// Runs waitlistctl; returns its JSON output (null if it printed nothing).
export function ctl(...args) {
  const r = spawnSync(CTL_ARGV[0], [...CTL_ARGV.slice(1), ...args], { encoding: 'utf8' });
  if (r.error) throw r.error;
  if (r.status !== 0) {
    throw new Error(`waitlistctl ${args.join(' ')} exited ${r.status}: ${r.stderr.trim()}`);
  }
  return r.stdout.trim() === '' ? null : JSON.parse(r.stdout);
}

// waitlistctl key create; returns {id, key}.
export function createKey(tenantId, scopes, { businesses, queues, expiresInDays, type } = {}) {
  const args = ['key', 'create', '--tenant', tenantId, '--scopes', scopes.join(',')];
  if (businesses?.length) args.push('--businesses', businesses.join(','));
  if (queues?.length) args.push('--queues', queues.join(','));
  if (expiresInDays !== undefined) args.push('--expires-in-days', String(expiresInDays));
  if (type) args.push('--type', type);
  return ctl(...args);
}

export function tenantSet(tenantId, ...args) {
  return ctl('tenant', 'set', tenantId, ...args);
}

// Runs waitlistctl expecting failure; a success shows as code 0.
export function ctlFail(...args) {
  const r = spawnSync(CTL_ARGV[0], [...CTL_ARGV.slice(1), ...args], { encoding: 'utf8' });
  if (r.error) throw r.error;
  return { code: r.status, stderr: r.stderr };
}

// A copy of fixture() business b under refs numbered n (bN, sN, fN, qN),
// its line listing its own service and field, with a slug of its own.
export function businessCopy(b, n) {
  const c = structuredClone(b);
  c.ref = `b${n}`;
  c.name += ` ${n}`;
  c.slug = uniq('biz');
  c.services[0].ref = `s${n}`;
  c.customFields[0].ref = `f${n}`;
  c.queues[0].ref = `q${n}`;
  c.queues[0].services = [`s${n}`];
  c.queues[0].customFields = [`f${n}`];
  return c;
}

// Loads a fixture (see OPERATIONS.md) and returns its refs: ref -> id, or
// ref -> plaintext key for keys.
export function seed(fixtureObject) {
  const dir = mkdtempSync(join(tmpdir(), 'waitlist-fixture-'));
  try {
    const file = join(dir, 'fixture.json');
    writeFileSync(file, JSON.stringify(fixtureObject));
    return ctl('seed', file).refs;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// Runs a query as the database owner; rows as arrays of strings (NULL is
// the string "NULL").
export function sql(query, { tellWorkers = true } = {}) {
  const out = execFileSync('mariadb', [
    '--no-defaults', `--socket=${VAR}/mysql.sock`, '-u', userInfo().username,
    '-N', '-B', 'waitlist', '-e', query,
  ], { encoding: 'utf8' });
  if (tellWorkers && /\b(api_keys|tenants|queues|queue_services|queue_custom_fields|services|custom_fields|businesses)\b/i.test(query) && !/^\s*select\b/i.test(query)) keysChanged();
  return out.split('\n').filter((line) => line !== '').map((line) => line.split('\t'));
}

// A database session that stays open between queries, for holding a lock
// or a transaction across API requests: run(query) resolves to its rows
// (as sql() gives them) once the server has answered; close() ends it.
// The ids of the database connections whose running statement begins
// with prefix (one waiting for a lock shows there too).
export function running(prefix) {
  return sql(`SELECT id FROM information_schema.processlist WHERE info LIKE '${prefix} %'`).map((row) => row[0]);
}

export function sqlSession({ force = false } = {}) {
  // force: an SQL error is printed and the session goes on (otherwise
  // the client exits, and later queries are refused).
  const child = spawn('mariadb', [
    '--no-defaults', `--socket=${VAR}/mysql.sock`, '-u', userInfo().username,
    '-N', '-B', '--unbuffered', ...(force ? ['--force'] : []), 'waitlist',
  ], { stdio: ['pipe', 'pipe', 'inherit'] });
  const MARK = `-- done ${randomBytes(8).toString('hex')}`;
  let out = '';
  let waiting = null; // { resolve, reject, query } of the query running
  let closing = false;
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk) => {
    out += chunk;
    const at = out.indexOf(`${MARK}\n`);
    if (at < 0 || !waiting) return;
    const rows = out.slice(0, at).split('\n').filter((line) => line !== '').map((line) => line.split('\t'));
    out = out.slice(at + MARK.length + 1);
    const { resolve } = waiting;
    waiting = null;
    resolve(rows);
  });
  child.on('exit', (code) => {
    if (waiting && !closing) waiting.reject(new Error(`mariadb exited ${code} during: ${waiting.query}`));
    waiting = null;
  });
  // A client that has exited (on an SQL error) takes no more input.
  child.stdin.on('error', () => {});
  return {
    run(query) {
      return new Promise((resolve, reject) => {
        if (child.exitCode !== null || child.signalCode !== null) {
          reject(new Error(`mariadb has exited; not run: ${query}`));
          return;
        }
        waiting = { resolve, reject, query };
        child.stdin.write(`${query};\nSELECT '${MARK}';\n`);
      });
    },
    close() {
      closing = true;
      return new Promise((resolve) => {
        if (child.exitCode !== null) resolve();
        else child.once('exit', () => resolve());
        child.stdin.end();
      });
    },
  };
}

// After a change to keys or tenants made behind waitlistctl's back: adds
// one to the node's key epoch, as waitlistctl does, so that the workers
// drop the key lookups they cached (lib/keycache.c) from the next
// request on.  The tests run one at a time, so a plain read and write
// will do.
export function keysChanged() {
  let fd;
  try {
    fd = openSync(join(VAR, 'run', 'keys.epoch'), 'r+');
  } catch {
    return; // no worker has started
  }
  const b = Buffer.alloc(8);
  readSync(fd, b, 0, 8, 0);
  b.writeBigUInt64LE(b.readBigUInt64LE(0) + 1n);
  writeSync(fd, b, 0, 8, 0);
  closeSync(fd);
}

// Acts on the running stack through script/stack (db-stop, db-start,
// fcgi-pid, ...); returns its output, trimmed.
export function stack(...args) {
  return execFileSync(join(REPO, 'script', 'stack'), [VAR, ...args], { encoding: 'utf8' }).trim();
}

export const ALL_SCOPES = [
  'waitlist:read', 'waitlist:write', 'guest:read', 'events:read',
  'webhooks:read', 'webhooks:write', 'analytics:read',
];

// Rate limits high enough that no test hits a 429 by accident.
export const HIGH_LIMITS = {
  readsPerMinute: 1000000, writesPerMinute: 1000000,
  tenantReadsPerMinute: 1000000, tenantWritesPerMinute: 1000000,
};
// Every error is {"error", "code", "requestId"} as JSON, with the
// request id also in X-Request-Id.  code may be a list of acceptable
// codes, or null for any; what labels the failure messages.
export function assertError(res, status, code, what = '') {
  const label = what ? `${what}: ` : '';
  assert.equal(res.status, status, `${label}expected ${status} ${code}, got ${res.status}: ${res.text}`);
  assert.ok(res.json, `${label}not JSON: ${res.text}`);
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/, label);
  assert.deepEqual(Object.keys(res.json).sort(), ['code', 'error', 'requestId'], `${label}${res.text}`);
  if (Array.isArray(code)) assert.ok(code.includes(res.json.code), `${label}code ${res.json.code} not in ${code}: ${res.text}`);
  else if (code) assert.equal(res.json.code, code, `${label}${res.text}`);
  assert.equal(typeof res.json.error, 'string');
  assert.ok(res.json.error.length > 0, `${label}empty error message`);
  assert.equal(typeof res.json.requestId, 'string');
  assert.ok(res.json.requestId.length > 0, `${label}empty requestId`);
  assert.equal(res.headers.get('x-request-id'), res.json.requestId, `${label}X-Request-Id differs from requestId`);
  assert.equal(res.headers.get('cache-control'), 'no-store', `${label}Cache-Control`);
}

// A timestamp as the API writes them: UTC, milliseconds.
export const TS_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

export const ALL_DAY = { enabled: true, start: '00:00', end: '24:00' };

// A line definition (fixture form) with sensible defaults.
export function line(ref, over = {}) {
  const { availability = {}, ...rest } = over;
  return {
    ref, name: `line ${ref}`, timeZone: null,
    services: ['s1'], customFields: ['f1'],
    workingHours: { ...ALL_DAY },
    availability: {
      walkInsEnabled: true, walkInsPaused: false,
      bookingsEnabled: true, bookingsPaused: false,
      bookingSlotMinutes: 15, bookingHours: { ...ALL_DAY },
      bookingCapacity: 2, serviceRequired: false,
      ...availability,
    },
    ...rest,
  };
}


// A fresh fixture: tenant t1 (unique name) with business b1 (UTC), service
// s1, select field f1, queue q1 open all day every day, and key k1 with
// every scope.  overrides are merged into the tenant (plan, limits, ...);
// tests push further keys onto tenants[0].keys.
export function fixture(overrides = {}) {
  const name = uniq('tenant');
  return {
    tenants: [{
      ref: 't1', name, plan: 'pro',
      publicApi: true, webhooks: true, zapier: false,
      state: 'active', emailVerified: true, billingAvailable: true,
      guestAllowance: 10000,
      businesses: [{
        ref: 'b1', name: `${name} business`, slug: uniq('biz'), timeZone: 'UTC',
        services: [{ ref: 's1', serviceName: 'Haircut', baseDurationMinutes: 30, isActive: true }],
        customFields: [{
          ref: 'f1', label: 'Seat', type: 'select', required: false, public: true,
          options: [{ value: 'in', label: 'Inside' }, { value: 'out', label: 'Outside' }],
        }],
        queues: [line('q1', { name: 'Main line' })],
      }],
      keys: [{
        ref: 'k1', scopes: [...ALL_SCOPES], businesses: [], queues: [],
        expiresInDays: 365, integrationType: 'api',
      }],
      ...overrides,
    }],
  };
}
