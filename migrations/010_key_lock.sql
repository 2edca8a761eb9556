-- Key creation of a tenant serializes on this counter: waitlistctl key
-- create updates it, in the tenant's counter row, before counting the
-- tenant's active keys and inserting one.  A write, for the reason in
-- 006: under Galera only two writes of one row conflict, so two nodes
-- cannot both pass the activeKeys limit.
ALTER TABLE tenant_counters ADD COLUMN IF NOT EXISTS key_lock BIGINT NOT NULL DEFAULT 0;
