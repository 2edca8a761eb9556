// Helpers for the fault-injection tests (faults-*.test.mjs): the FastCGI
// master and its workers, waiting, and writes retried with the same
// Idempotency-Key until they are acknowledged.

import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  alive, api, sleep, sql, stack,
} from './lib.mjs';

const VAR = process.env.WL_VAR;
const REPO = process.env.WL_REPO;

// stack() without blocking the event loop, so that load keeps running
// while script/stack works; resolves to its output, rejects on failure.
export function stackAsync(...args) {
  return new Promise((resolve, reject) => {
    const child = spawn(join(REPO, 'script', 'stack'), [VAR, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { err += d; });
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(out.trim())
      : reject(new Error(`script/stack ${args.join(' ')} exited ${code}: ${err.trim()}`))));
  });
}

export function configuredWorkers() {
  const conf = readFileSync(join(VAR, 'waitlist.conf'), 'utf8');
  const m = conf.match(/^\s*workers\s*=\s*(\d+)\s*$/m);
  return m ? Number(m[1]) : 4;
}

export function masterPid() {
  return Number(stack('fcgi-pid'));
}

// Children of the master, unreaped zombies included (so a killed worker
// disappears from here only once the master has reaped it).  Read from
// /proc without blocking; pgrep where that is missing.
export function workers(master = masterPid()) {
  try {
    return readFileSync(`/proc/${master}/task/${master}/children`, 'utf8')
      .split(' ').filter(Boolean).map(Number);
  } catch {
    // no /proc children file
  }
  try {
    return execFileSync('pgrep', ['-P', String(master)], { encoding: 'utf8' })
      .split('\n').filter(Boolean).map(Number);
  } catch {
    return []; // pgrep exits 1 when there are none
  }
}

// The syscall a process is blocked in (/proc/PID/syscall), "running", or
// null when it is gone.
function syscallOf(pid) {
  try {
    return readFileSync(`/proc/${pid}/syscall`, 'utf8').split(' ')[0];
  } catch {
    return null;
  }
}

// A worker waits for a connection in epoll_pwait(2) (fcgi/worker.c).
const WAIT = { x64: '281', arm64: '22' }[process.arch];

export async function waitFor(what, ms, fn) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) assert.fail(`${what}: not within ${ms} ms`);
    await sleep(50);
  }
}

// The full complement of workers, all alive; returns their pids.
// A mark in the master's log; fcgiLogLines(mark) are its lines since.
export function fcgiLogMark() {
  return readFileSync(join(process.env.WL_VAR, 'log', 'fcgi.log')).length;
}

export function fcgiLogLines(mark) {
  return readFileSync(join(process.env.WL_VAR, 'log', 'fcgi.log')).subarray(mark).toString('utf8')
    .split('\n').filter(Boolean);
}

// The lines of every worker that died or failed after mark.  (A worker
// that served its max_requests and was replaced is not lost: it is no line.)
export function workersLostSince(mark) {
  return fcgiLogLines(mark).filter((l) => l.includes('"msg":"worker died"') || l.includes('"msg":"worker failed"'));
}

export function fullPool(master = masterPid()) {
  const n = configuredWorkers();
  return waitFor(`${n} workers under master ${master}`, 10000, () => {
    const w = workers(master);
    return w.length === n && w.every(alive) ? w : null;
  });
}

// SIGKILLs a worker with a request in hand about every `every` ms until
// stop() is true; resolves to the pids killed.  A worker has a request in
// hand when it has been seen waiting for a connection (it is past its start)
// and is no longer there; they are polled often, since a request takes a
// few ms.  Without /proc or a known epoll_pwait(2) number any worker will do.
// `killed`, if given, is the array the pids go into as they are killed.
export async function killBusyWorkers(master, stop, { every = 100, killed = [] } = {}) {
  const ready = new Set();
  let last = 0;
  while (!stop()) {
    await sleep(2);
    const busy = [];
    for (const pid of workers(master)) {
      const call = syscallOf(pid);
      if (call === WAIT) ready.add(pid);
      else if (call !== null && (ready.has(pid) || WAIT === undefined) && !killed.includes(pid)) busy.push(pid);
    }
    if (busy.length === 0 || Date.now() - last < every) continue;
    const victim = busy[Math.floor(Math.random() * busy.length)];
    try {
      process.kill(victim, 'SIGKILL');
      killed.push(victim);
      last = Date.now();
    } catch { /* it was already gone */ }
  }
  return killed;
}

// What a client may see while the stack is being broken: a JSON 503 from
// the worker or nginx, a replay race, or the connection failing outright.
// Anything else (a 500, another 4xx, a non-JSON body) is a defect.
export function transient(res) {
  if (res.status === 0) return true;
  if (res.status === 503) return res.json?.code === 'unavailable';
  return res.status === 409 && res.json?.code === 'idempotency_in_progress';
}

// Sends one write until it is acknowledged (2xx), each attempt with the
// same Idempotency-Key.  Returns {res, attempts, seen}: the acknowledging
// answer, how many attempts it took and the status of each.  Throws on an
// answer that is neither 2xx nor transient, or when ms pass.  observe, if
// given, sees every answer.
export async function untilAcknowledged(method, path, {
  key, body, idempotencyKey, ms = 60000, pause = 50, observe,
}) {
  const seen = [];
  const deadline = Date.now() + ms;
  for (;;) {
    // The connection failing outright, or cut mid-answer ('terminated'), is
    // transient (status 0); an answer that breaks the contract, or one not
    // valid UTF-8, throws on.
    const res = await api(method, path, { key, body, idempotencyKey }).catch((e) => {
      if (e?.message !== 'fetch failed' && e?.message !== 'terminated') throw e;
      return { status: 0, text: String(e), json: null, headers: new Headers() };
    });
    seen.push(res.status);
    if (observe) observe(res);
    if (res.status >= 200 && res.status < 300) return { res, attempts: seen.length, seen };
    if (!transient(res)) {
      assert.fail(`${method} ${path} (Idempotency-Key ${idempotencyKey}): ${res.status} ${res.text.slice(0, 300)}`);
    }
    if (Date.now() > deadline) {
      assert.fail(`${method} ${path} (Idempotency-Key ${idempotencyKey}) not acknowledged within ${ms} ms: ${seen.join(',')}`);
    }
    await sleep(pause);
  }
}

// Runs fn(i) for i in 0..n-1 on `clients` concurrent loops; returns the
// results in order.  With `until`, the loops go on past n while until()
// is false (a fault that must have struck during the load), up to max.
export async function pool(n, clients, fn, { until = () => true, max = n } = {}) {
  const out = [];
  let next = 0;
  const more = () => next < n || (next < max && !until());
  await Promise.all(Array.from({ length: clients }, async () => {
    while (more()) {
      const i = next++;
      out[i] = await fn(i);
    }
  }));
  return out;
}

// externalReference -> count of the tenant's entries.
export function entriesByReference(tenantId) {
  return new Map(sql(`SELECT external_reference, COUNT(*) FROM entries WHERE tenant_id = '${tenantId}' GROUP BY external_reference`)
    .map(([ref, n]) => [ref, Number(n)]));
}

// The tenant's events, in sequence order.
export function eventRows(tenantId) {
  return sql(`SELECT seq, type, resource_id FROM events WHERE tenant_id = '${tenantId}' ORDER BY seq`)
    .map(([seq, type, resource]) => ({ seq: Number(seq), type, resource }));
}
