package dev.postbox.runtime.jakarta;

import dev.postbox.runtime.api.Idempotent;
import dev.postbox.runtime.checkpoint.Checkpoint;
import dev.postbox.runtime.checkpoint.Checkpoints;
import dev.postbox.runtime.idempotency.IdempotencyKeys;
import jakarta.annotation.Priority;
import jakarta.annotation.Resource;
import jakarta.enterprise.context.ContextNotActiveException;
import jakarta.inject.Inject;
import jakarta.interceptor.AroundInvoke;
import jakarta.interceptor.Interceptor;
import jakarta.interceptor.InvocationContext;
import jakarta.json.bind.Jsonb;
import jakarta.json.bind.JsonbBuilder;
import jakarta.transaction.Status;
import jakarta.transaction.TransactionSynchronizationRegistry;
import jakarta.transaction.UserTransaction;
import jakarta.ws.rs.WebApplicationException;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import java.net.URI;
import java.sql.Connection;
import java.time.Instant;
import java.util.UUID;

/**
 * Runs an {@link Idempotent} method: claims its key, runs the method in a JTA transaction, and
 * stores the answer in that transaction. Outside {@code @Transactional} (whose interceptor has a
 * higher priority), so the method's transaction joins this one.
 */
@Idempotent
@Interceptor
@Priority(Interceptor.Priority.PLATFORM_BEFORE + 150)
public class IdempotencyInterceptor {

  private static final Jsonb JSON = JsonbBuilder.create();

  @Inject IdempotencyRequest request;

  @Inject PostboxRuntime runtime;

  @Resource UserTransaction ut;

  /**
   * The transaction key of the {@code @Idempotent} request running on this thread, if any: its
   * effects must join that transaction ({@link JtaOutbox} checks), and a nested {@code @Idempotent}
   * call simply runs inside it.
   */
  private static final ThreadLocal<Object> RUNNING = new ThreadLocal<>();

  @Resource TransactionSynchronizationRegistry registry;

  /** The running idempotent request's transaction key on this thread, or null. */
  static Object runningTransaction() {
    return RUNNING.get();
  }

  @AroundInvoke
  Object around(InvocationContext ctx) throws Exception {
    if (RUNNING.get() != null) {
      return ctx.proceed(); // nested: the outer request's key and transaction cover it
    }
    String key;
    try {
      key = request.key();
    } catch (ContextNotActiveException noRequest) {
      return ctx.proceed(); // called outside an HTTP request: no key to honour
    }
    if (key == null) {
      return ctx.proceed();
    }
    String scope = request.scope();
    IdempotencyKeys keys = runtime.idempotencyKeys();
    String token = UUID.randomUUID().toString();
    IdempotencyKeys.Claim claim =
        keys.claim(scope, key, request.fingerprint(), token, Instant.now());
    if (claim instanceof IdempotencyKeys.Claimed c) {
      return runClaimed(ctx, keys, scope, key, c.token());
    }
    if (claim instanceof IdempotencyKeys.Completed done) {
      return answer(ctx, replay(done));
    }
    if (claim instanceof IdempotencyKeys.Mismatch) {
      throw new WebApplicationException(
          IdempotencyFilter.error(
              422,
              "this "
                  + Idempotent.HEADER
                  + " was already used with a different request (method, path or body);"
                  + " send a new key for a new request"));
    }
    throw new WebApplicationException(
        Response.fromResponse(
                IdempotencyFilter.error(
                    409,
                    "a request with this "
                        + Idempotent.HEADER
                        + " is still being processed; retry shortly"))
            .header("Retry-After", "1")
            .build());
  }

  private Object runClaimed(
      InvocationContext ctx, IdempotencyKeys keys, String scope, String key, String token)
      throws Exception {
    if (ut.getStatus() != Status.STATUS_NO_TRANSACTION) {
      keys.release(scope, key, token);
      throw new IllegalStateException(
          "@Idempotent methods run in a transaction of their own; "
              + ctx.getMethod()
              + " was called inside one");
    }
    // The work's transaction ends before the claim does, so a slow request is rolled back by its
    // own timeout rather than overtaken by a retry.
    try {
      ut.setTransactionTimeout(
          (int) Math.max(1, runtime.idempotency().inFlightTimeout().toSeconds() - 1));
      ut.begin();
    } catch (Exception | Error e) {
      releaseQuietly(keys, scope, key, token, e);
      throw e;
    } finally {
      ut.setTransactionTimeout(0); // back to the server's default for this pooled thread
    }
    RUNNING.set(registry.getTransactionKey());
    boolean settled = false;
    try {
      Object result = ctx.proceed();
      Response r = result instanceof Response resp ? resp : null;
      int status = r == null ? (result == null ? 204 : 200) : r.getStatus();
      if (status < 200 || status >= 300) {
        ut.rollback();
        settled = true;
        keys.release(scope, key, token);
        return result;
      }
      Object entity = r == null ? result : r.hasEntity() ? r.getEntity() : null;
      String body = entity == null ? null : entity instanceof String s ? s : JSON.toJson(entity);
      String location = r == null || r.getLocation() == null ? null : r.getLocation().toString();
      boolean completed;
      try (Connection c = runtime.dataSource().getConnection()) {
        completed = keys.complete(c, scope, key, token, status, location, body);
      }
      if (!completed) {
        ut.rollback();
        settled = true;
        throw new WebApplicationException(
            IdempotencyFilter.error(
                409,
                "this request took too long and a retry with the same "
                    + Idempotent.HEADER
                    + " took over; its effects were rolled back"));
      }
      ut.commit();
      settled = true;
      // committed, not yet answered: a retry must get this answer, not run the work again
      Checkpoints.reach(Checkpoint.HTTP_COMMITTED_NOT_ANSWERED);
      return result;
    } catch (Exception | Error e) {
      if (!settled) {
        rollbackQuietly();
        releaseQuietly(keys, scope, key, token, e);
      }
      throw e;
    } finally {
      RUNNING.remove();
    }
  }

  private static Response replay(IdempotencyKeys.Completed done) {
    Response.ResponseBuilder b = Response.status(done.status()).header(Idempotent.REPLAYED, "true");
    if (done.location() != null) {
      b.location(URI.create(done.location()));
    }
    if (done.body() != null) {
      b.type(MediaType.APPLICATION_JSON).entity(done.body());
    }
    return b.build();
  }

  private static Object answer(InvocationContext ctx, Response r) {
    if (Response.class.isAssignableFrom(ctx.getMethod().getReturnType())) {
      return r;
    }
    throw new WebApplicationException(r); // the answer as it was, from a method of another type
  }

  private void rollbackQuietly() {
    try {
      if (ut.getStatus() != Status.STATUS_NO_TRANSACTION) {
        ut.rollback();
      }
    } catch (Exception ignored) {
      // the transaction manager times it out; nothing was committed
    }
  }

  private static void releaseQuietly(
      IdempotencyKeys keys, String scope, String key, String token, Throwable cause) {
    try {
      keys.release(scope, key, token);
    } catch (RuntimeException e) {
      cause.addSuppressed(e); // the claim expires on its own
    }
  }
}
