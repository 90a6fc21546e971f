package dev.postbox.payments;

import com.sun.net.httpserver.HttpServer;
import io.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;
import io.opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse;
import io.opentelemetry.proto.trace.v1.ResourceSpans;
import io.opentelemetry.proto.trace.v1.ScopeSpans;
import io.opentelemetry.proto.trace.v1.Span;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.zip.GZIPInputStream;

/**
 * An OTLP trace collector for tests: takes the exporter's http/protobuf requests on {@code
 * /v1/traces} and keeps their spans.
 */
final class OtlpCollector implements AutoCloseable {

  private final List<Span> spans = new CopyOnWriteArrayList<>();
  private final HttpServer server;

  OtlpCollector() {
    try {
      server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    server.createContext(
        "/v1/traces",
        exchange -> {
          try (InputStream body = exchange.getRequestBody()) {
            InputStream in =
                "gzip".equalsIgnoreCase(exchange.getRequestHeaders().getFirst("Content-Encoding"))
                    ? new GZIPInputStream(body)
                    : body;
            ExportTraceServiceRequest request = ExportTraceServiceRequest.parseFrom(in);
            for (ResourceSpans rs : request.getResourceSpansList()) {
              for (ScopeSpans ss : rs.getScopeSpansList()) {
                spans.addAll(ss.getSpansList());
              }
            }
            byte[] answer = ExportTraceServiceResponse.getDefaultInstance().toByteArray();
            exchange.getResponseHeaders().add("Content-Type", "application/x-protobuf");
            exchange.sendResponseHeaders(200, answer.length);
            exchange.getResponseBody().write(answer);
          } finally {
            exchange.close();
          }
        });
    server.start();
  }

  /** Where the exporter sends: {@code otel.exporter.otlp.traces.endpoint}. */
  String endpoint() {
    return "http://127.0.0.1:" + server.getAddress().getPort() + "/v1/traces";
  }

  /** The spans received so far. */
  List<Span> spans() {
    return spans;
  }

  static String hex(com.google.protobuf.ByteString id) {
    return HexFormat.of().formatHex(id.toByteArray());
  }

  @Override
  public void close() {
    server.stop(0);
  }
}
