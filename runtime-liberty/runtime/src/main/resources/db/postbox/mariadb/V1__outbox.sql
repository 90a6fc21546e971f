-- Postbox outbox, relay leases and relay instances (MariaDB 10.6+ / MySQL 8; DATETIME(6) columns hold UTC).
CREATE TABLE postbox_outbox (
    id              BIGINT AUTO_INCREMENT PRIMARY KEY,
    event_id        VARCHAR(256)  NOT NULL,
    destination     VARCHAR(512)  NOT NULL,
    partition_no    INTEGER       NOT NULL,
    event_key       VARCHAR(1024),
    event_type      VARCHAR(1024) NOT NULL,
    source          VARCHAR(1024) NOT NULL,
    subject         VARCHAR(1024),
    content_type    VARCHAR(1024),
    headers         TEXT          NOT NULL,
    payload         LONGBLOB        NOT NULL,
    event_time      DATETIME(6)   NOT NULL,
    created_at      DATETIME(6)   NOT NULL,
    status          VARCHAR(16)   NOT NULL,
    attempts        INTEGER       NOT NULL DEFAULT 0,
    next_attempt_at DATETIME(6)   NOT NULL,
    dispatched_at   DATETIME(6),
    last_error      VARCHAR(4000),
    CONSTRAINT postbox_outbox_event_id UNIQUE (event_id),
    CONSTRAINT postbox_outbox_status CHECK (status IN ('PENDING', 'DISPATCHED', 'FAILED', 'DISCARDED'))
) ENGINE=InnoDB;
-- The claim query: pending rows of one partition, in id order.
CREATE INDEX postbox_outbox_claim ON postbox_outbox (partition_no, status, id);
-- "Is an earlier row of this key blocked?" inside the claim query.
CREATE INDEX postbox_outbox_key_order ON postbox_outbox (partition_no, event_key(255), id);
-- Which partitions have work due, and the lag gauges.
CREATE INDEX postbox_outbox_due ON postbox_outbox (status, next_attempt_at);
-- Retention.
CREATE INDEX postbox_outbox_settled ON postbox_outbox (status, dispatched_at);

CREATE TABLE postbox_lease (
    partition_no INTEGER      PRIMARY KEY,
    owner        VARCHAR(200),
    lease_until  DATETIME(6),
    heartbeat_at DATETIME(6),
    version      BIGINT       NOT NULL DEFAULT 0
) ENGINE=InnoDB;

CREATE TABLE postbox_relay_instance (
    instance_id  VARCHAR(200) PRIMARY KEY,
    heartbeat_at DATETIME(6)  NOT NULL
) ENGINE=InnoDB;
