package dev.postbox.telemetry;

import dev.postbox.runtime.api.EventTracing;
import dev.postbox.runtime.api.OutboxEvent;
import dev.postbox.runtime.api.RelayListener;
import dev.postbox.spi.Envelope;
import io.opentelemetry.api.OpenTelemetry;
import jakarta.annotation.PostConstruct;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.inject.Instance;
import jakarta.inject.Inject;
import java.util.function.Function;

/**
 * Postbox's spans over the application's {@link OpenTelemetry} from MicroProfile Telemetry. Off
 * unless the SDK is on ({@code otel.sdk.disabled=false}); see {@link PostboxSpans}.
 */
@ApplicationScoped
public class OpenTelemetryTracing implements EventTracing {

  @Inject Instance<OpenTelemetry> openTelemetry;

  private PostboxSpans spans;

  @PostConstruct
  void init() {
    if (openTelemetry.isResolvable()) {
      spans = new PostboxSpans(openTelemetry.get());
    } else {
      System.getLogger(OpenTelemetryTracing.class.getName())
          .log(
              System.Logger.Level.INFO,
              "postbox-telemetry: no OpenTelemetry bean (enable mpTelemetry-2.1): no spans");
      spans = new PostboxSpans(OpenTelemetry.noop());
    }
  }

  @Override
  public String record(OutboxEvent event, Function<OutboxEvent, String> record) {
    return spans.record(event, record);
  }

  @Override
  public RelayListener relay() {
    return spans.relay();
  }

  @Override
  public void handle(String subscription, Envelope event, Handler handler) throws Exception {
    spans.handle(subscription, event, handler);
  }
}
