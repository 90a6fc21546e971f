package dev.postbox.spi.archfixture;

import dev.postbox.spi.testing.ReferenceBroker;

/** Breaks the adapter rule on purpose: it uses the SPI's test kit. */
final class LeakyAdapter {
  Object broker() {
    return ReferenceBroker.create();
  }
}
