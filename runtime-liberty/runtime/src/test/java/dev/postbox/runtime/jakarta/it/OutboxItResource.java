package dev.postbox.runtime.jakarta.it;

import dev.postbox.runtime.api.Outbox;
import dev.postbox.runtime.api.OutboxEvent;
import dev.postbox.runtime.api.OutboxOperations;
import jakarta.annotation.Resource;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import jakarta.transaction.Transactional;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.QueryParam;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import java.util.ArrayList;
import java.util.List;
import org.eclipse.microprofile.config.inject.ConfigProperty;

/** The test application of LibertyOutboxIT: records events in JTA transactions on request. */
@Path("/it")
@ApplicationScoped
public class OutboxItResource {

  @Inject Outbox outbox;

  @Inject OutboxOperations operations;

  @ConfigProperty(name = "it.topic")
  @Inject
  String topic;

  /** Records {@code count} events; with {@code rollback=true} the transaction then fails. */
  @POST
  @Path("/events")
  @Produces(MediaType.TEXT_PLAIN)
  @Transactional
  public String record(@QueryParam("count") int count, @QueryParam("rollback") boolean rollback) {
    List<String> ids = recordEvents(count);
    if (rollback) {
      throw new IllegalStateException("business failure after recording " + ids);
    }
    return String.join(",", ids);
  }

  @Inject IdempotentWork work;

  /** An idempotent endpoint: its work joins the request's transaction, or (wrongly) does not. */
  @POST
  @Path("/idempotent")
  @Produces(MediaType.TEXT_PLAIN)
  @dev.postbox.runtime.api.Idempotent
  public Response idempotent(@QueryParam("inner") String inner) {
    String id = "requires-new".equals(inner) ? work.recordOneInANewTransaction() : work.recordOne();
    return Response.status(201).entity(id).build();
  }

  /** Records an event and then fails to record a second with the same id, swallowing that. */
  @POST
  @Path("/swallowed")
  @Produces(MediaType.TEXT_PLAIN)
  public String swallowed(@QueryParam("id") String id) {
    return work.recordTwiceSwallowingTheFailure(id);
  }

  /** Without a transaction: must be refused. */
  @POST
  @Path("/no-transaction")
  @Produces(MediaType.TEXT_PLAIN)
  public Response noTransaction() {
    try {
      recordEvents(1);
      return Response.ok("recorded?!").build();
    } catch (IllegalStateException e) {
      return Response.status(409).entity(e.getMessage()).build();
    }
  }

  @Resource(name = "jdbc/it")
  javax.sql.DataSource dataSource;

  /** How many charges the inbox handler wrote. */
  @GET
  @Path("/charges")
  @Produces(MediaType.TEXT_PLAIN)
  public long charges() throws java.sql.SQLException {
    try (java.sql.Connection c = dataSource.getConnection();
        java.sql.PreparedStatement ps = c.prepareStatement("SELECT COUNT(*) FROM it_charge");
        java.sql.ResultSet rs = ps.executeQuery()) {
      rs.next();
      return rs.getLong(1);
    }
  }

  @GET
  @Path("/pending")
  @Produces(MediaType.TEXT_PLAIN)
  public long pending() {
    return operations.lag().pending();
  }

  private List<String> recordEvents(int count) {
    List<String> ids = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      ids.add(
          outbox.record(
              OutboxEvent.builder()
                  .destination(topic)
                  .key("order-" + (i % 5))
                  .type("OrderCaptured")
                  .source("urn:postbox:it")
                  .json("{\"n\":" + i + "}")
                  .build()));
    }
    return ids;
  }
}
