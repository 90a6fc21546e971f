package dev.postbox.runtime.jakarta.it;

import dev.postbox.runtime.api.DeadLetter;
import dev.postbox.runtime.api.InboxOperations;
import jakarta.annotation.Resource;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.QueryParam;
import jakarta.ws.rs.core.MediaType;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;

/** The inbox scenarios' window into the server: effects, dead letters, replay, the "fix". */
@Path("/it/inbox")
@ApplicationScoped
public class InboxItResource {

  @Inject InboxOperations inbox;

  @Resource(name = "jdbc/it")
  DataSource dataSource;

  /** The effects of one handler, oldest first, one "event_id note" line each. */
  @GET
  @Path("/effects")
  @Produces(MediaType.TEXT_PLAIN)
  public String effects(@QueryParam("handler") String handler) throws Exception {
    List<String> lines = new ArrayList<>();
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT event_id, note FROM it_effect WHERE subscription = ? ORDER BY seq")) {
      ps.setString(1, handler);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          lines.add(rs.getString(1) + " " + rs.getString(2));
        }
      }
    }
    return String.join("\n", lines);
  }

  /** Open dead letters of a subscription, one "id reason event_id attempts" line each. */
  @GET
  @Path("/dead-letters")
  @Produces(MediaType.TEXT_PLAIN)
  public String deadLetters(@QueryParam("subscription") String subscription) {
    List<String> lines = new ArrayList<>();
    for (DeadLetter dl : inbox.subscription(subscription).orElseThrow().deadLetters().open(100)) {
      lines.add(dl.id() + " " + dl.reason() + " " + dl.eventId() + " " + dl.attempts());
    }
    return String.join("\n", lines);
  }

  @POST
  @Path("/fix")
  public void fix() {
    FlakyHandler.broken = false;
  }

  @POST
  @Path("/sequenced/fix")
  public void fixSequenced() {
    SequencedHandler.fixed = true;
  }

  @POST
  @Path("/break")
  public void breakIt() {
    FlakyHandler.broken = true;
  }

  @POST
  @Path("/replay")
  @Produces(MediaType.TEXT_PLAIN)
  public String replay(@QueryParam("subscription") String subscription, @QueryParam("id") long id) {
    return Boolean.toString(
        inbox.subscription(subscription).orElseThrow().deadLetters().replay(id));
  }
}
