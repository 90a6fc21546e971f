package dev.postbox.payments.orders;

import dev.postbox.admin.ApiError;
import dev.postbox.runtime.api.Idempotent;
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
import org.eclipse.microprofile.openapi.annotations.enums.ParameterIn;
import org.eclipse.microprofile.openapi.annotations.media.Content;
import org.eclipse.microprofile.openapi.annotations.media.Schema;
import org.eclipse.microprofile.openapi.annotations.parameters.Parameter;
import org.eclipse.microprofile.openapi.annotations.responses.APIResponse;
import org.eclipse.microprofile.openapi.annotations.tags.Tag;

/** {@code POST /orders} places an order; {@code GET /orders} lists the latest. */
@Path("/orders")
@RequestScoped
@Produces(MediaType.APPLICATION_JSON)
@Tag(name = "orders")
@APIResponse(
    responseCode = "400",
    description = "Bad input (a body, a field, a page size); the message names it.",
    content =
        @Content(
            mediaType = MediaType.APPLICATION_JSON,
            schema = @Schema(implementation = ApiError.Body.class)))
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
  @Parameter(
      name = Idempotent.HEADER,
      in = ParameterIn.HEADER,
      description =
          "Makes a retry safe: the same key and body answer the first answer again (with"
              + " Idempotency-Replayed: true) and place nothing.",
      schema =
          @Schema(
              type = org.eclipse.microprofile.openapi.annotations.enums.SchemaType.STRING,
              maxLength = 200))
  @APIResponse(
      responseCode = "201",
      description = "Placed: the order and its event committed together.",
      content =
          @Content(
              mediaType = MediaType.APPLICATION_JSON,
              schema = @Schema(implementation = Orders.Order.class)))
  @APIResponse(
      responseCode = "409",
      description =
          "A request with this Idempotency-Key is still running; retry after Retry-After.",
      content =
          @Content(
              mediaType = MediaType.APPLICATION_JSON,
              schema = @Schema(implementation = ApiError.Body.class)))
  @APIResponse(
      responseCode = "422",
      description = "This Idempotency-Key was used with a different request.",
      content =
          @Content(
              mediaType = MediaType.APPLICATION_JSON,
              schema = @Schema(implementation = ApiError.Body.class)))
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
  @APIResponse(
      responseCode = "200",
      description = "The latest orders, newest first.",
      content =
          @Content(
              mediaType = MediaType.APPLICATION_JSON,
              schema =
                  @Schema(
                      type = org.eclipse.microprofile.openapi.annotations.enums.SchemaType.ARRAY,
                      implementation = Orders.Order.class)))
  public List<Orders.Order> latest(
      @org.eclipse.microprofile.openapi.annotations.parameters.Parameter(
              schema =
                  @org.eclipse.microprofile.openapi.annotations.media.Schema(
                      type = org.eclipse.microprofile.openapi.annotations.enums.SchemaType.INTEGER,
                      minimum = "1",
                      maximum = "500"))
          @QueryParam("limit")
          String limit)
      throws SQLException {
    return orders.latest(ApiError.limit(limit, 50, 500));
  }

  @GET
  @Path("/{id}")
  @APIResponse(
      responseCode = "200",
      description = "The order.",
      content =
          @Content(
              mediaType = MediaType.APPLICATION_JSON,
              schema = @Schema(implementation = Orders.Order.class)))
  @APIResponse(
      responseCode = "404",
      description = "No such order.",
      content =
          @Content(
              mediaType = MediaType.APPLICATION_JSON,
              schema = @Schema(implementation = ApiError.Body.class)))
  public Orders.Order one(@PathParam("id") String id) throws SQLException {
    // Order ids are UUIDs: anything else names no order, and never reaches the database.
    if (!ORDER_ID.matcher(id).matches()) {
      throw ApiError.notFound("no order '" + ApiError.clip(id) + "'");
    }
    return orders.byId(id).orElseThrow(() -> ApiError.notFound("no order " + id));
  }

  private static final java.util.regex.Pattern ORDER_ID =
      java.util.regex.Pattern.compile(
          "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");
}
