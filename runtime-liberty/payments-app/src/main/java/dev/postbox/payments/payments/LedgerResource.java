package dev.postbox.payments.payments;

import dev.postbox.admin.ApiError;
import dev.postbox.payments.orders.Orders;
import jakarta.annotation.Resource;
import jakarta.enterprise.context.RequestScoped;
import jakarta.inject.Inject;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.QueryParam;
import jakarta.ws.rs.core.MediaType;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.eclipse.microprofile.openapi.annotations.media.Content;
import org.eclipse.microprofile.openapi.annotations.media.Schema;
import org.eclipse.microprofile.openapi.annotations.responses.APIResponse;

/**
 * {@code GET /ledger}: charges against orders, where a lost or doubled event would show; {@code GET
 * /notifications}: what customers were told.
 */
@Path("/")
@RequestScoped
@Produces(MediaType.APPLICATION_JSON)
@org.eclipse.microprofile.openapi.annotations.tags.Tag(name = "ledger")
@APIResponse(
    responseCode = "400",
    description = "A bad page size; the message names it.",
    content =
        @Content(
            mediaType = MediaType.APPLICATION_JSON,
            schema = @Schema(implementation = ApiError.Body.class)))
public class LedgerResource {

  /**
   * Totals. {@code doubleCharged} counts orders with more than one charge: it must stay 0. {@code
   * expired} counts expiries (orders not charged within {@code payments.hold}), {@code
   * expiredOrders} the orders they concern: the two are equal, and no order is both charged and
   * expired.
   */
  public record Ledger(
      long orders,
      long ordersTotalCents,
      long charges,
      long chargedTotalCents,
      long chargedOrders,
      long doubleCharged,
      long notifications,
      long expired,
      long expiredOrders) {}

  /** One notification. */
  public record Notification(String orderId, String message) {}

  @Resource(lookup = "jdbc/postbox")
  DataSource dataSource;

  @Inject Orders orders;

  @GET
  @Path("/ledger")
  @APIResponse(
      responseCode = "200",
      description = "Totals of orders, charges and notifications.",
      content =
          @Content(
              mediaType = MediaType.APPLICATION_JSON,
              schema = @Schema(implementation = Ledger.class)))
  public Ledger ledger() throws SQLException {
    long[] o = orders.totals();
    try (Connection c = dataSource.getConnection()) {
      long[] charges =
          longs(
              c,
              "SELECT COUNT(*), COALESCE(SUM(amount_cents), 0), COUNT(DISTINCT order_id)"
                  + " FROM pay_ledger");
      long doubles =
          longs(
              c,
              "SELECT COUNT(*) FROM (SELECT order_id FROM pay_ledger GROUP BY order_id"
                  + " HAVING COUNT(*) > 1) d")[0];
      long notifications = longs(c, "SELECT COUNT(*) FROM pay_notification")[0];
      long[] expired = longs(c, "SELECT COUNT(*), COUNT(DISTINCT order_id) FROM pay_expiry");
      return new Ledger(
          o[0],
          o[1],
          charges[0],
          charges[1],
          charges[2],
          doubles,
          notifications,
          expired[0],
          expired[1]);
    }
  }

  @GET
  @Path("/notifications")
  @APIResponse(
      responseCode = "200",
      description = "The latest notifications, newest first.",
      content =
          @Content(
              mediaType = MediaType.APPLICATION_JSON,
              schema =
                  @Schema(
                      type = org.eclipse.microprofile.openapi.annotations.enums.SchemaType.ARRAY,
                      implementation = Notification.class)))
  public List<Notification> notifications(
      @org.eclipse.microprofile.openapi.annotations.parameters.Parameter(
              schema =
                  @org.eclipse.microprofile.openapi.annotations.media.Schema(
                      type = org.eclipse.microprofile.openapi.annotations.enums.SchemaType.INTEGER,
                      minimum = "1",
                      maximum = "500"))
          @QueryParam("limit")
          String limit)
      throws SQLException {
    int rows = ApiError.limit(limit, 50, 500);
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps =
            c.prepareStatement(
                "SELECT order_id, message FROM pay_notification ORDER BY created_at DESC")) {
      ps.setMaxRows(rows);
      List<Notification> out = new ArrayList<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          out.add(new Notification(rs.getString(1), rs.getString(2)));
        }
      }
      return out;
    }
  }

  private static long[] longs(Connection c, String sql) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(sql);
        ResultSet rs = ps.executeQuery()) {
      rs.next();
      long[] out = new long[rs.getMetaData().getColumnCount()];
      for (int i = 0; i < out.length; i++) {
        out[i] = rs.getLong(i + 1);
      }
      return out;
    }
  }
}
