-- A stored answer is sealed before its transaction is sent, so numbers
-- that only the server works out on the way (a new walk-in's position
-- and estimated wait) are not in it: they are kept beside it, as a JSON
-- object whose members replace those of the answer at replay.
ALTER TABLE idempotency_keys
  ADD COLUMN IF NOT EXISTS patch TEXT CHARACTER SET ascii NULL;
