package dev.postbox.payments;

import jakarta.ws.rs.WebApplicationException;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import java.util.Map;

/** Clear client errors: a status and a JSON body naming what was wrong. */
public final class ApiError {

  private ApiError() {}

  public static WebApplicationException badRequest(String message) {
    return status(Response.Status.BAD_REQUEST, message);
  }

  public static WebApplicationException notFound(String message) {
    return status(Response.Status.NOT_FOUND, message);
  }

  public static WebApplicationException conflict(String message) {
    return status(Response.Status.CONFLICT, message);
  }

  private static WebApplicationException status(Response.Status status, String message) {
    return new WebApplicationException(
        Response.status(status)
            .type(MediaType.APPLICATION_JSON)
            .entity(Json.write(Map.of("error", message)))
            .build());
  }

  /** Parses a positive id, or answers 400 naming the parameter. */
  public static long id(String name, String value) {
    try {
      long id = Long.parseLong(value);
      if (id > 0) {
        return id;
      }
    } catch (NumberFormatException e) {
      // answered below
    }
    throw badRequest(name + " must be a positive whole number, not '" + clip(value) + "'");
  }

  /** A page size within 1..max, or the default when absent; 400 otherwise. */
  public static int limit(Integer value, int defaultValue, int max) {
    if (value == null) {
      return defaultValue;
    }
    if (value < 1 || value > max) {
      throw badRequest("limit must be between 1 and " + max + ", not " + value);
    }
    return value;
  }

  private static String clip(String s) {
    return s == null ? "" : s.length() <= 40 ? s : s.substring(0, 40) + "...";
  }
}
