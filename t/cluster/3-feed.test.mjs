// The gapless feed with writers on both nodes.  Each write transaction
// reserves its sequence numbers by updating the tenant's counter row last
// (lib/outbox.c); writers on two nodes write that row, so the later one to
// certify is aborted and retried whole, and sequence order stays commit
// order on every node.  A reader polling through the balanced port (each
// poll on either node) must see 1..N exactly once, in order.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { api, at, sleep, sqlOn, tenant, uniq, write } from './util.mjs';

const range = (n) => Array.from({ length: n }, (_, i) => i + 1);

// ops operations through app node n, alternately creating a walk-in and
// moving it on; returns how many events they made.
async function writer(t, n, w, ops, problems) {
  const targets = ['ready', 'confirmed', 'no_show', 'in_service', 'cancelled'];
  let entry = null;
  let made = 0;
  for (let i = 0; i < ops; i += 1) {
    const res = i % 2 === 0
      ? await write(n, 'POST', '/waitlist/entries', t.key, { queueId: t.queueId, fullName: uniq(`Writer ${w}`) })
      : await write(n, 'PATCH', `/waitlist/entries/${entry.id}/status`, t.key, {
        status: targets[(w + i) % targets.length], expectedStatus: entry.status, expectedVersion: entry.version,
      });
    if (res.status !== 200 && res.status !== 201) {
      problems.push(`writer ${w} (node ${n}) op ${i}: ${res.status} ${res.text}`);
      return made;
    }
    entry = res.json.entry;
    made += 1;
  }
  return made;
}

// Polls GET /events through base node n (0: balanced) until done() and a
// final empty page; checks each event follows the previous one.
async function reader(t, n, limit, done) {
  const s = { seen: [], problems: [], polls: 0, nodes: new Set() };
  let cursor;
  let last = 0;
  for (;;) {
    const writing = !done();
    const q = [`limit=${limit}`, cursor ? `cursor=${encodeURIComponent(cursor)}` : ''].filter(Boolean).join('&');
    const res = await api('GET', at(n, `/events?${q}`), { key: t.key });
    s.polls += 1;
    if (res.status !== 200) {
      s.problems.push(`poll ${s.polls}: ${res.status} ${res.text}`);
      if (s.problems.length > 10) return s;
      continue;
    }
    s.nodes.add(res.headers.get('x-waitlist-upstream'));
    for (const ev of res.json.events) {
      if (ev.sequence !== last + 1) s.problems.push(`poll ${s.polls}: sequence ${ev.sequence} after ${last}`);
      last = ev.sequence;
      s.seen.push(ev);
    }
    cursor = res.json.nextCursor;
    if (!writing && res.json.events.length === 0 && !res.json.hasMore) return s;
    if (!res.json.hasMore) await sleep(2);
  }
}

test('4 writers (2 per node), readers through the balanced port: every sequence 1..N exactly once', async () => {
  const t = tenant();
  let finished = false;
  const done = () => finished;
  const readers = [reader(t, 0, 7, done), reader(t, 0, 100, done), reader(t, 1, 50, done), reader(t, 2, 50, done)];
  await sleep(20);
  const problems = [];
  const ops = 40;
  const started = Date.now();
  let made;
  try {
    made = await Promise.all([1, 1, 2, 2].map((n, w) => writer(t, n, w, ops, problems)));
  } finally {
    finished = true;
  }
  const ms = Date.now() - started;
  assert.deepEqual(problems, [], 'every write succeeded');
  const total = made.reduce((a, b) => a + b, 0);
  assert.equal(total, 4 * ops);
  console.log(`# feed: ${total} writes from 4 writers on 2 nodes in ${ms} ms (${Math.round(total / (ms / 1000))}/s)`);

  for (const n of [1, 2, 3]) {
    const seqs = sqlOn(n, `SELECT seq FROM events WHERE tenant_id='${t.tenantId}' ORDER BY seq`).map((r) => Number(r[0]));
    assert.deepEqual(seqs, range(total), `database node ${n}: stored sequences are 1..N`);
  }
  const results = await Promise.all(readers);
  results.forEach((r, i) => {
    assert.deepEqual(r.problems, [], `reader ${i}: gap, duplicate or disorder`);
    assert.deepEqual(r.seen.map((e) => e.sequence), range(total), `reader ${i}: 1..N exactly once each`);
    assert.equal(new Set(r.seen.map((e) => e.id)).size, total, `reader ${i}: ids unique`);
  });
  assert.equal(results[0].nodes.size, 2, 'the balanced readers were served by both nodes');
  // Sequence order is commit order: an entry's events have rising versions.
  const version = new Map();
  for (const ev of results[0].seen) {
    const prev = version.get(ev.resourceId) ?? 0;
    assert.ok(ev.resourceVersion > prev, `${ev.resourceId} v${ev.resourceVersion} after v${prev}`);
    version.set(ev.resourceId, ev.resourceVersion);
  }
});
