package dev.postbox.runtime;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * The caller's transaction, in which {@link Postbox#record} writes an outbox row next to the
 * business rows. The Jakarta wiring implements it with JTA; an application that runs its own JDBC
 * transactions implements it over its connection.
 */
public interface CallerTransaction {

  /**
   * Fails, saying why, unless a transaction is active that an event may be recorded in.
   *
   * @throws IllegalStateException no transaction, or one the event must not be recorded in
   */
  void checkActive();

  /**
   * The connection of the active transaction. Closing it gives it back to the transaction, as a
   * container's shared connection does; it must not commit.
   */
  Connection connection() throws SQLException;

  /** Whatever the caller does next, the active transaction must not commit. */
  void setRollbackOnly();

  /**
   * The value kept under {@code key} for the active transaction, created (and {@code afterCommit}
   * registered for it) on the first call. {@code afterCommit} runs only if the transaction commits,
   * after the commit.
   */
  <T> T perTransaction(Object key, Supplier<T> create, Consumer<T> afterCommit);
}
