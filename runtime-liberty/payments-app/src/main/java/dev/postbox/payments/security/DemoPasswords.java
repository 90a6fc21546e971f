package dev.postbox.payments.security;

import jakarta.annotation.Priority;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.enterprise.event.Startup;
import jakarta.inject.Inject;
import java.lang.System.Logger.Level;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import org.eclipse.microprofile.config.Config;

/**
 * Refuses to start with the demo users' shipped passwords ({@code admin}/{@code admin}, {@code
 * viewer}/{@code viewer}) or with empty ones, unless {@code payments.dev-mode=true} says this is a
 * throwaway demo on a developer's machine. The check runs before anything else starts.
 */
@ApplicationScoped
public class DemoPasswords {

  private static final System.Logger LOG = System.getLogger(DemoPasswords.class.getName());

  /** The passwords server.xml ships for a demo, by variable. */
  static final Map<String, String> SHIPPED =
      Map.of("admin.password", "admin", "viewer.password", "viewer");

  @Inject Config config;

  void check(@Observes @Priority(50) Startup startup) {
    boolean devMode = config.getOptionalValue("payments.dev-mode", Boolean.class).orElse(false);
    List<String> problems = problems(name -> config.getOptionalValue(name, String.class));
    if (problems.isEmpty()) {
      return;
    }
    if (devMode) {
      LOG.log(
          Level.WARNING,
          "payments.dev-mode=true: running with the demo users' shipped passwords ("
              + String.join(", ", problems)
              + "). Never do this outside a developer's machine.");
      return;
    }
    throw new IllegalStateException(
        "The payments app refuses to start with shipped or empty passwords: "
            + String.join(", ", problems)
            + ". Set ADMIN_PASSWORD and VIEWER_PASSWORD (server variables admin.password and"
            + " viewer.password), or payments.dev-mode=true (PAYMENTS_DEV_MODE=true) for a local"
            + " demo.");
  }

  /** Liberty's {@code {xor}} encoding is not a secret: compare what it encodes. */
  static String decoded(String value) {
    if (!value.regionMatches(true, 0, "{xor}", 0, 5)) {
      return value;
    }
    try {
      byte[] bytes = java.util.Base64.getDecoder().decode(value.substring(5).trim());
      for (int i = 0; i < bytes.length; i++) {
        bytes[i] ^= '_';
      }
      return new String(bytes, java.nio.charset.StandardCharsets.UTF_8);
    } catch (IllegalArgumentException notBase64) {
      return value;
    }
  }

  /** Which variables hold a shipped or empty password; never the password itself. */
  static List<String> problems(Function<String, Optional<String>> lookup) {
    List<String> out = new ArrayList<>();
    SHIPPED.forEach(
        (variable, shipped) -> {
          String value = decoded(lookup.apply(variable).orElse(""));
          if (value.isBlank()) {
            out.add(variable + " is empty");
          } else if (value.equals(shipped)) {
            out.add(variable + " is the shipped demo password");
          }
        });
    out.sort(null);
    return out;
  }
}
