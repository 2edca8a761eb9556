// Idempotency-Key handling of the mutating entry and booking routes
// (DECISIONS.md "Idempotency").

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { api, running, sleep, sql, sqlSession, uniq } from './lib.mjs';
import {
  assertError, create, entryCount, events, getEntry, iso, key, mustCreate, nextSlot,
  dayZone, rawHttp, setStatus, setup, write,
} from './util-entries.mjs';

const A = setup({
  q1: { timeZone: dayZone(), availability: { bookingCapacity: 50 } },
  keys: [key('k2')],
});
const B = setup();

const body = (over = {}) => ({ queueId: A.queueId, partySize: 1, fullName: 'Idem Guest', ...over });

function countByRef(ref) {
  return Number(sql(`SELECT COUNT(*) FROM entries WHERE tenant_id='${A.tenantId}' AND external_reference='${ref}'`)[0][0]);
}

test('every mutating route requires the Idempotency-Key header', async () => {
  const e = await mustCreate(A.key, body());
  const b = await mustCreate(A.key, body({ isBooking: true, scheduledFor: iso(nextSlot()) }));
  const before = entryCount(A.tenantId);
  const evBefore = events(A.tenantId).length;
  const calls = [
    ['POST', '/waitlist/entries', body()],
    ['PATCH', `/waitlist/entries/${e.id}`, { expectedVersion: 1, partySize: 2 }],
    ['PATCH', `/waitlist/entries/${e.id}/status`, { status: 'ready', expectedStatus: 'waiting', expectedVersion: 1 }],
    ['POST', `/bookings/${b.id}/reschedule`, { scheduledFor: iso(nextSlot() + 15 * 60000), expectedVersion: 1 }],
    ['POST', `/bookings/${b.id}/cancel`, { expectedStatus: 'confirmed', expectedVersion: 1 }],
  ];
  for (const [method, path, payload] of calls) {
    assertError(await api(method, path, { key: A.key, body: payload }), 400, 'idempotency_key_required');
    assertError(await api(method, path, { key: A.key, body: payload, headers: { 'idempotency-key': '' } }), 400, 'idempotency_key_required');
  }
  assert.equal(entryCount(A.tenantId), before);
  assert.equal(events(A.tenantId).length, evBefore);
  assert.equal((await getEntry(A.key, e.id)).version, 1);
  assert.equal((await getEntry(A.key, b.id)).version, 1);
});

test('a key of 255 printable characters is accepted, 256 is 400 invalid_request', async () => {
  const before = entryCount(A.tenantId);
  const k255 = `${uniq('k')}-`.padEnd(255, 'x');
  const ok = await create(A.key, body(), k255);
  assert.equal(ok.status, 201, ok.text);
  const k256 = `${uniq('k')}-`.padEnd(256, 'y');
  assertError(await create(A.key, body(), k256), 400, 'invalid_request');
  // Printable ASCII includes punctuation and spaces inside.
  const odd = await create(A.key, body(), `${uniq('k')} !"#$%&'()*+,-./:;<=>?@[\\]^_\`{|}~`);
  assert.equal(odd.status, 201, odd.text);
  assert.equal(entryCount(A.tenantId), before + 2);
});

test('a key with non-printable or non-ASCII characters is 400 invalid_request', async () => {
  const before = entryCount(A.tenantId);
  for (const bad of [`${uniq('k')}\tx`, `${uniq('k')}\u00e9`, `${uniq('k')}\u007f`, `${uniq('k')}\u0001`]) {
    const res = await rawHttp('POST', '/waitlist/entries', {
      headers: [['Authorization', `Bearer ${A.key}`], ['Content-Type', 'application/json'], ['Idempotency-Key', bad]],
      body: JSON.stringify(body()),
    });
    assertError(res, 400, 'invalid_request');
  }
  assert.equal(entryCount(A.tenantId), before);
});

test('a retry with the same key and body replays the stored answer', async () => {
  const ref = uniq('replay');
  const k = uniq('idem');
  const first = await create(A.key, body({ externalReference: ref }), k);
  assert.equal(first.status, 201, first.text);
  assert.equal(first.headers.get('idempotency-replayed'), null);
  for (let i = 0; i < 3; i++) {
    const again = await create(A.key, body({ externalReference: ref }), k);
    assert.equal(again.status, 201, again.text);
    assert.equal(again.text, first.text, 'the replayed body is the stored one');
    assert.equal(again.headers.get('idempotency-replayed'), 'true');
    assert.ok(again.headers.get('x-request-id'));
    assert.notEqual(again.headers.get('x-request-id'), first.headers.get('x-request-id'));
  }
  assert.equal(countByRef(ref), 1);
  const evs = events(A.tenantId).filter((x) => x.body.resourceId === first.json.entry.id);
  assert.equal(evs.length, 1, 'a replay writes no event');
});

test('a replay answers the stored result even after the entry moved on', async () => {
  const e = await mustCreate(A.key, body());
  const k = uniq('idem');
  const payload = { status: 'ready', expectedStatus: 'waiting', expectedVersion: 1 };
  const first = await write('PATCH', `/waitlist/entries/${e.id}/status`, A.key, payload, k);
  assert.equal(first.status, 200, first.text);
  const moved = await setStatus(A.key, first.json.entry, 'in_service');
  assert.equal(moved.status, 200, moved.text);
  const again = await write('PATCH', `/waitlist/entries/${e.id}/status`, A.key, payload, k);
  assert.equal(again.status, 200, again.text);
  assert.equal(again.text, first.text);
  assert.equal(again.headers.get('idempotency-replayed'), 'true');
  const now = await getEntry(A.key, e.id);
  assert.equal(now.status, 'in_service');
  assert.equal(now.version, 3);
  assert.equal(events(A.tenantId).filter((x) => x.body.resourceId === e.id).length, 3);
});

test('the same key with a different body, path or method is 409 idempotency_conflict', async () => {
  const k = uniq('idem');
  const ref = uniq('conf');
  const first = await create(A.key, body({ externalReference: ref }), k);
  assert.equal(first.status, 201, first.text);
  const e = first.json.entry;
  const before = entryCount(A.tenantId);
  assertError(await create(A.key, body({ externalReference: ref, partySize: 2 }), k), 409, 'idempotency_conflict');
  assertError(await create(A.key, body({ externalReference: `${ref}-other` }), k), 409, 'idempotency_conflict');
  assertError(await write('PATCH', `/waitlist/entries/${e.id}`, A.key, { expectedVersion: 1, partySize: 2 }, k), 409, 'idempotency_conflict');
  assertError(await write('PATCH', `/waitlist/entries/${e.id}/status`, A.key, { status: 'ready', expectedStatus: 'waiting', expectedVersion: 1 }, k), 409, 'idempotency_conflict');
  assert.equal(entryCount(A.tenantId), before);
  assert.equal((await getEntry(A.key, e.id)).version, 1);
  // The original still replays.
  const again = await create(A.key, body({ externalReference: ref }), k);
  assert.equal(again.status, 201, again.text);
  assert.equal(again.text, first.text);
});

test('keys are scoped to the API key: another key may reuse one', async () => {
  const k = uniq('idem');
  const ref = uniq('scoped');
  const a = await create(A.key, body({ externalReference: ref }), k);
  assert.equal(a.status, 201, a.text);
  const b = await create(A.k2, body({ externalReference: ref }), k);
  assert.equal(b.status, 201, b.text);
  assert.equal(b.headers.get('idempotency-replayed'), null);
  assert.notEqual(b.json.entry.id, a.json.entry.id);
  const c = await create(B.key, { queueId: B.queueId, partySize: 1, fullName: 'B', externalReference: ref }, k);
  assert.equal(c.status, 201, c.text);
  assert.equal(countByRef(ref), 2);
  // Each key replays its own result.
  const a2 = await create(A.key, body({ externalReference: ref }), k);
  assert.equal(a2.text, a.text);
  const b2 = await create(A.k2, body({ externalReference: ref }), k);
  assert.equal(b2.text, b.text);
});

test('4xx results are stored and replayed too', async () => {
  const k = uniq('idem');
  const before = entryCount(A.tenantId);
  const bad = body({ partySize: 0 });
  const first = await create(A.key, bad, k);
  assertError(first, 400, 'validation_failed');
  const again = await create(A.key, bad, k);
  assertError(again, 400, 'validation_failed');
  assert.equal(again.headers.get('idempotency-replayed'), 'true');
  assert.equal(again.json.error, first.json.error);
  assert.equal(entryCount(A.tenantId), before);

  // A 409 stays a 409 for that key even once it would now succeed.
  const e = await mustCreate(A.key, body());
  const k2 = uniq('idem');
  const stale = { expectedVersion: 2, partySize: 3 };
  assertError(await write('PATCH', `/waitlist/entries/${e.id}`, A.key, stale, k2), 409, 'version_conflict');
  const bump = await write('PATCH', `/waitlist/entries/${e.id}`, A.key, { expectedVersion: 1, partySize: 2 });
  assert.equal(bump.status, 200, bump.text);
  const replay = await write('PATCH', `/waitlist/entries/${e.id}`, A.key, stale, k2);
  assertError(replay, 409, 'version_conflict');
  assert.equal(replay.headers.get('idempotency-replayed'), 'true');
  const now = await getEntry(A.key, e.id);
  assert.equal(now.version, 2);
  assert.equal(now.partySize, 2);

  // A 404 is stored as well.
  const k3 = uniq('idem');
  assertError(await create(A.key, body({ queueId: 'que_missing' }), k3), 404, 'not_found');
  const r404 = await create(A.key, body({ queueId: 'que_missing' }), k3);
  assertError(r404, 404, 'not_found');
  assert.equal(r404.headers.get('idempotency-replayed'), 'true');
});

test('20 concurrent identical creations with one key make exactly one entry', async () => {
  const k = uniq('idem');
  const ref = uniq('race');
  const evBefore = events(A.tenantId).length;
  const results = await Promise.all(Array.from({ length: 20 }, () => create(A.key, body({ externalReference: ref }), k)));
  const created = results.filter((r) => r.status === 201);
  assert.ok(created.length >= 1, results.map((r) => r.status).join(','));
  for (const r of results) {
    if (r.status === 201) assert.equal(r.text, created[0].text, 'every 201 carries the identical body');
    else assertError(r, 409, 'idempotency_in_progress');
  }
  assert.equal(countByRef(ref), 1);
  assert.equal(events(A.tenantId).length, evBefore + 1);
  assert.equal(created.filter((r) => r.headers.get('idempotency-replayed') !== 'true').length, 1,
    'exactly one response is the original execution');
});

// Holds A's line's ticket row in a session of its own and sends a walk-in
// under key k, which waits for it.  Resolves once it waits: the session,
// the walk-in's answer to come and its database connection's id.
async function walkInHeld(ref, k) {
  const waiting = () => running('INSERT INTO line_tickets');
  const s = sqlSession();
  try {
    await s.run('BEGIN');
    await s.run(`SELECT issued FROM line_tickets WHERE queue_id = '${A.queueId}' FOR UPDATE`);
    const answer = create(A.key, body({ externalReference: ref }), k);
    for (let i = 0; i < 80 && waiting().length === 0; i++) await sleep(25);
    const ids = waiting();
    assert.equal(ids.length, 1, 'the walk-in waits for its line');
    return { s, answer, conn: ids[0] };
  } catch (err) {
    await s.close();
    throw err;
  }
}

test('the same key while the first request is still executing is 409 idempotency_in_progress at once', async () => {
  const k = uniq('idem');
  const ref = uniq('held');
  const { s, answer } = await walkInHeld(ref, k);
  try {
    const t0 = Date.now();
    assertError(await create(A.key, body({ externalReference: ref }), k), 409, 'idempotency_in_progress');
    assertError(await create(A.key, body({ externalReference: uniq('other') }), k), 409, 'idempotency_in_progress');
    assert.ok(Date.now() - t0 < 2000, `answered after ${Date.now() - t0} ms`);
    await s.run('COMMIT');
  } finally {
    await s.close();
  }
  const done = await answer;
  assert.equal(done.status, 201, done.text);
  const again = await create(A.key, body({ externalReference: ref }), k);
  assert.equal(again.status, 201, again.text);
  assert.equal(again.headers.get('idempotency-replayed'), 'true');
  assert.equal(again.text, done.text);
  assert.equal(countByRef(ref), 1);
});

test('a request whose own statement outwaits the lock is 503, not in progress, and its key stays free', async () => {
  // The claim and the walk-in's first writes reach the server together;
  // the walk-in then waits for its line's ticket row past the service's
  // 5 s lock wait.  That wait is the request's own (503 unavailable), not
  // another request's claim on the key (409 idempotency_in_progress).
  const k = uniq('idem');
  const ref = uniq('outwait');
  const s = sqlSession();
  let r;
  try {
    await s.run('BEGIN');
    await s.run(`SELECT issued FROM line_tickets WHERE queue_id = '${A.queueId}' FOR UPDATE`);
    r = await create(A.key, body({ externalReference: ref }), k);
  } finally {
    await s.run('ROLLBACK');
    await s.close();
  }
  assertError(r, 503, 'unavailable');
  assert.equal(countByRef(ref), 0);
  assert.equal(Number(sql(`SELECT COUNT(*) FROM idempotency_keys WHERE idem_key = '${k}'`)[0][0]), 0);
  const again = await create(A.key, body({ externalReference: ref }), k);
  assert.equal(again.status, 201, again.text);
  assert.equal(again.headers.get('idempotency-replayed'), null);
  assert.equal(countByRef(ref), 1);
});

test('a transaction whose connection is lost before its commit runs again on a new one', async () => {
  // The walk-in's connection is killed while it waits for its line.
  // Nothing of it committed, so it runs again: one entry, 201.
  const k = uniq('idem');
  const ref = uniq('lost');
  const { s, answer, conn } = await walkInHeld(ref, k);
  try {
    sql(`KILL CONNECTION ${conn}`);
  } finally {
    await s.run('ROLLBACK');
    await s.close();
  }
  const done = await answer;
  assert.equal(done.status, 201, done.text);
  assert.equal(done.headers.get('idempotency-replayed'), null);
  assert.equal(countByRef(ref), 1);
  const again = await create(A.key, body({ externalReference: ref }), k);
  assert.equal(again.headers.get('idempotency-replayed'), 'true');
  assert.equal(again.text, done.text);
});

test('after a lost connection the claim of the key waits for the earlier attempt instead of answering in progress', async () => {
  // The server may still hold the lost attempt's claim when the request
  // runs again on a new connection.  A session of its own queues for
  // the claim's row behind the lost attempt and so holds it past the
  // kill, for as long as the server might take: the run again waits
  // for it (seen waiting), then claims the key and succeeds.  When the
  // run again reaches the row first (the session then loses a deadlock
  // or meets its record), nothing was shown: once more, with a new key.
  let shown = false;
  for (let attempt = 0; attempt < 3 && !shown; attempt++) {
    const k = uniq('idem');
    const ref = uniq('linger');
    const { s, answer, conn } = await walkInHeld(ref, k);
    const s2 = sqlSession({ force: true });
    try {
      await s2.run('SET SESSION TRANSACTION ISOLATION LEVEL READ UNCOMMITTED');
      const [[keyId]] = await s2.run(`SELECT key_id FROM idempotency_keys WHERE idem_key = '${k}'`);
      await s2.run('BEGIN');
      const queued = s2.run(`INSERT INTO idempotency_keys (key_id, idem_key, request_hash, status, body, created_at) VALUES ('${keyId}', '${k}', 'x', 0, NULL, 0)`);
      const claims = () => running('INSERT INTO idempotency_keys').length;
      for (let i = 0; i < 80 && claims() !== 1; i++) await sleep(25);
      assert.equal(claims(), 1, 'the session queues for the claim');
      sql(`KILL CONNECTION ${conn}`);
      await s.run('ROLLBACK');
      await queued;
      const [[held]] = await s2.run(`SELECT COUNT(*) FROM idempotency_keys WHERE idem_key = '${k}' AND request_hash = 'x'`);
      if (held === '1') {
        // The session holds the row; the walk-in's new claim waits for it.
        for (let i = 0; i < 80 && claims() !== 1; i++) await sleep(25);
        assert.equal(claims(), 1, 'the walk-in run once more waits for its claim');
        shown = true;
      }
    } finally {
      await s2.run('ROLLBACK').catch(() => {});
      await s2.close();
      await s.close();
    }
    const done = await answer;
    assert.equal(done.status, 201, done.text);
    assert.equal(done.headers.get('idempotency-replayed'), null);
    assert.equal(countByRef(ref), 1);
  }
  assert.ok(shown, 'the session never held the claim past the kill');
});

test('concurrent different bodies under one key: one runs, the others are refused', async () => {
  const k = uniq('idem');
  const ref = uniq('race2');
  const results = await Promise.all(Array.from({ length: 10 }, (_, i) =>
    create(A.key, body({ externalReference: ref, partySize: i + 1 }), k)));
  const ok = results.filter((r) => r.status === 201);
  assert.equal(ok.length, 1, results.map((r) => `${r.status} ${r.json?.code ?? ''}`).join(', '));
  for (const r of results) {
    if (r.status !== 201) assertError(r, 409, ['idempotency_conflict', 'idempotency_in_progress']);
  }
  assert.equal(countByRef(ref), 1);
});

test('concurrent identical status changes with one key change the entry once', async () => {
  const e = await mustCreate(A.key, body());
  const k = uniq('idem');
  const payload = { status: 'ready', expectedStatus: 'waiting', expectedVersion: 1 };
  const results = await Promise.all(Array.from({ length: 10 }, () =>
    write('PATCH', `/waitlist/entries/${e.id}/status`, A.key, payload, k)));
  const ok = results.filter((r) => r.status === 200);
  assert.ok(ok.length >= 1);
  for (const r of results) {
    if (r.status === 200) assert.equal(r.text, ok[0].text);
    else assertError(r, 409, 'idempotency_in_progress');
  }
  const now = await getEntry(A.key, e.id);
  assert.equal(now.version, 2);
  assert.equal(events(A.tenantId).filter((x) => x.body.resourceId === e.id).length, 2);
});
