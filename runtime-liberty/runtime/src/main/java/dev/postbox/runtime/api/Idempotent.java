package dev.postbox.runtime.api;

import jakarta.interceptor.InterceptorBinding;
import jakarta.ws.rs.NameBinding;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Makes a JAX-RS resource method safe to retry with an {@code Idempotency-Key} header, as the IETF
 * draft of that header describes:
 *
 * <ul>
 *   <li>the same key with the same request (method, path and body) answers the first answer again
 *       (its status, {@code Location} and body, with {@code Idempotency-Replayed: true}), and does
 *       nothing else;
 *   <li>the same key with a different request: {@code 422};
 *   <li>the same key while the first request is still running: {@code 409}, with {@code
 *       Retry-After}.
 * </ul>
 *
 * <p>The method runs in a JTA transaction that Postbox begins, and the key's answer is stored in
 * that same transaction: it is stored if and only if the method's effects commit. The method's own
 * {@code @Transactional} (REQUIRED) joins it; it must not start a transaction of its own. Only 2xx
 * answers are stored; an error answer or an exception rolls the work back and frees the key. Keys
 * are scoped by the authenticated user (or {@code anonymous}), and expire after {@code
 * postbox.idempotency.retention}. A request without the header runs as usual.
 */
@InterceptorBinding
@NameBinding
@Target({ElementType.METHOD, ElementType.TYPE})
@Retention(RetentionPolicy.RUNTIME)
public @interface Idempotent {

  /** The request header that carries the key. */
  String HEADER = "Idempotency-Key";

  /** The response header on a replayed answer. */
  String REPLAYED = "Idempotency-Replayed";
}
