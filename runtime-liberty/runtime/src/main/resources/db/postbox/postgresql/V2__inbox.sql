-- Postbox inbox and dead letters (PostgreSQL).
CREATE TABLE postbox_inbox (
    subscription VARCHAR(255) NOT NULL,
    event_id     VARCHAR(256) NOT NULL,
    event_key    VARCHAR(1024),
    event_type   VARCHAR(1024),
    fingerprint  CHAR(64)     NOT NULL,
    status       VARCHAR(16)  NOT NULL,
    received_at  TIMESTAMPTZ  NOT NULL,
    processed_at TIMESTAMPTZ,
    PRIMARY KEY (subscription, event_id)
);
-- Retention deletes by age.
CREATE INDEX postbox_inbox_received ON postbox_inbox (received_at);

-- Failed attempts per delivery, kept apart from the inbox row: they are written in a transaction of
-- their own, after the handler's transaction rolled back, and survive consumer restarts (Kafka's
-- own delivery count does not).
CREATE TABLE postbox_inbox_attempt (
    subscription VARCHAR(255)  NOT NULL,
    event_id     VARCHAR(256)  NOT NULL,
    attempts     INTEGER       NOT NULL,
    last_error   VARCHAR(4000),
    updated_at   TIMESTAMPTZ   NOT NULL,
    PRIMARY KEY (subscription, event_id)
);

CREATE TABLE postbox_dead_letter (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    subscription VARCHAR(255)  NOT NULL,
    event_id     VARCHAR(256),
    event_key    VARCHAR(1024),
    event_type   VARCHAR(1024),
    source       VARCHAR(1024),
    subject      VARCHAR(1024),
    content_type VARCHAR(1024),
    event_time   TIMESTAMPTZ,
    reason       VARCHAR(32)   NOT NULL,
    error        VARCHAR(4000),
    attempts     INTEGER       NOT NULL,
    headers      TEXT          NOT NULL,
    payload      BYTEA         NOT NULL,
    metadata     TEXT          NOT NULL,
    status       VARCHAR(16)   NOT NULL,
    created_at   TIMESTAMPTZ   NOT NULL,
    settled_at   TIMESTAMPTZ
);
CREATE INDEX postbox_dead_letter_open ON postbox_dead_letter (status, subscription, id);
