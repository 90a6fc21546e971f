package dev.postbox.payments.orders;

import dev.postbox.admin.ApiError;
import dev.postbox.payments.StrictJson;
import dev.postbox.spi.EventRules;
import dev.postbox.spi.InvalidEventException;
import java.util.Map;

/** The body of {@code POST /orders}. */
public record OrderRequest(String customer, Long amountCents) {

  static final long MAX_AMOUNT_CENTS = 100_000_000L;
  static final int MAX_CUSTOMER_LENGTH = 200;

  /**
   * Reads a body strictly ({@link StrictJson}): {@code customer} must be a JSON string and {@code
   * amountCents} a JSON number with no fraction; other members are ignored.
   *
   * @throws jakarta.ws.rs.WebApplicationException 400 naming the field
   */
  static OrderRequest parse(byte[] body) {
    Map<String, Object> json = StrictJson.object(body);
    Object customer = json.get("customer");
    if (customer != null && !(customer instanceof String)) {
      throw ApiError.badRequest("customer must be a JSON string");
    }
    Object amount = json.get("amountCents");
    Long cents = null;
    if (amount != null) {
      if (!(amount instanceof StrictJson.Number n)) {
        throw ApiError.badRequest("amountCents must be a JSON number");
      }
      if (n.hasFraction()) {
        throw ApiError.badRequest(
            "amountCents must be a whole number of cents, not " + ApiError.clip(n.text()));
      }
      cents = n.wholeNumber(1, MAX_AMOUNT_CENTS);
      if (cents == null) {
        throw ApiError.badRequest(
            "amountCents must be a whole number between 1 and " + MAX_AMOUNT_CENTS);
      }
    }
    OrderRequest request = new OrderRequest((String) customer, cents);
    request.validate();
    return request;
  }

  /** Checks the request, or answers 400 naming the field. */
  void validate() {
    if (customer == null || customer.isBlank()) {
      throw ApiError.badRequest("customer is required");
    }
    if (customer.length() > MAX_CUSTOMER_LENGTH) {
      throw ApiError.badRequest("customer must be at most " + MAX_CUSTOMER_LENGTH + " characters");
    }
    try {
      // The customer is the event's key: the rules every broker and database carries.
      EventRules.checkText("customer", customer);
    } catch (InvalidEventException e) {
      throw ApiError.badRequest("customer " + e.rule());
    }
    if (amountCents == null || amountCents < 1 || amountCents > MAX_AMOUNT_CENTS) {
      throw ApiError.badRequest(
          "amountCents must be a whole number between 1 and " + MAX_AMOUNT_CENTS);
    }
  }
}
