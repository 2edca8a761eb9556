-- A delivery failed without being sent because its subscription was
-- paused, disabled or resumed past it: its event came in a period that
-- is never delivered, so a deliberate retry of it is refused.
ALTER TABLE deliveries
  ADD COLUMN IF NOT EXISTS skipped TINYINT(1) NOT NULL DEFAULT 0;
