package dev.postbox.spi.testing;

/**
 * What every adapter's {@link TestBroker} shares: its provider, and the rule that only a broker of
 * the caller's own ({@link TestBroker.Provider#start()}) may be restarted, stopped or shut down;
 * one from {@link TestBroker.Provider#shared()} closes only the clients it opened for the caller.
 */
public abstract class OfferedTestBroker implements TestBroker {

  private final Provider provider;
  private final boolean own;

  /**
   * @param own true for a broker of the caller's own, false for the JVM's shared one
   */
  protected OfferedTestBroker(Provider provider, boolean own) {
    this.provider = provider;
    this.own = own;
  }

  @Override
  public final Provider provider() {
    return provider;
  }

  @Override
  public final void restart() {
    ownOnly("restarted");
    restartOwn();
  }

  @Override
  public final void stop() {
    ownOnly("stopped");
    stopOwn();
  }

  @Override
  public final void close() {
    closeClients();
    if (own) {
      closeOwn();
    }
  }

  /** {@link #restart()} of a broker of the caller's own. */
  protected abstract void restartOwn();

  /** {@link #stop()} of a broker of the caller's own. */
  protected abstract void stopOwn();

  /** Shuts down a broker of the caller's own. */
  protected abstract void closeOwn();

  /** Closes the clients this object opened (e.g. for {@link #sendRaw}); nothing by default. */
  protected void closeClients() {}

  private void ownOnly(String what) {
    if (!own) {
      throw new IllegalStateException(
          "the shared " + provider.name() + " test broker is never " + what);
    }
  }
}
