-- Waitlist entries (walk-ins and bookings), their status history, the
-- event outbox and idempotency records.

CREATE TABLE IF NOT EXISTS entries (
  id VARCHAR(48) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  tenant_id VARCHAR(48) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  business_id VARCHAR(48) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  queue_id VARCHAR(48) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  guest_id VARCHAR(48) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  booking_id VARCHAR(48) CHARACTER SET ascii COLLATE ascii_bin NULL,
  version INT NOT NULL,
  status VARCHAR(16) CHARACTER SET ascii NOT NULL,
  is_booking TINYINT(1) NOT NULL,
  full_name VARCHAR(400) NOT NULL,
  phone VARCHAR(32) NULL,
  party_size INT NOT NULL DEFAULT 1,
  notes TEXT NULL,
  service_type_id VARCHAR(48) CHARACTER SET ascii COLLATE ascii_bin NULL,
  custom_data MEDIUMTEXT NOT NULL,
  external_reference VARCHAR(255) NULL,
  scheduled_for BIGINT NULL,
  booking_end BIGINT NULL,
  sms_consent TEXT NULL,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  first_in_service_at BIGINT NULL,
  completed_at BIGINT NULL,
  PRIMARY KEY (id),
  KEY entries_list (tenant_id, updated_at, id),
  KEY entries_extref (tenant_id, external_reference, updated_at, id),
  KEY entries_queue_status (queue_id, status, is_booking, created_at, id),
  KEY entries_queue_served (queue_id, first_in_service_at),
  KEY entries_queue_booking (queue_id, is_booking, scheduled_for)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- When each entry entered each status (version is the entry version the
-- change produced).
CREATE TABLE IF NOT EXISTS entry_status_history (
  entry_id VARCHAR(48) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  version INT NOT NULL,
  tenant_id VARCHAR(48) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  queue_id VARCHAR(48) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  status VARCHAR(16) CHARACTER SET ascii NOT NULL,
  previous_status VARCHAR(16) CHARACTER SET ascii NULL,
  at BIGINT NOT NULL,
  PRIMARY KEY (entry_id, version),
  KEY history_queue_at (queue_id, at)
) ENGINE=InnoDB;

-- The outbox: every event, per tenant, under a gapless sequence assigned
-- in commit order (see lib/outbox.c).  body is the exact JSON served by
-- the feed and sent by the deliverer.
CREATE TABLE IF NOT EXISTS events (
  tenant_id VARCHAR(48) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  seq BIGINT NOT NULL,
  id VARCHAR(48) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  type VARCHAR(64) CHARACTER SET ascii NOT NULL,
  business_id VARCHAR(48) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  queue_id VARCHAR(48) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  resource_id VARCHAR(48) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  occurred_at BIGINT NOT NULL,
  body MEDIUMTEXT NOT NULL,
  PRIMARY KEY (tenant_id, seq),
  UNIQUE KEY events_id (id),
  KEY events_occurred (occurred_at)
) ENGINE=InnoDB;

-- Idempotency records, scoped to the API key.  request_hash covers method,
-- path and body; status 0 marks a record whose request is still running.
CREATE TABLE IF NOT EXISTS idempotency_keys (
  key_id VARCHAR(48) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  idem_key VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  request_hash CHAR(64) CHARACTER SET ascii NOT NULL,
  status INT NOT NULL,
  body MEDIUMTEXT NULL,
  created_at BIGINT NOT NULL,
  PRIMARY KEY (key_id, idem_key),
  KEY idempotency_created (created_at)
) ENGINE=InnoDB;

-- Bookings of a line serialize on this counter: the capacity check and the
-- insert happen after updating it, so two transactions (on one node or,
-- through certification, on two Galera nodes) can never both pass.
ALTER TABLE queues ADD COLUMN IF NOT EXISTS booking_lock BIGINT NOT NULL DEFAULT 0;
