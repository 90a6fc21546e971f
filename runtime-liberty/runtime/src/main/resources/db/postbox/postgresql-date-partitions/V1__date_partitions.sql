-- Date-partitioned retention (PostgreSQL, opt-in: postbox.date-partitions=true). Applied once, by a
-- Flyway history of its own (postbox_date_partitions_history), after Postbox's own migrations.
--
-- The outbox and the inbox become tables partitioned by RANGE (bucket). A bucket is a numbered
-- period (postbox.date-partitions.interval, a day by default): rows go to the current bucket, new
-- buckets' partitions are created ahead of time, and a bucket's partition is dropped once every row
-- in it is settled and older than the retention. Dropping a partition frees its pages at once: no
-- dead rows, no bloated indexes, no vacuum debt, unlike batched DELETEs.
--
-- The existing tables become bucket 0's partition as they are: no row is copied. Their primary
-- keys are rebuilt to include the bucket (an index build each), so convert in a quiet moment.
--
-- Uniqueness. A unique index on a partitioned table must include the partition key, so the inbox's
-- key becomes (subscription, event_id, bucket): it catches a copy recorded in the same bucket. A
-- copy recorded in another bucket is caught by the recording transaction itself: it takes the
-- shared advisory lock (0x706F7374, 1) and looks for the ids in the earlier buckets before it
-- inserts, and the bucket only advances under that lock held exclusively. So every transaction that
-- wrote to the old bucket has committed before any transaction writes to the new one, and the look
-- sees their rows (retention.DatePartitions). The outbox's event-id key is checked within a bucket
-- only: Postbox's ids are random UUIDs, and a consumer's inbox skips a copy whatever its bucket.

CREATE TABLE postbox_bucket (
    table_name     VARCHAR(64)  PRIMARY KEY,
    current_bucket INTEGER      NOT NULL,
    opened_at      TIMESTAMPTZ  NOT NULL,
    interval_secs  BIGINT       NOT NULL
);
INSERT INTO postbox_bucket (table_name, current_bucket, opened_at, interval_secs)
VALUES ('postbox_outbox', 1, clock_timestamp(), 86400),
       ('postbox_inbox', 1, clock_timestamp(), 86400);

-- The bucket a new row goes to; read by the tables' defaults, so every insert, Postbox's or an
-- application's own, lands in the current bucket without naming it.
CREATE FUNCTION postbox_current_bucket(t VARCHAR) RETURNS INTEGER LANGUAGE sql STABLE
AS 'SELECT current_bucket FROM postbox_bucket WHERE table_name = t';

-- The outbox.
ALTER TABLE postbox_outbox RENAME TO postbox_outbox_b0;
ALTER TABLE postbox_outbox_b0 ALTER COLUMN id DROP IDENTITY;
ALTER TABLE postbox_outbox_b0 ADD COLUMN bucket INTEGER NOT NULL DEFAULT 0;
ALTER TABLE postbox_outbox_b0 DROP CONSTRAINT postbox_outbox_pkey;
ALTER TABLE postbox_outbox_b0 ADD CONSTRAINT postbox_outbox_b0_pkey PRIMARY KEY (id, bucket);
ALTER TABLE postbox_outbox_b0 DROP CONSTRAINT postbox_outbox_event_id;
ALTER TABLE postbox_outbox_b0 ADD CONSTRAINT postbox_outbox_b0_event_id UNIQUE (event_id, bucket);
ALTER INDEX postbox_outbox_pending RENAME TO postbox_outbox_b0_pending;
ALTER INDEX postbox_outbox_pending_due RENAME TO postbox_outbox_b0_pending_due;
ALTER INDEX postbox_outbox_failed RENAME TO postbox_outbox_b0_failed;
ALTER INDEX postbox_outbox_settled_at RENAME TO postbox_outbox_b0_settled_at;
ALTER INDEX postbox_outbox_scheduled RENAME TO postbox_outbox_b0_scheduled;
ALTER INDEX postbox_outbox_scheduled_key RENAME TO postbox_outbox_b0_scheduled_key;
ALTER INDEX postbox_outbox_ended_at RENAME TO postbox_outbox_b0_ended_at;
ALTER TABLE postbox_outbox_b0 ADD CONSTRAINT postbox_outbox_b0_bucket CHECK (bucket < 1);

CREATE TABLE postbox_outbox (
    id              BIGINT        GENERATED ALWAYS AS IDENTITY,
    event_id        VARCHAR(256)  NOT NULL,
    destination     VARCHAR(512)  NOT NULL,
    partition_no    INTEGER       NOT NULL,
    event_key       VARCHAR(1024),
    event_type      VARCHAR(1024) NOT NULL,
    source          VARCHAR(1024) NOT NULL,
    subject         VARCHAR(1024),
    content_type    VARCHAR(1024),
    headers         TEXT          NOT NULL,
    payload         BYTEA         NOT NULL,
    event_time      TIMESTAMPTZ   NOT NULL,
    created_at      TIMESTAMPTZ   NOT NULL,
    status          VARCHAR(16)   NOT NULL,
    attempts        INTEGER       NOT NULL DEFAULT 0,
    next_attempt_at TIMESTAMPTZ   NOT NULL,
    dispatched_at   TIMESTAMPTZ,
    last_error      VARCHAR(4000),
    redrives        INT           NOT NULL DEFAULT 0,
    -- V11's (written before it, like V10's CHECK below)
    due_at          TIMESTAMPTZ,
    bucket          INTEGER       NOT NULL DEFAULT postbox_current_bucket('postbox_outbox'),
    CONSTRAINT postbox_outbox_pkey PRIMARY KEY (id, bucket),
    CONSTRAINT postbox_outbox_event_id UNIQUE (event_id, bucket),
    -- V10's statuses (this file was written with V9's; an outbox converted then got V10 as a
    -- partitioned table, and a table converted now carries V10's CHECK into bucket 0)
    CONSTRAINT postbox_outbox_status CHECK (status IN ('PENDING',
        'DISPATCHED', 'FAILED', 'DISCARDED', 'SCHEDULED', 'SCHEDULED_KEY', 'CANCELLED', 'EXPIRED'))
) PARTITION BY RANGE (bucket);
-- V8's partial indexes, per partition.
CREATE INDEX postbox_outbox_pending ON postbox_outbox (partition_no, id) WHERE status = 'PENDING';
CREATE INDEX postbox_outbox_pending_due ON postbox_outbox (partition_no, next_attempt_at) WHERE status = 'PENDING';
CREATE INDEX postbox_outbox_failed ON postbox_outbox (partition_no, id) WHERE status = 'FAILED';
CREATE INDEX postbox_outbox_settled_at ON postbox_outbox (dispatched_at) WHERE status IN ('DISPATCHED', 'DISCARDED');
-- V10's indexes for scheduled rows.
CREATE INDEX postbox_outbox_scheduled ON postbox_outbox (next_attempt_at) WHERE status IN ('SCHEDULED', 'SCHEDULED_KEY');
CREATE INDEX postbox_outbox_scheduled_key ON postbox_outbox (partition_no, event_key, id) WHERE status = 'SCHEDULED_KEY';
CREATE INDEX postbox_outbox_ended_at ON postbox_outbox (dispatched_at) WHERE status IN ('CANCELLED', 'EXPIRED');
-- The ids go on from where the old table's left off.
SELECT setval(pg_get_serial_sequence('postbox_outbox', 'id'),
              COALESCE((SELECT MAX(id) FROM postbox_outbox_b0), 0) + 1, false);
ALTER TABLE postbox_outbox ATTACH PARTITION postbox_outbox_b0 FOR VALUES FROM (MINVALUE) TO (1);
ALTER TABLE postbox_outbox_b0 DROP CONSTRAINT postbox_outbox_b0_bucket;
CREATE TABLE postbox_outbox_b1 PARTITION OF postbox_outbox FOR VALUES FROM (1) TO (2);
CREATE TABLE postbox_outbox_b2 PARTITION OF postbox_outbox FOR VALUES FROM (2) TO (3);

-- The inbox.
ALTER TABLE postbox_inbox RENAME TO postbox_inbox_b0;
ALTER TABLE postbox_inbox_b0 ADD COLUMN bucket INTEGER NOT NULL DEFAULT 0;
ALTER TABLE postbox_inbox_b0 DROP CONSTRAINT postbox_inbox_pkey;
ALTER TABLE postbox_inbox_b0 ADD CONSTRAINT postbox_inbox_b0_pkey PRIMARY KEY (subscription, event_id, bucket);
ALTER INDEX postbox_inbox_received RENAME TO postbox_inbox_b0_received;
ALTER TABLE postbox_inbox_b0 ADD CONSTRAINT postbox_inbox_b0_bucket CHECK (bucket < 1);

CREATE TABLE postbox_inbox (
    subscription VARCHAR(255) NOT NULL,
    event_id     VARCHAR(256) NOT NULL,
    event_key    VARCHAR(1024),
    event_type   VARCHAR(1024),
    fingerprint  CHAR(64)     NOT NULL,
    status       VARCHAR(16)  NOT NULL,
    received_at  TIMESTAMPTZ  NOT NULL,
    processed_at TIMESTAMPTZ,
    bucket       INTEGER      NOT NULL DEFAULT postbox_current_bucket('postbox_inbox'),
    CONSTRAINT postbox_inbox_pkey PRIMARY KEY (subscription, event_id, bucket)
) PARTITION BY RANGE (bucket);
CREATE INDEX postbox_inbox_received ON postbox_inbox (received_at);
-- Rows a deferred worker has yet to run: a bucket holding one is not dropped. Small, as the queue.
CREATE INDEX postbox_inbox_received_only ON postbox_inbox (status) WHERE status = 'RECEIVED';
ALTER TABLE postbox_inbox ATTACH PARTITION postbox_inbox_b0 FOR VALUES FROM (MINVALUE) TO (1);
ALTER TABLE postbox_inbox_b0 DROP CONSTRAINT postbox_inbox_b0_bucket;
CREATE TABLE postbox_inbox_b1 PARTITION OF postbox_inbox FOR VALUES FROM (1) TO (2);
CREATE TABLE postbox_inbox_b2 PARTITION OF postbox_inbox FOR VALUES FROM (2) TO (3);
