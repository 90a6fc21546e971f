-- The automatic re-drive of FAILED outbox rows counts how often it sent a row again.
ALTER TABLE postbox_outbox ADD COLUMN redrives INT DEFAULT 0 NOT NULL;
