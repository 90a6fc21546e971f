package dev.postbox.runtime.testing;

import java.io.PrintWriter;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.SQLTransientConnectionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * A connection pool's limit in front of a real data source, for tests: at most {@code size}
 * connections are open at once, and a caller waits at most {@code wait} milliseconds for one, then
 * fails as an application server's pool does when it is exhausted.
 */
public final class BoundedDataSource implements DataSource {

  private final DataSource target;
  private final Semaphore permits;
  private final long waitMillis;

  public BoundedDataSource(DataSource target, int size, long waitMillis) {
    this.target = target;
    this.permits = new Semaphore(size);
    this.waitMillis = waitMillis;
  }

  @Override
  public Connection getConnection() throws SQLException {
    try {
      if (!permits.tryAcquire(waitMillis, TimeUnit.MILLISECONDS)) {
        throw new SQLTransientConnectionException(
            "pool exhausted: no connection within " + waitMillis + " ms");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new SQLTransientConnectionException("interrupted waiting for a connection");
    }
    Connection real;
    try {
      real = target.getConnection();
    } catch (SQLException | RuntimeException e) {
      permits.release();
      throw e;
    }
    boolean[] closed = new boolean[1];
    return (Connection)
        Proxy.newProxyInstance(
            Connection.class.getClassLoader(),
            new Class<?>[] {Connection.class},
            (proxy, method, args) -> {
              if (method.getName().equals("close")) {
                synchronized (closed) {
                  if (!closed[0]) {
                    closed[0] = true;
                    try {
                      real.close();
                    } finally {
                      permits.release();
                    }
                  }
                }
                return null;
              }
              try {
                return method.invoke(real, args);
              } catch (InvocationTargetException e) {
                throw e.getCause();
              }
            });
  }

  @Override
  public Connection getConnection(String user, String password) throws SQLException {
    throw new SQLFeatureNotSupportedException("not in tests");
  }

  @Override
  public PrintWriter getLogWriter() {
    return null;
  }

  @Override
  public void setLogWriter(PrintWriter out) {}

  @Override
  public void setLoginTimeout(int seconds) {}

  @Override
  public int getLoginTimeout() {
    return 0;
  }

  @Override
  public Logger getParentLogger() throws SQLFeatureNotSupportedException {
    throw new SQLFeatureNotSupportedException();
  }

  @Override
  public <T> T unwrap(Class<T> iface) throws SQLException {
    throw new SQLException("not a wrapper");
  }

  @Override
  public boolean isWrapperFor(Class<?> iface) {
    return false;
  }
}
