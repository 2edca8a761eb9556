// Losing a database node mid-run.  Each app node talks to its own database
// node (app node N to database node N); database node 3 serves no app node.
//  - Database node 3 dies (SIGKILL): the service keeps answering; writes
//    everywhere wait until the cluster evicts the dead node (about 3 s
//    here: evs.suspect_timeout), then go on.  It rejoins by IST.
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
// and reading it back, until stop(); every answer is recorded.
function load(width) {
  let stopped = false;
  const log = [];
  const refs = [];
  const lane = async (w) => {
    while (!stopped) {
      const ref = uniq(`loss${w}`);
      const t0 = Date.now();
      const c = await write(0, 'POST', '/waitlist/entries', T.key, { queueId: T.queueId, fullName: 'Loss', externalReference: ref });
      log.push({ what: 'create', status: c.status, ms: Date.now() - t0, node: servedBy(c), text: c.text, at: t0 });
      if (c.status !== 201) continue;
      refs.push(ref);
      const t1 = Date.now();
      const g = await api('GET', `/waitlist/entries/${c.json.entry.id}`, { key: T.key });
      log.push({ what: 'read', status: g.status, ms: Date.now() - t1, node: servedBy(g), text: g.text, at: t1 });
    }
  };
  const lanes = Promise.all(Array.from({ length: width }, (_, w) => lane(w)));
  return {
    log,
    refs,
    async stop() {
      stopped = true;
      await lanes;
    },
  };
}

function summary(log) {
  const bad = log.filter((x) => x.status >= 300);
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

test('database node 3 dies mid-run: every request still succeeds; it rejoins', async () => {
  const l = load(4);
  await sleep(1000);
  const killedAt = Date.now();
  node('db-kill', 3);
  await waitUntil(() => node('db-size', 1) === '2', 30000, 'the cluster to evict node 3');
  const evictedMs = Date.now() - killedAt;
  await sleep(2000);
  await l.stop();
  const s = summary(l.log);
  console.log(`# node 3 killed: evicted after ${evictedMs} ms; ${s.requests} requests, ${s.failed} failed, p50 ${s.p50Ms} ms, max ${s.maxMs} ms`);
  assert.equal(s.failed, 0, s.badSamples.join('\n'));
  assert.equal(node('db-size', 2), '2');

  const t0 = Date.now();
  node('db-start', 3);
  node('db-wait-size', 3);
  console.log(`# node 3 restarted and synced (IST) in ${Date.now() - t0} ms`);
  assert.equal(entriesOn(3), entriesOn(1), 'node 3 caught up');
});

test('database node 2 dies mid-run: app node 2 answers 503, the balanced port keeps answering', async () => {
  const l = load(4);
  await sleep(1000);
  const killedAt = Date.now();
  node('db-kill', 2);
  // App node 2 cannot reach its database: 503 unavailable, JSON.
  const direct = await api('GET', at(2, '/me'), { key: T.key });
  assertError(direct, 503, 'unavailable');
  const w = await write(2, 'POST', '/waitlist/entries', T.key, { queueId: T.queueId, fullName: 'Direct' });
  assertError(w, 503, 'unavailable');
  await waitUntil(() => node('db-size', 1) === '2', 30000, 'the cluster to evict node 2');
  const evictedMs = Date.now() - killedAt;
  await sleep(2000);
  await l.stop();
  const s = summary(l.log);
  const after = l.log.filter((x) => x.at > killedAt + 200);
  console.log(`# node 2 killed: evicted after ${evictedMs} ms; ${s.requests} requests, ${s.failed} failed, p50 ${s.p50Ms} ms, max ${s.maxMs} ms; after the kill served by app node 1: ${after.filter((x) => x.node === 1).length} of ${after.length}`);
  assert.equal(s.failed, 0, s.badSamples.join('\n'));
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
  await waitUntil(async () => (await api('GET', at(2, '/me'), { key: T.key })).status === 200, 15000, 'app node 2 to answer again');
  console.log(`# node 2 back and app node 2 answering in ${Date.now() - t0} ms`);
  assert.equal(entriesOn(2), entriesOn(1));
});
