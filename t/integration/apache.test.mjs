// Apache in front of the stack: a real Debian apache2 runs the shipped
// apache/waitlist.conf (mod_proxy_fcgi, TLS, request ids, JSON errors),
// changed only where a test machine must differ (ports, certificate, log
// directory, the socket), and the API behaves through it as through
// nginx: keys, Idempotency-Key, bodies (chunked too), query strings and
// the request id all reach the service.

import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { after, before, test } from 'node:test';
import { BASE, api, fixture, seed, sleep, stack, uniq } from './lib.mjs';

const VAR = process.env.WL_VAR;
const REPO = process.env.WL_REPO;
const APACHE = process.env.APACHE2 || '/usr/sbin/apache2';
const MODULES = '/usr/lib/apache2/modules';
const DIR = join(VAR, 'apache');
// Apache's logs go with the stack's, for t/ops/log-secrets.sh.
const LOGS = join(VAR, 'log');
// The test's certificate is self-signed.
process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';

let httpd = null;
let httpsPort;
let httpPort;
let base;
const restoreModes = [];

function listening(port) {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => { s.destroy(); resolve(true); });
    s.once('error', () => resolve(false));
  });
}

async function freePort() {
  for (let i = 0; i < 50; i += 1) {
    const port = 19900 + Math.floor(Math.random() * 90);
    if (port !== httpsPort && !(await listening(port))) return port;
  }
  throw new Error('no free port');
}

function run(cmd, args) {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  if (r.error) throw r.error;
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${r.status}:\n${r.stdout}${r.stderr}`);
  return r.stdout + r.stderr;
}

function fcgiSocket() {
  const conf = readFileSync(join(VAR, 'waitlist.conf'), 'utf8');
  const m = conf.match(/^fcgi_socket\s*=\s*(\S+)/m);
  assert.ok(m, 'no fcgi_socket in the stack config');
  return m[1];
}

function accessLog() {
  return readFileSync(join(LOGS, 'apache-waitlist-access.log'), 'utf8');
}

before(async () => {
  assert.ok(existsSync(APACHE), `${APACHE} is missing: script/bootstrap installs apache2`);
  mkdirSync(DIR, { recursive: true });
  httpsPort = await freePort();
  httpPort = await freePort();
  base = `https://127.0.0.1:${httpsPort}/v1/external`;
  run('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes',
    '-days', '2', '-subj', '/CN=localhost',
    '-keyout', join(DIR, 'key.pem'), '-out', join(DIR, 'cert.pem'),
  ]);

  const sock = fcgiSocket();
  const site = readFileSync(join(REPO, 'apache', 'waitlist.conf'), 'utf8')
    .replaceAll('<VirtualHost *:443>', `<VirtualHost 127.0.0.1:${httpsPort}>`)
    .replaceAll('<VirtualHost *:80>', `<VirtualHost 127.0.0.1:${httpPort}>`)
    .replaceAll('/etc/ssl/certs/api.example.org.pem', join(DIR, 'cert.pem'))
    .replaceAll('/etc/ssl/private/api.example.org.key', join(DIR, 'key.pem'))
    .replaceAll('/var/log/apache2/', `${LOGS}/apache-`)
    .replaceAll('unix:/run/waitlist/fcgi.sock|', `unix:${sock}|`);
  for (const placeholder of ['*:443', '*:80', '/etc/ssl/', '/var/log/', '/run/waitlist/']) {
    assert.ok(!site.includes(placeholder), `${placeholder} left in the site config`);
  }
  writeFileSync(join(DIR, 'site.conf'), site);

  // Root: Apache will not serve as root, so its children run as www-data
  // with group root, which may use the stack's socket (0660, root's) as
  // www-data in group waitlist does in production.  Other users: Apache
  // keeps the user that started it.
  let identity = '';
  if (process.getuid() === 0) {
    identity = 'User www-data\nGroup root\n';
    for (let d = sock.replace(/\/[^/]*$/, ''); d.startsWith(VAR); d = d.replace(/\/[^/]*$/, '')) {
      const mode = statSync(d).mode & 0o7777;
      restoreModes.push([d, mode]);
      chmodSync(d, mode | 0o010);
    }
  }
  const modules = [
    'mpm_event', 'authz_core', 'alias', 'env', 'headers', 'unique_id',
    'proxy', 'proxy_fcgi', 'socache_shmcb', 'ssl',
  ].map((m) => `LoadModule ${m}_module ${MODULES}/mod_${m}.so`).join('\n');
  writeFileSync(join(DIR, 'httpd.conf'), `
ServerRoot ${DIR}
ServerName localhost
PidFile ${DIR}/httpd.pid
DefaultRuntimeDir ${DIR}
ErrorLog ${LOGS}/apache-error.log
LogLevel warn
DocumentRoot ${DIR}/htdocs
Listen 127.0.0.1:${httpsPort}
Listen 127.0.0.1:${httpPort}
${identity}${modules}
SSLSessionCache shmcb:${DIR}/ssl_scache(512000)
Include ${DIR}/site.conf
`);
  // The server's own DocumentRoot holds a page, as Debian's does, and an
  // ACME challenge, which stays reachable for a certificate's renewal.
  mkdirSync(join(DIR, 'htdocs', '.well-known', 'acme-challenge'), { recursive: true });
  writeFileSync(join(DIR, 'htdocs', 'index.html'), '<html>It works!</html>\n');
  writeFileSync(join(DIR, 'htdocs', '.well-known', 'acme-challenge', 'token1'), 'token1.thumb\n');
  run(APACHE, ['-f', join(DIR, 'httpd.conf'), '-t']);

  httpd = spawn(APACHE, ['-f', join(DIR, 'httpd.conf'), '-DFOREGROUND'], { stdio: 'ignore' });
  for (let i = 0; i < 100 && !(await listening(httpsPort)); i += 1) {
    if (httpd.exitCode !== null) break;
    await sleep(100);
  }
  if (!(await listening(httpsPort))) {
    const log = existsSync(join(LOGS, 'apache-error.log')) ? readFileSync(join(LOGS, 'apache-error.log'), 'utf8') : '';
    throw new Error(`apache2 did not start:\n${log}`);
  }
});

after(async () => {
  if (httpd && httpd.exitCode === null) {
    const exited = new Promise((resolve) => httpd.once('exit', resolve));
    httpd.kill('SIGTERM');
    let timer;
    const late = new Promise((resolve) => { timer = setTimeout(resolve, 10000, 'late'); });
    if (await Promise.race([exited, late]) === 'late') httpd.kill('SIGKILL');
    clearTimeout(timer);
  }
  for (const [d, mode] of restoreModes) chmodSync(d, mode);
});

test('GET /health through Apache: 200 with HSTS and the request id Apache made', async () => {
  const res = await api('GET', `${base}/health`);
  assert.equal(res.status, 200, res.text);
  assert.equal(res.headers.get('strict-transport-security'), 'max-age=63072000');
  const rid = res.headers.get('x-request-id');
  // mod_unique_id's UNIQUE_ID, used by the service as its request id and
  // logged by both.
  assert.match(rid, /^[A-Za-z0-9_-]{20,}$/);
  await sleep(200);
  assert.ok(accessLog().includes(rid), `${rid} is not in Apache's access log`);
  const service = readFileSync(join(LOGS, 'fcgi.log'), 'utf8');
  assert.ok(service.includes(`"requestId":"${rid}"`), `${rid} is not in the service's log`);
});

test('GET /me without a key is 401 missing_api_key', async () => {
  const res = await api('GET', `${base}/me`);
  assert.equal(res.status, 401, res.text);
  assert.equal(res.json.code, 'missing_api_key');
  assert.equal(res.json.requestId, res.headers.get('x-request-id'));
});

test('GET /me with a key: the Authorization header reaches the service', async () => {
  const refs = seed(fixture());
  const res = await api('GET', `${base}/me`, { key: refs.k1 });
  assert.equal(res.status, 200, res.text);
  assert.equal(res.json.tenant.id, refs.t1);
  const bad = await api('GET', `${base}/me`, { key: `${refs.k1}x` });
  assert.equal(bad.status, 401, bad.text);
});

test('POST /waitlist/entries through Apache, then GET it, list it and replay it', async () => {
  const refs = seed(fixture());
  const ref = uniq('ref');
  const body = { queueId: refs.q1, fullName: uniq('SECRET-GUEST-Apache'), partySize: 2, externalReference: ref };
  const idem = uniq('idem');
  const created = await api('POST', `${base}/waitlist/entries`, { key: refs.k1, body, idempotencyKey: idem });
  assert.equal(created.status, 201, created.text);
  const entry = created.json.entry;
  assert.equal(entry.fullName, body.fullName);
  assert.equal(entry.partySize, 2);

  const got = await api('GET', `${base}/waitlist/entries/${entry.id}`, { key: refs.k1 });
  assert.equal(got.status, 200, got.text);
  assert.deepEqual(got.json.entry, entry);

  // The query string reaches the service; the path is matched without it.
  const list = await api('GET', `${base}/waitlist/entries?externalReference=${ref}&limit=1`, { key: refs.k1 });
  assert.equal(list.status, 200, list.text);
  assert.deepEqual(list.json.entries.map((e) => e.id), [entry.id]);

  // Idempotency-Key reaches the service: the same request replays.
  const again = await api('POST', `${base}/waitlist/entries`, { key: refs.k1, body, idempotencyKey: idem });
  assert.equal(again.status, 201, again.text);
  assert.equal(again.headers.get('idempotency-replayed'), 'true');
  assert.equal(again.json.entry.id, entry.id);
});

test('a chunked request body reaches the service with its length', async () => {
  const refs = seed(fixture());
  const body = JSON.stringify({ queueId: refs.q1, fullName: uniq('SECRET-GUEST-Chunked') });
  const stream = new ReadableStream({
    start(c) {
      c.enqueue(new TextEncoder().encode(body.slice(0, 10)));
      c.enqueue(new TextEncoder().encode(body.slice(10)));
      c.close();
    },
  });
  const res = await fetch(`${base}/waitlist/entries`, {
    method: 'POST',
    duplex: 'half',
    body: stream,
    headers: {
      authorization: `Bearer ${refs.k1}`,
      'content-type': 'application/json',
      'idempotency-key': uniq('idem'),
    },
  });
  const text = await res.text();
  assert.equal(res.status, 201, text);
  assert.equal(JSON.parse(text).entry.queueId, refs.q1);
});

test('a body over 64 KiB is refused with the service\'s JSON 400', async () => {
  const refs = seed(fixture());
  const res = await api('POST', `${base}/waitlist/entries`, {
    key: refs.k1, idempotencyKey: uniq('idem'), rawBody: JSON.stringify({ notes: 'x'.repeat(100 * 1024) }),
  });
  assert.equal(res.status, 400, res.text);
  assert.equal(res.json.code, 'payload_too_large');
});

test('Apache\'s own answers are JSON errors with the request id', async () => {
  for (const path of ['', '/../../nothing-here', '/../', '/../../index.html', '/../../', '/../../.well-known/other']) {
    const res = await api('GET', `${base}${path}`);
    assert.equal(res.status, 404, `${path}: ${res.text}`);
    assert.equal(res.headers.get('content-type'), 'application/json');
    assert.equal(res.json.code, 'not_found');
    assert.equal(res.json.requestId, res.headers.get('x-request-id'));
    assert.equal(res.headers.get('cache-control'), 'no-store');
    assert.equal(res.headers.get('strict-transport-security'), 'max-age=63072000');
  }
});

test('an ACME challenge under the server\'s DocumentRoot is still served', async () => {
  const res = await fetch(`https://127.0.0.1:${httpsPort}/.well-known/acme-challenge/token1`);
  assert.equal(res.status, 200);
  assert.equal(await res.text(), 'token1.thumb\n');
});

test('a request Apache cannot parse is the JSON 400 invalid_request (without a request id)', async () => {
  for (const raw of ['GET /v1/external/me HTTP/1.1\r\n\r\n', 'GET /v1/external/me HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n']) {
    const text = await new Promise((resolve, reject) => {
      const sock = tlsConnect({ host: '127.0.0.1', port: httpsPort, rejectUnauthorized: false }, () => sock.write(raw));
      let out = '';
      sock.setEncoding('latin1');
      sock.on('data', (d) => { out += d; });
      sock.on('error', reject);
      sock.on('end', () => resolve(out));
    });
    const [head, body] = text.split('\r\n\r\n');
    const what = JSON.stringify(raw);
    assert.match(head, /^HTTP\/1\.1 400 /, `${what}: ${head}`);
    assert.match(head, /\r\ncontent-type: application\/json\r\n/i, `${what}: ${head}`);
    // Apache makes no request id for a request it could not read
    // (mod_unique_id never ran): the envelope is there, the id is empty.
    const json = JSON.parse(body);
    assert.deepEqual(Object.keys(json).sort(), ['code', 'error', 'requestId'], body);
    assert.equal(json.code, 'invalid_request', body);
  }
});

test('a request line too long or an unknown method is still the JSON envelope', async () => {
  const long = await api('GET', `${base}/me?x=${'a'.repeat(9000)}`, { noValidate: true });
  assert.equal(long.status, 414, long.text.slice(0, 200));
  assert.equal(long.headers.get('content-type'), 'application/json');
  assert.equal(long.json.code, 'invalid_request');
  // (Refused before mod_unique_id runs, as a request it cannot parse.)
  assert.deepEqual(Object.keys(long.json).sort(), ['code', 'error', 'requestId']);
  // (An unknown method reaches the service, whose 405 this is.)
  const odd = await api('FROB', `${base}/me`, { noValidate: true });
  assert.ok([400, 405, 501].includes(odd.status), `${odd.status}: ${odd.text.slice(0, 200)}`);
  assert.equal(odd.headers.get('content-type'), 'application/json', odd.text.slice(0, 200));
  assert.deepEqual(Object.keys(odd.json).sort(), ['code', 'error', 'requestId']);
});

test('plain HTTP is redirected to HTTPS', async () => {
  const res = await fetch(`http://127.0.0.1:${httpPort}/v1/external/me?x=1`, { redirect: 'manual' });
  assert.equal(res.status, 301);
  assert.equal(res.headers.get('location'), 'https://api.example.org/v1/external/me?x=1');
});

test('with the workers down Apache answers 503 unavailable as JSON', async () => {
  stack('fcgi-stop');
  try {
    const res = await api('GET', `${base}/health`, { noValidate: true });
    assert.equal(res.status, 503, res.text);
    assert.equal(res.headers.get('content-type'), 'application/json');
    assert.equal(res.json.code, 'unavailable');
    assert.equal(res.json.requestId, res.headers.get('x-request-id'));
    assert.equal(res.headers.get('cache-control'), 'no-store');
  } finally {
    stack('fcgi-start');
  }
  const res = await api('GET', `${base}/health`);
  assert.equal(res.status, 200, res.text);
});

test('X-Test-Now from outside does not reach the service', async (t) => {
  const refs = seed(fixture());
  const pinned = new Date(Date.now() + 2 * 86400e3);
  pinned.setUTCMilliseconds(0);
  const create = (url) => api('POST', `${url}/waitlist/entries`, {
    key: refs.k1, idempotencyKey: uniq('idem'), headers: { 'x-test-now': pinned.toISOString() },
    body: { queueId: refs.q1, fullName: uniq('SECRET-GUEST-Clock') },
  });
  // Through the development nginx the header pins the clock when the
  // stack allows it ([server] test_clock); without that there is nothing
  // to show.
  const direct = await create(BASE);
  assert.equal(direct.status, 201, direct.text);
  if (direct.json.entry.createdAt !== pinned.toISOString()) {
    // script/test's stack honours it: there the check cannot be skipped.
    assert.notEqual(process.env.WL_TEST_CLOCK, '1', 'the test stack did not honour X-Test-Now');
    t.skip('the stack does not honour X-Test-Now ([server] test_clock = 0)');
    return;
  }
  const res = await create(base);
  assert.equal(res.status, 201, res.text);
  assert.ok(Math.abs(Date.parse(res.json.entry.createdAt) - Date.now()) < 60000,
    `createdAt ${res.json.entry.createdAt}: Apache passed X-Test-Now through`);
});
