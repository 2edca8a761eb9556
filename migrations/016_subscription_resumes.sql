-- How many times a subscription has been resumed.  A deliverer reads it
-- with what it sends; a 410 to an attempt read before a resume (the
-- count has moved since) disables nothing.
ALTER TABLE webhook_subscriptions
  ADD COLUMN IF NOT EXISTS resumes INT NOT NULL DEFAULT 0;
