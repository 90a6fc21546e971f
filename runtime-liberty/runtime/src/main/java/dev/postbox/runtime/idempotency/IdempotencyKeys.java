package dev.postbox.runtime.idempotency;

import dev.postbox.runtime.db.Dialect;
import dev.postbox.runtime.db.Transactions;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * Idempotency keys at an API's edge, as the IETF {@code Idempotency-Key} header draft describes
 * them, kept in {@code postbox_idempotency}.
 *
 * <p>A request with a key first {@link #claim claims} it in a short transaction of its own. The
 * claim is {@code IN_FLIGHT} with a token and a deadline. The request then runs its work in its own
 * transaction and, in that same transaction, {@link #complete completes} the key with its answer:
 * the answer is stored if and only if the work committed. A crash before that commit leaves an
 * {@code IN_FLIGHT} claim and no effect; once the claim's deadline passes, a retry takes it over.
 * The completion is fenced by the token: a request whose claim was taken over cannot complete, so
 * its transaction rolls back and one effect remains.
 */
public final class IdempotencyKeys {

  /** What a claim found. */
  public sealed interface Claim {}

  /** The key is this request's now: run the work, then {@link #complete}. */
  public record Claimed(String token) implements Claim {}

  /** The key was used with another request (method, path or body differ). */
  public record Mismatch() implements Claim {}

  /** Another request with this key is still running. */
  public record InFlight() implements Claim {}

  /** The key's request has completed: answer with its response again. */
  public record Completed(int status, String location, String body) implements Claim {}

  private final Transactions tx;
  private final Dialect dialect;
  private final Duration inFlightTimeout;

  /**
   * @param inFlightTimeout how long a claim holds before a retry may take it over; longer than the
   *     work's transaction can last
   */
  public IdempotencyKeys(Transactions tx, Dialect dialect, Duration inFlightTimeout) {
    this.tx = tx;
    this.dialect = dialect;
    this.inFlightTimeout = inFlightTimeout;
  }

  /**
   * Claims a key for a request, in transactions of its own.
   *
   * @param scope whose key it is, e.g. the authenticated user, or {@code anonymous}
   * @param fingerprint a hash of what makes the request the same request
   */
  public Claim claim(String scope, String key, String fingerprint, String token, Instant now) {
    try {
      return claimOnce(scope, key, fingerprint, token, now);
    } catch (RuntimeException e) {
      if (isConcurrencyFailure(e)) {
        // A deadlock or serialization failure between requests racing for this key (InnoDB's
        // insert after a concurrent delete): another request holds or is taking it.
        return new InFlight();
      }
      throw e;
    }
  }

  private Claim claimOnce(String scope, String key, String fingerprint, String token, Instant now) {
    boolean inserted =
        tx.inTransaction(
            c -> {
              try (PreparedStatement ps =
                  c.prepareStatement(
                      "INSERT INTO postbox_idempotency (scope, idem_key, fingerprint, status,"
                          + " claim_token, claimed_until, created_at)"
                          + " VALUES (?, ?, ?, 'IN_FLIGHT', ?, ?, ?)")) {
                ps.setString(1, scope);
                ps.setString(2, key);
                ps.setString(3, fingerprint);
                ps.setString(4, token);
                dialect.bind(ps, 5, now.plus(inFlightTimeout));
                dialect.bind(ps, 6, now);
                ps.executeUpdate();
                return true;
              } catch (SQLException e) {
                if (isUniqueViolation(e)) {
                  return false;
                }
                throw e;
              }
            });
    if (inserted) {
      return new Claimed(token);
    }
    return tx.inTransaction(c -> existing(c, scope, key, fingerprint, token, now));
  }

  private Claim existing(
      Connection c, String scope, String key, String fingerprint, String token, Instant now)
      throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT fingerprint, status, claim_token, claimed_until, response_status,"
                + " response_location, response_body FROM postbox_idempotency"
                + " WHERE scope = ? AND idem_key = ?")) {
      ps.setString(1, scope);
      ps.setString(2, key);
      try (ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          return new InFlight(); // released between our insert and this read: the client retries
        }
        if (!rs.getString("fingerprint").equals(fingerprint)) {
          return new Mismatch();
        }
        if (rs.getString("status").equals("DONE")) {
          return new Completed(
              rs.getInt("response_status"),
              rs.getString("response_location"),
              rs.getString("response_body"));
        }
        Instant until = dialect.read(rs, "claimed_until");
        if (until.isAfter(now)) {
          return new InFlight();
        }
        String stale = rs.getString("claim_token");
        try (PreparedStatement take =
            c.prepareStatement(
                "UPDATE postbox_idempotency SET claim_token = ?, claimed_until = ?"
                    + " WHERE scope = ? AND idem_key = ? AND status = 'IN_FLIGHT'"
                    + " AND claim_token = ?")) {
          take.setString(1, token);
          dialect.bind(take, 2, now.plus(inFlightTimeout));
          take.setString(3, scope);
          take.setString(4, key);
          take.setString(5, stale);
          return take.executeUpdate() == 1 ? new Claimed(token) : new InFlight();
        }
      }
    }
  }

  /**
   * Stores the answer, on the connection and inside the transaction of the request's work.
   *
   * @return false if the claim was taken over meanwhile: the caller must roll its work back
   */
  public boolean complete(
      Connection c,
      String scope,
      String key,
      String token,
      int status,
      String location,
      String body)
      throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "UPDATE postbox_idempotency SET status = 'DONE', response_status = ?,"
                + " response_location = ?, response_body = ?"
                + " WHERE scope = ? AND idem_key = ? AND status = 'IN_FLIGHT' AND claim_token = ?")) {
      ps.setInt(1, status);
      ps.setString(2, location);
      ps.setString(3, body);
      ps.setString(4, scope);
      ps.setString(5, key);
      ps.setString(6, token);
      return ps.executeUpdate() == 1;
    }
  }

  /** Gives a claim up after its work failed or answered an error, so the client may retry. */
  public void release(String scope, String key, String token) {
    tx.inTransaction(
        c -> {
          try (PreparedStatement ps =
              c.prepareStatement(
                  "DELETE FROM postbox_idempotency WHERE scope = ? AND idem_key = ?"
                      + " AND status = 'IN_FLIGHT' AND claim_token = ?")) {
            ps.setString(1, scope);
            ps.setString(2, key);
            ps.setString(3, token);
            return ps.executeUpdate();
          }
        });
  }

  /**
   * Deletes at most {@code limit} keys created before the cutoff, oldest first.
   *
   * @return how many were deleted; less than {@code limit} means none is left
   */
  public int purge(Instant cutoff, int limit) {
    return tx.inTransaction(
        c -> {
          List<String[]> keys = new ArrayList<>();
          try (PreparedStatement ps =
              c.prepareStatement(
                  "SELECT scope, idem_key FROM postbox_idempotency WHERE created_at < ?"
                      + " ORDER BY created_at")) {
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
          try (PreparedStatement ps =
              c.prepareStatement(
                  "DELETE FROM postbox_idempotency WHERE scope = ? AND idem_key = ?"
                      + " AND created_at < ?")) {
            for (String[] k : keys) {
              ps.setString(1, k[0]);
              ps.setString(2, k[1]);
              dialect.bind(ps, 3, cutoff);
              ps.addBatch();
            }
            ps.executeBatch();
          }
          return keys.size();
        });
  }

  /** SQLState class 40: transaction rollback (deadlock, serialization failure). */
  private static boolean isConcurrencyFailure(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof SQLException s
          && s.getSQLState() != null
          && s.getSQLState().startsWith("40")) {
        return true;
      }
    }
    return false;
  }

  private static boolean isUniqueViolation(SQLException e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof SQLException s
          && s.getSQLState() != null
          && s.getSQLState().startsWith("23")) {
        return true;
      }
    }
    return false;
  }
}
