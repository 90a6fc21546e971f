package dev.postbox.spi.testing;

import dev.postbox.spi.Broker;
import dev.postbox.spi.Brokers;
import dev.postbox.spi.Consumer;
import dev.postbox.spi.Delivery;
import dev.postbox.spi.Subscription;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * A consumer in a process of its own that takes deliveries, never settles them, and waits to be
 * killed with SIGKILL: a real crash, with no close, no ack and no goodbye to the broker. Any
 * adapter's crash test uses it through {@link #holdAndKill}.
 */
public final class CrashVictim {

  private CrashVictim() {}

  /**
   * Starts a victim JVM on the test class path, waits until it holds {@code count} deliveries,
   * kills it with SIGKILL and returns the ids it held.
   *
   * @param provider the broker provider's name
   * @param config the provider's configuration
   */
  public static Set<String> holdAndKill(
      String provider, Map<String, String> config, String destination, String group, int count)
      throws Exception {
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    command.add("-cp");
    command.add(System.getProperty("java.class.path"));
    command.add(CrashVictim.class.getName());
    command.add(provider);
    command.add(destination);
    command.add(group);
    command.add(Integer.toString(count));
    config.forEach((k, v) -> command.add(k + "=" + v));
    Process victim = new ProcessBuilder(command).redirectErrorStream(true).start();
    try {
      return awaitHolding(victim).get(120, TimeUnit.SECONDS);
    } finally {
      victim.destroyForcibly(); // SIGKILL on Unix
      victim.waitFor(30, TimeUnit.SECONDS);
    }
  }

  /** Arguments: provider, destination, group, count, then {@code key=value} config pairs. */
  public static void main(String[] args) throws InterruptedException {
    Map<String, String> config = new HashMap<>();
    for (int i = 4; i < args.length; i++) {
      int eq = args[i].indexOf('=');
      config.put(args[i].substring(0, eq), args[i].substring(eq + 1));
    }
    Broker broker = Brokers.open(args[0], config);
    Consumer consumer = broker.subscribe(Subscription.of(args[1], args[2]));
    int count = Integer.parseInt(args[3]);
    List<String> held = new ArrayList<>();
    while (held.size() < count) {
      for (Delivery d : consumer.poll(count - held.size(), Duration.ofMillis(500))) {
        held.add(d.envelope().id());
      }
    }
    System.out.println("HOLDING " + String.join(",", held));
    System.out.flush();
    new CountDownLatch(1).await(); // until SIGKILL
  }

  private static CompletableFuture<Set<String>> awaitHolding(Process victim) {
    return CompletableFuture.supplyAsync(
        () -> {
          List<String> output = new ArrayList<>();
          try (BufferedReader out =
              new BufferedReader(
                  new InputStreamReader(victim.getInputStream(), StandardCharsets.UTF_8))) {
            String line;
            while ((line = out.readLine()) != null) {
              if (line.startsWith("HOLDING ")) {
                return new HashSet<>(List.of(line.substring(8).split(",")));
              }
              output.add(line);
            }
          } catch (IOException e) {
            throw new UncheckedIOException(e);
          }
          throw new IllegalStateException("victim exited without holding: " + output);
        });
  }
}
