package dev.postbox.payments.security;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class DemoPasswordsTest {

  @Test
  void shippedAndEmptyPasswordsAreNamedNeverShown() {
    var problems =
        DemoPasswords.problems(
            name -> Optional.ofNullable(Map.of("admin.password", "admin").get(name)));
    assertThat(problems)
        .containsExactly("admin.password is the shipped demo password", "viewer.password is empty");
  }

  @Test
  void ownPasswordsPass() {
    assertThat(
            DemoPasswords.problems(
                name ->
                    Optional.of(name.equals("admin.password") ? "s3cret-admin" : "s3cret-viewer")))
        .isEmpty();
  }

  @Test
  void anXorEncodedShippedPasswordIsStillTheShippedOne() {
    // "admin" in Liberty's {xor} encoding
    assertThat(DemoPasswords.decoded("{xor}PjsyNjE=")).isEqualTo("admin");
    assertThat(
            DemoPasswords.problems(
                name -> Optional.of(name.equals("admin.password") ? "{xor}PjsyNjE=" : "s3cret")))
        .containsExactly("admin.password is the shipped demo password");
  }
}
