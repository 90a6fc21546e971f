package dev.postbox.benchmarks.app.endpoints;

import dev.postbox.spi.Broker;
import dev.postbox.spi.Envelope;
import jakarta.enterprise.context.RequestScoped;
import jakarta.inject.Inject;
import jakarta.ws.rs.BadRequestException;
import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.QueryParam;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import java.util.List;
import org.eclipse.microprofile.config.inject.ConfigProperty;

/** The benchmark's peers of {@code POST /orders}; see the package's description. */
@Path("/bench")
@RequestScoped
public class BenchEndpoints {

  /** The body of {@code POST /orders}. */
  public record Order(String customer, Long amountCents) {}

  @Inject BenchOrders orders;

  @Inject Broker broker;

  @Inject
  @ConfigProperty(name = "payments.orders.topic")
  String ordersTopic;

  @Inject
  @ConfigProperty(name = "payments.source")
  String source;

  /** The order and no event: what the web and database path cost alone. */
  @POST
  @Path("/bare")
  @Consumes(MediaType.APPLICATION_JSON)
  @Produces(MediaType.TEXT_PLAIN)
  public Response bare(Order order) throws SQLException {
    check(order);
    return Response.status(201)
        .entity(orders.insert(order.customer(), order.amountCents()))
        .build();
  }

  /**
   * The order committed, then its event published from the request: no outbox row, no relay. A
   * crash between the two loses the event; that is what this peer does not pay for.
   */
  @POST
  @Path("/bypass")
  @Consumes(MediaType.APPLICATION_JSON)
  @Produces(MediaType.TEXT_PLAIN)
  public Response bypass(Order order) throws SQLException {
    check(order);
    String orderId = orders.insert(order.customer(), order.amountCents());
    String payload =
        "{\"orderId\":\""
            + orderId
            + "\",\"customer\":\""
            + order.customer()
            + "\",\"amountCents\":"
            + order.amountCents()
            + "}";
    broker
        .publisher()
        .publish(
            ordersTopic,
            Envelope.builder()
                .source(source)
                .type("OrderCaptured")
                .subject(orderId)
                .key(order.customer())
                .dataContentType("application/json")
                .payload(payload.getBytes(StandardCharsets.UTF_8))
                .build());
    return Response.status(201).entity(orderId).build();
  }

  /** How many notifications the customers {@code <prefix>0 .. <prefix>(customers - 1)} have. */
  @GET
  @Path("/notified")
  @Produces(MediaType.TEXT_PLAIN)
  public long notified(
      @QueryParam("customerPrefix") String prefix, @QueryParam("customers") Integer customers)
      throws SQLException {
    return orders.notified(customers(prefix, customers));
  }

  /** [order created, notified] in epoch ms for each notification of those customers. */
  @GET
  @Path("/latencies")
  @Produces(MediaType.APPLICATION_JSON)
  public List<long[]> latencies(
      @QueryParam("customerPrefix") String prefix, @QueryParam("customers") Integer customers)
      throws SQLException {
    return orders.latencies(customers(prefix, customers));
  }

  private static List<String> customers(String prefix, Integer n) {
    if (prefix == null
        || !prefix.matches("[A-Za-z0-9-]{8,64}")
        || n == null
        || n < 1
        || n > 1_000) {
      throw new BadRequestException(
          "customerPrefix [A-Za-z0-9-]{8,64} and customers 1..1000 required");
    }
    List<String> out = new java.util.ArrayList<>();
    for (int i = 0; i < n; i++) {
      out.add(prefix + i);
    }
    return out;
  }

  private static void check(Order order) {
    // The benchmark sends plain customer names; anything else is refused, not escaped.
    if (order == null
        || order.customer() == null
        || !order.customer().matches("[A-Za-z0-9-]{1,64}")
        || order.amountCents() == null
        || order.amountCents() < 1) {
      throw new BadRequestException("customer [A-Za-z0-9-]{1,64} and amountCents >= 1 required");
    }
  }
}
