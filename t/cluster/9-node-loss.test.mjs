// Losing a database node mid-run.  Each app node talks to its own database
// node (app node N to database node N); database node 3 serves no app node.
//  - Database node 3 dies (SIGKILL): the service keeps answering; writes
//    everywhere wait until the cluster evicts the dead node (about 3 s
//    here: evs.suspect_timeout), then go on; one queued behind such a
//    commit for over 5 s (innodb_lock_wait_timeout) is 503 unavailable,
//    and its retry succeeds.  It rejoins by IST.
//  - Database node 2 dies: app node 2 answers 503 unavailable; nginx passes
//    that request to app node 1 (fastcgi_next_upstream ... http_503
//    non_idempotent, safe because every mutation carries an
//    Idempotency-Key), so the balanced port keeps answering 2xx.
// Runs last: it leaves the cluster whole again, but slower to reach.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  api, assertError, at, node, servedBy, sleep, sqlOn, tenant, uniq, waitUntil, write,
} from './util.mjs';

const T = tenant();

// `width` client loops through the balanced port, each creating an entry
// and reading it back, until stop(); every final answer is recorded.  Like
// any client, a lane retries a creation answered 503 with the same
// Idempotency-Key (after 1 s, at most 3 times): a write queued behind a
// commit that waits for the eviction can outlast the 5 s lock wait on a
// slow box.  Each retry is recorded; the tests allow them only while the
// dead node is being evicted.
function load(width) {
  let stopped = false;
  const log = [];
  const refs = [];
  const retries = [];
  const create = async (ref) => {
    const idem = uniq('idem');
    const body = { queueId: T.queueId, fullName: 'Loss', externalReference: ref };
    for (let tries = 0; ; tries++) {
      const at0 = Date.now();
      const c = await write(0, 'POST', '/waitlist/entries', T.key, body, idem);
      if (c.status !== 503 || tries === 3) return c;
      retries.push({ at: at0, code: c.json?.code, text: c.text });
      await sleep(1000);
    }
  };
  // A request that throws (no answer) is a failure with status 0.
  const record = async (what, fn) => {
    const t0 = Date.now();
    let res;
    try {
      res = await fn();
    } catch (e) {
      res = { status: 0, text: String(e), headers: new Headers() };
    }
    log.push({ what, status: res.status, ms: Date.now() - t0, node: servedBy(res), text: res.text, at: t0 });
    return res;
  };
  const lane = async (w) => {
    while (!stopped) {
      const ref = uniq(`loss${w}`);
      const c = await record('create', () => create(ref));
      if (c.status !== 201) continue;
      refs.push(ref);
      await record('read', () => api('GET', `/waitlist/entries/${c.json.entry.id}`, { key: T.key }));
    }
  };
  const lanes = Promise.all(Array.from({ length: width }, (_, w) => lane(w)));
  return {
    log,
    refs,
    retries,
    async stop() {
      stopped = true;
      await lanes;
    },
  };
}

// Retries are allowed only for 503 unavailable, and only between the kill
// and shortly after the eviction.
function assertRetries(l, killedAt, evictedMs) {
  for (const r of l.retries) {
    assert.equal(r.code, 'unavailable', r.text);
    assert.ok(r.at >= killedAt - 1000 && r.at <= killedAt + evictedMs + 1500,
      `a retry ${r.at - killedAt} ms after the kill, eviction after ${evictedMs} ms`);
  }
}

function summary(log) {
  const bad = log.filter((x) => x.status === 0 || x.status >= 300);
  const ms = log.map((x) => x.ms).sort((a, b) => a - b);
  return {
    requests: log.length,
    failed: bad.length,
    badSamples: bad.slice(0, 3).map((x) => `${x.what} ${x.status} ${x.text}`),
    maxMs: ms[ms.length - 1],
    p50Ms: ms[Math.floor(ms.length / 2)],
  };
}

function entriesOn(n) {
  return Number(sqlOn(n, `SELECT COUNT(*) FROM entries WHERE tenant_id='${T.tenantId}'`)[0][0]);
}

// Kill database node n under four lanes of load, run whileDown() at once,
// wait for the cluster to evict it and 2 s more, and stop the lanes
// whatever fails: a failure must not leave them running, or the run would
// never end.
async function killUnderLoad(n, whileDown = async () => {}) {
  const l = load(4);
  let killedAt;
  let evictedMs;
  try {
    await sleep(1000);
    killedAt = Date.now();
    node('db-kill', n);
    await whileDown();
    await waitUntil(() => node('db-size', 1) === '2', 30000, `the cluster to evict node ${n}`);
    evictedMs = Date.now() - killedAt;
    await sleep(2000);
  } finally {
    await l.stop();
  }
  return { l, killedAt, evictedMs };
}

test('database node 3 dies mid-run: every request still succeeds; it rejoins', async () => {
  const { l, killedAt, evictedMs } = await killUnderLoad(3);
  const s = summary(l.log);
  console.log(`# node 3 killed: evicted after ${evictedMs} ms; ${s.requests} requests, ${s.failed} failed, ${l.retries.length} retried, p50 ${s.p50Ms} ms, max ${s.maxMs} ms`);
  assert.equal(s.failed, 0, s.badSamples.join('\n'));
  assertRetries(l, killedAt, evictedMs);
  assert.equal(node('db-size', 2), '2');

  const t0 = Date.now();
  node('db-start', 3);
  node('db-wait-size', 3);
  console.log(`# node 3 restarted and synced (IST) in ${Date.now() - t0} ms`);
  assert.equal(entriesOn(3), entriesOn(1), 'node 3 caught up');
});

test('database node 2 dies mid-run: app node 2 answers 503, the balanced port keeps answering', async () => {
  const probe = await write(2, 'POST', '/waitlist/entries', T.key, { queueId: T.queueId, fullName: 'Probe' });
  assert.equal(probe.status, 201, probe.text);
  const probePath = `/waitlist/entries/${probe.json.entry.id}`;
  const { l, killedAt, evictedMs } = await killUnderLoad(2, async () => {
    // App node 2 cannot reach its database: 503 unavailable, JSON, for
    // whatever needs it.  (GET /me may still answer from a worker's key
    // cache for up to key_cache_seconds, 1 s here: it needs no statement.)
    assertError(await api('GET', at(2, '/health')), 503, 'unavailable');
    assertError(await api('GET', at(2, probePath), { key: T.key }), 503, 'unavailable');
    const w = await write(2, 'POST', '/waitlist/entries', T.key, { queueId: T.queueId, fullName: 'Direct' });
    assertError(w, 503, 'unavailable');
  });
  const s = summary(l.log);
  const after = l.log.filter((x) => x.at > killedAt + 200);
  console.log(`# node 2 killed: evicted after ${evictedMs} ms; ${s.requests} requests, ${s.failed} failed, ${l.retries.length} retried, p50 ${s.p50Ms} ms, max ${s.maxMs} ms; after the kill served by app node 1: ${after.filter((x) => x.node === 1).length} of ${after.length}`);
  assert.equal(s.failed, 0, s.badSamples.join('\n'));
  assertRetries(l, killedAt, evictedMs);
  assert.ok(after.length > 0 && after.every((x) => x.node === 1), 'after the kill app node 1 answered everything');
  // Every creation made exactly one entry, retried ones included.
  const refs = new Set(l.refs);
  const rows = sqlOn(1, `SELECT external_reference, COUNT(*) FROM entries WHERE tenant_id='${T.tenantId}' AND external_reference LIKE 'loss%' GROUP BY external_reference HAVING COUNT(*) > 1`);
  assert.deepEqual(rows, [], 'no reference twice');
  assert.ok(refs.size > 0);

  const t0 = Date.now();
  node('db-start', 2);
  node('db-wait-size', 3);
  // App node 2 reconnects by itself.
  await waitUntil(async () => (await api('GET', at(2, '/health'))).status === 200, 15000, 'app node 2 to answer again');
  const read = await api('GET', at(2, probePath), { key: T.key });
  assert.equal(read.status, 200, read.text);
  console.log(`# node 2 back and app node 2 answering in ${Date.now() - t0} ms`);
  assert.equal(entriesOn(2), entriesOn(1));
});
