-- Deferred mode: events received, recorded and acknowledged, waiting for a worker to run the
-- handler. Kept apart from postbox_inbox so the workers' queue stays small while the dedup table
-- holds days of ids.
CREATE TABLE postbox_inbox_pending (
    seq             BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    subscription    VARCHAR(255)  NOT NULL,
    event_id        VARCHAR(256)  NOT NULL,
    event_key       VARCHAR(1024),
    event_type      VARCHAR(1024) NOT NULL,
    source          VARCHAR(1024) NOT NULL,
    subject         VARCHAR(1024),
    content_type    VARCHAR(1024),
    event_time      TIMESTAMPTZ   NOT NULL,
    headers         TEXT          NOT NULL,
    payload         BYTEA         NOT NULL,
    metadata        TEXT          NOT NULL,
    attempts        INTEGER       NOT NULL,
    last_error      VARCHAR(4000),
    next_attempt_at TIMESTAMPTZ   NOT NULL,
    head            BOOLEAN       NOT NULL,
    UNIQUE (subscription, event_id)
);
-- head: the oldest pending event of its key (or an event without a key). Only heads are claimed,
-- so a key's events run one after another; when a head leaves, the next event of its key is
-- promoted. Workers scan only heads, however deep one key's backlog is.
CREATE INDEX postbox_inbox_pending_claim ON postbox_inbox_pending (subscription, head, seq);
-- "Which is the oldest pending event of this key?", asked on every promotion.
CREATE INDEX postbox_inbox_pending_key ON postbox_inbox_pending (subscription, event_key, seq);

-- Automatic re-drive of dead letters: how often, and when last.
ALTER TABLE postbox_dead_letter ADD COLUMN redrives INTEGER NOT NULL DEFAULT 0;
ALTER TABLE postbox_dead_letter ADD COLUMN last_redrive_at TIMESTAMPTZ;
