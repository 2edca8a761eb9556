-- The analytics summary reads a line's entries by creation time.
CREATE INDEX IF NOT EXISTS entries_queue_created ON entries (queue_id, created_at);
