package dev.postbox.payments.orders;

import dev.postbox.payments.ApiError;
import dev.postbox.runtime.crash.CrashPoints;
import jakarta.enterprise.context.RequestScoped;
import jakarta.inject.Inject;
import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.HeaderParam;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.QueryParam;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import java.net.URI;
import java.sql.SQLException;
import java.util.List;

/** {@code POST /orders} places an order; {@code GET /orders} lists the latest. */
@Path("/orders")
@RequestScoped
@Produces(MediaType.APPLICATION_JSON)
public class OrderResource {

  /** A crash point (see {@link CrashPoints}) in the API edge's own exactly-one window. */
  public static final String ORDER_COMMITTED_NOT_ANSWERED = "orders.committed-not-answered";

  @Inject Orders orders;

  /**
   * Places an order. An {@code Idempotency-Key} header makes a retry safe: the same key returns the
   * first order (200) instead of placing another (201).
   */
  @POST
  @Consumes(MediaType.APPLICATION_JSON)
  public Response place(OrderRequest request, @HeaderParam("Idempotency-Key") String idempotencyKey)
      throws SQLException {
    if (request == null) {
      throw ApiError.badRequest(
          "a JSON body {\"customer\": ..., \"amountCents\": ...} is required");
    }
    request.validate();
    if (idempotencyKey != null && (idempotencyKey.isBlank() || idempotencyKey.length() > 200)) {
      throw ApiError.badRequest("Idempotency-Key must be 1 to 200 characters");
    }
    Orders.Placed placed;
    try {
      placed = orders.place(request, idempotencyKey);
    } catch (RuntimeException e) {
      if (idempotencyKey != null && isUniqueViolation(e)) {
        // Another request with this key committed first: answer with its order.
        Orders.Order first = orders.latestForKey(idempotencyKey);
        return Response.ok(first).build();
      }
      throw e;
    }
    if (placed.created()) {
      // committed, not yet answered: the client's retry must find this order, not place another
      CrashPoints.reach(ORDER_COMMITTED_NOT_ANSWERED);
    }
    return placed.created()
        ? Response.created(URI.create("/orders/" + placed.order().orderId()))
            .entity(placed.order())
            .build()
        : Response.ok(placed.order()).build();
  }

  @GET
  public List<Orders.Order> latest(@QueryParam("limit") Integer limit) throws SQLException {
    return orders.latest(ApiError.limit(limit, 50, 500));
  }

  @GET
  @Path("/{id}")
  public Orders.Order one(@PathParam("id") String id) throws SQLException {
    return orders.byId(id).orElseThrow(() -> ApiError.notFound("no order " + id));
  }

  private static boolean isUniqueViolation(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof java.sql.SQLException s
          && s.getSQLState() != null
          && s.getSQLState().startsWith("23")) {
        return true;
      }
    }
    return false;
  }
}
