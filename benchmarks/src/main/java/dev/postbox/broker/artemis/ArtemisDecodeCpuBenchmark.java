package dev.postbox.broker.artemis;

import dev.postbox.benchmarks.jmh.SampleEvent;
import dev.postbox.spi.Envelope;
import jakarta.jms.JMSException;
import java.util.concurrent.TimeUnit;
import org.apache.activemq.artemis.core.client.impl.ClientMessageImpl;
import org.apache.activemq.artemis.jms.client.ActiveMQBytesMessage;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Per delivery, on the Artemis adapter: a JMS bytes message's CloudEvents properties and body
 * decoded into an {@link Envelope} (in this package: the decoder is package-private). The message
 * is Artemis's own JMS message over a core message, built without a broker.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(1)
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 5, time = 2)
public class ArtemisDecodeCpuBenchmark {

  ActiveMQBytesMessage message;

  @Setup
  public void encode() throws JMSException {
    message =
        new ActiveMQBytesMessage(
            new ClientMessageImpl(
                ActiveMQBytesMessage.TYPE, true, 0, System.currentTimeMillis(), (byte) 4, 1024),
            null) {};
    // made over a core message, it starts as a received one, read-only: writable again, as JMS
    // allows, to write the event
    message.clearProperties();
    message.clearBody();
    CloudEventsJmsProperties.write(SampleEvent.envelope(), message);
    message.reset(); // read-only, as a received message is
  }

  @Benchmark
  public Envelope decode() throws JMSException {
    return CloudEventsJmsProperties.read(message, CloudEventsJmsProperties.body(message));
  }
}
