package dev.postbox.spi;

import java.util.Map;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.TreeMap;

/** Finds {@link BrokerProvider}s with {@link ServiceLoader} and opens brokers by name. */
public final class Brokers {

  private Brokers() {}

  /**
   * Opens a broker with the provider of that name, found on the context class loader (which is the
   * application's in an app server) or, failing that, on this class's loader.
   *
   * @throws ConfigException no provider has that name (the message lists those that exist), or the
   *     provider rejected the configuration
   */
  public static Broker open(String name, Map<String, String> config) {
    return provider(name).open(Map.copyOf(config));
  }

  /** The named provider; see {@link #open}. */
  public static BrokerProvider provider(String name) {
    Map<String, BrokerProvider> providers = providers();
    BrokerProvider provider = providers.get(name);
    if (provider == null) {
      throw new ConfigException(
          name,
          "no broker adapter named '"
              + name
              + "' is on the class path; available: "
              + providers.keySet()
              + ". Add the adapter module (e.g. postbox-broker-"
              + name
              + ") as a dependency.");
    }
    return provider;
  }

  /** The names of every provider on the class path, sorted. */
  public static Set<String> available() {
    return providers().keySet();
  }

  private static Map<String, BrokerProvider> providers() {
    Map<String, BrokerProvider> found = new TreeMap<>();
    ClassLoader context = Thread.currentThread().getContextClassLoader();
    for (ClassLoader loader : new ClassLoader[] {context, Brokers.class.getClassLoader()}) {
      if (loader == null) {
        continue;
      }
      for (BrokerProvider p : ServiceLoader.load(BrokerProvider.class, loader)) {
        BrokerProvider other = found.putIfAbsent(p.name(), p);
        if (other != null && other.getClass() != p.getClass()) {
          throw new ConfigException(
              p.name(),
              "two broker adapters claim the name '"
                  + p.name()
                  + "': "
                  + other.getClass().getName()
                  + " and "
                  + p.getClass().getName());
        }
      }
    }
    return found;
  }
}
