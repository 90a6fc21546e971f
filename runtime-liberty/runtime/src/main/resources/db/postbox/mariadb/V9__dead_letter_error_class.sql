-- Dead letters are grouped by subscription, reason and the class of the error: the Java class
-- name a stored error starts with ("class: message", as handler failures are written; longer
-- than 255 characters: none, as in the code).
ALTER TABLE postbox_dead_letter ADD COLUMN error_class VARCHAR(255);
UPDATE postbox_dead_letter
   SET error_class = NULLIF(REGEXP_SUBSTR(error, '^[A-Za-z_$][A-Za-z0-9_$.]{0,254}(?=: )'), '')
 WHERE status = 'OPEN' AND error IS NOT NULL;

-- Keys, ids and subscriptions compare byte for byte, as in the inbox tables since V6: sequenced
-- subscriptions hold back "K" behind a letter of "K", not of "k".
ALTER TABLE postbox_dead_letter
    MODIFY subscription VARCHAR(255)  CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    MODIFY event_id     VARCHAR(256)  CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
    MODIFY event_key    VARCHAR(1024) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;

-- Sequenced subscriptions look up a key's open letters for every batch.
CREATE INDEX postbox_dead_letter_key ON postbox_dead_letter (subscription, event_key(191), status);
