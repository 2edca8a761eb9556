// Resilience (OPERATIONS "Production layout", SPEC/DECISIONS 503
// `unavailable`, GET /health): the FastCGI master replaces dead workers and
// reloads on SIGHUP without failing requests; a MariaDB outage gives JSON
// 503s, never 500s or hangs, and the service recovers by itself.
//
// Every test leaves the stack as it found it (the database running, the
// configured number of workers), even when an assertion fails.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import {
  alive, api, fixture, seed, sleep, sql, stack, uniq,
} from './lib.mjs';
import {
  configuredWorkers, fcgiLogLines, fcgiLogMark, masterPid, waitFor, workers, workersLostSince,
} from './util-faults.mjs';
import { assertError, assertOk } from './util-foundation.mjs';

const VAR = process.env.WL_VAR;
const REPO = process.env.WL_REPO;

// Until n consecutive GET /me answer 200; returns how long it took and the
// answers that were not 200 meanwhile.
async function recovered(key, ms, n = 5) {
  const start = Date.now();
  const misses = [];
  let streak = 0;
  let last;
  while (streak < n) {
    last = await api('GET', '/me', { key }).catch((e) => ({ status: 0, text: String(e) }));
    streak = last.status === 200 ? streak + 1 : 0;
    if (last.status !== 200) misses.push(last);
    if (Date.now() - start > ms) assert.fail(`no recovery within ${ms} ms; last answer ${last.status} ${last.text}`);
    if (streak === 0) await sleep(100);
  }
  return { took: Date.now() - start, misses };
}

// A 503 from the worker or nginx: JSON error, code unavailable.
// The service's own 503 (a worker answered), not nginx's for a worker gone.
function assertUnavailable(res, what) {
  try {
    assertError(res, 503, 'unavailable');
    assert.match(res.json.error, /^(the service is temporarily unavailable; retry later|the database is not answering)$/);
  } catch (e) {
    e.message = `${what}: ${e.message}`;
    throw e;
  }
}

// These tests hammer the service; rate limits are not what they test.
function roomy() {
  const many = 1000000;
  return fixture({
    limits: {
      readsPerMinute: many, writesPerMinute: many, tenantReadsPerMinute: many, tenantWritesPerMinute: many,
    },
  });
}

const DELIVERER_PID = join(VAR, 'run', 'deliverer.pid');

test('a worker killed with SIGKILL is replaced and no request fails', async () => {
  const refs = seed(roomy());
  const master = masterPid();
  const n = configuredWorkers();
  await waitFor(`${n} workers`, 5000, () => workers(master).length === n);
  const before = workers(master);
  const victim = before[0];
  process.kill(victim, 'SIGKILL');
  for (let i = 0; i < 20; i++) {
    const res = await api('GET', '/me', { key: refs.k1 });
    assert.equal(res.status, 200, `request ${i} after the kill: ${res.status} ${res.text}`);
  }
  const after = await waitFor(`the master back at ${n} workers without ${victim}`, 2000, () => {
    const w = workers(master);
    return w.length === n && !w.includes(victim) ? w : null;
  });
  assert.equal(after.filter((p) => !before.includes(p)).length, 1, 'exactly one new worker');
  assert.equal(masterPid(), master);
  assert.ok(alive(master));
});

// Sends the master a SIGHUP with text as its configuration file, then puts
// the file back as it was; resolves, once a line of the master's log says
// `until` (and done(), if given, holds), to its log lines since the SIGHUP.
async function reloadWith(master, text, until, ms, done = () => true) {
  const conf = join(VAR, 'waitlist.conf');
  const good = readFileSync(conf, 'utf8');
  const mark = fcgiLogMark();
  try {
    writeFileSync(conf, text);
    process.kill(master, 'SIGHUP');
    await waitFor(`"${until}" in the log`, ms, () => fcgiLogLines(mark).some((l) => l.includes(until)) && done());
  } finally {
    writeFileSync(conf, good);
  }
  return fcgiLogLines(mark);
}

const REFUSED = 'reload failed; keeping the old configuration';

test('all workers killed at once are replaced and service resumes', async () => {
  const refs = seed(roomy());
  const master = masterPid();
  const n = configuredWorkers();
  await waitFor(`${n} workers`, 5000, () => workers(master).length === n);
  const before = workers(master);
  for (const pid of before) process.kill(pid, 'SIGKILL');
  const { misses } = await recovered(refs.k1, 5000, 10);
  // Requests in the gap either waited or got a JSON 503; never anything else.
  for (const m of misses) assertUnavailable(m, 'GET /me while the workers were replaced');
  await waitFor(`${n} new workers`, 3000, () => {
    const w = workers(master);
    return w.length === n && w.every((p) => !before.includes(p));
  });
  const res = await api('GET', '/waitlist/businesses', { key: refs.k1 });
  assert.equal(res.status, 200, res.text);
});

test('SIGHUP replaces every worker while requests keep succeeding', async () => {
  const refs = seed(roomy());
  const master = masterPid();
  const n = configuredWorkers();
  await waitFor(`${n} workers`, 5000, () => workers(master).length === n);
  const before = workers(master);
  let stop = false;
  const failures = [];
  let served = 0;
  const load = (async () => {
    while (!stop) {
      const res = await api('GET', '/me', { key: refs.k1 }).catch((e) => ({ status: 0, text: String(e) }));
      if (res.status === 200) served += 1;
      else failures.push(`${res.status} ${res.text}`);
    }
  })();
  try {
    await sleep(100);
    process.kill(master, 'SIGHUP');
    await waitFor('every worker replaced after SIGHUP', 10000, () => {
      const w = workers(master);
      return w.length === n && w.every((p) => !before.includes(p));
    });
    await sleep(200);
  } finally {
    stop = true;
    await load;
  }
  assert.deepEqual(failures, [], 'requests failed during the reload');
  assert.ok(served > 5, `only ${served} requests were served during the reload`);
  assert.equal(masterPid(), master);
});

test('a SIGHUP with a bad configuration keeps the old one, and logs why as one JSON line', async () => {
  const refs = seed(roomy());
  const master = masterPid();
  const good = readFileSync(join(VAR, 'waitlist.conf'), 'utf8');
  const before = workers(master);
  const lines = await reloadWith(master, `${good}\n[webhooks]\nbogus_key = 1\n`, 'reload failed', 5000);
  for (const l of lines) assert.doesNotThrow(() => JSON.parse(l), `not a JSON line: ${l}`);
  const line = lines.map((l) => JSON.parse(l)).find((o) => o.msg === REFUSED);
  assert.ok(line, lines.join('\n'));
  assert.equal(line.level, 'error');
  assert.match(line.error, /unknown key \[webhooks\] bogus_key/);
  assert.deepEqual(workers(master), before, 'the workers were kept');
  assert.equal((await api('GET', '/me', { key: refs.k1 })).status, 200);
});

test('a SIGHUP with a configuration the workers cannot start with, or one only a restart applies, keeps the old one', async () => {
  // The file parses, but a worker cannot read the secret it names; or it
  // moves the socket, which the master keeps listening on.  Replacing the
  // workers would leave none.
  const refs = seed(roomy());
  const master = masterPid();
  const good = readFileSync(join(VAR, 'waitlist.conf'), 'utf8');
  const before = workers(master);
  const cases = [
    [/^secret_key_file *=.*$/m, `secret_key_file = ${join(VAR, 'no-such.key')}`, /no-such\.key/],
    [/^fcgi_socket *=.*$/m, `fcgi_socket = ${join(VAR, 'run', 'elsewhere.sock')}`, /fcgi_socket .*restart/],
  ];
  for (const [key, line, why] of cases) {
    assert.match(good, key);
    const refusal = (await reloadWith(master, good.replace(key, line), 'reload failed', 5000))
      .map((l) => JSON.parse(l)).find((o) => o.msg === REFUSED);
    assert.match(refusal.error, why);
    assert.deepEqual(workers(master), before, 'the workers were replaced');
    assert.equal((await api('GET', '/me', { key: refs.k1 })).status, 200);
  }
});

test('a refused reload keeps the old log level too', async () => {
  // The refused file asks for errors only: the master's warnings about
  // its workers must still be logged.
  const master = masterPid();
  const good = readFileSync(join(VAR, 'waitlist.conf'), 'utf8');
  const n = configuredWorkers();
  assert.match(good, /^log_level *= *info$/m);
  assert.match(good, /^secret_key_file *=.*$/m);
  await reloadWith(master, good.replace(/^log_level *=.*$/m, 'log_level = error')
    .replace(/^secret_key_file *=.*$/m, `secret_key_file = ${join(VAR, 'no-such.key')}`), 'reload failed', 5000);
  const mark = fcgiLogMark();
  const victim = workers(master)[0];
  process.kill(victim, 'SIGKILL');
  await waitFor(`${n} workers again`, 10000, () => {
    const w = workers(master);
    return w.length === n && !w.includes(victim);
  });
  const died = fcgiLogLines(mark).map((l) => JSON.parse(l)).find((o) => o.msg === 'worker died');
  assert.ok(died, 'no "worker died" warning after the refused reload');
  assert.equal(died.worker, victim);
  assert.equal(died.level, 'warn');
});

test('a worker that served its max_requests is replaced at once', async () => {
  // One worker, recycled every 5 requests: 40 requests in a row wait for
  // 7 replacements.  A replacement held back like a crashed worker's
  // (a second each) would take 7 s.
  const master = masterPid();
  const good = readFileSync(join(VAR, 'waitlist.conf'), 'utf8');
  const n = configuredWorkers();
  assert.match(good, /^workers *=.*$/m);
  assert.match(good, /^max_requests *=.*$/m);
  const reloaded = (text, count) => reloadWith(master, text, '"reloaded"', 10000,
    () => workers(master).length === count);
  try {
    await reloaded(good.replace(/^workers *=.*$/m, 'workers = 1').replace(/^max_requests *=.*$/m, 'max_requests = 5'), 1);
    const first = workers(master)[0];
    const start = Date.now();
    for (let i = 0; i < 40; i++) assert.equal((await api('GET', '/health')).status, 200);
    const took = Date.now() - start;
    assert.notEqual(workers(master)[0], first, 'the worker was never replaced');
    assert.ok(took < 3500, `40 requests took ${took} ms`);
  } finally {
    await reloaded(good, n);
  }
});

test('bursts of concurrent requests are all answered', async () => {
  const refs = seed(roomy());
  const reads = await Promise.all(Array.from({ length: 40 }, (_, i) => api('GET',
    i % 2 ? '/me' : `/waitlist/queues/${refs.q1}`, { key: refs.k1 })));
  for (const r of reads) assert.equal(r.status, 200, r.text);
  const writes = await Promise.all(Array.from({ length: 20 }, (_, i) => api('POST', '/waitlist/entries', {
    key: refs.k1, idempotencyKey: uniq('burst'), body: { queueId: refs.q1, fullName: `Guest ${i}`, partySize: 1 },
  })));
  for (const w of writes) assert.ok(w.status >= 200 && w.status < 300, `${w.status} ${w.text}`);
  const ids = new Set(writes.map((w) => w.json.entry.id));
  assert.equal(ids.size, 20);
  assert.equal(sql(`SELECT COUNT(*) FROM entries WHERE tenant_id = '${refs.t1}'`)[0][0], '20');
  const q = assertOk(await api('GET', `/waitlist/queues/${refs.q1}`, { key: refs.k1 })).queue;
  assert.equal(q.activeGuests, 20);
});

test('while MariaDB is down every route answers a JSON 503; it recovers by itself', async () => {
  const refs = seed(roomy());
  const delivererBefore = existsSync(DELIVERER_PID) ? Number(readFileSync(DELIVERER_PID, 'utf8')) : null;
  assertOk(await api('GET', '/me', { key: refs.k1 }));
  const idem = uniq('outage');
  const body = { queueId: refs.q1, fullName: 'Retry Later', partySize: 1 };
  const master = masterPid();
  const mark = fcgiLogMark();
  try {
    stack('db-stop');
    for (let round = 0; round < 2; round++) {
      for (const path of ['/me', '/waitlist/businesses', `/waitlist/queues/${refs.q1}`,
        `/waitlist/queues?businessId=${refs.b1}`, '/waitlist/entries', '/events']) {
        const started = Date.now();
        const res = await api('GET', path, { key: refs.k1 });
        assertUnavailable(res, `GET ${path} during the outage (round ${round})`);
        assert.ok(Date.now() - started < 10000, `GET ${path} took ${Date.now() - started} ms`);
      }
      assertUnavailable(await api('GET', '/health'), 'GET /health during the outage');
      assertUnavailable(await api('POST', '/waitlist/entries', { key: refs.k1, idempotencyKey: idem, body }),
        'POST /waitlist/entries during the outage');
    }
    // Without a database no key can be checked: still 503, not 401.
    assertUnavailable(await api('GET', '/me', { key: 'wl_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' }),
      'GET /me with an unknown key during the outage');
  } finally {
    stack('db-start');
  }
  await recovered(refs.k1, 15000);
  const health = await api('GET', '/health');
  assert.equal(health.status, 200, health.text);
  assert.deepEqual(health.json, { status: 'ok' });
  // Every worker reconnected, not just one.
  for (let i = 0; i < 20; i++) {
    const res = await api('GET', i % 2 ? '/me' : `/waitlist/queues?businessId=${refs.b1}`, { key: refs.k1 });
    assert.equal(res.status, 200, `request ${i} after recovery: ${res.text}`);
  }
  // The 503 was not stored: the same Idempotency-Key now executes.
  const retry = await api('POST', '/waitlist/entries', { key: refs.k1, idempotencyKey: idem, body });
  assert.ok(retry.status >= 200 && retry.status < 300, `${retry.status} ${retry.text}`);
  assert.equal(retry.headers.get('idempotency-replayed'), null);
  assert.equal(retry.json.entry.fullName, 'Retry Later');
  assert.equal(sql(`SELECT COUNT(*) FROM entries WHERE tenant_id = '${refs.t1}'`)[0][0], '1');
  if (delivererBefore !== null) assert.ok(alive(delivererBefore), 'the deliverer died with the database');
  // By itself: the same master throughout, and no worker lost.
  assert.equal(masterPid(), master);
  assert.deepEqual(workersLostSince(mark), []);
});

test('a MariaDB restart under load gives only 200s and JSON 503s, then 200s again', async () => {
  const refs = seed(roomy());
  const odd = [];
  let ok = 0;
  let unavailable = 0;
  let stop = false;
  const load = (async () => {
    while (!stop) {
      const res = await api('GET', '/waitlist/businesses', { key: refs.k1 })
        .catch((e) => ({ status: 0, text: String(e), headers: new Headers(), json: null }));
      if (res.status === 200) ok += 1;
      else if (res.status === 503 && res.json?.code === 'unavailable'
        && res.headers.get('x-request-id') === res.json.requestId) unavailable += 1;
      else odd.push(`${res.status} ${res.text}`);
      await sleep(20);
    }
  })();
  let restart;
  try {
    await sleep(200);
    restart = await new Promise((resolve) => {
      const child = spawn(join(REPO, 'script', 'stack'), [VAR, 'db-restart'], { stdio: ['ignore', 'pipe', 'pipe'] });
      let err = '';
      child.stderr.on('data', (d) => { err += d; });
      child.on('close', (code) => resolve({ code, err }));
    });
  } finally {
    if (restart?.code !== 0) {
      // Whatever happened, leave a running database behind.
      try { stack('db-start'); } catch { /* reported below */ }
    }
  }
  assert.equal(restart.code, 0, `db-restart failed: ${restart.err}`);
  try {
    await recovered(refs.k1, 15000);
    await sleep(300);
  } finally {
    stop = true;
    await load;
  }
  assert.deepEqual(odd.slice(0, 5), [], `${odd.length} answers were neither 200 nor a JSON 503 (${ok} were 200, ${unavailable} JSON 503)`);
  assert.ok(ok > 0);
  assertOk(await api('GET', '/health'));
  const created = await api('POST', '/waitlist/entries', {
    key: refs.k1, idempotencyKey: uniq('after'), body: { queueId: refs.q1, fullName: 'After Restart', partySize: 1 },
  });
  assert.ok(created.status >= 200 && created.status < 300, `${created.status} ${created.text}`);
});
