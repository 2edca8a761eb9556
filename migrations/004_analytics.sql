-- The analytics summary reads a line's entries by creation time.
CREATE INDEX entries_queue_created ON entries (queue_id, created_at);
