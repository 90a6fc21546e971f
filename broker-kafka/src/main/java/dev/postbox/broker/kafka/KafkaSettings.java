package dev.postbox.broker.kafka;

import dev.postbox.spi.BrokerConfig;
import dev.postbox.spi.ConfigException;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The Kafka adapter's configuration, validated before anything connects.
 *
 * <p>Keys: {@code bootstrap.servers} (required), {@code client.id}, {@code publish.timeout}, {@code
 * max.message.bytes}, {@code nack.max.delay}; pass-through client properties as {@code
 * kafka.<property>} (producer and consumer), {@code kafka.producer.<property>} and {@code
 * kafka.consumer.<property>}. Pass-through names are checked against Kafka's own lists, and the
 * properties the adapter's guarantees rest on cannot be overridden.
 */
record KafkaSettings(
    String bootstrapServers,
    String clientId,
    Duration publishTimeout,
    int maxMessageBytes,
    Duration maxNackDelay,
    Map<String, Object> producerProperties,
    Map<String, Object> consumerProperties) {

  static final int DEFAULT_MAX_MESSAGE_BYTES = 1_000_000;

  /** Room for the key and headers on top of the payload in one record. */
  static final int RECORD_OVERHEAD_BYTES = 64 * 1024;

  /** Properties the adapter owns: acks, idempotence, serialisation, groups and offset commits. */
  private static final Set<String> MANAGED =
      Set.of(
          "bootstrap.servers",
          "acks",
          "enable.idempotence",
          "key.serializer",
          "value.serializer",
          "key.deserializer",
          "value.deserializer",
          "group.id",
          "enable.auto.commit",
          "client.id");

  static KafkaSettings from(Map<String, String> raw) {
    BrokerConfig c = BrokerConfig.of(KafkaBrokerProvider.NAME, raw);
    String bootstrap = c.required("bootstrap.servers");
    String clientId = c.string("client.id", "postbox");
    Duration publishTimeout =
        c.duration(
            "publish.timeout",
            Duration.ofSeconds(30),
            Duration.ofMillis(500),
            Duration.ofMinutes(10));
    int maxBytes = c.integer("max.message.bytes", DEFAULT_MAX_MESSAGE_BYTES, 1, 512 * 1024 * 1024);
    Duration maxNack =
        c.duration("nack.max.delay", Duration.ofHours(1), Duration.ZERO, Duration.ofDays(1));
    Map<String, String> producerOnly = c.withPrefix("kafka.producer.");
    Map<String, String> consumerOnly = c.withPrefix("kafka.consumer.");
    Map<String, String> shared = new HashMap<>(c.withPrefix("kafka."));
    shared.keySet().removeIf(k -> k.startsWith("producer.") || k.startsWith("consumer."));
    c.requireNoUnknownKeys();

    check("kafka.producer.", producerOnly, ProducerConfig.configNames());
    check("kafka.consumer.", consumerOnly, ConsumerConfig.configNames());
    for (String key : shared.keySet()) {
      if (!ProducerConfig.configNames().contains(key)
          && !ConsumerConfig.configNames().contains(key)) {
        throw new ConfigException(
            "kafka." + key,
            "kafka: 'kafka." + key + "' is not a Kafka producer or consumer property");
      }
    }
    checkManaged("kafka.", shared);
    checkManaged("kafka.producer.", producerOnly);
    checkManaged("kafka.consumer.", consumerOnly);

    Map<String, Object> producer = new HashMap<>();
    // Sensible defaults a user may override.
    // No linger: callers that want batches (the relay) publish them with publishAll, and a single
    // publish should not wait 5 ms (Kafka 4's default) for company that is not coming.
    producer.put(ProducerConfig.LINGER_MS_CONFIG, "0");
    producer.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, "5");
    for (Map.Entry<String, String> e : shared.entrySet()) {
      if (ProducerConfig.configNames().contains(e.getKey())) {
        producer.put(e.getKey(), e.getValue());
      }
    }
    producer.putAll(producerOnly);
    // Guarantees: durable, ordered, no duplicates from producer retries.
    producer.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    producer.put(ProducerConfig.CLIENT_ID_CONFIG, clientId + "-producer");
    producer.put(ProducerConfig.ACKS_CONFIG, "all");
    producer.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
    producer.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    producer.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    Map<String, Object> consumer = new HashMap<>();
    consumer.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    consumer.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    consumer.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "500");
    for (Map.Entry<String, String> e : shared.entrySet()) {
      if (ConsumerConfig.configNames().contains(e.getKey())) {
        consumer.put(e.getKey(), e.getValue());
      }
    }
    consumer.putAll(consumerOnly);
    consumer.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    consumer.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    consumer.put(
        ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    consumer.put(
        ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());

    validateWithKafka(producer, consumer);
    long timeoutMs = publishTimeout.toMillis();
    long linger =
        ((Number) new ProducerConfig(producer).values().get(ProducerConfig.LINGER_MS_CONFIG))
            .longValue();
    // Kafka requires delivery.timeout.ms >= linger.ms + request.timeout.ms.
    long requestTimeout = Math.max(1, Math.min(30_000, timeoutMs - linger - 1));
    producer.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, Long.toString(timeoutMs));
    producer.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, Long.toString(timeoutMs));
    producer.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, Long.toString(requestTimeout));
    producer.putIfAbsent(
        ProducerConfig.MAX_REQUEST_SIZE_CONFIG,
        Integer.toString(Math.max(1_048_576, maxBytes + RECORD_OVERHEAD_BYTES)));

    return new KafkaSettings(
        bootstrap,
        clientId,
        publishTimeout,
        maxBytes,
        maxNack,
        Map.copyOf(producer),
        Map.copyOf(consumer));
  }

  private static void check(String prefix, Map<String, String> props, Set<String> known) {
    for (String key : props.keySet()) {
      if (!known.contains(key)) {
        throw new ConfigException(
            prefix + key, "kafka: '" + prefix + key + "' is not a Kafka property");
      }
    }
  }

  private static void checkManaged(String prefix, Map<String, String> props) {
    for (String key : props.keySet()) {
      if (MANAGED.contains(key)) {
        throw new ConfigException(
            prefix + key,
            "kafka: '"
                + prefix
                + key
                + "' is managed by the adapter and cannot be set"
                + (key.equals("bootstrap.servers") || key.equals("client.id")
                    ? "; use '" + key + "'"
                    : ""));
      }
    }
  }

  /** Lets Kafka parse every value now, so a bad one fails at startup and names its key. */
  private static void validateWithKafka(
      Map<String, Object> producer, Map<String, Object> consumer) {
    try {
      new ProducerConfig(producer);
      Map<String, Object> withGroup = new HashMap<>(consumer);
      withGroup.put(ConsumerConfig.GROUP_ID_CONFIG, "validation");
      new ConsumerConfig(withGroup);
    } catch (org.apache.kafka.common.config.ConfigException e) {
      String message = e.getMessage() == null ? "" : e.getMessage();
      String key = message.replaceFirst("(?s).*?configuration ([^ ]+).*", "$1");
      throw new ConfigException(
          message.equals(key) ? "kafka.*" : "kafka." + key,
          "kafka: invalid client property: " + redact(message));
    }
  }

  private static String redact(String kafkaMessage) {
    // Kafka quotes the value in its message; drop it when the key looks secret.
    return BrokerConfig.isSecret(kafkaMessage)
        ? kafkaMessage.replaceAll("value [^ ]+", "value (hidden)")
        : kafkaMessage;
  }

  /** Admin-client properties: the connection and security settings shared by all clients. */
  Map<String, Object> adminProperties() {
    Map<String, Object> p = new HashMap<>();
    consumerProperties.forEach(
        (k, v) -> {
          if (org.apache.kafka.clients.admin.AdminClientConfig.configNames().contains(k)) {
            p.put(k, v);
          }
        });
    p.put(org.apache.kafka.clients.admin.AdminClientConfig.CLIENT_ID_CONFIG, clientId + "-admin");
    return p;
  }

  /**
   * The consumer properties for one group.
   *
   * @param staticId the consumer's {@code group.instance.id} (static membership), or null
   */
  Map<String, Object> consumerPropertiesFor(String group, String clientSuffix, String staticId) {
    Map<String, Object> p = new HashMap<>(consumerProperties);
    p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
    if (staticId != null && !p.containsKey(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG)) {
      p.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, staticId);
    }
    p.put(ConsumerConfig.CLIENT_ID_CONFIG, clientId + "-consumer-" + clientSuffix);
    return p;
  }
}
