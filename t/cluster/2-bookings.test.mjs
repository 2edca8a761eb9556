// The booking capacity check across nodes: every booking of a line first
// updates the line's booking_lock column (lib/booking.c), so two nodes
// placing bookings on one line write the same row and one of them fails
// certification and retries its whole transaction, counting again.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  SLOT_MS, api, assertError, at, iso, middayZone, nextSlot, sqlOn, tenant, uniq, write,
} from './util.mjs';

const ZONE = middayZone();
const T = tenant({ capacity: 2, zone: ZONE });

const booking = (ms, over = {}) => ({
  queueId: T.queueId, partySize: 1, fullName: 'Cluster Booking', isBooking: true, scheduledFor: iso(ms), ...over,
});

function activeAt(n, ms) {
  return Number(sqlOn(n, `SELECT COUNT(*) FROM entries WHERE queue_id='${T.queueId}' AND scheduled_for=${ms} AND status IN ('waiting','ready','confirmed')`)[0][0]);
}

test('capacity 2, six concurrent bookings of one slot spread over both nodes: exactly two 201', async () => {
  const first = nextSlot();
  for (let round = 0; round < 8; round += 1) {
    const ms = first + round * SLOT_MS;
    const nodes = [1, 2, 1, 2, 1, 2];
    const results = await Promise.all(nodes.map((n, i) =>
      write(n, 'POST', '/waitlist/entries', T.key, booking(ms, { fullName: `Racer ${round}.${i}` }))));
    const summary = results.map((r, i) => `n${nodes[i]}:${r.status} ${r.json?.code ?? ''}`).join(', ');
    const ok = results.filter((r) => r.status === 201);
    assert.equal(ok.length, 2, `round ${round}: ${summary}`);
    for (const r of results) if (r.status !== 201) assertError(r, 409, 'booking_unavailable');
    for (const n of [1, 2, 3]) assert.equal(activeAt(n, ms), 2, `round ${round}: two bookings on database node ${n}`);
  }
});

test('a place freed on one node is bookable at once on the other, and only once', async () => {
  const ms = nextSlot() + 10 * SLOT_MS;
  const a = await write(1, 'POST', '/waitlist/entries', T.key, booking(ms));
  const b = await write(2, 'POST', '/waitlist/entries', T.key, booking(ms));
  assert.equal(a.status, 201, a.text);
  assert.equal(b.status, 201, b.text);
  assertError(await write(2, 'POST', '/waitlist/entries', T.key, booking(ms)), 409, 'booking_unavailable');
  const c = await write(1, 'POST', `/bookings/${a.json.entry.id}/cancel`, T.key, { expectedStatus: 'confirmed', expectedVersion: 1 });
  assert.equal(c.status, 200, c.text);
  const again = await Promise.all([2, 1, 2, 1].map((n) => write(n, 'POST', '/waitlist/entries', T.key, booking(ms))));
  assert.equal(again.filter((r) => r.status === 201).length, 1, again.map((r) => r.status).join(','));
  const av = await api('GET', at(2, `/waitlist/queues/${T.queueId}/availability`), { key: T.key });
  assert.equal(av.status, 200, av.text);
  assert.equal(av.json.availability.slots.find((s) => s.startsAt === iso(ms))?.remaining, 0);
});

test('reschedules into one slot from both nodes never overbook it', async () => {
  const target = nextSlot() + 12 * SLOT_MS;
  const made = [];
  for (let i = 0; i < 4; i += 1) {
    const r = await write(1 + (i % 2), 'POST', '/waitlist/entries', T.key, booking(target + (i + 1) * SLOT_MS, { fullName: uniq('mover') }));
    assert.equal(r.status, 201, r.text);
    made.push(r.json.entry);
  }
  const results = await Promise.all(made.map((e, i) => write(1 + (i % 2), 'POST', `/bookings/${e.id}/reschedule`, T.key,
    { scheduledFor: iso(target), expectedVersion: e.version })));
  assert.equal(results.filter((r) => r.status === 200).length, 2, results.map((r) => `${r.status} ${r.json?.code ?? ''}`).join(', '));
  for (const r of results) if (r.status !== 200) assertError(r, 409, 'booking_unavailable');
  assert.equal(activeAt(3, target), 2);
});
