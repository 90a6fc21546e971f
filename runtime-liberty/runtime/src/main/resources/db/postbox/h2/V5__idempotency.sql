-- Idempotency keys at the API edge (H2 2.x).
CREATE TABLE postbox_idempotency (
    scope             VARCHAR(200)  NOT NULL,
    idem_key          VARCHAR(200)  NOT NULL,
    fingerprint       VARCHAR(64)   NOT NULL,
    status            VARCHAR(16)   NOT NULL,
    claim_token       VARCHAR(64)   NOT NULL,
    claimed_until     TIMESTAMP(6) WITH TIME ZONE NOT NULL,
    response_status   INTEGER,
    response_location VARCHAR(2048),
    response_body     CHARACTER LARGE OBJECT,
    created_at        TIMESTAMP(6) WITH TIME ZONE NOT NULL,
    PRIMARY KEY (scope, idem_key)
);
CREATE INDEX postbox_idempotency_created ON postbox_idempotency (created_at);
