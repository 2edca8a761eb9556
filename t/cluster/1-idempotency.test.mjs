// Idempotency and read-your-writes across app nodes on different Galera
// nodes.  The idempotency record's primary key (key id, Idempotency-Key)
// is written by both nodes, so one of two concurrent transactions fails
// certification, is retried whole (lib/txn.c wl_db_txn), finds the record
// and replays it.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  api, assertError, at, sqlOn, tenant, uniq, write,
} from './util.mjs';

const T = tenant();
const body = (ref) => ({ queueId: T.queueId, partySize: 2, fullName: 'Cluster Idem', externalReference: ref });

function byRef(n, ref) {
  return Number(sqlOn(n, `SELECT COUNT(*) FROM entries WHERE tenant_id='${T.tenantId}' AND external_reference='${ref}'`)[0][0]);
}

test('the same Idempotency-Key sent to both nodes at once: one entry, identical 201 bodies', async () => {
  let replayedSeen = 0;
  for (let round = 0; round < 15; round += 1) {
    const k = uniq('idem');
    const ref = uniq('both');
    const nodes = [1, 2, 1, 2, 1, 2];
    const results = await Promise.all(nodes.map((n) =>
      write(n, 'POST', '/waitlist/entries', T.key, body(ref), k)));
    const created = results.filter((r) => r.status === 201);
    const summary = results.map((r, i) => `n${nodes[i]}:${r.status}${r.json?.code ? ` ${r.json.code}` : ''}`).join(', ');
    assert.ok(created.length >= 1, `round ${round}: ${summary}`);
    for (const r of results) {
      if (r.status === 201) assert.equal(r.text, created[0].text, `round ${round}: every 201 carries the same body`);
      else assertError(r, 409, 'idempotency_in_progress');
    }
    assert.equal(created.filter((r) => r.headers.get('idempotency-replayed') !== 'true').length, 1,
      `round ${round}: exactly one original execution (${summary})`);
    replayedSeen += created.length - 1;
    for (const n of [1, 2, 3]) assert.equal(byRef(n, ref), 1, `round ${round}: one entry on database node ${n}`);
    const id = created[0].json.entry.id;
    assert.equal(Number(sqlOn(1, `SELECT COUNT(*) FROM events WHERE resource_id='${id}'`)[0][0]), 1, 'one event');
  }
  assert.ok(replayedSeen > 0, 'some requests were answered by replay');
});

test('the same key for a status change on both nodes changes the entry once', async () => {
  for (let round = 0; round < 10; round += 1) {
    const c = await write(1, 'POST', '/waitlist/entries', T.key, body(uniq('st')));
    assert.equal(c.status, 201, c.text);
    const e = c.json.entry;
    const k = uniq('idem');
    const payload = { status: 'ready', expectedStatus: 'waiting', expectedVersion: 1 };
    const results = await Promise.all([1, 2, 1, 2].map((n) =>
      write(n, 'PATCH', `/waitlist/entries/${e.id}/status`, T.key, payload, k)));
    const ok = results.filter((r) => r.status === 200);
    assert.ok(ok.length >= 1, results.map((r) => `${r.status} ${r.text}`).join('\n'));
    for (const r of results) {
      if (r.status === 200) assert.equal(r.text, ok[0].text);
      else assertError(r, 409, 'idempotency_in_progress');
    }
    const rows = sqlOn(2, `SELECT version, status FROM entries WHERE id='${e.id}'`);
    assert.deepEqual(rows, [['2', 'ready']]);
    assert.equal(Number(sqlOn(2, `SELECT COUNT(*) FROM events WHERE resource_id='${e.id}'`)[0][0]), 2);
  }
});

test('different bodies under one key on both nodes: one runs, the others are refused', async () => {
  for (let round = 0; round < 5; round += 1) {
    const k = uniq('idem');
    const ref = uniq('diff');
    const results = await Promise.all([1, 2, 1, 2].map((n, i) =>
      write(n, 'POST', '/waitlist/entries', T.key, { ...body(ref), partySize: i + 1 }, k)));
    const ok = results.filter((r) => r.status === 201);
    assert.equal(ok.length, 1, results.map((r) => `${r.status} ${r.json?.code ?? ''}`).join(', '));
    for (const r of results) {
      if (r.status !== 201) assertError(r, 409, ['idempotency_conflict', 'idempotency_in_progress']);
    }
    assert.equal(byRef(1, ref), 1);
  }
});

// Needs wsrep_sync_wait = 1 on the database nodes (README "Running several
// nodes"): without it the second node may not have applied the first
// node's commit yet (measured: about 3 % of immediate reads were 404).
test('read-your-writes across nodes: created on one node, read and changed at once on the other', async () => {
  for (let i = 0; i < 100; i += 1) {
    const [from, to] = i % 2 ? [1, 2] : [2, 1];
    const c = await write(from, 'POST', '/waitlist/entries', T.key, body(uniq('ryw')));
    assert.equal(c.status, 201, c.text);
    const id = c.json.entry.id;
    const g = await api('GET', at(to, `/waitlist/entries/${id}`), { key: T.key });
    assert.equal(g.status, 200, `GET on node ${to} right after the create on node ${from}: ${g.text}`);
    const p = await write(to, 'PATCH', `/waitlist/entries/${id}/status`, T.key,
      { status: 'ready', expectedStatus: 'waiting', expectedVersion: 1 });
    assert.equal(p.status, 200, `PATCH on node ${to}: ${p.text}`);
    const p2 = await write(from, 'PATCH', `/waitlist/entries/${id}`, T.key, { expectedVersion: 2, partySize: 3 });
    assert.equal(p2.status, 200, `PATCH back on node ${from}: ${p2.text}`);
  }
});

test('webhookSubscriptions: concurrent creations on both nodes never pass the limit', async () => {
  for (let round = 0; round < 6; round += 1) {
    const t = tenant({ limits: { webhookSubscriptions: 1 } });
    for (let i = 0; i <= round % 3; i += 1) {
      const e = await write(1 + (i % 2), 'POST', '/waitlist/entries', t.key, { queueId: t.queueId, fullName: 'Before' });
      assert.equal(e.status, 201, e.text);
    }
    const results = await Promise.all([1, 2, 1, 2].map((n) =>
      write(n, 'POST', '/webhooks/subscriptions', t.key,
        { url: `http://127.0.0.1:9/hook/${round}`, eventTypes: ['waitlist.entry.created'] })));
    const ok = results.filter((r) => r.status === 201);
    const summary = results.map((r) => `${r.status} ${r.json?.code ?? ''}`).join(', ');
    assert.equal(ok.length, 1, `round ${round}: ${summary}`);
    for (const r of results) if (r.status !== 201) assertError(r, 409, 'limit_reached');
    // Only events after its creation are delivered: the marks are the
    // tenant's sequence when it was created.
    assert.deepEqual(sqlOn(1, `SELECT high_water_seq, fanout_seq FROM webhook_subscriptions WHERE tenant_id='${t.tenantId}'`),
      [[String(1 + (round % 3)), String(1 + (round % 3))]]);
  }
});
