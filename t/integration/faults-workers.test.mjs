// Fault injection: FastCGI workers killed with SIGKILL under a write load.
// The master replaces them, and nothing is lost: every create acknowledged
// with a 2xx is in the database, a client that got a 502/503 and retried
// with the same Idempotency-Key ends with exactly one entry, and each
// entry has its one created event in a gapless sequence.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { alive, fixture, seed, sql, uniq } from './lib.mjs';
import { HIGH_LIMITS } from './util-entries.mjs';
import {
  entriesByReference, eventRows, fullPool, killBusyWorkers, masterPid, pool, untilAcknowledged,
} from './util-faults.mjs';

const REQUESTS = 300;
const CLIENTS = 16;
// The load goes on until this many workers died with a request in hand
// (on a slow machine every worker may stay busy for a while, and only one
// seen waiting for a connection counts as past its start).
const KILLS = 3;

test('SIGKILLed workers under load lose no acknowledged create and duplicate none', async (t) => {
  const refs = seed(fixture({ limits: HIGH_LIMITS }));
  const master = masterPid();
  const before = await fullPool(master);
  const run = uniq('kill');

  let done = false;
  // A worker with a request in hand every ~100 ms while the load runs.
  const killed = [];
  const killing = killBusyWorkers(master, () => done, { every: 100, killed });
  let results;
  try {
    results = await pool(REQUESTS, CLIENTS, async (i) => {
      const externalReference = `${run}-${i}`;
      const { res, attempts, seen } = await untilAcknowledged('POST', '/waitlist/entries', {
        key: refs.k1,
        idempotencyKey: `${run}-idem-${i}`,
        body: { queueId: refs.q1, fullName: `Guest ${i}`, partySize: 1, externalReference },
      });
      assert.equal(res.json.entry.externalReference, externalReference);
      return { externalReference, id: res.json.entry.id, attempts, seen };
    }, { until: () => killed.length >= KILLS, max: 10 * REQUESTS });
  } finally {
    done = true;
  }
  await killing;
  const retried = results.filter((r) => r.attempts > 1);
  assert.ok(killed.length >= KILLS, `only ${killed.length} workers were killed with a request in hand`);
  t.diagnostic(`${killed.length} busy workers killed; ${retried.length} of ${results.length} creates needed a retry `
    + `(${retried.map((r) => r.seen.join('/')).slice(0, 10).join(' ')})`);

  // The master is the same process and back to a full pool of new workers.
  assert.equal(masterPid(), master);
  assert.ok(alive(master));
  const after = await fullPool(master);
  for (const pid of killed) {
    assert.ok(!after.includes(pid), `killed worker ${pid} is still listed`);
    assert.ok(!alive(pid), `killed worker ${pid} is alive`);
  }
  assert.ok(after.some((p) => !before.includes(p)), 'no worker was replaced');

  // Nothing lost, nothing doubled.
  const counts = entriesByReference(refs.t1);
  assert.equal(counts.size, results.length, `${counts.size} distinct references stored for ${results.length} requests`);
  for (const r of results) assert.equal(counts.get(r.externalReference), 1, `${r.externalReference} stored ${counts.get(r.externalReference) ?? 0} times`);
  const stored = new Map(sql(`SELECT external_reference, id FROM entries WHERE tenant_id = '${refs.t1}'`));
  for (const r of results) assert.equal(stored.get(r.externalReference), r.id, `the acknowledged entry of ${r.externalReference} is not the stored one`);

  // Each entry has exactly its one created event, the sequence has no gap.
  const evs = eventRows(refs.t1);
  assert.equal(evs.length, results.length);
  evs.forEach((e, i) => assert.equal(e.seq, i + 1, 'event sequence has a gap'));
  assert.ok(evs.every((e) => e.type === 'waitlist.entry.created'));
  assert.deepEqual(new Set(evs.map((e) => e.resource)), new Set(results.map((r) => r.id)));
});

test('the same Idempotency-Key sent by racing clients while workers die gives one entry', async (t) => {
  // Each key goes out from 4 clients at once, as a client would retry a
  // request whose first attempt died with its worker; whichever attempt
  // commits, every acknowledgement names the same single entry.
  const refs = seed(fixture({ limits: HIGH_LIMITS }));
  const master = masterPid();
  await fullPool(master);
  const run = uniq('race');
  let done = false;
  const killed = [];
  const killing = killBusyWorkers(master, () => done, { every: 50, killed });
  const keyOf = (i) => `${run}-${i}`;
  let acks;
  try {
    acks = await pool(100, 4, (i) => Promise.all(Array.from({ length: 4 }, () => untilAcknowledged('POST', '/waitlist/entries', {
      key: refs.k1,
      idempotencyKey: keyOf(i),
      body: { queueId: refs.q1, fullName: 'Only Once', partySize: 2, externalReference: keyOf(i) },
    }))), { until: () => killed.length >= KILLS, max: 1000 });
  } finally {
    done = true;
  }
  await killing;
  assert.ok(killed.length >= KILLS, `only ${killed.length} workers were killed during the load`);
  t.diagnostic(`${killed.length} busy workers killed during ${acks.length} keys sent 4 times each`);
  const counts = entriesByReference(refs.t1);
  const keys = acks.map((_, i) => keyOf(i));
  keys.forEach((k, i) => {
    const ids = new Set(acks[i].map((a) => a.res.json.entry.id));
    assert.equal(ids.size, 1, `${k} acknowledged as different entries: ${[...ids].join(', ')}`);
    assert.equal(counts.get(k), 1, `${k} stored ${counts.get(k) ?? 0} times`);
  });
  assert.equal(eventRows(refs.t1).length, keys.length);
  await fullPool(master);
});
