package dev.postbox.streams.dedup;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.test.TestRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class DedupTopologyTest {

  private static final Instant T0 = Instant.parse("2026-11-30T00:00:00Z");
  private TopologyTestDriver driver;
  private TestInputTopic<byte[], byte[]> input;
  private TestOutputTopic<byte[], byte[]> output;
  private TestOutputTopic<byte[], byte[]> duplicates;
  private TestOutputTopic<byte[], byte[]> errors;

  private void start(DedupSettings settings) {
    Properties p = new Properties();
    p.put(StreamsConfig.APPLICATION_ID_CONFIG, "dedup-test");
    p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "unused:9092");
    p.put(
        StreamsConfig.STATE_DIR_CONFIG,
        System.getProperty("java.io.tmpdir") + "/dedup-driver-" + System.nanoTime());
    driver = new TopologyTestDriver(DedupTopology.build(settings), p, T0);
    input = driver.createInputTopic("in", new ByteArraySerializer(), new ByteArraySerializer());
    output =
        driver.createOutputTopic("out", new ByteArrayDeserializer(), new ByteArrayDeserializer());
    errors =
        driver.createOutputTopic(
            "errors", new ByteArrayDeserializer(), new ByteArrayDeserializer());
    if (settings.duplicatesTopic() != null) {
      duplicates =
          driver.createOutputTopic(
              "dups", new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }
  }

  @AfterEach
  void close() {
    if (driver != null) {
      driver.close();
    }
  }

  private static DedupSettings settings(
      String duplicatesTopic, DedupSettings.TimeSemantics time, IdExtractor ids, String idSource) {
    return new DedupSettings(
        "in",
        "out",
        duplicatesTopic,
        "errors",
        idSource,
        ids,
        Duration.ofHours(1),
        time,
        Duration.ofMinutes(10));
  }

  private static DedupSettings defaults() {
    return settings(
        null, DedupSettings.TimeSemantics.STREAM_TIME, IdExtractor.ceIdHeader(), "ce_id");
  }

  private void send(String ceId, String value, Instant at) {
    RecordHeaders h = new RecordHeaders();
    if (ceId != null) {
      h.add("ce_id", ceId.getBytes(StandardCharsets.UTF_8));
    }
    input.pipeInput(
        new TestRecord<>(
            "key".getBytes(StandardCharsets.UTF_8), value.getBytes(StandardCharsets.UTF_8), h, at));
  }

  private static List<String> values(TestOutputTopic<byte[], byte[]> topic) {
    return topic.readValuesToList().stream()
        .map(v -> new String(v, StandardCharsets.UTF_8))
        .toList();
  }

  private KeyValueStore<Bytes, Long> store() {
    return driver.getKeyValueStore(DedupTopology.SEEN_STORE);
  }

  /** The ids in the store (its entries but the sweep's bookmark). */
  private long idsInStore() {
    long n = 0;
    try (var it = store().all()) {
      while (it.hasNext()) {
        n += it.next().key.get().length == IdKeys.LENGTH ? 1 : 0;
      }
    }
    return n;
  }

  /** When the store says {@code id} was first seen, or null. */
  private Long seen(String id) {
    return store().get(new IdKeys().of(id));
  }

  @Test
  void duplicatesWithinTheWindowAreDropped() {
    start(defaults());
    send("a", "a1", T0);
    send("b", "b1", T0.plusSeconds(1));
    send("a", "a2", T0.plusSeconds(60));
    send("b", "b2", T0.plus(Duration.ofMinutes(59)));
    assertThat(values(output)).containsExactly("a1", "b1");
    assertThat(errors.isEmpty()).isTrue();
  }

  @Test
  void idsPastTheWindowPassAgainAndArePurged() {
    start(defaults());
    send("old", "first", T0);
    send("other", "x", T0.plus(Duration.ofMinutes(30)));
    // Stream time moves past the window for "old" (and the purge punctuator runs).
    send("later", "y", T0.plus(Duration.ofMinutes(75)));
    assertThat(seen("old")).as("purged from the store").isNull();
    assertThat(seen("other")).as("still inside its window").isNotNull();
    send("old", "again", T0.plus(Duration.ofMinutes(76)));
    assertThat(values(output)).containsExactly("first", "x", "y", "again");
  }

  @Test
  void aStoreLargerThanOneSliceIsSweptOverSeveralPurges() {
    start(defaults()); // window 1 h, purge every 10 min
    int ids = DedupProcessor.MIN_SWEEP * 5 / 2;
    for (int i = 0; i < ids; i++) {
      send("id-" + i, "v", T0);
    }
    send("late", "v", T0.plus(Duration.ofMinutes(50)));
    assertThat(idsInStore()).isEqualTo(ids + 1);

    send("tick-1", "v", T0.plus(Duration.ofMinutes(61))); // past the window: one slice swept
    long afterOne = idsInStore();
    assertThat(afterOne)
        .as("one purge looks at one slice, not the whole store")
        .isGreaterThan(ids + 2 - DedupProcessor.MIN_SWEEP - 1)
        .isLessThan(ids + 2);
    send("id-" + (ids - 1), "again", T0.plus(Duration.ofMinutes(62)));
    assertThat(values(output)).as("expired, swept or not: passes again").endsWith("again");

    send("tick-2", "v", T0.plus(Duration.ofMinutes(72)));
    send("tick-3", "v", T0.plus(Duration.ofMinutes(83)));
    send("tick-4", "v", T0.plus(Duration.ofMinutes(94)));
    for (int i = 0; i < ids - 1; i++) {
      assertThat(seen("id-" + i)).as("id-" + i + " swept").isNull();
    }
    assertThat(seen("late")).as("inside its window until 110 min").isNotNull();
    assertThat(seen("id-" + (ids - 1))).as("its new sighting at 62 min").isNotNull();
  }

  @Test
  void theSweepGoesOnFromItsBookmarkInsteadOfStartingOverAtLiveIds() {
    start(defaults()); // window 1 h, purge every 10 min
    int each = DedupProcessor.MIN_SWEEP * 3 / 2;
    // Ids that sort last (ffff...) expire; ids that sort first (0000...) stay inside the window. A
    // sweep that started over at the beginning every run would only ever see the live ones.
    for (int i = 0; i < each; i++) {
      send(uuid("ffffffff", i), "old", T0);
    }
    for (int i = 0; i < each; i++) {
      send(uuid("00000000", i), "live", T0.plus(Duration.ofMinutes(50)));
    }
    for (int tick = 1; tick <= 5; tick++) { // the last at 105 min: the live ids still inside
      send("tick-" + tick, "t", T0.plus(Duration.ofMinutes(50 + 11L * tick)));
      if (tick == 2) {
        assertThat(store().get(DedupProcessor.CURSOR))
            .as("a sweep that stopped mid-store keeps its place in the store")
            .isNotNull();
      }
    }
    for (int i = 0; i < each; i++) {
      assertThat(seen(uuid("ffffffff", i))).as("expired and swept").isNull();
      assertThat(seen(uuid("00000000", i))).as("inside its window").isNotNull();
    }
  }

  private static String uuid(String first8, int i) {
    return String.format("%s-0000-4000-8000-%012x", first8, i);
  }

  @Test
  void anExpiredButNotYetPurgedIdPassesToo() {
    start(
        new DedupSettings(
            "in",
            "out",
            null,
            "errors",
            "ce_id",
            IdExtractor.ceIdHeader(),
            Duration.ofMinutes(1),
            DedupSettings.TimeSemantics.STREAM_TIME,
            Duration.ofDays(1)));
    send("a", "a1", T0);
    send("a", "a2", T0.plus(Duration.ofMinutes(2)));
    send("a", "a3", T0.plus(Duration.ofMinutes(2)).plusSeconds(1));
    assertThat(values(output)).containsExactly("a1", "a2");
  }

  @Test
  void recordsWithoutAnIdGoToTheErrorPathWithAReason() {
    start(defaults());
    send(null, "no id", T0);
    send("  ", "blank id", T0);
    send("c", "fine", T0);
    List<TestRecord<byte[], byte[]>> failed = errors.readRecordsToList();
    assertThat(failed).hasSize(2);
    assertThat(
            new String(
                failed.get(0).headers().lastHeader(DedupProcessor.REASON_HEADER).value(),
                StandardCharsets.UTF_8))
        .isEqualTo("no event id (ce_id)");
    assertThat(values(output)).containsExactly("fine");
  }

  @Test
  void theDuplicatesTopicReceivesWhatWasDropped() {
    start(
        settings(
            "dups", DedupSettings.TimeSemantics.STREAM_TIME, IdExtractor.ceIdHeader(), "ce_id"));
    send("a", "a1", T0);
    send("a", "a2", T0.plusSeconds(1));
    send("a", "a3", T0.plusSeconds(2));
    assertThat(values(output)).containsExactly("a1");
    assertThat(values(duplicates)).containsExactly("a2", "a3");
  }

  @Test
  void theIdCanComeFromAJsonField() {
    start(
        settings(
            null,
            DedupSettings.TimeSemantics.STREAM_TIME,
            IdExtractor.parse("json:eventId"),
            "json:eventId"));
    send(null, "{\"eventId\":\"e1\",\"n\":1}", T0);
    send(null, "{\"eventId\":\"e1\",\"n\":2}", T0);
    send(null, "not json", T0);
    assertThat(values(output)).containsExactly("{\"eventId\":\"e1\",\"n\":1}");
    assertThat(values(errors)).containsExactly("not json");
  }

  @Test
  void wallClockTimeExpiresIdsWithoutTraffic() {
    start(settings(null, DedupSettings.TimeSemantics.WALL_CLOCK, IdExtractor.key(), "key"));
    send(null, "k1", T0);
    send(null, "k1 again", T0);
    driver.advanceWallClockTime(Duration.ofMinutes(61));
    assertThat(seen("key")).as("purged by the wall-clock punctuator").isNull();
    send(null, "k1 after the window", T0);
    assertThat(values(output)).containsExactly("k1", "k1 after the window");
  }

  @Test
  void countsRecordsDuplicatesErrorsAndStoreSize() {
    start(defaults());
    send("a", "a1", T0);
    send("a", "a2", T0);
    send(null, "none", T0);
    send("b", "b1", T0.plus(Duration.ofMinutes(11))); // stream time passes a purge interval
    assertThat(metric("records-in-total")).isEqualTo(4.0);
    assertThat(metric("duplicates-dropped-total")).isEqualTo(1.0);
    assertThat(metric("records-without-id-total")).isEqualTo(1.0);
    assertThat(metric("ids-in-store")).isEqualTo(2.0);
  }

  private double metric(String name) {
    return driver.metrics().entrySet().stream()
        .filter(
            e ->
                e.getKey().name().equals(name)
                    && e.getKey().group().equals("stream-postbox-dedup-metrics"))
        .mapToDouble(e -> ((Number) e.getValue().metricValue()).doubleValue())
        .sum();
  }

  @Test
  void settingsFailNamingTheKey() {
    Properties p = new Properties();
    p.setProperty("input.topic", "in");
    p.setProperty("output.topic", "out");
    p.setProperty("error.topic", "err");
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> DedupSettings.from(p))
        .hasMessageContaining("dedup.window is required");
    p.setProperty("dedup.window", "soon");
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> DedupSettings.from(p))
        .hasMessageContaining("dedup.window 'soon'");
    p.setProperty("dedup.window", "24h");
    p.setProperty("dedup.windw", "1h");
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> DedupSettings.from(p))
        .hasMessageContaining("[dedup.windw]");
    p.remove("dedup.windw");
    p.setProperty("dedup.id.source", "xml:id");
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> DedupSettings.from(p))
        .hasMessageContaining("dedup.id.source");
    p.setProperty("dedup.id.source", "json:id");
    assertThat(DedupSettings.from(p).window()).isEqualTo(Duration.ofHours(24));
  }
}
