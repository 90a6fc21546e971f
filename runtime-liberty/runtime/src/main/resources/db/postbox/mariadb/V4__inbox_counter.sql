-- Durable per-subscription counts, written in the transaction that records the deliveries: unlike
-- the in-memory metrics they survive restarts and crashes, so "how many duplicates did the inbox
-- reject" has an answer across a server's lifetimes.
CREATE TABLE postbox_inbox_counter (
    subscription VARCHAR(255) PRIMARY KEY,
    duplicates   BIGINT       NOT NULL
) ENGINE=InnoDB;
