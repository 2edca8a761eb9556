-- Subscription changes of a tenant serialize on this counter: creating or
-- resuming a subscription updates it, in the tenant's counter row, before
-- reading the event sequence and counting subscriptions.  A write, not
-- SELECT ... FOR UPDATE: under Galera a locking read holds only on its own
-- node and never conflicts at certification, so two nodes could both pass
-- the webhookSubscriptions limit; two writes of the row do conflict, and
-- the loser retries its whole transaction.
ALTER TABLE tenant_counters ADD COLUMN IF NOT EXISTS webhook_lock BIGINT NOT NULL DEFAULT 0;
