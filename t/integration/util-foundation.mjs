// Helpers shared by me, auth, pipeline, discovery and resilience tests.
// Built on lib.mjs; nothing here talks to the stack except through it (or
// through fetch for requests api() cannot shape).

import assert from 'node:assert/strict';
import { BASE, api } from './lib.mjs';

export { ALL_SCOPES, assertError, createKey, tenantSet } from './lib.mjs';

export const DEFAULT_LIMITS = {
  readsPerMinute: 600,
  writesPerMinute: 120,
  tenantReadsPerMinute: 3000,
  tenantWritesPerMinute: 600,
  activeKeys: 10,
  webhookSubscriptions: 10,
  defaultKeyExpiryDays: 90,
  maximumKeyExpiryDays: 365,
};

export const DAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'];

// UTC, YYYY-MM-DDTHH:MM:SS.mmmZ (DECISIONS: Identifiers and formats).
export const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

// A 200 JSON answer with an X-Request-Id header; returns the body.
export function assertOk(res, status = 200) {
  assert.equal(res.status, status, res.text);
  assert.ok(res.json, `not JSON: ${res.text}`);
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
  assert.ok(res.headers.get('x-request-id'), 'X-Request-Id header missing');
  return res.json;
}

// Exactly these keys (order ignored).
export function assertKeys(obj, keys, what = 'object') {
  assert.ok(obj && typeof obj === 'object' && !Array.isArray(obj), `${what} is not an object`);
  assert.deepEqual(Object.keys(obj).sort(), [...keys].sort(), `${what} keys`);
}

// A request api() cannot make: any headers (none added), body as given
// (a Uint8Array body goes without Content-Type).
export async function rawRequest(method, path, { headers = {}, body } = {}) {
  const url = /^https?:\/\//.test(path) ? path : BASE + path;
  const res = await fetch(url, { method, headers, body });
  const text = await res.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: res.status, headers: res.headers, text, json };
}

// Follows nextCursor from path (which may carry a query) until it is null;
// returns the pages (the JSON bodies).  between(pageIndex) runs after each
// page but the last.
export async function allPages(path, key, listName, { between, maxPages = 50 } = {}) {
  const pages = [];
  let url = path;
  for (let i = 0; i < maxPages; i++) {
    const body = assertOk(await api('GET', url, { key }));
    assert.ok(Array.isArray(body[listName]), `${listName} is not an array`);
    assert.ok('nextCursor' in body, 'nextCursor missing');
    pages.push(body);
    if (body.nextCursor === null) return pages;
    assert.equal(typeof body.nextCursor, 'string');
    if (between) await between(i);
    const sep = path.includes('?') ? '&' : '?';
    url = `${path}${sep}cursor=${encodeURIComponent(body.nextCursor)}`;
  }
  assert.fail(`no last page after ${maxPages} pages of ${path}`);
}

// Parses an Allow header into a sorted list of methods.
export function allowOf(res) {
  return (res.headers.get('allow') ?? '').split(',').map((s) => s.trim()).filter(Boolean).sort();
}
