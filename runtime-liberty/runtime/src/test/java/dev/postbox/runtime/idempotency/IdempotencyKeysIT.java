package dev.postbox.runtime.idempotency;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.runtime.db.Dialect;
import dev.postbox.runtime.db.Migrations;
import dev.postbox.runtime.db.Transactions;
import dev.postbox.runtime.testing.TestDatabase;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** Idempotency keys on each real database. */
class IdempotencyKeysIT {

  private static final Duration HOLD = Duration.ofSeconds(30);

  private record Setup(TestDatabase db, Transactions tx, IdempotencyKeys keys) {}

  private static Setup setup(TestDatabase.Kind kind) {
    TestDatabase db = TestDatabase.create(kind);
    Dialect dialect = Migrations.migrate(db.dataSource());
    Transactions tx = Transactions.jdbc(db.dataSource());
    return new Setup(db, tx, new IdempotencyKeys(tx, dialect, HOLD));
  }

  @ParameterizedTest
  @EnumSource(TestDatabase.Kind.class)
  void aKeyIsClaimedOnceAndAnswersTheFirstAnswerAfterItsWorkCommitted(TestDatabase.Kind kind) {
    Setup s = setup(kind);
    try (TestDatabase db = s.db()) {
      Instant now = Instant.now();
      assertThat(s.keys().claim("anonymous", "k1", "fp", "t1", now))
          .isEqualTo(new IdempotencyKeys.Claimed("t1"));
      assertThat(s.keys().claim("anonymous", "k1", "fp", "t2", now))
          .isInstanceOf(IdempotencyKeys.InFlight.class);
      assertThat(s.keys().claim("anonymous", "k1", "other", "t3", now))
          .isInstanceOf(IdempotencyKeys.Mismatch.class);
      // the work's transaction stores the answer
      boolean completed =
          s.tx()
              .inTransaction(
                  c ->
                      s.keys().complete(c, "anonymous", "k1", "t1", 201, "/orders/1", "{\"a\":1}"));
      assertThat(completed).isTrue();
      assertThat(s.keys().claim("anonymous", "k1", "fp", "t4", now))
          .isEqualTo(new IdempotencyKeys.Completed(201, "/orders/1", "{\"a\":1}"));
      assertThat(s.keys().claim("anonymous", "k1", "other", "t5", now))
          .isInstanceOf(IdempotencyKeys.Mismatch.class);
      // another scope, or a key differing only in case, is another key
      assertThat(s.keys().claim("user:ada", "k1", "fp", "t6", now))
          .isInstanceOf(IdempotencyKeys.Claimed.class);
      assertThat(s.keys().claim("anonymous", "K1", "fp", "t7", now))
          .isInstanceOf(IdempotencyKeys.Claimed.class);
    }
  }

  @ParameterizedTest
  @EnumSource(TestDatabase.Kind.class)
  void aRolledBackAnswerIsNotStoredAndAReleasedKeyCanBeClaimedAgain(TestDatabase.Kind kind) {
    Setup s = setup(kind);
    try (TestDatabase db = s.db()) {
      Instant now = Instant.now();
      s.keys().claim("anonymous", "k", "fp", "t1", now);
      try {
        s.tx()
            .inTransaction(
                c -> {
                  s.keys().complete(c, "anonymous", "k", "t1", 201, null, "{}");
                  throw new IllegalStateException("the work failed");
                });
      } catch (IllegalStateException expected) {
        // rolled back
      }
      assertThat(s.keys().claim("anonymous", "k", "fp", "t2", now))
          .isInstanceOf(IdempotencyKeys.InFlight.class);
      s.keys().release("anonymous", "k", "t1");
      assertThat(s.keys().claim("anonymous", "k", "fp", "t3", now))
          .isEqualTo(new IdempotencyKeys.Claimed("t3"));
    }
  }

  @ParameterizedTest
  @EnumSource(TestDatabase.Kind.class)
  void anExpiredClaimIsTakenOverAndItsOldOwnerCannotComplete(TestDatabase.Kind kind) {
    Setup s = setup(kind);
    try (TestDatabase db = s.db()) {
      Instant then = Instant.now();
      s.keys().claim("anonymous", "k", "fp", "dead", then);
      Instant later = then.plus(HOLD).plusSeconds(1);
      assertThat(s.keys().claim("anonymous", "k", "fp", "alive", later))
          .isEqualTo(new IdempotencyKeys.Claimed("alive"));
      boolean stale =
          s.tx().inTransaction(c -> s.keys().complete(c, "anonymous", "k", "dead", 201, null, "x"));
      assertThat(stale).as("the fenced-out owner must roll back").isFalse();
      boolean fresh =
          s.tx()
              .inTransaction(c -> s.keys().complete(c, "anonymous", "k", "alive", 201, null, "y"));
      assertThat(fresh).isTrue();
      assertThat(s.keys().claim("anonymous", "k", "fp", "t", later))
          .isEqualTo(new IdempotencyKeys.Completed(201, null, "y"));
    }
  }

  @ParameterizedTest
  @EnumSource(TestDatabase.Kind.class)
  void eightConcurrentClaimsOfOneKeyGiveExactlyOneOwner(TestDatabase.Kind kind) throws Exception {
    Setup s = setup(kind);
    ExecutorService pool = Executors.newFixedThreadPool(8);
    try (TestDatabase db = s.db()) {
      CountDownLatch go = new CountDownLatch(1);
      List<Future<IdempotencyKeys.Claim>> claims = new ArrayList<>();
      for (int i = 0; i < 8; i++) {
        String token = "t" + i;
        claims.add(
            pool.submit(
                () -> {
                  go.await();
                  return s.keys().claim("anonymous", "race", "fp", token, Instant.now());
                }));
      }
      go.countDown();
      int owners = 0;
      for (Future<IdempotencyKeys.Claim> f : claims) {
        IdempotencyKeys.Claim c = f.get();
        if (c instanceof IdempotencyKeys.Claimed) {
          owners++;
        } else {
          assertThat(c).isInstanceOf(IdempotencyKeys.InFlight.class);
        }
      }
      assertThat(owners).isEqualTo(1);
    } finally {
      pool.shutdownNow();
    }
  }

  @ParameterizedTest
  @EnumSource(TestDatabase.Kind.class)
  void expiredKeysArePurgedInBoundedBatches(TestDatabase.Kind kind) {
    Setup s = setup(kind);
    try (TestDatabase db = s.db()) {
      Instant old = Instant.now().minus(Duration.ofDays(2));
      for (int i = 0; i < 5; i++) {
        s.keys().claim("anonymous", "old-" + i, "fp", "t", old);
      }
      s.keys().claim("anonymous", "fresh", "fp", "t", Instant.now());
      Instant cutoff = Instant.now().minus(Duration.ofDays(1));
      assertThat(s.keys().purge(cutoff, 2)).isEqualTo(2);
      assertThat(s.keys().purge(cutoff, 2)).isEqualTo(2);
      assertThat(s.keys().purge(cutoff, 2)).isEqualTo(1);
      assertThat(s.keys().purge(cutoff, 2)).isZero();
      assertThat(db.count("SELECT COUNT(*) FROM postbox_idempotency")).isEqualTo(1);
    }
  }
}
