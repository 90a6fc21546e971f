package dev.postbox.payments.orders;

/** The body of {@code POST /orders}. */
public record OrderRequest(String customer, Long amountCents) {

  static final long MAX_AMOUNT_CENTS = 100_000_000L;

  /** Checks the request, or answers 400 naming the field. */
  void validate() {
    if (customer == null || customer.isBlank()) {
      throw dev.postbox.admin.ApiError.badRequest("customer is required");
    }
    if (customer.length() > 200) {
      throw dev.postbox.admin.ApiError.badRequest("customer must be at most 200 characters");
    }
    if (amountCents == null || amountCents < 1 || amountCents > MAX_AMOUNT_CENTS) {
      throw dev.postbox.admin.ApiError.badRequest(
          "amountCents must be between 1 and " + MAX_AMOUNT_CENTS);
    }
  }
}
