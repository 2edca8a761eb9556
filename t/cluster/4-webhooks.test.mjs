// 500 webhooks with a deliverer on each app node (each on its own database
// node).  Deliverers lease new events in ranges (lib/deliver.c): a range
// is taken by advancing the subscription's fanout_seq with a conditional
// update, committed with the range's lease row, so two deliverers taking
// the same events on two nodes conflict at certification and each event
// is leased to one of them only.  With a receiver that always answers 200
// every event must arrive exactly once.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import {
  logOf, pool, receiver, sleep, sqlOn, tenant, uniq, waitUntil, write,
} from './util.mjs';

const N = 500;

function attemptsIn(log, subId) {
  const ids = new Set();
  for (const line of readFileSync(log, 'utf8').split('\n')) {
    if (!line.includes('"delivery attempt"') || !line.includes(subId)) continue;
    ids.add(JSON.parse(line).deliveryId);
  }
  return ids;
}

test(`${N} webhooks, both deliverers running: every event delivered exactly once`, async () => {
  const recv = await receiver();
  try {
    const t = tenant();
    const sub = await write(0, 'POST', '/webhooks/subscriptions', t.key,
      { url: recv.url('all'), eventTypes: ['waitlist.entry.created'] });
    assert.equal(sub.status, 201, sub.text);
    const subId = sub.json.subscription.id;

    const started = Date.now();
    // Written through the balanced port, 8 at a time.
    const res = await pool(Array.from({ length: N }, (_, i) => () =>
      write(0, 'POST', '/waitlist/entries', t.key, { queueId: t.queueId, fullName: uniq(`Hook ${i}`) })), 8);
    const bad = res.filter((r) => r.status !== 201);
    assert.deepEqual(bad.map((r) => `${r.status} ${r.text}`), [], 'every write succeeded');
    const written = Date.now();

    const events = new Set(sqlOn(1, `SELECT id FROM events WHERE tenant_id='${t.tenantId}'`).map((r) => r[0]));
    assert.equal(events.size, N);
    await waitUntil(() => new Set(recv.got.map((g) => g.id)).size >= N, 120000,
      `${N} distinct webhooks (have ${new Set(recv.got.map((g) => g.id)).size})`);
    const delivered = Date.now();
    await waitUntil(() => Number(sqlOn(2, `SELECT COUNT(*) FROM deliveries WHERE subscription_id='${subId}' AND status='succeeded'`)[0][0]) === N,
      30000, 'every delivery recorded as succeeded');
    // Time for a late duplicate (an expired lease) to show up.
    await sleep(3000);

    const counts = new Map();
    for (const g of recv.got) counts.set(g.id, (counts.get(g.id) ?? 0) + 1);
    const twice = [...counts].filter(([, c]) => c > 1);
    assert.deepEqual(twice, [], 'no webhook-id received twice');
    assert.equal(recv.got.length, N);
    for (const id of counts.keys()) assert.ok(events.has(id), `webhook-id ${id} is an event of the tenant`);
    const rows = sqlOn(3, `SELECT COUNT(*), SUM(attempt_count) FROM deliveries WHERE subscription_id='${subId}'`)[0];
    assert.deepEqual(rows.map(Number), [N, N], 'one delivery per event, one attempt each');

    const one = attemptsIn(logOf('deliverer1'), subId);
    const two = attemptsIn(logOf('deliverer2'), subId);
    assert.equal(one.size + two.size, N, `attempts logged: ${one.size} + ${two.size}`);
    assert.ok([...one].every((id) => !two.has(id)), 'no delivery attempted by both deliverers');
    assert.ok(one.size > 0 && two.size > 0, `both deliverers sent (${one.size} and ${two.size})`);
    console.log(`# webhooks: ${N} writes in ${written - started} ms; all delivered ${delivered - started} ms after the first write; deliverer 1 sent ${one.size}, deliverer 2 sent ${two.size}`);
  } finally {
    await recv.close();
  }
});
