package dev.postbox.admin;

import dev.postbox.runtime.api.OutboxOperations;
import dev.postbox.runtime.api.ScheduledFilter;
import dev.postbox.runtime.api.ScheduledRow;
import jakarta.enterprise.context.RequestScoped;
import jakarta.inject.Inject;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.QueryParam;
import jakarta.ws.rs.core.MediaType;
import java.util.List;
import java.util.Map;
import org.eclipse.microprofile.openapi.annotations.enums.SchemaType;
import org.eclipse.microprofile.openapi.annotations.media.Content;
import org.eclipse.microprofile.openapi.annotations.media.Schema;
import org.eclipse.microprofile.openapi.annotations.parameters.Parameter;
import org.eclipse.microprofile.openapi.annotations.responses.APIResponse;
import org.eclipse.microprofile.openapi.annotations.security.SecurityRequirement;
import org.eclipse.microprofile.openapi.annotations.tags.Tag;

/**
 * The operator's view of scheduled outbox events (recorded with a due time, not yet due), for the
 * role {@code postbox-admin} only: list them by destination, type and due window, page by page, and
 * cancel one or a filtered set. Bad filters get 400 with a message.
 */
@AdminOnly
@Path("/admin/outbox/scheduled")
@RequestScoped
@Produces(MediaType.APPLICATION_JSON)
@Tag(name = "operator", description = "Outbox and inbox operations, for the postbox-admin role.")
@SecurityRequirement(name = AdminResource.SECURITY)
public class ScheduledResource {

  private static final int MAX_PAGE = 500;

  @Inject OutboxOperations outbox;

  /**
   * A page of scheduled events, oldest recorded first.
   *
   * @param next the {@code after} of the next page, or null on the last
   */
  public record Page(List<ScheduledRow> events, Long next) {}

  /**
   * Scheduled events that match {@code destination}, {@code type} and a due window {@code from}
   * (inclusive) to {@code to} (exclusive), ISO-8601 instants; {@code after} is the previous page's
   * {@code next}.
   */
  @GET
  public Page list(
      @QueryParam("destination") String destination,
      @QueryParam("type") String type,
      @QueryParam("from") String from,
      @QueryParam("to") String to,
      @Parameter(schema = @Schema(type = SchemaType.INTEGER, minimum = "0")) @QueryParam("after")
          String after,
      @Parameter(schema = @Schema(type = SchemaType.INTEGER, minimum = "1", maximum = "500"))
          @QueryParam("limit")
          String limit) {
    int size = ApiError.limit(limit, 50, MAX_PAGE);
    long afterId =
        after == null || after.isBlank() || after.trim().equals("0")
            ? 0
            : ApiError.id("after", after);
    List<ScheduledRow> rows = outbox.scheduled(filter(destination, type, from, to), afterId, size);
    return new Page(rows, rows.size() < size ? null : rows.get(rows.size() - 1).id());
  }

  @POST
  @Path("/{eventId}/cancel")
  @APIResponse(responseCode = "200", description = "Cancelled: it is never published.")
  @APIResponse(
      responseCode = "404",
      description = "No scheduled event by that id (unknown, published, or cancelled before).",
      content =
          @Content(
              mediaType = MediaType.APPLICATION_JSON,
              schema = @Schema(implementation = ApiError.Body.class)))
  public Map<String, Object> cancel(@PathParam("eventId") String eventId) {
    String id = ApiError.text("eventId", eventId, 256);
    if (id == null || !outbox.cancelScheduled(id)) {
      throw ApiError.notFound("no scheduled outbox event " + ApiError.clip(eventId));
    }
    return Map.of("eventId", id, "status", "CANCELLED");
  }

  /**
   * Cancels every scheduled event the filter matches (the listing's filter); with no filter at all
   * only when {@code all=true} says so.
   */
  @POST
  @Path("/cancel")
  public Map<String, Object> cancelAll(
      @QueryParam("destination") String destination,
      @QueryParam("type") String type,
      @QueryParam("from") String from,
      @QueryParam("to") String to,
      @Parameter(schema = @Schema(type = SchemaType.BOOLEAN)) @QueryParam("all") String all) {
    ScheduledFilter f = filter(destination, type, from, to);
    if (f.equals(ScheduledFilter.ALL) && !ApiError.flag("all", all)) {
      throw ApiError.badRequest(
          "name destination, type, from or to; or all=true to cancel every scheduled event");
    }
    return Map.of("cancelled", outbox.cancelAllScheduled(f), "status", "CANCELLED");
  }

  private static ScheduledFilter filter(String destination, String type, String from, String to) {
    ScheduledFilter f =
        new ScheduledFilter(
            ApiError.text("destination", destination, 512),
            ApiError.text("type", type, 1024),
            AdminResource.instant("from", from),
            AdminResource.instant("to", to));
    if (f.dueFrom() != null && f.dueBefore() != null && !f.dueFrom().isBefore(f.dueBefore())) {
      throw ApiError.badRequest("from must be before to");
    }
    return f;
  }
}
