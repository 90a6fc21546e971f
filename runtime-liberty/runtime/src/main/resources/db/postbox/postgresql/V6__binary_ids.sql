-- Nothing to do here: this database compares ids byte for byte already (MariaDB's V6 makes it
-- do the same). Kept so every database has the same versions.
SELECT 1;
