// waitlistctl migrate on a database of its own.  Each DDL statement of a
// migration commits by itself, and a migration is recorded only after
// its last statement: one cut off midway (a lost connection, a Galera
// conflict) is run again whole.  So every statement must be one that can
// run again, and the schema it leaves must be the same.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { CTL_ARGV, sql, uniq } from './lib.mjs';

const VAR = process.env.WL_VAR;
const BIN = process.env.WL_BIN || process.env.WL_REPO;

function migrate(config) {
  const r = spawnSync(CTL_ARGV[0], [...CTL_ARGV.slice(1), '--config', config, 'migrate'], { encoding: 'utf8' });
  assert.equal(r.status, 0, `migrate: ${r.stderr}`);
  return JSON.parse(r.stdout).applied;
}

// Tables, columns and indexes of database db, as text to compare.
function schema(db) {
  const cols = sql(`SELECT table_name, column_name, column_type, is_nullable, IFNULL(column_default, '-'),
    IFNULL(generation_expression, '-') FROM information_schema.columns WHERE table_schema = '${db}'
    ORDER BY table_name, ordinal_position`);
  const keys = sql(`SELECT table_name, index_name, non_unique, seq_in_index, column_name
    FROM information_schema.statistics WHERE table_schema = '${db}'
    ORDER BY table_name, index_name, seq_in_index`);
  return JSON.stringify({ cols, keys });
}

test('every migration can run again over itself and leaves the same schema', () => {
  const db = uniq('migrate_again').replace(/[^A-Za-z0-9_]/g, '_');
  const config = join(VAR, `${db}.conf`);
  writeFileSync(config, readFileSync(join(VAR, 'waitlist.conf'), 'utf8')
    .replace(/^name *=.*$/m, `name = ${db}`));
  sql(`CREATE DATABASE ${db} CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`);
  try {
    const all = migrate(config);
    assert.ok(all.length >= 15, `applied ${all.join(', ')}`);
    const first = schema(db);
    // As if each had been cut off after its last statement: run again.
    sql(`DELETE FROM ${db}.schema_migrations`);
    assert.deepEqual(migrate(config), all);
    assert.equal(schema(db), first, 'running the migrations again changed the schema');
    assert.deepEqual(migrate(config), [], 'a third run applied something');
  } finally {
    sql(`DROP DATABASE IF EXISTS ${db}`);
  }
});

test('the programs refuse a schema older than the migrations installed with them', () => {
  // After an upgrade, a timer's run or a restart after a crash starts the
  // new programs: until `waitlistctl migrate` has run, they stop at once.
  const db = uniq('migrate_behind').replace(/[^A-Za-z0-9_]/g, '_');
  const dir = join(VAR, `${db}-migrations`);
  const config = join(VAR, `${db}.conf`);
  mkdirSync(dir);
  for (const f of readdirSync(join(process.env.WL_REPO, 'migrations'))) {
    copyFileSync(join(process.env.WL_REPO, 'migrations', f), join(dir, f));
  }
  writeFileSync(config, readFileSync(join(VAR, 'waitlist.conf'), 'utf8')
    .replace(/^name *=.*$/m, `name = ${db}`)
    .replace(/^migrations_dir *=.*$/m, `migrations_dir = ${dir}`)
    .replace(/^fcgi_socket *=.*$/m, `fcgi_socket = ${join(VAR, 'run', `${db}.sock`)}`));
  sql(`CREATE DATABASE ${db} CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`);
  const run = (argv) => spawnSync(argv[0], argv.slice(1), { encoding: 'utf8', timeout: 20000 });
  const programs = {
    waitlistctl: [...CTL_ARGV, '--config', config, 'purge'],
    'waitlist-deliverer': [join(BIN, 'deliverer', 'waitlist-deliverer'), '--config', config, '--once'],
    'waitlist-fcgi': [join(BIN, 'fcgi', 'waitlist-fcgi'), '--config', config],
  };
  try {
    for (const [name, argv] of Object.entries(programs)) {
      const r = run(argv);
      assert.equal(r.status, 1, `${name} on a database without a schema: ${r.status} ${r.stderr}`);
      assert.match(r.stderr, /no schema: run waitlistctl migrate/, name);
    }
    migrate(config);
    writeFileSync(join(dir, '999_pending.sql'),
      'CREATE TABLE IF NOT EXISTS pending_probe (id INT PRIMARY KEY) ENGINE=InnoDB;\n');
    for (const [name, argv] of Object.entries(programs)) {
      const r = run(argv);
      assert.equal(r.status, 1, `${name} with a migration not applied: ${r.status} ${r.stderr}`);
      assert.match(r.stderr, /1 migration of .* not applied \(999_pending\.sql\): run waitlistctl migrate/, name);
    }
    assert.deepEqual(migrate(config), ['999_pending.sql']);
    for (const name of ['waitlistctl', 'waitlist-deliverer']) {
      const r = run(programs[name]);
      assert.equal(r.status, 0, `${name} once migrated: ${r.stderr}`);
    }
  } finally {
    sql(`DROP DATABASE IF EXISTS ${db}`);
    rmSync(dir, { recursive: true, force: true });
  }
});
