-- The due time of a scheduled row that does not hold its key (Schedule.after/at without
-- inKeyOrder), kept once it falls due: the claim places such a row among its key's other due rows
-- by due time (due-then-id), where every other row keeps its id order (docs/outbox.md, "Scheduled
-- and expiring events"). NULL for every other row.
ALTER TABLE postbox_outbox ADD COLUMN due_at TIMESTAMPTZ NULL;
