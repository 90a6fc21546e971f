-- Idempotency keys at the API edge (DATETIME(6) columns hold UTC; keys compare byte for byte).
CREATE TABLE postbox_idempotency (
    scope             VARCHAR(200)  CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    idem_key          VARCHAR(200)  CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    fingerprint       VARCHAR(64)   NOT NULL,
    status            VARCHAR(16)   NOT NULL,
    claim_token       VARCHAR(64)   NOT NULL,
    claimed_until     DATETIME(6)   NOT NULL,
    response_status   INTEGER,
    response_location VARCHAR(2048),
    response_body     MEDIUMTEXT,
    created_at        DATETIME(6)   NOT NULL,
    PRIMARY KEY (scope, idem_key),
    CONSTRAINT postbox_idempotency_status CHECK (status IN ('IN_FLIGHT', 'DONE'))
) ENGINE=InnoDB;
CREATE INDEX postbox_idempotency_created ON postbox_idempotency (created_at);
