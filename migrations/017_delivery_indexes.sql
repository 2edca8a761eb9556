-- One index fewer on deliveries, written with every record: the purge
-- finds finished records by id, which begins with the time it was made
-- (lib/stmt.c: STMT_PURGE_DELIVERIES).  A program older than this file
-- still running after it purges as before, by a scan from the oldest id.
-- (deliveries_lease stays: older deliverers name it when they read their
-- claims back.)
ALTER TABLE deliveries DROP INDEX IF EXISTS deliveries_updated;
