package dev.postbox.admin;

import dev.postbox.spi.EventRules;
import dev.postbox.spi.InvalidEventException;
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

  /**
   * A page size within 1..max, or the default when absent or empty; 400 naming the parameter
   * otherwise. Query parameters are taken as text and parsed here: JAX-RS answers a number it
   * cannot convert with 404.
   */
  public static int limit(String value, int defaultValue, int max) {
    return number("limit", value, 1, max, defaultValue);
  }

  /**
   * A page size within 1..max, or the default when absent.
   *
   * @deprecated take the parameter as text and use {@link #limit(String, int, int)}: JAX-RS answers
   *     a number it cannot convert with 404 before this is called
   */
  @Deprecated
  public static int limit(Integer value, int defaultValue, int max) {
    return limit(value == null ? null : value.toString(), defaultValue, max);
  }

  /** A whole number within min..max, or the default when absent or empty; 400 otherwise. */
  public static int number(String name, String value, int min, int max, int defaultValue) {
    if (value == null || value.isEmpty()) {
      return defaultValue;
    }
    try {
      int n = Integer.parseInt(value.trim());
      if (n >= min && n <= max) {
        return n;
      }
    } catch (NumberFormatException e) {
      // answered below
    }
    throw badRequest(
        name + " must be between " + min + " and " + max + ", not '" + clip(value) + "'");
  }

  /** {@code true} or {@code false} (any case), {@code false} when absent or empty; else 400. */
  public static boolean flag(String name, String value) {
    if (value == null || value.isEmpty() || value.equalsIgnoreCase("false")) {
      return false;
    }
    if (value.equalsIgnoreCase("true")) {
      return true;
    }
    throw badRequest(name + " must be true or false, not '" + clip(value) + "'");
  }

  /**
   * A text parameter: {@code null} when absent or blank; 400 when longer than {@code max} or when
   * it holds a control character or an unpaired surrogate (no database stores those unchanged).
   */
  public static String text(String name, String value, int max) {
    if (value == null || value.isBlank()) {
      return null;
    }
    if (value.length() > max) {
      throw badRequest(name + " is longer than " + max + " characters");
    }
    try {
      EventRules.checkText(name, value);
    } catch (InvalidEventException e) {
      throw badRequest(name + " " + e.rule());
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

  /** At most 40 characters of a client's text, control characters and surrogates as '?'. */
  public static String clip(String s) {
    if (s == null) {
      return "";
    }
    StringBuilder out = new StringBuilder();
    for (int i = 0; i < Math.min(s.length(), 40); i++) {
      char c = s.charAt(i);
      out.append(Character.isISOControl(c) || Character.isSurrogate(c) ? '?' : c);
    }
    return s.length() > 40 ? out + "..." : out.toString();
  }
}
