package dev.postbox.payments.payments;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;

/**
 * A customer's running number in a table of effects ({@code account_seq}): 1 for the customer's
 * first charge or notification, then one more each time, in the order the effects were applied.
 * Nothing locks the customer: if two transactions ever applied one customer's events side by side,
 * they would take the same number, and the crash harness's order verdict would show it.
 */
public final class Accounts {

  private Accounts() {}

  /**
   * The next number for the customer in the table.
   *
   * @param table pay_ledger or pay_notification (a constant, never user input)
   */
  public static long next(Connection c, String table, String customer) throws SQLException {
    if (!table.equals("pay_ledger") && !table.equals("pay_notification")) {
      throw new IllegalArgumentException("no account numbers in " + table);
    }
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT COALESCE(MAX(account_seq), 0) FROM " + table + " WHERE customer = ?")) {
      ps.setString(1, customer);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1) + 1;
      }
    }
  }
}
