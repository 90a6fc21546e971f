package dev.postbox.payments.admin;

import dev.postbox.admin.AdminOnly;
import dev.postbox.admin.AdminResource;
import dev.postbox.admin.ApiError;
import dev.postbox.payments.orders.OrderCaptured;
import dev.postbox.payments.orders.OrderRequest;
import dev.postbox.payments.orders.Orders;
import dev.postbox.spi.Broker;
import dev.postbox.spi.Envelope;
import jakarta.enterprise.context.RequestScoped;
import jakarta.inject.Inject;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.QueryParam;
import jakarta.ws.rs.core.MediaType;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;

/**
 * {@code POST /admin/load?orders=N&duplicatePercent=P}: places N orders (each in its own
 * transaction, as N clients would), then publishes P% of their {@code OrderCaptured} events a
 * second time, byte for byte with the same id, straight to the broker: the inbox must reject every
 * copy. For demos and benchmarks.
 */
@AdminOnly
@Path("/admin/load")
@RequestScoped
@Produces(MediaType.APPLICATION_JSON)
@org.eclipse.microprofile.openapi.annotations.tags.Tag(name = "operator")
@org.eclipse.microprofile.openapi.annotations.security.SecurityRequirement(
    name = AdminResource.SECURITY)
public class LoadResource {

  @Inject Orders orders;

  @Inject Broker broker;

  @POST
  public Map<String, Object> load(
      @org.eclipse.microprofile.openapi.annotations.parameters.Parameter(
              schema =
                  @org.eclipse.microprofile.openapi.annotations.media.Schema(
                      type = org.eclipse.microprofile.openapi.annotations.enums.SchemaType.INTEGER,
                      minimum = "1",
                      maximum = "1000"))
          @QueryParam("orders")
          String count,
      @org.eclipse.microprofile.openapi.annotations.parameters.Parameter(
              schema =
                  @org.eclipse.microprofile.openapi.annotations.media.Schema(
                      type = org.eclipse.microprofile.openapi.annotations.enums.SchemaType.INTEGER,
                      minimum = "0",
                      maximum = "100"))
          @QueryParam("duplicatePercent")
          String percent)
      throws SQLException {
    if (count == null || count.isEmpty()) {
      throw ApiError.badRequest("orders is required: 1 to 1000 per call");
    }
    int n = ApiError.number("orders", count, 1, 1_000, 0);
    int duplicates = ApiError.number("duplicatePercent", percent, 0, 100, 0);
    List<Envelope> copies = new ArrayList<>();
    long totalCents = 0;
    for (int i = 0; i < n; i++) {
      long cents = 100 + ThreadLocalRandom.current().nextLong(99_900);
      Orders.Placed placed = orders.place(new OrderRequest("load-" + (i % 50), cents));
      totalCents += cents;
      if (ThreadLocalRandom.current().nextInt(100) < duplicates) {
        copies.add(
            Envelope.builder()
                .id(placed.eventId())
                .source(orders.source())
                .type(OrderCaptured.TYPE)
                .key(placed.order().orderId())
                .subject(placed.order().orderId())
                .dataContentType("application/json")
                .payload(placed.payload())
                .build());
      }
    }
    if (!copies.isEmpty()) {
      broker.publisher().publishAll(orders.ordersTopic(), copies);
    }
    return Map.of("placed", n, "totalCents", totalCents, "republished", copies.size());
  }
}
