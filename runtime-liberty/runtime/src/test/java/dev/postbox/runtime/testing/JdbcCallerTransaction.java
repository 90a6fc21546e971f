package dev.postbox.runtime.testing;

import dev.postbox.runtime.CallerTransaction;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import java.util.function.Supplier;

/** The application's own JDBC transaction; after-commit work runs after {@link #commit}. */
public final class JdbcCallerTransaction implements CallerTransaction, AutoCloseable {
  private final Connection c;
  private final Map<Object, Object> values = new HashMap<>();
  private final List<Runnable> afterCommit = new ArrayList<>();
  private boolean active = true;

  public JdbcCallerTransaction(Connection c) throws SQLException {
    this.c = c;
    c.setAutoCommit(false);
  }

  @Override
  public void checkActive() {
    if (!active) {
      throw new IllegalStateException("no transaction is active");
    }
  }

  @Override
  public Connection connection() {
    // closing it leaves the transaction's connection open
    return (Connection)
        Proxy.newProxyInstance(
            Connection.class.getClassLoader(),
            new Class<?>[] {Connection.class},
            (proxy, method, args) -> {
              if (method.getName().equals("close")) {
                return null;
              }
              try {
                return method.invoke(c, args);
              } catch (java.lang.reflect.InvocationTargetException e) {
                throw e.getCause();
              }
            });
  }

  @Override
  public void setRollbackOnly() {
    active = false;
  }

  @Override
  @SuppressWarnings("unchecked")
  public <T> T perTransaction(Object key, Supplier<T> create, Consumer<T> after) {
    return (T)
        values.computeIfAbsent(
            key,
            k -> {
              T value = create.get();
              afterCommit.add(() -> after.accept(value));
              return value;
            });
  }

  public void commit() throws SQLException {
    c.commit();
    active = false;
    afterCommit.forEach(Runnable::run);
  }

  public void rollback() throws SQLException {
    c.rollback();
    active = false;
  }

  @Override
  public void close() throws SQLException {
    c.close();
  }
}
