-- New events are leased to a deliverer in ranges, one row per range of a
-- subscription's events (first_seq to last_seq), instead of a delivery
-- row per event before it is sent: a delivery's record is written once,
-- with its first attempt's outcome.  A range is deleted when every event
-- of it that the subscription wants is recorded; one whose lease expires
-- (its deliverer died) is taken over, and only its unrecorded events go
-- out again.  Deliveries already fanned out by an older deliverer stay
-- rows and are claimed as before.
CREATE TABLE IF NOT EXISTS delivery_ranges (
  subscription_id VARCHAR(48) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  first_seq BIGINT NOT NULL,
  last_seq BIGINT NOT NULL,
  lease_owner VARCHAR(48) CHARACTER SET ascii NULL,
  lease_until BIGINT NOT NULL,
  PRIMARY KEY (subscription_id, first_seq),
  KEY delivery_ranges_lease (lease_until)
) ENGINE=InnoDB;
