-- Each line counts its active walk-ins.  A new walk-in's ticket is the
-- line's last, so its position is that count: read with the line's row,
-- which the walk-in's ticket locks, rather than worked out from the
-- line's entries (ENTRY_POSITION in lib/stmt.c, which reads of walk-ins
-- still use).  The count changes with the ticket of a new walk-in and in
-- the transactions that move a walk-in into or out of the active
-- statuses.  A program older than this migration, still running while it
-- is applied, leaves the count as it is: the positions in the answers to
-- new walk-ins may then be off until the line is next left with no
-- active walk-in, which counts it 0 again.
ALTER TABLE line_tickets
  ADD COLUMN IF NOT EXISTS active BIGINT NOT NULL DEFAULT 0;

UPDATE line_tickets lt SET
  active = (SELECT COUNT(*) FROM entries e
            WHERE e.queue_id = lt.queue_id AND e.is_booking = 0 AND
            e.is_active = 1);
