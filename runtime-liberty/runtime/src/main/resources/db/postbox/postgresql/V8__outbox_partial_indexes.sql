-- Partial indexes for the outbox (PostgreSQL). An UPDATE that changes an indexed column adds an
-- entry to every index whose predicate the new row version meets. Marking a row DISPATCHED used to
-- add one to six indexes; with these, three (the key, the event id, retention's). Each index now
-- holds only the rows its queries look for, so the claim, the waiting keys and the poll read
-- indexes the size of the backlog, not of the table. Measured by RelayBenchmark (docs/benchmarks.md).
--
-- The new indexes are built first and the old ones dropped last, in this one transaction: the
-- builds block writes to the outbox (not reads) while they scan the table, and the drops take the
-- table's exclusive lock only for the moment before the commit. On a large outbox, migrate in a
-- quiet moment.
--
-- The claim: a partition's pending rows in id order.
CREATE INDEX postbox_outbox_pending ON postbox_outbox (partition_no, id) WHERE status = 'PENDING';
-- Which partitions have work due (a probe per partition), the keys waiting out a back-off.
CREATE INDEX postbox_outbox_pending_due ON postbox_outbox (partition_no, next_attempt_at) WHERE status = 'PENDING';
-- FAILED rows: the keys they hold back, the operator's list, the automatic re-drive.
CREATE INDEX postbox_outbox_failed ON postbox_outbox (partition_no, id) WHERE status = 'FAILED';
-- Retention.
CREATE INDEX postbox_outbox_settled_at ON postbox_outbox (dispatched_at) WHERE status IN ('DISPATCHED', 'DISCARDED');
DROP INDEX postbox_outbox_claim;
DROP INDEX postbox_outbox_key_order;
DROP INDEX postbox_outbox_due;
DROP INDEX postbox_outbox_settled;
