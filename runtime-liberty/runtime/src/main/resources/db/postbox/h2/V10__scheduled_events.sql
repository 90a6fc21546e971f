-- Scheduled, cancellable and expiring events: nothing to do on H2, whose status column has no CHECK
-- and whose postbox_outbox_due (status, next_attempt_at) index finds the due scheduled rows. Kept so
-- every database has the same versions.
SELECT 1;
