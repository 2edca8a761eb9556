// The deliverer process under stress: killed with SIGKILL in the middle of
// a burst it loses nothing (delivery is at least once, duplicates keep
// their webhook-id: SPEC "Webhook delivery" 4, 7), and SIGTERM lets the
// attempts in flight finish, then exits (OPERATIONS: drains on SIGTERM,
// at most the 10 s attempt timeout).  Leaves the deliverer running.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import {
  alive, ctl, sleep, sql, stack, uniq,
} from './lib.mjs';
import {
  attemptLines, contractProblems, delivererPid, dropSubs, eventIdsOfTenant, listDeliveries,
  mustCreateSub, newTenant, startReceiver, waitUntil, walkIn,
} from './util-webhooks.mjs';

const VAR = process.env.WL_VAR;
const CREATED = 'waitlist.entry.created';

let rx;
before(async () => {
  rx = await startReceiver();
});
after(async () => {
  ensureDeliverer();
  dropSubs();
  await rx.close();
});

function ensureDeliverer() {
  let pid = null;
  try {
    pid = delivererPid(VAR);
  } catch {
    // no pid file
  }
  if (!pid || !alive(pid)) stack('deliverer-start');
}

async function waitGone(pid, timeoutMs) {
  await waitUntil(() => !alive(pid), timeoutMs, `deliverer ${pid} to exit`);
}

// Creates n walk-ins, chunk at a time in parallel.
async function burst(key, queueId, n, chunk = 25) {
  const out = [];
  for (let i = 0; i < n; i += chunk) {
    const size = Math.min(chunk, n - i);
    out.push(...await Promise.all(Array.from({ length: size }, () => walkIn(key, queueId))));
  }
  return out;
}

// Stored bodies of a tenant's events, by id, byte for byte.
function storedBodies(tenantId) {
  const map = new Map();
  for (const [id, hex] of sql(`SELECT id, HEX(body) FROM events WHERE tenant_id = '${tenantId}'`)) {
    map.set(id, Buffer.from(hex, 'hex'));
  }
  return map;
}

// Every request verifies with secret and carries the stored event's exact
// body; returns the webhook-ids received, with their counts.
function verifyAll(secret, reqs, bodies) {
  const wh = new Webhook(secret);
  const counts = new Map();
  for (const r of reqs) {
    const id = r.headers['webhook-id'];
    let payload;
    assert.doesNotThrow(() => { payload = wh.verify(r.body.toString('utf8'), r.headers); },
      `delivery ${id} does not verify`);
    assert.equal(payload.id, id);
    assert.ok(bodies.has(id), `${id} is no event of the tenant`);
    assert.ok(bodies.get(id).equals(r.body), `body of ${id} differs from the stored event`);
    counts.set(id, (counts.get(id) || 0) + 1);
  }
  return counts;
}

const sorted = (it) => [...it].sort();

// The stack's configuration with the given lines replaced, as a file.
function configWith(name, lines) {
  let text = readFileSync(join(VAR, 'waitlist.conf'), 'utf8');
  for (const [key, value] of Object.entries(lines)) {
    text = text.replace(new RegExp(`^${key} *=.*$`, 'm'), `${key} = ${value}`);
  }
  const file = join(VAR, name);
  writeFileSync(file, text);
  return file;
}

// Runs a deliverer with --once on config; resolves to its exit code (or
// signal) and the end of its stderr.  Not spawnSync: the receiver lives
// in this process's event loop.
async function runOnce(config) {
  const bin = join(process.env.WL_BIN || process.env.WL_REPO, 'deliverer', 'waitlist-deliverer');
  const child = spawn(bin, ['--config', config, '--once'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (c) => { stderr += c; });
  const timer = setTimeout(() => child.kill('SIGKILL'), 60000);
  const code = await new Promise((resolve) => child.on('exit', (c, sig) => resolve(sig || c)));
  clearTimeout(timer);
  return { code, stderr: stderr.slice(-2000) };
}

// The n delivery records of subscription subId once every one of them
// has succeeded (within 20 s).
function allSucceeded(key, subId, n) {
  return waitUntil(async () => {
    const list = await listDeliveries(key, subId);
    return list.length === n && list.every((d) => d.status === 'succeeded') && list;
  }, 20000, () => `${n} succeeded records (have ${JSON.stringify(sql(`SELECT event_id, status FROM deliveries WHERE subscription_id = '${subId}'`))}; ranges ${JSON.stringify(sql(`SELECT first_seq, last_seq, lease_owner IS NULL FROM delivery_ranges WHERE subscription_id = '${subId}'`))})`);
}

function progress(url, expected) {
  const reqs = rx.at(url);
  const got = new Set(reqs.map((r) => r.headers['webhook-id']));
  const missing = expected.filter((id) => !got.has(id)).length;
  return `every event to arrive: ${reqs.length} requests, ${got.size} distinct events, ${missing} of ${expected.length} never received`;
}

describe('deliverer process', () => {
  // Whatever an earlier test left retrying must not compete for the
  // receiver's host.
  beforeEach(() => dropSubs());

  test('a burst to one slow endpoint is sent once per event, every attempt recorded', { timeout: 120000 }, async (t) => {
    // No failure, no restart: nothing may be sent twice (DECISIONS
    // "Webhooks": deliverers never send an attempt twice; SPEC: each event
    // id is processed once).
    const ten = newTenant();
    const url = rx.url(uniq('burst'));
    rx.setDefault(url, { status: 200, delayMs: 100 });
    const sub = await mustCreateSub(ten.k1, { url, eventTypes: [CREATED] });
    await burst(ten.k1, ten.q1, 100);
    const expected = eventIdsOfTenant(ten.t1, CREATED);
    assert.equal(expected.length, 100);
    await waitUntil(() => {
      const got = new Set(rx.at(url).map((r) => r.headers['webhook-id']));
      return expected.every((id) => got.has(id));
    }, 60000, () => progress(url, expected));
    await sleep(2000);
    const counts = verifyAll(sub.secret, rx.at(url), storedBodies(ten.t1));
    const twice = [...counts.entries()].filter(([, n]) => n > 1);
    t.diagnostic(`requests: ${rx.at(url).length} for ${counts.size} events; sent more than once: ${twice.length}`);
    assert.deepEqual(sorted(counts.keys()), sorted(expected));
    assert.equal(rx.at(url).length, 100, `${rx.at(url).length} requests for 100 events (${twice.length} events sent more than once)`);
    const records = await listDeliveries(ten.k1, sub.id);
    assert.equal(records.length, 100);
    const off = records.filter((d) => d.status !== 'succeeded' || d.attemptCount !== 1);
    assert.deepEqual(off.map((d) => `${d.eventId} ${d.status} attempts=${d.attemptCount}`), [],
      'delivery records that do not show the one successful attempt');
  });

  test('attempts open at once stay within both bounds, though more are claimed, and every subscription gets its share', { timeout: 120000 }, async (t) => {
    // OPERATIONS: deliverer_concurrency bounds the attempts in flight,
    // deliverer_per_endpoint those to one host; here 6 and 4.  The
    // deliverer claims ahead of what it sends.  Two subscriptions, one
    // per host (127.0.0.1 and localhost, the same receiver), with 30
    // events each: the overall bound is reached only when both are
    // served at once.
    const ten = newTenant();
    const urls = [rx.url(uniq('bounds')), rx.url(uniq('bounds')).replace('127.0.0.1', 'localhost')];
    for (const url of urls) {
      rx.setDefault(url, { status: 200, delayMs: 200 });
      await mustCreateSub(ten.k1, { url, eventTypes: [CREATED] });
    }
    stack('deliverer-stop');
    try {
      await burst(ten.k1, ten.q1, 30);
      const { code, stderr } = await runOnce(configWith('bounds.conf',
        { deliverer_concurrency: 6, deliverer_per_endpoint: 4 }));
      assert.equal(code, 0, `--once: ${stderr}`);
      // The most requests open at once (an answer before a request
      // that arrives in the same millisecond).
      const peak = (reqs) => {
        const marks = reqs.flatMap((r) => [[r.receivedAt, 1], [r.answeredAt, -1]])
          .sort((a, b) => a[0] - b[0] || a[1] - b[1]);
        let open = 0; let most = 0;
        for (const [, d] of marks) most = Math.max(most, open += d);
        return most;
      };
      const each = urls.map((url) => rx.at(url));
      for (const reqs of each) {
        assert.equal(reqs.length, 30);
        assert.ok(reqs.every((r) => r.answered === 200), 'an attempt was cut off');
      }
      const peaks = each.map(peak);
      const overall = peak(each.flat());
      t.diagnostic(`most open at once: ${overall} overall, ${peaks.join(' and ')} per host`);
      assert.ok(peaks.every((p) => p <= 4), `past the per-endpoint bound: ${peaks}`);
      assert.equal(Math.max(...peaks), 4, 'the per-endpoint bound was never reached');
      assert.equal(overall, 6, 'the overall bound was passed, or never reached');
      // Shares: neither subscription waits for the other's backlog.
      const first = each.map((reqs) => Math.min(...reqs.map((r) => r.receivedAt)));
      const tenth = each.map((reqs) => reqs.map((r) => r.receivedAt).sort((a, b) => a - b)[9]);
      assert.ok(first[0] < tenth[1] && first[1] < tenth[0],
        `one subscription waited for the other: first requests at ${first}, tenth at ${tenth}`);
    } finally {
      ensureDeliverer();
    }
  });

  test('an endpoint that stalls holds back no other tenant\'s deliveries', { timeout: 120000 }, async (t) => {
    // Tenant A's endpoint takes connections and never answers: each
    // attempt runs to the 10 s timeout, and the 16 slots of the endpoint
    // (deliverer_per_endpoint) stay full while claims for it wait.  Those
    // claims must not fill the sender's window: tenant B's event, to
    // another endpoint, goes out at once.  (A's endpoint is localhost,
    // the same receiver: its attempts still open after the test hold no
    // slot of 127.0.0.1, which the next tests use.)
    const a = newTenant();
    const b = newTenant();
    const stalled = [];
    for (let i = 0; i < 4; i += 1) {
      const url = rx.url(uniq('stall')).replace('127.0.0.1', 'localhost');
      rx.setDefault(url, { status: 200, delayMs: 12000 });
      await mustCreateSub(a.k1, { url, eventTypes: [CREATED] });
      stalled.push(url);
    }
    const fast = rx.url(uniq('fast'));
    await mustCreateSub(b.k1, { url: fast, eventTypes: [CREATED] });
    await burst(a.k1, a.q1, 60);
    const open = () => stalled.reduce((n, url) => n + rx.at(url).length, 0);
    await waitUntil(() => open() >= 16, 20000, () => `16 attempts open at the stalled endpoint (have ${open()})`);
    // Past SLOW_MS for the claims that wait, well within their 10 s.
    await sleep(2500);
    const sendB = async (n) => {
      const t0 = Date.now();
      await walkIn(b.k1, b.q1);
      await rx.waitFor(fast, n, 20000);
      return rx.at(fast)[n - 1].receivedAt - t0;
    };
    const first = await sendB(1);
    t.diagnostic(`B's first event arrived after ${first} ms; ${open()} attempts reached the stalled endpoint meanwhile`);
    assert.ok(first < 4000, `B's event waited ${first} ms behind A's stalled endpoint`);
    assert.equal(open(), 16, 'attempts past the endpoint\'s slots before any timed out');
    // The first attempts time out and others start: the endpoint has now
    // ended attempts, and is still slow.
    await waitUntil(() => open() >= 32, 20000, () => `A's next attempts (have ${open()})`);
    await sleep(2500);
    const second = await sendB(2);
    t.diagnostic(`B's second event, after A's endpoint ended 16 attempts, arrived after ${second} ms`);
    assert.ok(second < 4000, `B's second event waited ${second} ms behind A's stalled endpoint`);
  });

  test('attempts that finish together are each recorded with their own outcome', { timeout: 60000 }, async (t) => {
    // The deliverer records the attempts that finish in the same turn in
    // one transaction: each row must still get its own status, count,
    // next attempt and attempt record.
    const ten = newTenant();
    const url = rx.url(uniq('together'));
    const answers = [200, 503, 404, 204, 500, 200, 400, 503, 200, 404, 202, 500];
    // The same delay for all: answered within a few ms of each other.
    rx.plan(url, ...answers.map((status) => ({
      status, delayMs: 500, headers: status >= 500 ? { 'retry-after': '60' } : {},
    })));
    rx.setDefault(url, { status: 200 });
    const sub = await mustCreateSub(ten.k1, { url, eventTypes: [CREATED] });
    await burst(ten.k1, ten.q1, answers.length, answers.length);
    const reqs = await rx.waitFor(url, answers.length, 20000);
    await waitUntil(() => reqs.every((r) => r.answered !== null), 5000, 'every request answered');
    const span = Math.max(...reqs.map((r) => r.answeredAt)) - Math.min(...reqs.map((r) => r.answeredAt));
    t.diagnostic(`answered within ${span} ms`);
    const answered = new Map(reqs.map((r) => [r.headers['webhook-id'], r]));
    assert.equal(answered.size, answers.length, 'an event was sent twice');
    const records = await waitUntil(async () => {
      const list = await listDeliveries(ten.k1, sub.id);
      return list.length === answers.length && list.every((d) => d.attemptCount === 1) && list;
    }, 15000, 'every attempt to be recorded');
    for (const d of records) {
      const r = answered.get(d.eventId);
      assert.ok(r, `${d.eventId} was never sent`);
      const what = `${d.eventId} answered ${r.answered}`;
      assert.equal(d.attempts.length, 1, what);
      assert.equal(d.attempts[0].responseStatus, r.answered, what);
      assert.equal(d.attempts[0].errorClass, r.answered < 300 ? null : 'http', what);
      assert.equal(d.lastAttemptAt, d.attempts[0].attemptedAt, what);
      if (r.answered < 300) {
        assert.equal(d.status, 'succeeded', what);
      } else if (r.answered >= 500) {
        // Retry-After: 60 puts the next attempt a minute after this one.
        assert.equal(d.status, 'pending', what);
        const wait = Date.parse(d.nextAttemptAt) - Date.parse(d.attempts[0].attemptedAt);
        assert.ok(wait >= 59000 && wait < 62000, `${what}: next attempt ${wait} ms later`);
      } else {
        assert.equal(d.status, 'failed', what);
        assert.equal(d.nextAttemptAt, null, what);
      }
    }
    const leased = sql(`SELECT COUNT(*) FROM deliveries WHERE subscription_id = '${sub.id}' AND lease_owner IS NOT NULL`);
    assert.equal(leased[0][0], '0', 'a recorded delivery kept its lease');
  });

  test('SIGKILL during a burst of 500 events: after a restart every event arrives, duplicates keep their webhook-id', { timeout: 240000 }, async (t) => {
    const ten = newTenant();
    const url = rx.url(uniq('kill'));
    // Slow answers keep attempts in flight when the kill lands.
    rx.setDefault(url, { status: 200, delayMs: 100 });
    const sub = await mustCreateSub(ten.k1, { url, eventTypes: [CREATED] });
    const pid = delivererPid(VAR);
    assert.ok(alive(pid), `the deliverer (pid ${pid}) is not running`);

    let killedAt = 0;
    try {
      const creating = burst(ten.k1, ten.q1, 500);
      creating.catch(() => {});
      await rx.waitFor(url, 60, 60000);
      process.kill(pid, 'SIGKILL');
      killedAt = Date.now();
      const atKill = rx.at(url).length;
      await waitGone(pid, 5000);
      await creating;
      assert.ok(atKill < 500, `the kill came too late to test anything (${atKill} received)`);
      // Attempts cut off by the kill: received but not answered before it.
      const cut = rx.at(url).filter((r) => r.receivedAt <= killedAt && !(r.answeredAt && r.answeredAt < killedAt));
      t.diagnostic(`received at the kill: ${atKill}; in flight: ${cut.length}`);
      assert.ok(cut.length > 0, 'no attempt was in flight at the kill');
      await sleep(1000);
      const late = rx.at(url).filter((r) => r.receivedAt > killedAt + 300);
      assert.equal(late.length, 0, 'requests arrived while no deliverer ran');
    } finally {
      ensureDeliverer();
    }

    const expected = eventIdsOfTenant(ten.t1, CREATED);
    assert.equal(expected.length, 500);
    // Leases of the killed deliverer expire (attempt timeout + 20 s) and
    // those deliveries go out again.
    await waitUntil(() => {
      const got = new Set(rx.at(url).map((r) => r.headers['webhook-id']));
      return expected.every((id) => got.has(id));
    }, 120000, () => progress(url, expected));
    await sleep(1000);
    const counts = verifyAll(sub.secret, rx.at(url), storedBodies(ten.t1));
    assert.deepEqual(sorted(counts.keys()), sorted(expected));
    const dups = [...counts.values()].filter((n) => n > 1).length;
    t.diagnostic(`requests: ${rx.at(url).length}; events sent more than once: ${dups}`);

    // Every delivery record ends succeeded; one per event.
    const records = await waitUntil(async () => {
      const list = await listDeliveries(ten.k1, sub.id);
      return list.length === 500 && list.every((d) => d.status === 'succeeded') && list;
    }, 30000, 'all 500 delivery records to succeed');
    assert.deepEqual(sorted(records.map((d) => d.eventId)), sorted(expected));
    assert.deepEqual(sql(`SELECT COUNT(*) FROM delivery_ranges WHERE subscription_id = '${sub.id}'`), [['0']],
      'ranges of events left held once every event is recorded');
  });

  test('a range whose deliverer is gone is taken over: only its unrecorded events go out, and none from before a resume', { timeout: 120000 }, async () => {
    // A deliverer that died holding a range leaves its row, leased to it,
    // with some of the range's events recorded.  Once the lease expires
    // another takes it over and sends the rest; a range from before a
    // resume (the paused period) is dropped unsent.
    const ten = newTenant();
    const url = rx.url(uniq('takeover'));
    const urlOld = rx.url(uniq('takeover-old'));
    const sub = await mustCreateSub(ten.k1, { url, eventTypes: [CREATED] });
    const old = await mustCreateSub(ten.k1, { url: urlOld, eventTypes: [CREATED] });
    stack('deliverer-stop');
    try {
      await burst(ten.k1, ten.q1, 3);
      const [first, last] = sql(`SELECT MIN(seq), MAX(seq) FROM events WHERE tenant_id = '${ten.t1}'`)[0].map(Number);
      assert.equal(last - first, 2);
      const ids = eventIdsOfTenant(ten.t1, CREATED);
      const now = Date.now();
      sql(`UPDATE webhook_subscriptions SET fanout_seq = ${last} WHERE id IN ('${sub.id}', '${old.id}')`, { tellWorkers: false });
      sql(`UPDATE webhook_subscriptions SET high_water_seq = ${last} WHERE id = '${old.id}'`, { tellWorkers: false });
      sql(`INSERT INTO delivery_ranges (subscription_id, first_seq, last_seq, lease_owner, lease_until) VALUES
        ('${sub.id}', ${first}, ${last}, 'lse_gone', ${now - 1000}),
        ('${old.id}', ${first}, ${last}, 'lse_gone', ${now - 1000})`, { tellWorkers: false });
      // The middle event was recorded before the deliverer died.
      sql(`INSERT INTO deliveries (id, tenant_id, subscription_id, event_seq, event_id, event_type, status, attempt_count, next_attempt_at, last_attempt_at, attempts, created_at, updated_at)
        SELECT '${uniq('dlv_done').replace(/[^0-9A-Za-z_]/g, '')}', tenant_id, '${sub.id}', seq, id, type, 'succeeded', 1, ${now}, ${now}, '[]', ${now}, ${now}
        FROM events WHERE tenant_id = '${ten.t1}' AND seq = ${first + 1}`, { tellWorkers: false });
      ensureDeliverer();
      await rx.waitFor(url, 2, 15000);
      await sleep(2500);
      const got = sorted(rx.at(url).map((r) => r.headers['webhook-id']));
      const middle = sql(`SELECT id FROM events WHERE tenant_id = '${ten.t1}' AND seq = ${first + 1}`)[0][0];
      assert.deepEqual(got, sorted(ids.filter((id) => id !== middle)));
      assert.equal(rx.at(urlOld).length, 0, 'a range from before the resume went out');
      const records = await listDeliveries(ten.k1, sub.id);
      assert.deepEqual(sorted(records.map((d) => d.eventId)), sorted(ids));
      assert.ok(records.every((d) => d.status === 'succeeded'), JSON.stringify(records));
      assert.deepEqual(await listDeliveries(ten.k1, old.id), []);
      assert.deepEqual(sql(`SELECT COUNT(*) FROM delivery_ranges WHERE subscription_id IN ('${sub.id}', '${old.id}')`), [['0']]);
    } finally {
      ensureDeliverer();
    }
  });

  test('a batch of a range whose record fails goes out again, though later sends of the range are recorded', { timeout: 120000 }, async () => {
    // A range's sends settle in batches, each recorded in a transaction
    // of its own.  When one batch's transaction fails, a later batch that
    // settles the range's last send must not let the range go: the failed
    // batch's events would then have neither a record nor a range, and
    // would never be sent again.  A trigger stands in for the database
    // refusing that one transaction.
    const ten = newTenant();
    const url = rx.url(uniq('unrecorded'));
    const sub = await mustCreateSub(ten.k1, { url, eventTypes: [CREATED] });
    // Two events of one range: the first answered at once, the other
    // 3 s later, so that each is recorded in a batch of its own.
    rx.plan(url, { status: 200 }, { status: 200, delayMs: 3000 });
    rx.setDefault(url, { status: 200 });
    const trigger = uniq('refuse_record').replace(/[^A-Za-z0-9_]/g, '_');
    stack('deliverer-stop');
    try {
      await burst(ten.k1, ten.q1, 2);
      const ids = eventIdsOfTenant(ten.t1, CREATED);
      sql(`DELIMITER //
        CREATE TRIGGER ${trigger} BEFORE INSERT ON deliveries FOR EACH ROW
        IF NEW.subscription_id = '${sub.id}' THEN
          SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'refused by the test';
        END IF //
        DELIMITER ;`, { tellWorkers: false });
      ensureDeliverer();
      const refused = () => attemptLines(sub.id, '"outcome":"unrecorded"');
      await waitUntil(() => refused().length > 0, 15000, "the first batch's record to fail");
      sql(`DROP TRIGGER ${trigger}`, { tellWorkers: false });
      const reqs = rx.at(url);
      assert.equal(reqs.length, 2, 'both events are sent before the first record fails');
      assert.equal(refused().length, 1, 'the first record failed alone');
      const lost = reqs.find((r) => r.answeredAt !== null);
      const records = await allSucceeded(ten.k1, sub.id, 2);
      assert.deepEqual(sorted(records.map((d) => d.eventId)), sorted(ids));
      const again = rx.at(url).filter((r) => r.headers['webhook-id'] === lost.headers['webhook-id']);
      assert.equal(again.length, 2, 'the event whose record failed was sent again, with its webhook-id');
      assert.deepEqual(sql(`SELECT COUNT(*) FROM delivery_ranges WHERE subscription_id = '${sub.id}'`), [['0']]);
    } finally {
      sql(`DROP TRIGGER IF EXISTS ${trigger}`, { tellWorkers: false });
      ensureDeliverer();
    }
  });

  test('a range its own deliverer takes over while its sends are in flight waits for all of them', { timeout: 120000 }, async () => {
    // The lease of a range can run out while its sends are still in
    // flight (a slow endpoint, a slow record); the deliverer then takes
    // the range over from itself and sends its unrecorded events again.
    // The range may go only once the first sends have settled too:
    // otherwise, with the first send of one event and the second of the
    // other settled, it is let go of, and the last two are not recorded.
    const ten = newTenant();
    const url = rx.url(uniq('self'));
    const sub = await mustCreateSub(ten.k1, { url, eventTypes: [CREATED] });
    stack('deliverer-stop');
    try {
      await burst(ten.k1, ten.q1, 2);
      const ids = eventIdsOfTenant(ten.t1, CREATED);
      // One event is answered 4 s after its first send and at once after
      // its second; the other 8 s after each.
      const sends = new Map();
      rx.setDefault(url, (r) => {
        const id = r.headers['webhook-id'];
        sends.set(id, (sends.get(id) || 0) + 1);
        if (id !== ids[0]) return { status: 200, delayMs: 8000 };
        return sends.get(id) === 1 ? { status: 200, delayMs: 4000 } : { status: 200 };
      });
      ensureDeliverer();
      await rx.waitFor(url, 2, 15000);
      sql(`UPDATE delivery_ranges SET lease_until = ${Date.now() - 1000} WHERE subscription_id = '${sub.id}'`,
        { tellWorkers: false });
      const reqs = await rx.waitFor(url, 4, 10000);
      assert.equal(reqs.slice(0, 2).filter((r) => r.answeredAt !== null && r.answeredAt < reqs[3].receivedAt).length, 0,
        'a first send was answered before both events were sent again');
      const records = await allSucceeded(ten.k1, sub.id, 2);
      assert.deepEqual(sorted(records.map((d) => d.eventId)), sorted(ids));
      await waitUntil(() => rx.at(url).every((r) => r.answeredAt !== null), 10000, 'every send answered');
      await waitUntil(() => sql(`SELECT COUNT(*) FROM delivery_ranges WHERE subscription_id = '${sub.id}'`)[0][0] === '0',
        5000, 'the range to be let go of once every send has settled');
    } finally {
      ensureDeliverer();
    }
  });

  test('events purged before their fan-out are skipped, and the events after them go out', { timeout: 120000 }, async () => {
    // Deliverers down past the seven days of the feed: the purge takes
    // events no deliverer has fanned out.  The fan-out, which never
    // passes a gap in the numbers, must go on after them.
    const ten = newTenant();
    const url = rx.url(uniq('purged'));
    await mustCreateSub(ten.k1, { url, eventTypes: [CREATED] });
    stack('deliverer-stop');
    try {
      await burst(ten.k1, ten.q1, 2);
      sql(`UPDATE events SET occurred_at = 1000 WHERE tenant_id = '${ten.t1}'`, { tellWorkers: false });
      ctl('purge');
      assert.deepEqual(sql(`SELECT COUNT(*) FROM events WHERE tenant_id = '${ten.t1}'`), [['0']]);
      ensureDeliverer();
      await burst(ten.k1, ten.q1, 1);
      const [later] = eventIdsOfTenant(ten.t1, CREATED);
      await rx.waitFor(url, 1, 15000);
      await sleep(1000);
      assert.deepEqual(rx.at(url).map((r) => r.headers['webhook-id']), [later]);
    } finally {
      ensureDeliverer();
    }
  });

  test('--once sends everything due, records it, and exits when nothing is left', { timeout: 120000 }, async (t) => {
    // OPERATIONS: the timer-driven deliverer runs with --once.  The first
    // attempt fails with 500 and Retry-After: 3600, so it is due again only
    // in an hour; the rest arrive once each and are recorded before the
    // process exits.
    const ten = newTenant();
    const url = rx.url(uniq('once'));
    const sub = await mustCreateSub(ten.k1, { url, eventTypes: [CREATED] });
    stack('deliverer-stop');
    try {
      await burst(ten.k1, ten.q1, 150);
      const expected = eventIdsOfTenant(ten.t1, CREATED);
      assert.equal(expected.length, 150);
      rx.plan(url, { status: 500, headers: { 'retry-after': '3600' } });
      const started = Date.now();
      const { code, stderr } = await runOnce(join(VAR, 'waitlist.conf'));
      t.diagnostic(`--once exited ${code} after ${Date.now() - started} ms`);
      assert.equal(code, 0, `--once: ${stderr}`);
      const counts = verifyAll(sub.secret, rx.at(url), storedBodies(ten.t1));
      assert.deepEqual(sorted(counts.keys()), sorted(expected));
      assert.equal(rx.at(url).length, 150, 'a delivery was sent twice by one run');
      const records = await listDeliveries(ten.k1, sub.id);
      assert.equal(records.length, 150);
      const byStatus = {};
      for (const d of records) byStatus[d.status] = (byStatus[d.status] || 0) + 1;
      assert.deepEqual(byStatus, { succeeded: 149, pending: 1 });
      const leased = sql(`SELECT COUNT(*) FROM deliveries WHERE subscription_id = '${sub.id}' AND lease_owner IS NOT NULL`);
      assert.equal(leased[0][0], '0', 'leases left behind by --once');
      assert.deepEqual(sql(`SELECT COUNT(*) FROM delivery_ranges WHERE subscription_id = '${sub.id}'`), [['0']],
        'ranges left behind by --once');
    } finally {
      ensureDeliverer();
    }
  });

  test('--once exits 1 when it could not claim: a timer shows the failure', { timeout: 60000 }, async () => {
    const { code, stderr } = await runOnce(configWith('nodb.conf', { socket: join(VAR, 'no-such.sock'), host: 'localhost' }));
    assert.equal(code, 1, `--once without its database exited ${code}: ${stderr}`);
    assert.match(stderr, /cannot claim deliveries/);
  });

  test('events for a destination the policy no longer allows are recorded failed, never sent', { timeout: 120000 }, async () => {
    // The policy is checked again before sending (DECISIONS "Webhooks":
    // destinations): here the operator no longer lets localhost take
    // plain HTTP.  No attempt is made, so none is recorded.
    const ten = newTenant();
    const url = rx.url(uniq('refused')).replace('127.0.0.1', 'localhost');
    const sub = await mustCreateSub(ten.k1, { url, eventTypes: [CREATED] });
    stack('deliverer-stop');
    try {
      await burst(ten.k1, ten.q1, 5);
      const { code, stderr } = await runOnce(configWith('refuse.conf', { insecure_hosts: '127.0.0.1,::1' }));
      assert.equal(code, 0, `--once: ${stderr}`);
      assert.equal(rx.at(url).length, 0, 'sent to a refused destination');
      const records = await listDeliveries(ten.k1, sub.id);
      assert.equal(records.length, 5);
      for (const d of records) {
        assert.equal(d.status, 'failed', d.eventId);
        assert.equal(d.attemptCount, 0, d.eventId);
        assert.deepEqual(d.attempts, [], d.eventId);
        assert.equal(d.lastAttemptAt, null, d.eventId);
      }
    } finally {
      ensureDeliverer();
    }
  });

  test('deliveries whose subscription is gone are failed once, not claimed again and again', { timeout: 120000 }, async () => {
    // Only possible by hand in the database (deleting a subscription
    // deletes its deliveries in the same transaction): more of them than
    // the deliverer claims at once, all due, must not keep a live
    // subscription's events waiting, and must end failed, unleased.
    const ten = newTenant();
    const gone = uniq('whs_gone');
    const now = Date.now();
    sql(`INSERT INTO deliveries (id, tenant_id, subscription_id, event_seq, event_id, event_type, status, next_attempt_at, attempts, created_at, updated_at)
      SELECT CONCAT('${gone}_', seq), '${ten.t1}', '${gone}', seq, CONCAT('evt_${gone}_', seq), '${CREATED}', 'pending', ${now - 60000}, '[]', ${now - 60000}, ${now - 60000}
      FROM seq_1_to_100`, { tellWorkers: false });
    const url = rx.url(uniq('alive'));
    await mustCreateSub(ten.k1, { url, eventTypes: [CREATED] });
    await burst(ten.k1, ten.q1, 5);
    const expected = eventIdsOfTenant(ten.t1, CREATED);
    await waitUntil(() => {
      const got = new Set(rx.at(url).map((r) => r.headers['webhook-id']));
      return expected.every((id) => got.has(id));
    }, 30000, () => progress(url, expected));
    await waitUntil(() => sql(`SELECT COUNT(*) FROM deliveries WHERE subscription_id = '${gone}' AND status = 'failed' AND lease_owner IS NULL`)[0][0] === '100',
      30000, () => `the 100 deliveries of a deleted subscription to be failed: ${JSON.stringify(sql(`SELECT status, lease_owner IS NULL, COUNT(*) FROM deliveries WHERE subscription_id = '${gone}' GROUP BY 1, 2`))}`);
    sql(`DELETE FROM deliveries WHERE subscription_id = '${gone}'`, { tellWorkers: false });
  });

  test('SIGTERM lets attempts in flight finish and record, starts no new ones, and exits within 12 s', { timeout: 120000 }, async (t) => {
    const ten = newTenant();
    const url = rx.url(uniq('term'));
    rx.setDefault(url, { status: 200, delayMs: 3000 });
    const sub = await mustCreateSub(ten.k1, { url, eventTypes: [CREATED] });
    const pid = delivererPid(VAR);
    assert.ok(alive(pid), `the deliverer (pid ${pid}) is not running`);

    let inflight;
    let termAt;
    try {
      await burst(ten.k1, ten.q1, 40);
      await waitUntil(() => rx.at(url).filter((r) => r.answeredAt === null).length >= 8, 20000,
        'attempts in flight');
      process.kill(pid, 'SIGTERM');
      termAt = Date.now();
      inflight = rx.at(url).filter((r) => r.answeredAt === null);
      await waitGone(pid, 15000);
      const took = Date.now() - termAt;
      t.diagnostic(`in flight at SIGTERM: ${inflight.length}; exited after ${took} ms`);
      assert.ok(took <= 12000, `exited ${took} ms after SIGTERM`);
      // Drained: the attempts in flight were answered and recorded.
      for (const r of inflight) assert.equal(r.answered, 200, 'an attempt in flight was cut off');
      const late = rx.at(url).filter((r) => r.receivedAt > termAt + 300);
      assert.equal(late.length, 0, `${late.length} attempts started after SIGTERM`);
      const records = await listDeliveries(ten.k1, sub.id);
      const byEvent = new Map(records.map((d) => [d.eventId, d]));
      for (const r of inflight) {
        const d = byEvent.get(r.headers['webhook-id']);
        assert.ok(d, `no delivery record for ${r.headers['webhook-id']}`);
        assert.equal(d.status, 'succeeded', `attempt in flight at SIGTERM recorded as ${d.status}`);
        assert.equal(d.attemptCount, 1);
      }
      const leased = sql(`SELECT COUNT(*) FROM deliveries WHERE subscription_id = '${sub.id}' AND lease_owner IS NOT NULL`);
      assert.equal(leased[0][0], '0', 'leases left behind by a clean stop');
    } finally {
      ensureDeliverer();
    }

    // The rest goes out after the restart; what was recorded is not resent.
    const expected = eventIdsOfTenant(ten.t1, CREATED);
    assert.equal(expected.length, 40);
    await waitUntil(() => {
      const got = new Set(rx.at(url).map((r) => r.headers['webhook-id']));
      return expected.every((id) => got.has(id));
    }, 60000, () => progress(url, expected));
    await sleep(500);
    const counts = verifyAll(sub.secret, rx.at(url), storedBodies(ten.t1));
    assert.deepEqual(sorted(counts.keys()), sorted(expected));
    for (const r of inflight) {
      assert.equal(counts.get(r.headers['webhook-id']), 1, `${r.headers['webhook-id']} was sent again`);
    }
  });
});

// Last: the answers gathered above, against openapi.json.
test('every webhook answer and delivered body matched openapi.json', () => {
  assert.deepEqual(contractProblems, []);
});
