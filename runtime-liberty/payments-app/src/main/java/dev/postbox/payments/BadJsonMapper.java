package dev.postbox.payments;

import jakarta.json.bind.JsonbException;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import jakarta.ws.rs.ext.ExceptionMapper;
import jakarta.ws.rs.ext.Provider;
import java.util.Map;

/** A request body that is not valid JSON for the endpoint is the client's error: 400, not 500. */
@Provider
public class BadJsonMapper implements ExceptionMapper<JsonbException> {

  @Override
  public Response toResponse(JsonbException e) {
    return Response.status(Response.Status.BAD_REQUEST)
        .type(MediaType.APPLICATION_JSON)
        .entity(Json.write(Map.of("error", "the request body is not valid JSON for this endpoint")))
        .build();
  }
}
