package dev.postbox.payments.orders;

import dev.postbox.admin.ApiError;
import dev.postbox.runtime.jakarta.Idempotent;
import jakarta.enterprise.context.RequestScoped;
import jakarta.inject.Inject;
import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.GET;
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

  @Inject Orders orders;

  /**
   * Places an order. An {@code Idempotency-Key} header makes a retry safe ({@link Idempotent}): the
   * same key and body answer the first answer again; the same key with another body is 422; the
   * same key while the first request runs is 409.
   */
  @POST
  @Consumes(MediaType.APPLICATION_JSON)
  @Idempotent
  public Response place(OrderRequest request) throws SQLException {
    if (request == null) {
      throw ApiError.badRequest(
          "a JSON body {\"customer\": ..., \"amountCents\": ...} is required");
    }
    request.validate();
    Orders.Placed placed = orders.place(request);
    return Response.created(URI.create("/orders/" + placed.order().orderId()))
        .entity(placed.order())
        .build();
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
}
