// Fault injection: MariaDB stopped and started again under a write load.
// While it is down every write answers a JSON 503 `unavailable`; once it
// is back writes succeed again without a restart of anything else; no
// write acknowledged with a 2xx is lost; and a write whose outcome the
// client never learnt, retried with the same Idempotency-Key, exists
// exactly once.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BASE, api, fixture, seed, sleep, sql, stack, uniq } from './lib.mjs';
import { HIGH_LIMITS, assertError } from './util-entries.mjs';
import {
  entriesByReference, eventRows, fcgiLogMark, masterPid, stackAsync, untilAcknowledged, waitFor,
  workersLostSince,
} from './util-faults.mjs';

const WRITERS = 8;

test('MariaDB stopped under load: 503 meanwhile, recovery after, nothing acknowledged lost, no duplicate', async (t) => {
  const refs = seed(fixture({ limits: HIGH_LIMITS }));
  const run = uniq('dbfault');
  const body = (ref) => ({ queueId: refs.q1, fullName: 'Outage Guest', partySize: 1, externalReference: ref });
  const acked = new Map(); // externalReference -> acknowledged entry id
  const down = []; // every answer given while the database was stopped
  let phase = 'up';
  let stop = false;
  let next = 0;

  const writer = async () => {
    while (!stop) {
      const ref = `${run}-${next++}`;
      const { res } = await untilAcknowledged('POST', '/waitlist/entries', {
        key: refs.k1, idempotencyKey: ref, body: body(ref), ms: 120000, pause: 100,
        observe: (r) => { if (phase === 'down') down.push(r); },
      });
      acked.set(ref, res.json.entry.id);
    }
  };
  const master = masterPid();
  const mark = fcgiLogMark();
  const writers = Array.from({ length: WRITERS }, writer);
  let uncertain = [];
  try {
    await waitFor('20 creates before the outage', 20000, () => acked.size >= 20);
    // Writes whose client gives up before the answer, sent as the
    // database goes away: their outcome is unknown to the client.
    uncertain = Array.from({ length: 10 }, (_, i) => `${run}-unknown-${i}`);
    const abandoned = uncertain.map((ref) => {
      const ac = new AbortController();
      setTimeout(() => ac.abort(), 5 + Math.floor(Math.random() * 40));
      return fetch(`${BASE}/waitlist/entries`, {
        method: 'POST',
        signal: ac.signal,
        headers: { authorization: `Bearer ${refs.k1}`, 'content-type': 'application/json', 'idempotency-key': ref },
        body: JSON.stringify(body(ref)),
      }).then((r) => r.text()).catch(() => null);
    });
    await stackAsync('db-stop');
    await Promise.all(abandoned);
    phase = 'down';
    const ackedWhenDown = acked.size;
    await sleep(1500);
    // And one write made on purpose while it is down.
    assertError(await api('POST', '/waitlist/entries', { key: refs.k1, idempotencyKey: uniq('down'), body: body(uniq('down')) }),
      503, 'unavailable');
    assertError(await api('GET', '/health'), 503, 'unavailable');
    phase = 'starting';
    assert.ok(acked.size - ackedWhenDown <= WRITERS, 'writes were acknowledged while the database was stopped');
    await stackAsync('db-start');
    phase = 'up';
    const ackedAtRestart = acked.size;
    await waitFor('20 more creates after the restart', 30000, () => acked.size >= ackedAtRestart + 20);
  } finally {
    stop = true;
    if (phase !== 'up') {
      // Whatever failed, leave a running database behind.
      try { stack('db-start'); } catch { /* reported by the assertion */ }
    }
    await Promise.all(writers);
  }
  t.diagnostic(`${acked.size} creates acknowledged; ${down.length} answers while the database was down`);

  // During the outage: only JSON 503 unavailable, with a request id.
  assert.ok(down.length >= WRITERS, `only ${down.length} answers while the database was down`);
  for (const r of down) {
    assert.equal(r.status, 503, `while down: ${r.status} ${r.text}`);
    assert.equal(r.json?.code, 'unavailable', r.text);
    // The service's own, not nginx's for a worker gone.
    assert.equal(r.json.error, 'the service is temporarily unavailable; retry later', r.text);
    assert.equal(r.headers.get('x-request-id'), r.json.requestId);
  }
  assert.equal((await api('GET', '/health')).status, 200);
  // Without a restart of anything else: the same master, no worker lost.
  assert.equal(masterPid(), master);
  assert.deepEqual(workersLostSince(mark), []);

  // The abandoned writes, retried with their keys: each one exactly once.
  for (const ref of uncertain) {
    const { res } = await untilAcknowledged('POST', '/waitlist/entries', { key: refs.k1, idempotencyKey: ref, body: body(ref) });
    acked.set(ref, res.json.entry.id);
  }

  const counts = entriesByReference(refs.t1);
  for (const ref of acked.keys()) assert.equal(counts.get(ref), 1, `${ref} stored ${counts.get(ref) ?? 0} times`);
  assert.equal(counts.size, acked.size, 'an entry exists that no client was told about');
  const stored = new Map(sql(`SELECT external_reference, id FROM entries WHERE tenant_id = '${refs.t1}'`));
  for (const [ref, id] of acked) assert.equal(stored.get(ref), id, `the acknowledged entry of ${ref} is not the stored one`);
  const evs = eventRows(refs.t1);
  assert.equal(evs.length, acked.size);
  evs.forEach((e, i) => assert.equal(e.seq, i + 1, 'event sequence has a gap'));
});
