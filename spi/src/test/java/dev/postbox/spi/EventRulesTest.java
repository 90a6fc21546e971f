package dev.postbox.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatNoException;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import org.junit.jupiter.api.Test;

class EventRulesTest {

  private Envelope.Builder valid() {
    return Envelope.builder().source("urn:test").type("T");
  }

  @Test
  void aNulInTheKeyIsRefusedNamingTheFieldTheCharacterAndItsIndex() {
    assertThatThrownBy(() -> valid().key("a\u0000b").build())
        .isInstanceOfSatisfying(
            InvalidEventException.class,
            e -> {
              assertThat(e.field()).isEqualTo("key");
              assertThat(e.rule()).isEqualTo("contains the control character U+0000 at index 1");
            })
        .hasMessage("envelope key contains the control character U+0000 at index 1");
  }

  @Test
  void controlCharactersAreRefusedInEveryTextAttributeAndHeaderValue() {
    assertThatThrownBy(() -> valid().id("a\tb").build()).hasMessageContaining("envelope id");
    assertThatThrownBy(() -> valid().type("T\n").build()).hasMessageContaining("envelope type");
    assertThatThrownBy(() -> valid().source("s\u007f").build())
        .hasMessageContaining("envelope source contains the control character U+007F");
    assertThatThrownBy(() -> valid().subject("s\u0085").build())
        .hasMessageContaining("envelope subject");
    assertThatThrownBy(() -> valid().dataContentType("text/\u0001").build())
        .hasMessageContaining("envelope datacontenttype");
    assertThatThrownBy(() -> valid().header("note", "x\u0000").build())
        .hasMessageContaining("envelope header note contains the control character U+0000");
  }

  @Test
  void unpairedSurrogatesAreRefusedAndPairedOnesKept() {
    assertThatThrownBy(() -> valid().key("a\ud800b").build())
        .hasMessage("envelope key contains an unpaired surrogate U+D800 at index 1");
    assertThatThrownBy(() -> valid().key("a\udc00").build())
        .hasMessageContaining("unpaired surrogate U+DC00");
    assertThatThrownBy(() -> valid().header("tracestate", "x\ud83d").build())
        .hasMessageContaining("envelope header tracestate contains an unpaired surrogate");
    assertThat(valid().key("ada \ud83d\ude00 \u00e9\u4e2d").build().key()).contains("\ud83d\ude00");
  }

  @Test
  void timesOutsideTheYearsOneToNineThousandNineHundredNinetyNineAreRefused() {
    assertThatThrownBy(() -> valid().time(Instant.parse("+10000-01-01T00:00:00Z")).build())
        .isInstanceOf(InvalidEventException.class)
        .hasMessageContaining("envelope time +10000-01-01T00:00:00Z is outside");
    assertThatThrownBy(() -> valid().time(Instant.parse("-0001-01-01T00:00:00Z")).build())
        .hasMessageContaining("envelope time");
    assertThat(valid().time(EventRules.LATEST_TIME).build().time())
        .isEqualTo(EventRules.LATEST_TIME);
  }

  @Test
  void bytesThatAreNotStrictUtf8AreRefusedNotReplaced() {
    assertThat(EventRules.utf8("key", "é\ud83d\ude00".getBytes(StandardCharsets.UTF_8)))
        .isEqualTo("é\ud83d\ude00");
    assertThatThrownBy(() -> EventRules.utf8("key", new byte[] {'a', (byte) 0xC3}))
        .hasMessage("envelope key is not well-formed UTF-8");
    assertThatThrownBy(
            () -> EventRules.utf8("header x", new byte[] {(byte) 0xED, (byte) 0xA0, (byte) 0x80}))
        .as("CESU-style surrogate bytes")
        .isInstanceOf(InvalidEventException.class);
  }

  @Test
  void destinationsAreCheckedForBlanknessLengthAndCharacters() {
    assertThatThrownBy(() -> EventRules.checkDestination(" "))
        .hasMessage("envelope destination must not be blank");
    assertThatThrownBy(() -> EventRules.checkDestination("q".repeat(513)))
        .hasMessageContaining("the limit is 512");
    assertThatThrownBy(() -> EventRules.checkDestination("q\u0000"))
        .hasMessageContaining("envelope destination contains the control character U+0000");
  }

  @Test
  void theCapabilitiesCheckAppliesThePayloadLimitThenTheBrokersOwnRules() {
    WireRules noQ =
        new WireRules() {
          @Override
          public void checkDestination(String destination) {
            if (destination.startsWith("q")) {
              throw new InvalidEventException("destination", "starts with q");
            }
          }

          @Override
          public void check(Envelope e) {
            if (e.key() != null && e.key().contains("!")) {
              throw new InvalidEventException("key", "has a bang");
            }
          }
        };
    Capabilities caps = Capabilities.builder().maxMessageBytes(3).wireRules(noQ).build();
    assertThatThrownBy(() -> caps.check("d", valid().payload("1234").build()))
        .hasMessage(
            "envelope payload is 4 bytes, over this broker's limit of 3 (max.message.bytes)");
    assertThatThrownBy(() -> caps.check("queue", valid().build()))
        .hasMessage("envelope destination starts with q");
    assertThatThrownBy(() -> caps.check("d", valid().key("a!").build()))
        .hasMessage("envelope key has a bang");
    assertThatNoException().isThrownBy(() -> caps.check("d", valid().key("a").build()));
  }

  @Test
  void anIdOrKeyEndingWithASpaceIsRefusedBecauseMariaDbWouldTakeItForTheSameOneWithout() {
    assertThatThrownBy(() -> valid().id("evt-1 ").build())
        .isInstanceOf(InvalidEventException.class)
        .hasMessageContaining("envelope id ends with a space");
    assertThatThrownBy(() -> valid().key("k ").build())
        .hasMessageContaining("envelope key ends with a space");
    assertThat(valid().id(" evt-1").key("a b").build().key()).isEqualTo("a b");
  }
}
