// Fault injection on the FastCGI socket itself: records no web server
// would send, written by hand.  Whatever libfcgi makes of them, the
// service keeps answering (GET /health right after), and a worker that
// died is replaced by the master.  The socket is not world-writable: only
// its owner and the web server's group can send such records at all.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync, statSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';
import {
  alive, api, fixture, seed, sleep, stack, uniq,
} from './lib.mjs';
import {
  configuredWorkers, fullPool, masterPid, waitFor, workers,
} from './util-faults.mjs';

const SOCKET = join(process.env.WL_VAR, 'run', 'fcgi.sock');

const BEGIN_REQUEST = 1;
const PARAMS = 4;
const STDIN = 5;

// One FastCGI record (request id 1, no padding).
function record(type, content = Buffer.alloc(0)) {
  const h = Buffer.from([1, type, 0, 1, (content.length >> 8) & 0xff, content.length & 0xff, 0, 0]);
  return Buffer.concat([h, content]);
}

const begin = record(BEGIN_REQUEST, Buffer.from([0, 1, 0, 0, 0, 0, 0, 0])); // responder

// A FastCGI name-value length: one byte below 128, else four.
function len(n) {
  if (n < 128) return Buffer.from([n]);
  const b = Buffer.alloc(4);
  b.writeUInt32BE((n | 0x80000000) >>> 0);
  return b;
}

// Writes bytes to the socket; resolves with what came back once the worker
// closes the connection (or after ms).
function send(bytes, ms = 3000) {
  return new Promise((resolve) => {
    const s = connect(SOCKET);
    const chunks = [];
    const timer = setTimeout(() => { s.destroy(); resolve({ closed: false, reply: Buffer.concat(chunks) }); }, ms);
    s.on('connect', () => s.write(bytes));
    s.on('data', (d) => chunks.push(d));
    s.on('error', () => {});
    s.on('close', () => { clearTimeout(timer); resolve({ closed: true, reply: Buffer.concat(chunks) }); });
  });
}

async function stillServing(what) {
  for (let i = 0; i < 10; i++) {
    const res = await api('GET', '/health');
    assert.equal(res.status, 200, `${what}: GET /health ${i} right after: ${res.status} ${res.text}`);
    assert.deepEqual(res.json, { status: 'ok' });
  }
}

const hostile = {
  'a name length of 0x7FFFFFFE': Buffer.concat([len(0x7ffffffe), len(1), Buffer.alloc(64, 0x41)]),
  'a value length of 0x7FFFFFFE': Buffer.concat([len(13), len(0x7ffffffe), Buffer.from('HTTP_X_HUGE_1'), Buffer.alloc(64, 0x42)]),
  'name and value lengths of 0x7FFFFFFF (CVE-2025-23016)': Buffer.concat([len(0x7fffffff), len(0x7fffffff), Buffer.alloc(64, 0x43)]),
  'a length running past the end of the record': Buffer.concat([len(200), len(3), Buffer.from('SHORT')]),
};

for (const [what, pairs] of Object.entries(hostile)) {
  test(`a PARAMS record with ${what} leaves the service answering`, async (t) => {
    const master = masterPid();
    const before = await fullPool(master);
    const { closed, reply } = await send(Buffer.concat([begin, record(PARAMS, pairs), record(PARAMS), record(STDIN)]));
    await stillServing(what);
    // Give the master a moment to notice a death, then expect a full pool.
    await sleep(200);
    const after = await fullPool(master);
    const died = before.filter((p) => !after.includes(p));
    for (const p of died) assert.ok(!alive(p));
    assert.ok(died.length <= 1, `${died.length} workers died of one record`);
    assert.equal(masterPid(), master);
    t.diagnostic(`connection ${closed ? 'closed' : 'held open'} with ${reply.length} bytes back; `
      + `${died.length ? `worker ${died[0]} died and was replaced` : 'no worker died'}`);
  });
}

test('a request cut off inside a PARAMS record, and garbage, leave the service answering', async () => {
  const master = masterPid();
  await fullPool(master);
  const cut = Buffer.concat([begin, record(PARAMS, Buffer.concat([len(14), len(3), Buffer.from('REQUEST_METHOD'), Buffer.from('GET')])).subarray(0, 12)]);
  const garbage = Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
  const badVersion = Buffer.from([9, BEGIN_REQUEST, 0, 1, 0, 8, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
  await Promise.all([send(cut, 500), send(garbage, 1500), send(badVersion, 1500)]);
  await stillServing('after cut and garbage records');
  await fullPool(master);
  assert.equal(masterPid(), master);
});

test('a well-formed request straight on the socket is answered', async () => {
  // The control for the tests above: the hand-made records are right.
  const p = (n, v) => Buffer.concat([len(Buffer.byteLength(n)), len(Buffer.byteLength(v)), Buffer.from(n), Buffer.from(v)]);
  const params = Buffer.concat([p('REQUEST_METHOD', 'GET'), p('DOCUMENT_URI', '/v1/external/health'), p('QUERY_STRING', '')]);
  const { closed, reply } = await send(Buffer.concat([begin, record(PARAMS, params), record(PARAMS), record(STDIN)]));
  assert.ok(closed);
  const text = reply.toString('latin1');
  assert.match(text, /Status: 200 OK\r\n/);
  assert.match(text, /\{"status":"ok"\}/);
});

test('a body that ends before its CONTENT_LENGTH is refused and stores nothing under its Idempotency-Key', async () => {
  // What a web server that streams bodies (Apache) passes on of a client
  // gone mid-upload.  The client's retry with the same key and the whole
  // body is then the first request, not a conflict with a stored 400.
  const refs = seed(fixture());
  const key = uniq('cut');
  const body = JSON.stringify({ queueId: refs.q1, fullName: 'Ada Cut', partySize: 2, notes: 'n'.repeat(200) });
  const p = (n, v) => Buffer.concat([len(Buffer.byteLength(n)), len(Buffer.byteLength(v)), Buffer.from(n), Buffer.from(v)]);
  const params = Buffer.concat([
    p('REQUEST_METHOD', 'POST'), p('REQUEST_URI', '/v1/external/waitlist/entries'), p('QUERY_STRING', ''),
    p('CONTENT_TYPE', 'application/json'), p('CONTENT_LENGTH', String(Buffer.byteLength(body))),
    p('HTTP_AUTHORIZATION', `Bearer ${refs.k1}`), p('HTTP_IDEMPOTENCY_KEY', key),
  ]);
  const { closed, reply } = await send(Buffer.concat([begin, record(PARAMS, params), record(PARAMS),
    record(STDIN, Buffer.from(body.slice(0, 100))), record(STDIN)]));
  assert.ok(closed);
  const text = reply.toString('latin1');
  assert.match(text, /Status: 400 /);
  assert.match(text, /"code":"invalid_request"/);
  assert.match(text, /Content-Length/);
  const whole = await api('POST', '/waitlist/entries', { key: refs.k1, idempotencyKey: key, rawBody: body });
  assert.equal(whole.status, 201, whole.text);
  assert.equal(whole.json.entry.fullName, 'Ada Cut');
});

test('a reload does not drop connections the workers have taken before their requests arrive', async () => {
  // Each worker takes a connection and waits for its request; then SIGHUP
  // stops them all.  A stop must let the request in hand be answered,
  // even one not yet arrived (libfcgi waits up to 2 s for it).
  const master = masterPid();
  const before = await fullPool(master);
  const n = configuredWorkers();
  const p = (k, v) => Buffer.concat([len(Buffer.byteLength(k)), len(Buffer.byteLength(v)), Buffer.from(k), Buffer.from(v)]);
  const params = Buffer.concat([p('REQUEST_METHOD', 'GET'), p('DOCUMENT_URI', '/v1/external/health'), p('QUERY_STRING', '')]);
  const request = Buffer.concat([begin, record(PARAMS, params), record(PARAMS), record(STDIN)]);
  const conns = [];
  for (let i = 0; i < n; i++) {
    conns.push(await new Promise((resolve) => {
      const s = connect(SOCKET);
      const c = { s, chunks: [], closed: new Promise((done) => s.on('close', done)) };
      s.on('data', (d) => c.chunks.push(d));
      s.on('error', () => {});
      s.on('connect', () => resolve(c));
    }));
  }
  await sleep(300); // every worker has taken one and waits for its request
  process.kill(master, 'SIGHUP');
  await sleep(300); // the stop has reached them
  for (const c of conns) c.s.write(request);
  await Promise.all(conns.map((c) => Promise.race([c.closed, sleep(5000)])));
  for (const [i, c] of conns.entries()) {
    assert.match(Buffer.concat(c.chunks).toString('latin1'), /Status: 200 OK\r\n/, `connection ${i} got no answer`);
  }
  await waitFor('every worker replaced after SIGHUP', 10000, () => {
    const w = workers(master);
    return w.length === n && w.every((q) => !before.includes(q));
  });
  assert.equal(masterPid(), master);
});

test('a second master on the socket of a running one refuses to start, and takes nothing over', async () => {
  const master = masterPid();
  await fullPool(master);
  const bin = join(process.env.WL_BIN || process.env.WL_REPO, 'fcgi', 'waitlist-fcgi');
  // Its stderr goes to a file: workers it might start must not hold a
  // pipe of this process open.
  const errFile = join(process.env.WL_VAR, 'second-master.err');
  const fd = openSync(errFile, 'w');
  const second = spawn(bin, ['--config', join(process.env.WL_VAR, 'waitlist.conf')], { stdio: ['ignore', 'ignore', fd] });
  closeSync(fd);
  const timer = setTimeout(() => {
    for (const p of workers(second.pid)) process.kill(p, 'SIGKILL');
    second.kill('SIGKILL');
  }, 5000);
  const code = await new Promise((resolve) => second.on('exit', (c, sig) => resolve(sig || c)));
  clearTimeout(timer);
  const stderr = readFileSync(errFile, 'utf8');
  if (code !== 1) stack('fcgi-restart'); // it took the socket over
  assert.equal(code, 1, `the second master: ${stderr}`);
  assert.match(stderr, /cannot listen on .*fcgi\.sock: Address already in use/);
  await stillServing('after a second master');
  assert.equal(masterPid(), master);
});

test('the workers of a master killed with SIGKILL stop too', { timeout: 60000 }, async () => {
  // Left alone they would serve on, outside any supervision, on a socket
  // the next master replaces.
  const master = masterPid();
  const before = await fullPool(master);
  try {
    process.kill(master, 'SIGKILL');
    await waitFor('the orphaned workers to stop', 10000, () => before.every((p) => !alive(p)));
  } finally {
    for (const p of before) if (alive(p)) process.kill(p, 'SIGKILL');
    stack('fcgi-start');
  }
  await fullPool();
  await stillServing('after a new master');
});

test('the FastCGI socket is not world-writable (0660)', () => {
  const st = statSync(SOCKET);
  assert.ok(st.isSocket());
  assert.equal(st.mode & 0o777, 0o660, `mode ${(st.mode & 0o777).toString(8)}`);
  assert.equal(st.mode & 0o007, 0, 'others may connect');
  assert.ok(workers().length > 0);
});
