-- Tenants, keys and the catalogue of businesses, services, custom fields
-- and lines.  Timestamps are BIGINT milliseconds since the epoch (UTC), so
-- no session time zone can shift them.  Public ids are time-ordered
-- strings and serve as primary keys.

CREATE TABLE IF NOT EXISTS tenants (
  id VARCHAR(48) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  name VARCHAR(200) NOT NULL,
  plan VARCHAR(64) NOT NULL DEFAULT 'pro',
  public_api TINYINT(1) NOT NULL DEFAULT 1,
  webhooks TINYINT(1) NOT NULL DEFAULT 1,
  zapier TINYINT(1) NOT NULL DEFAULT 0,
  state VARCHAR(16) NOT NULL DEFAULT 'active',
  email_verified TINYINT(1) NOT NULL DEFAULT 1,
  billing_available TINYINT(1) NOT NULL DEFAULT 1,
  guest_allowance BIGINT NOT NULL DEFAULT 10000,
  reads_per_minute BIGINT NOT NULL DEFAULT 600,
  writes_per_minute BIGINT NOT NULL DEFAULT 120,
  tenant_reads_per_minute BIGINT NOT NULL DEFAULT 3000,
  tenant_writes_per_minute BIGINT NOT NULL DEFAULT 600,
  active_keys BIGINT NOT NULL DEFAULT 10,
  webhook_subscriptions BIGINT NOT NULL DEFAULT 10,
  default_key_expiry_days BIGINT NOT NULL DEFAULT 90,
  maximum_key_expiry_days BIGINT NOT NULL DEFAULT 365,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  PRIMARY KEY (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- Per-tenant counters kept apart from the tenant row, which every request
-- reads: the event sequence (see the outbox) and the purge high-water mark.
CREATE TABLE IF NOT EXISTS tenant_counters (
  tenant_id VARCHAR(48) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  event_seq BIGINT NOT NULL DEFAULT 0,
  purged_seq BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (tenant_id)
) ENGINE=InnoDB;

-- Guests created per tenant and calendar month (UTC), for the allowance.
CREATE TABLE IF NOT EXISTS tenant_usage (
  tenant_id VARCHAR(48) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  month CHAR(7) CHARACTER SET ascii NOT NULL,
  guests BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (tenant_id, month)
) ENGINE=InnoDB;

-- API keys: only the SHA-256 digest of the plaintext is stored.
CREATE TABLE IF NOT EXISTS api_keys (
  id VARCHAR(48) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  tenant_id VARCHAR(48) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  digest CHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  scopes VARCHAR(255) CHARACTER SET ascii NOT NULL,
  business_ids TEXT CHARACTER SET ascii NOT NULL,
  queue_ids TEXT CHARACTER SET ascii NOT NULL,
  integration_type VARCHAR(16) NOT NULL DEFAULT 'api',
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,
  revoked_at BIGINT NULL,
  PRIMARY KEY (id),
  UNIQUE KEY api_keys_digest (digest),
  KEY api_keys_tenant (tenant_id, created_at)
) ENGINE=InnoDB;

CREATE TABLE IF NOT EXISTS businesses (
  id VARCHAR(48) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  tenant_id VARCHAR(48) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  name VARCHAR(200) NOT NULL,
  slug VARCHAR(200) NOT NULL,
  time_zone VARCHAR(64) NULL,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  PRIMARY KEY (id),
  KEY businesses_tenant (tenant_id, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE IF NOT EXISTS services (
  id VARCHAR(48) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  tenant_id VARCHAR(48) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  business_id VARCHAR(48) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  service_name VARCHAR(200) NOT NULL,
  base_duration_minutes INT NOT NULL,
  is_active TINYINT(1) NOT NULL DEFAULT 1,
  PRIMARY KEY (id),
  KEY services_business (business_id, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- options: JSON array of {value, label}.  is_public: only public fields
-- are ever shown through the API.
CREATE TABLE IF NOT EXISTS custom_fields (
  id VARCHAR(48) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  tenant_id VARCHAR(48) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  business_id VARCHAR(48) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  label VARCHAR(200) NOT NULL,
  type VARCHAR(16) NOT NULL,
  required TINYINT(1) NOT NULL DEFAULT 0,
  is_public TINYINT(1) NOT NULL DEFAULT 1,
  options MEDIUMTEXT NULL,
  PRIMARY KEY (id),
  KEY custom_fields_business (business_id, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- working_hours and booking_hours: normalized JSON with all seven days.
CREATE TABLE IF NOT EXISTS queues (
  id VARCHAR(48) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  tenant_id VARCHAR(48) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  business_id VARCHAR(48) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  name VARCHAR(200) NOT NULL,
  time_zone VARCHAR(64) NULL,
  working_hours TEXT NOT NULL,
  walk_ins_enabled TINYINT(1) NOT NULL DEFAULT 1,
  walk_ins_paused TINYINT(1) NOT NULL DEFAULT 0,
  bookings_enabled TINYINT(1) NOT NULL DEFAULT 0,
  bookings_paused TINYINT(1) NOT NULL DEFAULT 0,
  booking_slot_minutes INT NOT NULL DEFAULT 15,
  booking_hours TEXT NOT NULL,
  booking_capacity INT NOT NULL DEFAULT 1,
  service_required TINYINT(1) NOT NULL DEFAULT 0,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  PRIMARY KEY (id),
  KEY queues_tenant (tenant_id, id),
  KEY queues_business (business_id, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE IF NOT EXISTS queue_services (
  queue_id VARCHAR(48) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  service_id VARCHAR(48) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  position INT NOT NULL,
  PRIMARY KEY (queue_id, service_id)
) ENGINE=InnoDB;

CREATE TABLE IF NOT EXISTS queue_custom_fields (
  queue_id VARCHAR(48) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  field_id VARCHAR(48) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  position INT NOT NULL,
  PRIMARY KEY (queue_id, field_id)
) ENGINE=InnoDB;
