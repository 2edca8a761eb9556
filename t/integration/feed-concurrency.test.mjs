// The feed's central guarantee (DECISIONS "Events and the feed"): a reader
// polling GET /events with its cursor while writers commit concurrently
// sees every sequence number 1..N exactly once, in order, with no gap and
// no duplicate; the sequence is per tenant and follows commit order.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { api, seed, sleep, sql, uniq } from './lib.mjs';
import {
  ALL_SCOPES, HIGH_LIMITS, businessDef, eventCount, events, keyDef,
  queueDef, rawEvents, storedBodies, storedSeqs,
} from './util-events.mjs';

function makeTenant() {
  return seed({
    tenants: [{
      ref: 't', name: uniq('feed race tenant'), plan: 'pro', publicApi: true,
      webhooks: true, state: 'active', emailVerified: true,
      billingAvailable: true, guestAllowance: 100000, limits: HIGH_LIMITS,
      businesses: [businessDef('b1', [queueDef('q1', 'Race one'), queueDef('q2', 'Race two')])],
      keys: [keyDef('k', ALL_SCOPES)],
    }],
  });
}

function range(from, to) {
  const out = [];
  for (let i = from; i <= to; i += 1) out.push(i);
  return out;
}

// A writer: ops operations, alternately creating a walk-in (one
// waitlist.entry.created) and moving that entry on (one status_changed),
// each with its own Idempotency-Key.  Every tenth operation is also
// replayed with its key, which must emit nothing.  Resolves to the number
// of events it caused.
async function writer(t, w, ops, stats) {
  const targets = ['ready', 'confirmed', 'no_show', 'in_service', 'cancelled'];
  let entry = null;
  let emitted = 0;
  for (let i = 0; i < ops; i += 1) {
    let req;
    if (i % 2 === 0) {
      req = ['POST', '/waitlist/entries', {
        queueId: (w + i / 2) % 2 ? t.q2 : t.q1, fullName: uniq(`Writer ${w}`),
      }];
    } else {
      req = ['PATCH', `/waitlist/entries/${entry.id}/status`, {
        status: targets[(w + i) % targets.length],
        expectedStatus: entry.status, expectedVersion: entry.version,
      }];
    }
    const idempotencyKey = uniq(`w${w}-op${i}`);
    const res = await api(req[0], req[1], { key: t.k, idempotencyKey, body: req[2] });
    assert.ok(res.status === 200 || res.status === 201, `writer ${w} op ${i}: ${res.status} ${res.text}`);
    entry = res.json.entry;
    emitted += 1;
    stats.ops += 1;
    if (i % 10 === 9) {
      const again = await api(req[0], req[1], { key: t.k, idempotencyKey, body: req[2] });
      assert.equal(again.status, res.status, `writer ${w} replay of op ${i}: ${again.text}`);
      assert.equal(again.headers.get('idempotency-replayed'), 'true');
      assert.equal(again.text, res.text, 'a replay answers the stored body');
    }
  }
  return emitted;
}

// A reader: polls with its cursor every few ms until told to stop, then
// drains (polls until an empty page without hasMore).  Records what it saw
// and whether each event's sequence followed the previous one it was
// shown (for an unfiltered reader: exactly last + 1).
function reader(t, params, { contiguous, done }) {
  const state = {
    seen: [], raw: [], polls: 0, pollsWithEventsDuringWrites: 0,
    problems: [], last: 0,
  };
  const run = async () => {
    let cursor;
    let drained = false;
    while (!drained) {
      const writing = !done();
      const res = await events(t.k, { ...params, cursor });
      state.polls += 1;
      if (res.status !== 200) {
        state.problems.push(`poll ${state.polls}: ${res.status} ${res.text}`);
        if (state.problems.length > 20) break;
        await sleep(5);
        continue;
      }
      const list = res.json.events;
      if (writing && list.length > 0) state.pollsWithEventsDuringWrites += 1;
      if (params.limit && list.length > params.limit) {
        state.problems.push(`poll ${state.polls}: ${list.length} events over limit ${params.limit}`);
      }
      for (const ev of list) {
        if (contiguous ? ev.sequence !== state.last + 1 : ev.sequence <= state.last) {
          state.problems.push(`poll ${state.polls}: sequence ${ev.sequence} after ${state.last}`);
        }
        state.last = Math.max(state.last, ev.sequence);
        state.seen.push(ev);
      }
      state.raw.push(...rawEvents(res.text));
      cursor = res.json.nextCursor;
      if (!writing && list.length === 0 && !res.json.hasMore) drained = true;
      else if (!res.json.hasMore) await sleep(1 + Math.floor(Math.random() * 4));
    }
    return state;
  };
  return run();
}

async function race(tenants, { writers, ops }) {
  let finished = false;
  const done = () => finished;
  const stats = { ops: 0 };
  const readers = [];
  for (const t of tenants) {
    readers.push({
      t,
      all: reader(t, { limit: 7 }, { contiguous: true, done }),
      big: reader(t, {}, { contiguous: true, done }),
      line: reader(t, { queueId: t.q1, limit: 3 }, { contiguous: false, done }),
      created: reader(t, { types: 'waitlist.entry.created', limit: 5 }, { contiguous: false, done }),
    });
  }
  // Let the readers make their first (empty) polls before writing.
  await sleep(20);
  const jobs = [];
  for (const t of tenants) {
    for (let w = 0; w < writers; w += 1) jobs.push(writer(t, w, ops, stats).then((n) => [t.t, n]));
  }
  let results;
  try {
    results = await Promise.all(jobs);
  } finally {
    finished = true;
  }
  const emitted = new Map();
  for (const [tid, n] of results) emitted.set(tid, (emitted.get(tid) ?? 0) + n);
  const out = [];
  for (const r of readers) {
    out.push({
      t: r.t, emitted: emitted.get(r.t.t),
      all: await r.all, big: await r.big, line: await r.line, created: await r.created,
    });
  }
  return out;
}

function checkTenant(res, expectedEvents) {
  const { t } = res;
  const tag = `tenant ${t.t}`;
  const n = eventCount(t.t);
  assert.equal(res.emitted, expectedEvents, `${tag}: writers' operations`);
  assert.equal(n, expectedEvents, `${tag}: one event per operation, none for replays`);

  // The table itself: seqs 1..N.
  assert.deepEqual(storedSeqs(t.t), range(1, n), `${tag}: stored seqs are 1..N`);

  for (const name of ['all', 'big']) {
    const r = res[name];
    assert.deepEqual(r.problems, [], `${tag}: reader ${name} saw a gap, duplicate or disorder`);
    assert.deepEqual(r.seen.map((e) => e.sequence), range(1, n), `${tag}: reader ${name} saw 1..N exactly once each`);
    assert.equal(new Set(r.seen.map((e) => e.id)).size, n, `${tag}: reader ${name}: event ids unique`);
    assert.ok(r.seen.every((e) => e.tenantId === t.t));
  }
  // The limit-7 reader really raced the writers.
  assert.ok(res.all.pollsWithEventsDuringWrites >= 3,
    `${tag}: reader polled only ${res.all.pollsWithEventsDuringWrites} times with events during the writes`);
  // Byte-for-byte the stored bodies.
  const stored = storedBodies(t.t);
  res.all.raw.forEach((text, i) => assert.equal(text, stored.get(i + 1), `${tag}: event ${i + 1} served as stored`));

  // Commit order: an entry's events appear with increasing versions.
  const version = new Map();
  for (const ev of res.all.seen) {
    const prev = version.get(ev.resourceId) ?? 0;
    assert.ok(ev.resourceVersion > prev, `${tag}: ${ev.resourceId} v${ev.resourceVersion} after v${prev}`);
    version.set(ev.resourceId, ev.resourceVersion);
  }

  // Filtered readers: exactly the matching sequences, in order.
  const lineWant = sql(`SELECT seq FROM events WHERE tenant_id = '${t.t}' AND queue_id = '${t.q1}' ORDER BY seq`).map((r) => Number(r[0]));
  assert.deepEqual(res.line.problems, [], `${tag}: line reader`);
  assert.deepEqual(res.line.seen.map((e) => e.sequence), lineWant, `${tag}: line reader saw each of its events once`);
  assert.ok(res.line.seen.every((e) => e.queueId === t.q1));
  const createdWant = sql(`SELECT seq FROM events WHERE tenant_id = '${t.t}' AND type = 'waitlist.entry.created' ORDER BY seq`).map((r) => Number(r[0]));
  assert.deepEqual(res.created.problems, [], `${tag}: type reader`);
  assert.deepEqual(res.created.seen.map((e) => e.sequence), createdWant, `${tag}: type reader saw each of its events once`);
}

test('4 concurrent writers, readers polling with cursors: every sequence 1..N exactly once, in order', async () => {
  const t = makeTenant();
  const [res] = await race([t], { writers: 4, ops: 40 });
  checkTenant(res, 160);
});

test('two tenants written concurrently keep separate gap-free sequences', async () => {
  const a = makeTenant();
  const b = makeTenant();
  const results = await race([a, b], { writers: 3, ops: 30 });
  for (const res of results) checkTenant(res, 90);
});
