// Rate limits with two app nodes ([server] cluster_nodes = 2 on each), as
// README "Rate limits" documents: each node enforces its share of every
// limit (the limit divided by 2, rounded up) in its own memory; no counter
// is shared.  A client pinned to one node gets its share; requests spread
// evenly by the balancer get about the whole limit, never more than the
// sum of the shares.  Every request is pinned (X-Test-Now) to a minute of
// its own, so no real minute boundary splits a window.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { api, at, freshMinute, servedBy, tenant } from './util.mjs';

const HIGH = 1000000;

async function reads(n, key, when, count) {
  const out = [];
  for (let i = 0; i < count; i += 1) {
    out.push(await api('GET', at(n, '/me'), { key, headers: when }));
  }
  return out;
}

const passed = (list) => list.filter((r) => r.status === 200).length;

function assertRefusals(list) {
  for (const r of list) {
    if (r.status === 200) continue;
    assert.equal(r.status, 429, r.text);
    assert.equal(r.json.code, 'rate_limited');
    assert.ok(Number(r.headers.get('retry-after')) >= 1);
  }
}

test('readsPerMinute 20: 10 through one node, 10 more through the other, each node its half through the balancer', async () => {
  const t = tenant({ limits: { readsPerMinute: 20, writesPerMinute: HIGH, tenantReadsPerMinute: HIGH, tenantWritesPerMinute: HIGH } });
  const m = freshMinute();
  const one = await reads(1, t.key, m.at(10), 30);
  assert.equal(passed(one), 10, 'node 1 enforces half of 20');
  assertRefusals(one);
  // The policy names the configured limit, not the node's share.
  assert.match(one[0].headers.get('ratelimit-policy'), /"key";q=20;w=60/);
  const two = await reads(2, t.key, m.at(20), 30);
  assert.equal(passed(two), 10, 'node 2 keeps its own half: counters are per node');
  assertRefusals(two);

  const bal = await reads(0, t.key, m.at(10, 1), 40);
  const by = [0, 0, 0];
  const sent = [0, 0, 0];
  for (const r of bal) {
    sent[servedBy(r)] += 1;
    if (r.status === 200) by[servedBy(r)] += 1;
  }
  console.log(`# rate limits: balanced port passed ${passed(bal)} of 40 (node 1: ${by[1]} of ${sent[1]}, node 2: ${by[2]} of ${sent[2]}) against readsPerMinute 20`);
  assert.equal(sent[0], 0, 'every answer names the node that served it');
  assert.ok(passed(bal) <= 20, `never more than the limit: ${passed(bal)}`);
  // Each node passes its share of what it was sent.  (The balancer
  // alternates, but leaves a node out for 5 s after it failed a request,
  // which an earlier test under load may have caused.)
  assert.equal(by[1], Math.min(10, sent[1]), 'node 1 passes up to its half');
  assert.equal(by[2], Math.min(10, sent[2]), 'node 2 passes up to its half');
  assertRefusals(bal);
});

test('an odd limit rounds each share up: readsPerMinute 5 gives 3 per node', async () => {
  const t = tenant({ limits: { readsPerMinute: 5, writesPerMinute: HIGH, tenantReadsPerMinute: HIGH, tenantWritesPerMinute: HIGH } });
  const m = freshMinute();
  assert.equal(passed(await reads(1, t.key, m.at(5), 8)), 3);
  assert.equal(passed(await reads(2, t.key, m.at(6), 8)), 3);
});

test('writes and tenant budgets are shared out the same way', async () => {
  const t = tenant({ limits: { readsPerMinute: HIGH, writesPerMinute: 6, tenantReadsPerMinute: 8, tenantWritesPerMinute: HIGH } });
  const m = freshMinute();
  const w = [];
  for (let i = 0; i < 6; i += 1) {
    w.push(await api('POST', at(1, '/waitlist/entries'), {
      key: t.key, headers: m.at(10), idempotencyKey: `rl-${t.tenantId}-${i}`,
      body: { queueId: t.queueId, fullName: 'Limited' },
    }));
  }
  assert.deepEqual(w.map((r) => r.status), [201, 201, 201, 429, 429, 429], 'writesPerMinute 6: 3 on node 1');
  const r = await reads(2, t.key, m.at(10), 6);
  assert.deepEqual(r.map((x) => x.status), [200, 200, 200, 200, 429, 429], 'tenantReadsPerMinute 8: 4 on node 2');
  assert.equal(r[4].json.code, 'rate_limited');
});
