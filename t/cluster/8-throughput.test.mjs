// A figure for README "Running several nodes", not a pass/fail limit: how
// many walk-ins per second 8 concurrent clients create for 3 s through one
// app node and through the balanced port (both app nodes), with every
// client in one tenant (each write updates the tenant's event counter row:
// across nodes, a certification conflict for one of two concurrent
// writers) and with a tenant per client (no shared row).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sqlOn, tenant, uniq, write } from './util.mjs';

const SECONDS = 3;
const WIDTH = 8;

async function run(n, tenants) {
  const end = Date.now() + SECONDS * 1000;
  let done = 0;
  const failed = [];
  await Promise.all(Array.from({ length: WIDTH }, async (_, i) => {
    const t = tenants[i % tenants.length];
    while (Date.now() < end) {
      const r = await write(n, 'POST', '/waitlist/entries', t.key, { queueId: t.queueId, fullName: uniq('tp') });
      if (r.status === 201) done += 1;
      else failed.push(`${r.status} ${r.text}`);
    }
  }));
  return { perSecond: Math.round(done / SECONDS), failed };
}

function conflicts() {
  return [1, 2].map((n) => sqlOn(n, "SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_local_cert_failures', 'wsrep_local_bf_aborts')")
    .reduce((a, [, v]) => a + Number(v), 0)).reduce((a, b) => a + b, 0);
}

test(`write throughput: ${WIDTH} clients for ${SECONDS} s, one node vs both`, async () => {
  const one = [tenant()];
  const many = Array.from({ length: WIDTH }, () => tenant());
  const lines = [];
  for (const [label, n, ts] of [
    ['one tenant, app node 1 only', 1, one],
    ['one tenant, both app nodes', 0, one],
    [`${WIDTH} tenants, app node 1 only`, 1, many],
    [`${WIDTH} tenants, both app nodes`, 0, many],
  ]) {
    const before = conflicts();
    const r = await run(n, ts);
    assert.deepEqual(r.failed, [], label);
    lines.push(`${label}: ${r.perSecond} writes/s (${conflicts() - before} certification conflicts and brute-force aborts)`);
  }
  for (const l of lines) console.log(`# throughput: ${l}`);
});
