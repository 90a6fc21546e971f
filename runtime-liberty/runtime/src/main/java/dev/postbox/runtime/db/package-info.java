/**
 * The database: the {@link dev.postbox.runtime.db.Dialect} (every statement that differs between
 * PostgreSQL, MariaDB and H2), the schema's {@link dev.postbox.runtime.db.Migrations}, {@link
 * dev.postbox.runtime.db.Transactions} over JDBC or JTA, and the durability check at start.
 */
package dev.postbox.runtime.db;
