package dev.postbox.payments.orders;

import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.MultivaluedMap;
import jakarta.ws.rs.ext.MessageBodyReader;
import jakarta.ws.rs.ext.Provider;
import java.io.IOException;
import java.io.InputStream;
import java.lang.annotation.Annotation;
import java.lang.reflect.Type;

/**
 * Reads {@code POST /orders} bodies strictly, before the resource method runs ({@link
 * OrderRequest#parse}): JSON-B would take {@code 1.5} cents as 1 and a duplicated key's last value
 * without a word.
 */
@Provider
@Consumes(MediaType.APPLICATION_JSON)
public class OrderRequestReader implements MessageBodyReader<OrderRequest> {

  @Override
  public boolean isReadable(
      Class<?> type, Type genericType, Annotation[] annotations, MediaType mediaType) {
    return type == OrderRequest.class;
  }

  @Override
  public OrderRequest readFrom(
      Class<OrderRequest> type,
      Type genericType,
      Annotation[] annotations,
      MediaType mediaType,
      MultivaluedMap<String, String> httpHeaders,
      InputStream entityStream)
      throws IOException {
    return OrderRequest.parse(entityStream.readAllBytes());
  }
}
