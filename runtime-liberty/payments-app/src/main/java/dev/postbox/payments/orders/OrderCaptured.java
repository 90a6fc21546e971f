package dev.postbox.payments.orders;

/**
 * The event recorded with each order: its payload, as JSON.
 *
 * @param holdEventId the order's {@link OrderHoldExpired} event, which the charge cancels; null in
 *     events recorded before holds existed
 */
public record OrderCaptured(String orderId, String customer, long amountCents, String holdEventId) {

  public static final String TYPE = "OrderCaptured";
}
