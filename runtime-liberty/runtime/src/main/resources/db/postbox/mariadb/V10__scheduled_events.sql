-- Scheduled, cancellable and expiring events (docs/outbox.md, "Scheduled and expiring events"): the
-- new statuses. A scheduled row waits as SCHEDULED or SCHEDULED_KEY with its due time in
-- next_attempt_at; postbox_outbox_due (status, next_attempt_at) finds the due ones, outside the
-- claim's range of PENDING rows. CANCELLED and EXPIRED rows are settled; retention deletes them.
ALTER TABLE postbox_outbox DROP CONSTRAINT postbox_outbox_status;
ALTER TABLE postbox_outbox ADD CONSTRAINT postbox_outbox_status CHECK (status IN ('PENDING',
    'DISPATCHED', 'FAILED', 'DISCARDED', 'SCHEDULED', 'SCHEDULED_KEY', 'CANCELLED', 'EXPIRED'));
