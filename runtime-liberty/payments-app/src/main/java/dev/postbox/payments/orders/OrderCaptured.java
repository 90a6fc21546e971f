package dev.postbox.payments.orders;

/** The event recorded with each order: its payload, as JSON. */
public record OrderCaptured(String orderId, String customer, long amountCents) {

  public static final String TYPE = "OrderCaptured";
}
