package dev.postbox.runtime.idempotency;

import dev.postbox.runtime.db.Dialect;
import dev.postbox.runtime.db.SqlStates;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The {@code postbox_idempotency} table, in parameterised JDBC on the caller's connection; {@link
 * IdempotencyKeys} decides what a row means.
 */
final class IdempotencyRepository {

  private static final String INSERT_CLAIM =
      "INSERT INTO postbox_idempotency (scope, idem_key, fingerprint, status, claim_token,"
          + " claimed_until, created_at) VALUES (?, ?, ?, 'IN_FLIGHT', ?, ?, ?)";

  private static final String READ =
      "SELECT fingerprint, status, claim_token, claimed_until, response_status,"
          + " response_location, response_body FROM postbox_idempotency"
          + " WHERE scope = ? AND idem_key = ?";

  private static final String TAKE_OVER =
      "UPDATE postbox_idempotency SET claim_token = ?, claimed_until = ?"
          + " WHERE scope = ? AND idem_key = ? AND status = 'IN_FLIGHT' AND claim_token = ?";

  private static final String COMPLETE =
      "UPDATE postbox_idempotency SET status = 'DONE', response_status = ?,"
          + " response_location = ?, response_body = ?"
          + " WHERE scope = ? AND idem_key = ? AND status = 'IN_FLIGHT' AND claim_token = ?";

  private static final String RELEASE =
      "DELETE FROM postbox_idempotency WHERE scope = ? AND idem_key = ?"
          + " AND status = 'IN_FLIGHT' AND claim_token = ?";

  private static final String OLDEST =
      "SELECT scope, idem_key FROM postbox_idempotency WHERE created_at < ? ORDER BY created_at";

  private static final String DELETE =
      "DELETE FROM postbox_idempotency WHERE scope = ? AND idem_key = ? AND created_at < ?";

  /** A key's row. */
  record Row(
      String fingerprint,
      String status,
      String token,
      Instant claimedUntil,
      int responseStatus,
      String responseLocation,
      String responseBody) {}

  private final Dialect dialect;

  IdempotencyRepository(Dialect dialect) {
    this.dialect = dialect;
  }

  /** Inserts an IN_FLIGHT claim; false if the key exists (a unique violation). */
  boolean insertClaim(
      Connection c,
      String scope,
      String key,
      String fingerprint,
      String token,
      Instant until,
      Instant now)
      throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(INSERT_CLAIM)) {
      ps.setString(1, scope);
      ps.setString(2, key);
      ps.setString(3, fingerprint);
      ps.setString(4, token);
      dialect.bind(ps, 5, until);
      dialect.bind(ps, 6, now);
      ps.executeUpdate();
      return true;
    } catch (SQLException e) {
      if (SqlStates.inClass(e, "23")) {
        return false;
      }
      throw e;
    }
  }

  Optional<Row> read(Connection c, String scope, String key) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(READ)) {
      ps.setString(1, scope);
      ps.setString(2, key);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          return Optional.empty();
        }
        return Optional.of(
            new Row(
                rs.getString("fingerprint"),
                rs.getString("status"),
                rs.getString("claim_token"),
                dialect.read(rs, "claimed_until"),
                rs.getInt("response_status"),
                rs.getString("response_location"),
                rs.getString("response_body")));
      }
    }
  }

  /** Moves an IN_FLIGHT claim from {@code stale} to {@code token}; false if it was not stale's. */
  boolean takeOver(
      Connection c, String scope, String key, String stale, String token, Instant until)
      throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(TAKE_OVER)) {
      ps.setString(1, token);
      dialect.bind(ps, 2, until);
      ps.setString(3, scope);
      ps.setString(4, key);
      ps.setString(5, stale);
      return ps.executeUpdate() == 1;
    }
  }

  /** IN_FLIGHT under {@code token} → DONE with the answer; false if the token no longer holds. */
  boolean complete(
      Connection c,
      String scope,
      String key,
      String token,
      int status,
      String location,
      String body)
      throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(COMPLETE)) {
      ps.setInt(1, status);
      ps.setString(2, location);
      ps.setString(3, body);
      ps.setString(4, scope);
      ps.setString(5, key);
      ps.setString(6, token);
      return ps.executeUpdate() == 1;
    }
  }

  /** Deletes an IN_FLIGHT claim held by {@code token}. */
  int release(Connection c, String scope, String key, String token) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(RELEASE)) {
      ps.setString(1, scope);
      ps.setString(2, key);
      ps.setString(3, token);
      return ps.executeUpdate();
    }
  }

  /** Deletes at most {@code limit} keys created before the cutoff, oldest first; how many. */
  int purge(Connection c, Instant cutoff, int limit) throws SQLException {
    List<String[]> keys = new ArrayList<>();
    try (PreparedStatement ps = c.prepareStatement(OLDEST)) {
      dialect.bind(ps, 1, cutoff);
      ps.setMaxRows(limit);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          keys.add(new String[] {rs.getString(1), rs.getString(2)});
        }
      }
    }
    if (keys.isEmpty()) {
      return 0;
    }
    try (PreparedStatement ps = c.prepareStatement(DELETE)) {
      for (String[] k : keys) {
        ps.setString(1, k[0]);
        ps.setString(2, k[1]);
        dialect.bind(ps, 3, cutoff);
        ps.addBatch();
      }
      ps.executeBatch();
    }
    return keys.size();
  }
}
