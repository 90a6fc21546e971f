-- An application's own first migration, found by its own Flyway at the default location.
CREATE TABLE it_app_order (id BIGINT PRIMARY KEY);
