// Helpers shared by the event feed tests (events.test.mjs and
// feed-concurrency.test.mjs).  Built on lib.mjs; Node built-ins only.

import assert from 'node:assert/strict';
import { api, sql, uniq } from './lib.mjs';

export { ALL_SCOPES, HIGH_LIMITS, TS_RE, assertError } from './lib.mjs';

export const EVENT_TYPES = [
  'waitlist.entry.created', 'waitlist.entry.updated',
  'waitlist.entry.status_changed', 'booking.created',
  'booking.rescheduled', 'booking.cancelled',
];

// Exact key set of an Event (DECISIONS "Events and the feed").
export const EVENT_KEYS = [
  'businessId', 'data', 'id', 'occurredAt', 'queueId', 'resourceId',
  'resourceVersion', 'schemaVersion', 'sequence', 'tenantId', 'type',
].sort();

// Exact key set of data per type.
export const DATA_KEYS = {
  'waitlist.entry.created': ['entryId', 'isBooking', 'status'],
  'waitlist.entry.updated': ['changedFields', 'entryId'],
  'waitlist.entry.status_changed': ['entryId', 'previousStatus', 'status'],
  'booking.created': ['bookingId', 'entryId', 'scheduledFor'],
  'booking.rescheduled': ['bookingId', 'entryId', 'previousScheduledFor', 'scheduledFor'],
  'booking.cancelled': ['bookingId', 'entryId'],
};

// A time zone in which the local time now is around midday, so that a
// booking 20-35 minutes ahead stays on the same local business day:
// "UTC" when the UTC hour is 02..19, else a whole-hour Etc/GMT zone.  The
// offset is whole hours, so the 15-minute slot grid is the UTC grid.
export function middayZone(now = new Date()) {
  const h = now.getUTCHours();
  if (h >= 2 && h < 20) return 'UTC';
  let offset = 12 - h; // hours east of UTC
  if (offset < -12) offset += 24;
  if (offset > 14) offset -= 24;
  // Etc/GMT signs are inverted: Etc/GMT-5 is UTC+5.
  return offset >= 0 ? `Etc/GMT-${offset}` : `Etc/GMT+${-offset}`;
}

// The next 15-minute boundary at least minMinutes ahead, plus extraSlots
// slots, as YYYY-MM-DDTHH:MM:SS.000Z.
export function slotAhead(minMinutes = 20, extraSlots = 0) {
  const q = 15 * 60000;
  const t = Math.ceil((Date.now() + minMinutes * 60000) / q) * q + extraSlots * q;
  return new Date(t).toISOString();
}

// A queue definition for fixtures: open all day, walk-ins and bookings on.
export function queueDef(ref, name, { capacity = 5 } = {}) {
  const allDay = { enabled: true, start: '00:00', end: '24:00' };
  return {
    ref, name, timeZone: null, services: [], customFields: [],
    workingHours: { ...allDay },
    availability: {
      walkInsEnabled: true, walkInsPaused: false,
      bookingsEnabled: true, bookingsPaused: false,
      bookingSlotMinutes: 15, bookingHours: { ...allDay },
      bookingCapacity: capacity, serviceRequired: false,
    },
  };
}

export function businessDef(ref, queues, timeZone = middayZone()) {
  return {
    ref, name: uniq(`biz ${ref}`), slug: uniq('slug'), timeZone,
    services: [], customFields: [], queues,
  };
}

export function keyDef(ref, scopes, { businesses = [], queues = [] } = {}) {
  return { ref, scopes, businesses, queues, expiresInDays: 365, integrationType: 'api' };
}

// Builds a query string; commas in values are kept literal (types lists).
export function query(params = {}) {
  const parts = [];
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null) continue;
    parts.push(`${encodeURIComponent(k)}=${encodeURIComponent(String(v)).replace(/%2C/gi, ',')}`);
  }
  return parts.length ? `?${parts.join('&')}` : '';
}

// GET /events with params; checks the envelope of a 200.
export async function events(key, params = {}) {
  const res = await api('GET', `/events${query(params)}`, { key });
  if (res.status === 200) checkEnvelope(res);
  return res;
}

export function checkEnvelope(res) {
  assert.ok(res.json, `not JSON: ${res.text}`);
  assert.deepEqual(Object.keys(res.json).sort(), ['events', 'hasMore', 'nextCursor'], res.text);
  assert.ok(Array.isArray(res.json.events));
  assert.equal(typeof res.json.nextCursor, 'string', 'nextCursor must always be a string');
  assert.ok(res.json.nextCursor.length > 0 && res.json.nextCursor.length <= 1024);
  assert.match(res.json.nextCursor, /^[A-Za-z0-9_-]+$/, 'cursor is base64url');
  assert.equal(typeof res.json.hasMore, 'boolean');
}

// Reads pages (same params, following nextCursor) until hasMore is false.
// Returns {events, cursor, pages, raw} where raw holds each event's text.
export async function readAll(key, params = {}, cursor = undefined) {
  const out = [];
  const raw = [];
  let pages = 0;
  for (;;) {
    const res = await events(key, { ...params, cursor });
    assert.equal(res.status, 200, res.text);
    pages += 1;
    out.push(...res.json.events);
    raw.push(...rawEvents(res.text));
    cursor = res.json.nextCursor;
    if (!res.json.hasMore) break;
    assert.ok(pages < 10000, 'runaway paging');
  }
  return { events: out, cursor, pages, raw };
}

// The raw text of each element of the top-level "events" array of a JSON
// response, exactly as the server wrote it.
export function rawEvents(text) {
  let i = 0;
  const ws = () => { while (i < text.length && /\s/.test(text[i])) i += 1; };
  const skipString = () => {
    assert.equal(text[i], '"');
    i += 1;
    while (text[i] !== '"') {
      if (text[i] === '\\') i += 1;
      i += 1;
      if (i >= text.length) throw new Error('unterminated string');
    }
    i += 1;
  };
  const skipValue = () => {
    ws();
    const c = text[i];
    if (c === '"') return skipString();
    if (c === '{' || c === '[') {
      const close = c === '{' ? '}' : ']';
      i += 1;
      ws();
      if (text[i] === close) { i += 1; return undefined; }
      for (;;) {
        if (c === '{') { ws(); skipString(); ws(); assert.equal(text[i], ':'); i += 1; }
        skipValue();
        ws();
        if (text[i] === ',') { i += 1; continue; }
        assert.equal(text[i], close);
        i += 1;
        return undefined;
      }
    }
    while (i < text.length && /[^,\]}\s]/.test(text[i])) i += 1;
    return undefined;
  };
  ws();
  assert.equal(text[i], '{');
  i += 1;
  for (;;) {
    ws();
    const ks = i;
    skipString();
    const name = JSON.parse(text.slice(ks, i));
    ws();
    assert.equal(text[i], ':');
    i += 1;
    ws();
    if (name === 'events') {
      assert.equal(text[i], '[');
      i += 1;
      const items = [];
      ws();
      if (text[i] === ']') return items;
      for (;;) {
        ws();
        const s = i;
        skipValue();
        items.push(text.slice(s, i));
        ws();
        if (text[i] === ',') { i += 1; continue; }
        assert.equal(text[i], ']');
        return items;
      }
    }
    skipValue();
    ws();
    if (text[i] !== ',') throw new Error('no "events" key in response');
    i += 1;
  }
}

// The stored bodies of a tenant's events, seq -> exact text.
export function storedBodies(tenantId, where = '') {
  const rows = sql(`SELECT seq, HEX(body) FROM events WHERE tenant_id = '${tenantId}' ${where} ORDER BY seq`);
  return new Map(rows.map(([seq, hex]) => [Number(seq), Buffer.from(hex, 'hex').toString('utf8')]));
}

export function storedSeqs(tenantId) {
  return sql(`SELECT seq FROM events WHERE tenant_id = '${tenantId}' ORDER BY seq`).map((r) => Number(r[0]));
}

export function eventCount(tenantId) {
  return Number(sql(`SELECT COUNT(*) FROM events WHERE tenant_id = '${tenantId}'`)[0][0]);
}

// --- entry operations (each with its own Idempotency-Key) ---

export async function createWalkIn(key, queueId, extra = {}) {
  const res = await api('POST', '/waitlist/entries', {
    key, idempotencyKey: uniq('k'),
    body: { queueId, fullName: uniq('Guest'), ...extra },
  });
  assert.ok(res.status === 201 || res.status === 200, `create walk-in: ${res.status} ${res.text}`);
  return res.json.entry;
}

export async function createBooking(key, queueId, scheduledFor, extra = {}) {
  const res = await api('POST', '/waitlist/entries', {
    key, idempotencyKey: uniq('k'),
    body: { queueId, fullName: uniq('Booker'), isBooking: true, scheduledFor, ...extra },
  });
  assert.ok(res.status === 201 || res.status === 200, `create booking: ${res.status} ${res.text}`);
  return res.json.entry;
}

export async function setStatus(key, entry, status) {
  const res = await api('PATCH', `/waitlist/entries/${entry.id}/status`, {
    key, idempotencyKey: uniq('k'),
    body: { status, expectedStatus: entry.status, expectedVersion: entry.version },
  });
  assert.equal(res.status, 200, `status ${entry.status}->${status}: ${res.text}`);
  return res.json.entry;
}

export async function editEntry(key, entry, fields) {
  const res = await api('PATCH', `/waitlist/entries/${entry.id}`, {
    key, idempotencyKey: uniq('k'),
    body: { expectedVersion: entry.version, ...fields },
  });
  assert.equal(res.status, 200, `edit: ${res.text}`);
  return res.json.entry;
}
