-- Scheduled, cancellable and expiring events (docs/outbox.md, "Scheduled and expiring events").
--
-- A scheduled row waits as SCHEDULED (or SCHEDULED_KEY, which holds its key's later rows back until
-- it is published) with its due time in next_attempt_at, outside the claim's index: a million of
-- them cost the claim of due rows nothing. The relay that holds the row's partition turns it PENDING
-- when it falls due. A cancelled row ends CANCELLED, an expired one EXPIRED; both are settled, as
-- DISPATCHED and DISCARDED rows are, and retention deletes them.
ALTER TABLE postbox_outbox DROP CONSTRAINT postbox_outbox_status;
ALTER TABLE postbox_outbox ADD CONSTRAINT postbox_outbox_status CHECK (status IN ('PENDING',
    'DISPATCHED', 'FAILED', 'DISCARDED', 'SCHEDULED', 'SCHEDULED_KEY', 'CANCELLED', 'EXPIRED'));
-- Which scheduled rows are due (a range that ends at now), the next due time, the scheduled count.
CREATE INDEX postbox_outbox_scheduled ON postbox_outbox (next_attempt_at) WHERE status IN ('SCHEDULED', 'SCHEDULED_KEY');
-- The keys a SCHEDULED_KEY row holds back, read by the claim's look for waiting keys.
CREATE INDEX postbox_outbox_scheduled_key ON postbox_outbox (partition_no, event_key, id) WHERE status = 'SCHEDULED_KEY';
-- Retention of cancelled and expired rows.
CREATE INDEX postbox_outbox_ended_at ON postbox_outbox (dispatched_at) WHERE status IN ('CANCELLED', 'EXPIRED');
