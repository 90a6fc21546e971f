package dev.postbox.runtime.jakarta;

import jakarta.enterprise.context.RequestScoped;

/** The idempotency key of the current request, as {@link IdempotencyFilter} found it. */
@RequestScoped
public class IdempotencyRequest {

  private String scope;
  private String key;
  private String fingerprint;

  void set(String scope, String key, String fingerprint) {
    this.scope = scope;
    this.key = key;
    this.fingerprint = fingerprint;
  }

  String scope() {
    return scope;
  }

  /** The key, or null when the request has none. */
  String key() {
    return key;
  }

  String fingerprint() {
    return fingerprint;
  }
}
