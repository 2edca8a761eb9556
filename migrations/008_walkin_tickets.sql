-- Walk-ins carry a ticket: 1, 2, 3... in arrival order within their line,
-- issued from line_tickets in the transaction that inserts the walk-in, so
-- a line's tickets have no gaps (entries are never deleted).  A walk-in's
-- position is then arithmetic on tickets rather than a count of everyone
-- ahead: see ENTRY_POSITION in lib/stmt.c.  Bookings have no ticket.
ALTER TABLE entries
  ADD COLUMN IF NOT EXISTS ticket BIGINT NULL,
  ADD COLUMN IF NOT EXISTS is_active TINYINT(1) AS (status IN ('waiting', 'ready', 'confirmed')) STORED,
  ADD KEY IF NOT EXISTS entries_walkins (queue_id, is_booking, is_active, ticket),
  DROP KEY IF EXISTS entries_queue_served,
  ADD KEY entries_queue_served (queue_id, is_booking, first_in_service_at, created_at);

CREATE TABLE IF NOT EXISTS line_tickets (
  queue_id VARCHAR(48) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  issued BIGINT NOT NULL,
  PRIMARY KEY (queue_id)
) ENGINE=InnoDB;

-- Walk-ins made before tickets existed get theirs in the order positions
-- used until now: creation time, then id.
UPDATE entries e JOIN (
  SELECT id, ROW_NUMBER() OVER (PARTITION BY queue_id ORDER BY created_at, id) AS n
  FROM entries WHERE is_booking = 0
) r ON r.id = e.id
SET e.ticket = r.n;

INSERT INTO line_tickets (queue_id, issued)
SELECT queue_id, MAX(ticket) FROM entries WHERE ticket IS NOT NULL GROUP BY queue_id
ON DUPLICATE KEY UPDATE issued = VALUES(issued);
