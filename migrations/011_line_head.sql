-- Each line keeps, beside its last ticket, the two figures every read of
-- a walk-in needs, so that such a read looks them up instead of working
-- them out from the line's entries:
--   head       the lowest ticket among its active walk-ins (NULL with
--              none), never above it: the start of the ticket
--              arithmetic of a position (ENTRY_POSITION in lib/stmt.c);
--   wait_ms    its recent wait: a moving average of the time from
--              creation to first in_service of its walk-ins, each newly
--              served one weighing 1/5 (LINE_WAIT in lib/stmt.c);
--   served_at  when its last walk-in was first served.
-- They change in the transactions that issue a ticket or move a walk-in
-- into or out of the active statuses, which lock the line's row first.
ALTER TABLE line_tickets
  ADD COLUMN head BIGINT NULL,
  ADD COLUMN wait_ms DOUBLE NULL,
  ADD COLUMN served_at BIGINT NULL;

UPDATE line_tickets lt SET
  head = (SELECT MIN(e.ticket) FROM entries e WHERE e.queue_id = lt.queue_id
          AND e.is_booking = 0 AND e.is_active = 1),
  served_at = (SELECT MAX(e.first_in_service_at) FROM entries e
               WHERE e.queue_id = lt.queue_id AND e.is_booking = 0),
  wait_ms = (SELECT AVG(e.first_in_service_at - e.created_at) FROM entries e
             WHERE e.queue_id = lt.queue_id AND e.is_booking = 0 AND
             e.first_in_service_at >= UNIX_TIMESTAMP() * 1000 - 86400000);
