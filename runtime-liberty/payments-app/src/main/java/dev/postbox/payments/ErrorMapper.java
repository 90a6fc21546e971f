package dev.postbox.payments;

import dev.postbox.spi.InvalidEventException;
import jakarta.ws.rs.WebApplicationException;
import jakarta.ws.rs.core.Context;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import jakarta.ws.rs.core.UriInfo;
import jakarta.ws.rs.ext.ExceptionMapper;
import jakarta.ws.rs.ext.Provider;
import java.lang.System.Logger.Level;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;

/**
 * The last word on every error the API raises: JSON, never a server's HTML page, never a stack
 * trace or an exception's text. A client error keeps its status and message; anything else is a 500
 * whose body carries only an error id, and the log has the id with the whole exception.
 */
@Provider
public class ErrorMapper implements ExceptionMapper<Throwable> {

  private static final System.Logger LOG = System.getLogger(ErrorMapper.class.getName());

  @Context UriInfo uri;

  @Override
  public Response toResponse(Throwable e) {
    if (e instanceof WebApplicationException w && w.getResponse().getStatus() < 500) {
      Response r = w.getResponse();
      if (r.hasEntity() || r.getStatus() < 400) {
        return r; // our own ApiError (a status and a JSON message), or an answer given as is
      }
      return json(r.getStatus(), Map.of("error", r.getStatusInfo().getReasonPhrase()));
    }
    if (e instanceof InvalidEventException invalid) {
      // An event made of the request's input that no broker or database could carry: the input
      // is at fault. The resources check their input first; this answers what they missed.
      return json(
          400,
          Map.of(
              "error",
              "the request cannot be recorded: " + invalid.field() + " " + invalid.rule()));
    }
    String id = UUID.randomUUID().toString();
    LOG.log(
        Level.ERROR,
        "error id " + id + " on " + (uri == null ? "?" : uri.getPath()) + ": answered 500",
        e);
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("error", "internal error; the server log has the details under this id");
    body.put("errorId", id);
    return json(500, body);
  }

  private static Response json(int status, Map<String, ?> body) {
    return Response.status(status)
        .type(MediaType.APPLICATION_JSON)
        .entity(Json.write(body))
        .build();
  }
}
