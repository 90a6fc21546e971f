package dev.postbox.broker.sqs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.postbox.broker.sqs.testing.ElasticMqTestBroker;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.services.sqs.model.Message;
import software.amazon.awssdk.services.sqs.model.QueueAttributeName;

/**
 * The crash harness restarts its SQS stand-in mid-run; this proves the stand-in itself loses
 * nothing across a restart, so anything the harness finds missing is ours.
 */
class ElasticMqRestartIT {

  @TempDir Path storage;

  @Test
  void aPersistentServerKeepsQueuedAndInFlightMessagesAcrossARestart() {
    try (ElasticMqTestBroker sqs = ElasticMqTestBroker.persistent(storage)) {
      String url =
          sqs.createQueue("restart-me", Map.of(QueueAttributeName.VISIBILITY_TIMEOUT, "1"));
      for (int i = 0; i < 3; i++) {
        int n = i;
        sqs.client().sendMessage(b -> b.queueUrl(url).messageBody("m" + n));
      }
      // one in flight (received, not deleted) when the server goes down
      assertThat(sqs.client().receiveMessage(b -> b.queueUrl(url)).messages()).hasSize(1);

      sqs.restart();

      Set<String> bodies = new HashSet<>();
      await()
          .atMost(Duration.ofSeconds(30))
          .until(
              () -> {
                for (Message m :
                    sqs.client()
                        .receiveMessage(b -> b.queueUrl(url).maxNumberOfMessages(10))
                        .messages()) {
                  bodies.add(m.body());
                  sqs.client().deleteMessage(b -> b.queueUrl(url).receiptHandle(m.receiptHandle()));
                }
                return bodies.size() == 3;
              });
      assertThat(bodies).containsExactlyInAnyOrder("m0", "m1", "m2");
    }
  }

  @Test
  void anInMemoryServerRefusesToRestart() {
    assertThatThrownBy(() -> ElasticMqTestBroker.shared().restart())
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("in-memory");
  }
}
