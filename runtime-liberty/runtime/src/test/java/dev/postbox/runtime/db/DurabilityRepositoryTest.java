package dev.postbox.runtime.db;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class DurabilityRepositoryTest {

  @Test
  void everyDialectHasTheReadingOfItsDurabilitySettings() {
    // looked up by name: a dialect without its reading would fail only at startup
    for (Dialect d : Dialect.values()) {
      assertThat(d.durabilitySettings().name()).isEqualTo(d.name());
    }
    assertThat(DurabilityRepository.values()).hasSameSizeAs(Dialect.values());
  }
}
