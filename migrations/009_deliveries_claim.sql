-- A deliverer reads back the rows of its claim by lease (owner and lease
-- time) right after the claiming UPDATE commits; without this index each
-- claim scanned the whole deliveries table, delivered rows included.
CREATE INDEX IF NOT EXISTS deliveries_lease ON deliveries (lease_owner, lease_until);
