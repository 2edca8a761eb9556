// The front door: the health route, and the JSON answers nginx gives for
// paths outside the API and for bodies too large to pass through.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { api, ORIGIN, sleep } from './lib.mjs';

// Every error is {"error", "code", "requestId"} and the header matches.
function assertError(res, status, code) {
  assert.equal(res.status, status, res.text);
  assert.ok(res.json, `not JSON: ${res.text}`);
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
  assert.deepEqual(Object.keys(res.json).sort(), ['code', 'error', 'requestId']);
  assert.equal(res.json.code, code);
  assert.ok(res.json.requestId);
  assert.equal(res.headers.get('x-request-id'), res.json.requestId);
}

test('health answers ok with a request id', async () => {
  const res = await api('GET', '/health');
  assert.equal(res.status, 200, res.text);
  assert.deepEqual(res.json, { status: 'ok' });
  assert.ok(res.headers.get('x-request-id'));
});

test('request ids differ between requests', async () => {
  const a = await api('GET', '/health');
  const b = await api('GET', '/health');
  assert.notEqual(a.headers.get('x-request-id'), b.headers.get('x-request-id'));
});

test('a path outside the API is a JSON 404', async () => {
  assertError(await api('GET', `${ORIGIN}/other`), 404, 'not_found');
});

// Did a worker log the request (every request it answers is a line)?
async function workerLogged(requestId) {
  await sleep(200);
  return readFileSync(join(process.env.WL_VAR, 'log', 'fcgi.log'), 'utf8').includes(`"requestId":"${requestId}"`);
}

test('a body over 1 MiB is refused by nginx as payload_too_large', async () => {
  const res = await api('POST', '/me', { rawBody: Buffer.alloc(2 * 1024 * 1024, 'a') });
  assertError(res, 400, 'payload_too_large');
  assert.equal(await workerLogged(res.json.requestId), false, 'a worker answered it, not nginx');
});

test('a body over 64 KiB is refused by the service as payload_too_large', async () => {
  const res = await api('POST', '/me', { rawBody: JSON.stringify({ pad: 'a'.repeat(100 * 1024) }) });
  assertError(res, 400, 'payload_too_large');
  assert.equal(await workerLogged(res.json.requestId), true, 'no worker answered it');
});
