package dev.postbox.payments.payments;

/** Recorded by the payments handler for each charge: the notifications handler's input. */
public record PaymentReceived(String orderId, String customer, long amountCents) {

  public static final String TYPE = "PaymentReceived";
}
