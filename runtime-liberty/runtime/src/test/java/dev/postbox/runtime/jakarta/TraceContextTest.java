package dev.postbox.runtime.jakarta;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class TraceContextTest {

  private static final String PARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

  @Test
  void aValidTraceparentIsKept() {
    assertThat(TraceContext.validTraceparent(PARENT)).isEqualTo(PARENT);
  }

  @Test
  void invalidTraceparentsAreIgnored() {
    assertThat(
            TraceContext.validTraceparent(
                "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"))
        .isNull();
    assertThat(
            TraceContext.validTraceparent(
                "00-00000000000000000000000000000000-00f067aa0ba902b7-01"))
        .isNull();
    assertThat(
            TraceContext.validTraceparent(
                "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"))
        .isNull();
    assertThat(
            TraceContext.validTraceparent(
                "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"))
        .isNull();
    assertThat(TraceContext.validTraceparent(null)).isNull();
  }

  @Test
  void aValidTracestateIsKept() {
    assertThat(TraceContext.validTracestate("rojo=00f067aa0ba902b7, congo=t61rcWkgMzE"))
        .isEqualTo("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE");
    assertThat(TraceContext.validTracestate("tenant@vendor=x")).isEqualTo("tenant@vendor=x");
  }

  @Test
  void anOversizedTracestateIsDropped() {
    // The 9 KB header that once made an order the relay could never publish.
    String huge = "k=" + "v".repeat(9_000);
    assertThat(TraceContext.validTracestate(huge)).isNull();
    assertThat(TraceContext.validTracestate("a=" + "b".repeat(600))).isNull();
  }

  @Test
  void aMalformedTracestateIsDropped() {
    assertThat(TraceContext.validTracestate("no-equals-sign")).isNull();
    assertThat(TraceContext.validTracestate("UPPER=x")).isNull();
    assertThat(TraceContext.validTracestate("k=a\nb")).isNull();
    assertThat(TraceContext.validTracestate("k=a=b")).isNull();
    StringBuilder many = new StringBuilder();
    for (int i = 0; i < 33; i++) {
      many.append(i == 0 ? "" : ",").append("k").append(i).append("=v");
    }
    assertThat(TraceContext.validTracestate(many.toString())).isNull();
  }
}
