package dev.postbox.streams.dedup;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs the deduplicator against any Kafka cluster: {@code DedupApp <file.properties>}.
 *
 * <p>The file holds the topics and {@code dedup.*} keys ({@link DedupSettings}) and any Kafka
 * Streams property, of which {@code application.id} and {@code bootstrap.servers} are required.
 * {@code processing.guarantee} defaults to {@code exactly_once_v2}, so the output and the store
 * update commit atomically. Run more instances with the same {@code application.id} to scale out.
 */
public final class DedupApp {

  private static final Logger LOG = LoggerFactory.getLogger(DedupApp.class);

  private DedupApp() {}

  public static void main(String[] args) throws Exception {
    if (args.length != 1) {
      System.err.println("usage: DedupApp <dedup.properties>");
      System.exit(2);
    }
    Properties p = load(Path.of(args[0]));
    KafkaStreams streams;
    try {
      streams = start(p);
    } catch (IllegalArgumentException e) {
      System.err.println("dedup: " + e.getMessage());
      System.exit(2);
      return;
    }
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  streams.close(Duration.ofSeconds(30));
                  stopped.countDown();
                },
                "dedup-shutdown"));
    stopped.await();
  }

  /** Validates the properties, builds the topology and starts it. */
  public static KafkaStreams start(Properties p) {
    DedupSettings settings = DedupSettings.from(p);
    Properties streamsConfig = streamsConfig(p);
    KafkaStreams streams = new KafkaStreams(DedupTopology.build(settings), streamsConfig);
    streams.setStateListener((now, before) -> LOG.info("dedup {} -> {}", before, now));
    streams.start();
    LOG.info(
        "dedup started: {} -> {} (window {}, {}, ids from {})",
        settings.inputTopic(),
        settings.outputTopic(),
        settings.window(),
        settings.time(),
        settings.idSource());
    return streams;
  }

  static Properties streamsConfig(Properties p) {
    Properties s = new Properties();
    for (String k : p.stringPropertyNames()) {
      if (!DedupSettings.KEYS.contains(k)) {
        s.setProperty(k, p.getProperty(k));
      }
    }
    for (String required :
        new String[] {
          StreamsConfig.APPLICATION_ID_CONFIG, StreamsConfig.BOOTSTRAP_SERVERS_CONFIG
        }) {
      if (s.getProperty(required) == null || s.getProperty(required).isBlank()) {
        throw new IllegalArgumentException(required + " is required");
      }
    }
    s.putIfAbsent(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
    try {
      new StreamsConfig(s); // let Kafka reject bad values now, naming the key
    } catch (org.apache.kafka.common.config.ConfigException e) {
      throw new IllegalArgumentException(e.getMessage(), e);
    }
    return s;
  }

  private static Properties load(Path file) throws IOException {
    Properties p = new Properties();
    try (InputStream in = Files.newInputStream(file)) {
      p.load(in);
    }
    return p;
  }
}
