package dev.postbox.admin;

import jakarta.ws.rs.WebApplicationException;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;

/**
 * Clear client errors: a status and a JSON body {@code {"error": "..."}} naming what was wrong. The
 * admin API answers bad input with these; an application may use them for its own resources.
 */
public final class ApiError {

  private ApiError() {}

  /** The body of every 4xx answer, for the OpenAPI document: {@code {"error": "..."}}. */
  @org.eclipse.microprofile.openapi.annotations.media.Schema(
      name = "Error",
      description = "What was wrong with the request, in words; never a stack trace.")
  public record Body(String error) {}

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
        Response.status(status).type(MediaType.APPLICATION_JSON).entity(error(message)).build());
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

  /** {@code {"error": message}}, the message escaped for JSON. */
  static String error(String message) {
    StringBuilder out = new StringBuilder("{\"error\":\"");
    for (char c : message.toCharArray()) {
      switch (c) {
        case '"' -> out.append("\\\"");
        case '\\' -> out.append("\\\\");
        default -> {
          if (c < 0x20) {
            out.append(String.format("\\u%04x", (int) c));
          } else {
            out.append(c);
          }
        }
      }
    }
    return out.append("\"}").toString();
  }

  static String clip(String s) {
    return s == null ? "" : s.length() <= 40 ? s : s.substring(0, 40) + "...";
  }
}
