package dev.postbox.runtime.idempotency;

import dev.postbox.runtime.db.Dialect;
import dev.postbox.runtime.db.SqlStates;
import dev.postbox.runtime.db.Transactions;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

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
  private final IdempotencyRepository keys;
  private final Duration inFlightTimeout;

  /**
   * @param inFlightTimeout how long a claim holds before a retry may take it over; longer than the
   *     work's transaction can last
   */
  public IdempotencyKeys(Transactions tx, Dialect dialect, Duration inFlightTimeout) {
    this.tx = tx;
    this.keys = new IdempotencyRepository(dialect);
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
      if (SqlStates.inClass(e, "40")) {
        // A deadlock or serialization failure between requests racing for this key (InnoDB's
        // insert after a concurrent delete): another request holds or is taking it.
        return new InFlight();
      }
      throw e;
    }
  }

  private Claim claimOnce(String scope, String key, String fingerprint, String token, Instant now) {
    Instant until = now.plus(inFlightTimeout);
    boolean inserted =
        tx.inTransaction(c -> keys.insertClaim(c, scope, key, fingerprint, token, until, now));
    if (inserted) {
      return new Claimed(token);
    }
    return tx.inTransaction(c -> existing(c, scope, key, fingerprint, token, now));
  }

  private Claim existing(
      Connection c, String scope, String key, String fingerprint, String token, Instant now)
      throws SQLException {
    Optional<IdempotencyRepository.Row> found = keys.read(c, scope, key);
    if (found.isEmpty()) {
      return new InFlight(); // released between our insert and this read: the client retries
    }
    IdempotencyRepository.Row row = found.get();
    if (!row.fingerprint().equals(fingerprint)) {
      return new Mismatch();
    }
    if (row.status().equals("DONE")) {
      return new Completed(row.responseStatus(), row.responseLocation(), row.responseBody());
    }
    if (row.claimedUntil().isAfter(now)) {
      return new InFlight();
    }
    return keys.takeOver(c, scope, key, row.token(), token, now.plus(inFlightTimeout))
        ? new Claimed(token)
        : new InFlight();
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
    return keys.complete(c, scope, key, token, status, location, body);
  }

  /** Gives a claim up after its work failed or answered an error, so the client may retry. */
  public void release(String scope, String key, String token) {
    tx.inTransaction(c -> keys.release(c, scope, key, token));
  }

  /**
   * Deletes at most {@code limit} keys created before the cutoff, oldest first.
   *
   * @return how many were deleted; less than {@code limit} means none is left
   */
  public int purge(Instant cutoff, int limit) {
    return tx.inTransaction(c -> keys.purge(c, cutoff, limit));
  }
}
