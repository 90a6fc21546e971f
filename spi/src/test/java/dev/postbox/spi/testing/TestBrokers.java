package dev.postbox.spi.testing;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.ServiceLoader;
import java.util.stream.Collectors;

/**
 * The test brokers on the class path: every {@link TestBroker.Provider} an adapter's test-jar
 * registers. Tests iterate over {@link #all()} instead of naming adapters.
 */
public final class TestBrokers {

  private TestBrokers() {}

  /** Every registered provider, by name. */
  public static List<TestBroker.Provider> all() {
    List<TestBroker.Provider> all = new ArrayList<>();
    ServiceLoader.load(TestBroker.Provider.class).forEach(all::add);
    all.sort(Comparator.comparing(TestBroker.Provider::name));
    for (int i = 1; i < all.size(); i++) {
      if (all.get(i).name().equals(all.get(i - 1).name())) {
        throw new IllegalStateException("two test brokers named '" + all.get(i).name() + "'");
      }
    }
    return all;
  }

  /** The registered provider named {@code name}. */
  public static TestBroker.Provider named(String name) {
    return all().stream()
        .filter(p -> p.name().equals(name))
        .findFirst()
        .orElseThrow(
            () ->
                new IllegalArgumentException(
                    "no test broker '"
                        + name
                        + "'; registered: "
                        + all().stream()
                            .map(TestBroker.Provider::name)
                            .collect(Collectors.joining(", "))));
  }

  /** The providers that keep per-key order. */
  public static List<TestBroker.Provider> ordered() {
    return all().stream().filter(TestBroker.Provider::ordered).toList();
  }

  /** One provider per adapter: the variant named after the adapter. */
  public static List<TestBroker.Provider> adapters() {
    return all().stream().filter(p -> p.name().equals(p.adapter())).toList();
  }
}
