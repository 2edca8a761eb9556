-- Each line keeps, beside its last ticket, the figures every read of a
-- walk-in needs, so that such a read looks them up instead of working
-- them out from the line's entries:
--   head          no active walk-in of the line has a ticket below it:
--                 the lowest active ticket, or issued + 1 with none (so
--                 a new ticket needs no change to it); the start of the
--                 ticket arithmetic of a position (ENTRY_POSITION in
--                 lib/stmt.c);
--   return_count  returns to the line (STMT_LINE_MOVE);
--   wait_ms       its recent wait: a moving average of the time from
--                 creation to first in_service of its walk-ins, each
--                 newly served one weighing 1/5 (LINE_WAIT);
--   served_at     when its last walk-in was first served.
-- They change in the transactions that move a walk-in into or out of the
-- active statuses, which lock the line's row first.  A program older than
-- this migration, still running while it is applied, leaves head as it
-- is: its new walk-ins need no change, a departure it makes leaves head
-- lower than it could be, and a return it makes, below head, is mended by
-- the line's next departure.
ALTER TABLE line_tickets
  ADD COLUMN IF NOT EXISTS head BIGINT NOT NULL DEFAULT 1,
  ADD COLUMN IF NOT EXISTS return_count BIGINT NOT NULL DEFAULT 0,
  ADD COLUMN IF NOT EXISTS wait_ms DOUBLE NULL,
  ADD COLUMN IF NOT EXISTS served_at BIGINT NULL;

UPDATE line_tickets lt SET
  head = COALESCE((SELECT MIN(e.ticket) FROM entries e
                   WHERE e.queue_id = lt.queue_id AND e.is_booking = 0 AND
                   e.is_active = 1), lt.issued + 1),
  served_at = (SELECT MAX(e.first_in_service_at) FROM entries e
               WHERE e.queue_id = lt.queue_id AND e.is_booking = 0),
  wait_ms = (SELECT AVG(e.first_in_service_at - e.created_at) FROM entries e
             WHERE e.queue_id = lt.queue_id AND e.is_booking = 0 AND
             e.first_in_service_at >= UNIX_TIMESTAMP() * 1000 - 86400000);
