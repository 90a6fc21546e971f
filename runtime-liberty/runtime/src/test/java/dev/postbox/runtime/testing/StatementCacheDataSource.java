package dev.postbox.runtime.testing;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import javax.sql.DataSource;

/**
 * A real data source behind what an application server's statement cache does on close, for tests.
 * Liberty's wrapper calls {@code getMoreResults()} on every prepared statement it closes, before it
 * caches it; MariaDB Connector/J throws a {@link NullPointerException} there for a statement that
 * was prepared and never executed. Plain JDBC never calls it, so without this wrapper the engine's
 * contracts could not see that failure (which once stopped every lease heartbeat on MariaDB under
 * Liberty).
 */
public final class StatementCacheDataSource {

  private StatementCacheDataSource() {}

  /** The data source, with each prepared statement closed as Liberty closes it. */
  public static DataSource wrap(DataSource target) {
    return proxy(
        DataSource.class,
        target,
        (m, result) ->
            result instanceof Connection c && m.getName().equals("getConnection")
                ? proxy(Connection.class, c, StatementCacheDataSource::statements)
                : result);
  }

  private static Object statements(Method m, Object result) {
    if (result instanceof PreparedStatement ps && m.getName().equals("prepareStatement")) {
      return Proxy.newProxyInstance(
          StatementCacheDataSource.class.getClassLoader(),
          new Class<?>[] {PreparedStatement.class},
          (proxy, method, args) -> {
            if (method.getName().equals("close") && !ps.isClosed()) {
              ps.getMoreResults();
            }
            return invoke(method, ps, args);
          });
    }
    return result;
  }

  private interface After {
    Object apply(Method m, Object result) throws Exception;
  }

  @SuppressWarnings("unchecked")
  private static <T> T proxy(Class<T> type, T target, After after) {
    InvocationHandler h =
        (proxy, method, args) -> after.apply(method, invoke(method, target, args));
    return (T)
        Proxy.newProxyInstance(
            StatementCacheDataSource.class.getClassLoader(), new Class<?>[] {type}, h);
  }

  private static Object invoke(Method m, Object target, Object[] args) throws Throwable {
    try {
      return m.invoke(target, args);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }
}
