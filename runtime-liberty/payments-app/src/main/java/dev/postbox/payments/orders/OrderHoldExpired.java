package dev.postbox.payments.orders;

/**
 * Scheduled with each order, {@code payments.hold} after it is placed, and cancelled by its charge:
 * published only for an order not charged in time, which then ends expired instead (its payload, as
 * JSON).
 */
public record OrderHoldExpired(String orderId, String customer, long amountCents) {

  public static final String TYPE = "OrderHoldExpired";
}
