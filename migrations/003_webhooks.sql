-- Webhook subscriptions and their deliveries.

-- A subscription is bound to the key that created (or last resumed) it.
-- Secrets are stored encrypted (AES-256-GCM under a key derived from the
-- operator's secret key file).  high_water_seq: only events after it are
-- delivered; fanout_seq: how far the deliverer has fanned events out.
CREATE TABLE IF NOT EXISTS webhook_subscriptions (
  id VARCHAR(48) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  tenant_id VARCHAR(48) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  key_id VARCHAR(48) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  url VARCHAR(2048) NOT NULL,
  event_types TEXT CHARACTER SET ascii NOT NULL,
  business_ids TEXT CHARACTER SET ascii NOT NULL,
  queue_ids TEXT CHARACTER SET ascii NOT NULL,
  description VARCHAR(500) NULL,
  status VARCHAR(16) CHARACTER SET ascii NOT NULL,
  status_reason VARCHAR(32) CHARACTER SET ascii NULL,
  secret_enc VARCHAR(255) CHARACTER SET ascii NOT NULL,
  previous_secret_enc VARCHAR(255) CHARACTER SET ascii NULL,
  previous_secret_until BIGINT NULL,
  high_water_seq BIGINT NOT NULL,
  fanout_seq BIGINT NOT NULL,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  PRIMARY KEY (id),
  KEY subscriptions_tenant (tenant_id, id),
  KEY subscriptions_status (status, tenant_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- One delivery per (subscription, event).  A deliverer claims due rows by
-- writing a short lease (lease_owner, lease_until) and committing before
-- it sends; attempts holds the redacted attempt records as JSON.
CREATE TABLE IF NOT EXISTS deliveries (
  id VARCHAR(48) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  tenant_id VARCHAR(48) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  subscription_id VARCHAR(48) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  event_seq BIGINT NOT NULL,
  event_id VARCHAR(48) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  event_type VARCHAR(64) CHARACTER SET ascii NOT NULL,
  status VARCHAR(16) CHARACTER SET ascii NOT NULL,
  attempt_count INT NOT NULL DEFAULT 0,
  manual_retry TINYINT(1) NOT NULL DEFAULT 0,
  next_attempt_at BIGINT NOT NULL,
  last_attempt_at BIGINT NULL,
  lease_owner VARCHAR(48) CHARACTER SET ascii NULL,
  lease_until BIGINT NOT NULL DEFAULT 0,
  attempts MEDIUMTEXT NOT NULL,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  PRIMARY KEY (id),
  UNIQUE KEY deliveries_event (subscription_id, event_id),
  KEY deliveries_due (status, next_attempt_at),
  KEY deliveries_list (subscription_id, created_at, id),
  KEY deliveries_updated (updated_at)
) ENGINE=InnoDB;
