// waitlistctl migrate on a database of its own.  Each DDL statement of a
// migration commits by itself, and a migration is recorded only after
// its last statement: one cut off midway (a lost connection, a Galera
// conflict) is run again whole.  So every statement must be one that can
// run again, and the schema it leaves must be the same.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { CTL_ARGV, sql, uniq } from './lib.mjs';

const VAR = process.env.WL_VAR;

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
