-- Partial indexes for the outbox (PostgreSQL). An UPDATE that changes an indexed column adds an
-- entry to every index whose predicate the new row version meets. Marking a row DISPATCHED used to
-- add one to six indexes; with these, three (the key, the event id, retention's). Each index now
-- holds only the rows its queries look for, so the claim, the waiting keys and the poll read
-- indexes the size of the backlog, not of the table. Measured by RelayBenchmark (docs/benchmarks.md).
-- On a large existing table this rebuilds the indexes inside the migration's transaction, which
-- blocks writes to the outbox meanwhile: migrate in a quiet moment.
DROP INDEX postbox_outbox_claim;
DROP INDEX postbox_outbox_key_order;
DROP INDEX postbox_outbox_due;
DROP INDEX postbox_outbox_settled;
-- The claim: a partition's pending rows in id order.
CREATE INDEX postbox_outbox_claim ON postbox_outbox (partition_no, id) WHERE status = 'PENDING';
-- Which partitions have work due, the keys waiting for a retry, the end of a broker outage.
CREATE INDEX postbox_outbox_due ON postbox_outbox (partition_no, next_attempt_at) WHERE status = 'PENDING';
-- FAILED rows: the keys they hold back, the operator's list, the automatic re-drive.
CREATE INDEX postbox_outbox_failed ON postbox_outbox (partition_no, id) WHERE status = 'FAILED';
-- Retention.
CREATE INDEX postbox_outbox_settled ON postbox_outbox (dispatched_at) WHERE status IN ('DISPATCHED', 'DISCARDED');
