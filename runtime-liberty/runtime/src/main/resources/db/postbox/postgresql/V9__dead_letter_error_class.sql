-- Dead letters are grouped by subscription, reason and the class of the error: the Java class
-- name a stored error starts with ("class: message", as handler failures are written; longer
-- than 255 characters: none, as in the code).
ALTER TABLE postbox_dead_letter ADD COLUMN error_class VARCHAR(255);
UPDATE postbox_dead_letter
   SET error_class = substring(error from '^([A-Za-z_$][A-Za-z0-9_$.]{0,254}): ')
 WHERE status = 'OPEN' AND error IS NOT NULL;

-- Sequenced subscriptions look up a key's open letters for every batch. A hash index: a key of
-- 1,024 characters can be longer than a btree entry may be (2,704 bytes).
CREATE INDEX postbox_dead_letter_key ON postbox_dead_letter USING hash (event_key);
