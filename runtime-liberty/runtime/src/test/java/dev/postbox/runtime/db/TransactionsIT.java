package dev.postbox.runtime.db;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.postbox.runtime.testing.TestDatabase;
import java.sql.PreparedStatement;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** Local JDBC transactions on each real database. */
class TransactionsIT {

  @ParameterizedTest
  @EnumSource(TestDatabase.Kind.class)
  void anErrorInTheWorkRollsItBackInsteadOfCommittingItWithAutoCommit(TestDatabase.Kind kind) {
    try (TestDatabase db = TestDatabase.create(kind)) {
      db.execute("CREATE TABLE tx_probe (n INTEGER)");
      Transactions tx = Transactions.jdbc(db.dataSource());
      assertThatThrownBy(
              () ->
                  tx.inTransaction(
                      c -> {
                        try (PreparedStatement ps =
                            c.prepareStatement("INSERT INTO tx_probe (n) VALUES (1)")) {
                          ps.executeUpdate();
                        }
                        throw new StackOverflowError("a handler recursed too deep");
                      }))
          .isInstanceOf(StackOverflowError.class);
      assertThat(db.count("SELECT COUNT(*) FROM tx_probe")).isZero();
    }
  }
}
