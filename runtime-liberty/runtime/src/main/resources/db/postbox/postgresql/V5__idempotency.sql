-- Idempotency keys at the API edge: one row per (scope, key), claimed IN_FLIGHT by the request
-- that owns it, DONE with the first answer in the same transaction as that request's effects.
CREATE TABLE postbox_idempotency (
    scope             VARCHAR(200)  NOT NULL,
    idem_key          VARCHAR(200)  NOT NULL,
    fingerprint       VARCHAR(64)   NOT NULL,
    status            VARCHAR(16)   NOT NULL,
    claim_token       VARCHAR(64)   NOT NULL,
    claimed_until     TIMESTAMPTZ   NOT NULL,
    response_status   INTEGER,
    response_location VARCHAR(2048),
    response_body     TEXT,
    created_at        TIMESTAMPTZ   NOT NULL,
    PRIMARY KEY (scope, idem_key),
    CONSTRAINT postbox_idempotency_status CHECK (status IN ('IN_FLIGHT', 'DONE'))
);
CREATE INDEX postbox_idempotency_created ON postbox_idempotency (created_at);
