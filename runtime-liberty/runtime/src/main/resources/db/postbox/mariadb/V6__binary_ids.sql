-- Event ids, subscriptions and keys compare byte for byte, as on PostgreSQL and H2. Under the
-- server's default case-insensitive collation "ABC" and "abc" were one event id: the second was
-- skipped as a duplicate, or taken for a CONFLICT.
ALTER TABLE postbox_inbox
    MODIFY subscription VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    MODIFY event_id     VARCHAR(256) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    MODIFY event_key    VARCHAR(1024) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
ALTER TABLE postbox_inbox_attempt
    MODIFY subscription VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    MODIFY event_id     VARCHAR(256) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL;
ALTER TABLE postbox_inbox_pending
    MODIFY subscription VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    MODIFY event_id     VARCHAR(256) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    MODIFY event_key    VARCHAR(1024) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
ALTER TABLE postbox_inbox_counter
    MODIFY subscription VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL;
ALTER TABLE postbox_dead_letter
    MODIFY subscription VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    MODIFY event_id     VARCHAR(256) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
ALTER TABLE postbox_outbox
    MODIFY event_id     VARCHAR(256) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    MODIFY event_key    VARCHAR(1024) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
