-- Nothing to do here: the partial indexes of PostgreSQL's V8 have no equivalent on this database.
-- Kept so every database has the same versions.
SELECT 1;
