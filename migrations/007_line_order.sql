-- A line's services and custom fields are read in their display order;
-- these indexes serve that order without sorting (the field rows carry a
-- TEXT column, which would otherwise send each sort to a disk table).
CREATE INDEX IF NOT EXISTS queue_services_order ON queue_services (queue_id, position);
CREATE INDEX IF NOT EXISTS queue_custom_fields_order ON queue_custom_fields (queue_id, position);
