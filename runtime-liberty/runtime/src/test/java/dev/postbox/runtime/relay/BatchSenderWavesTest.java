package dev.postbox.runtime.relay;

import static org.assertj.core.api.Assertions.assertThat;

import dev.postbox.runtime.api.OutboxRow;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class BatchSenderWavesTest {

  private static OutboxRow row(long id, int partition, String destination, String key) {
    return new OutboxRow(
        id,
        partition,
        "e" + id,
        destination,
        key,
        "t",
        "s",
        null,
        "application/json",
        Map.of(),
        new byte[0],
        Instant.EPOCH,
        Instant.EPOCH,
        0);
  }

  private static List<String> calls(List<List<OutboxRow>> waves) {
    List<String> out = new ArrayList<>();
    for (List<OutboxRow> call : waves) {
      StringBuilder b = new StringBuilder(call.get(0).destination()).append(':');
      call.forEach(r -> b.append(r.id()).append(','));
      out.add(b.toString());
    }
    return out;
  }

  @Test
  void rowsOfManyPartitionsShareOneCallPerDestination() {
    // A turn: partition 1's rows, then partition 2's; destinations interleave in id order.
    List<OutboxRow> batch =
        List.of(
            row(1, 1, "orders", "a"),
            row(4, 1, "mail", "b"),
            row(7, 1, "orders", "c"),
            row(2, 2, "mail", "d"),
            row(3, 2, "orders", "e"));
    assertThat(calls(BatchSender.inWaves(batch))).containsExactly("orders:1,7,3,", "mail:4,2,");
  }

  @Test
  void aKeyThatAlternatesDestinationsIsSentInItsOrder() {
    List<OutboxRow> batch =
        List.of(
            row(1, 1, "orders", "k"),
            row(2, 1, "mail", "k"),
            row(3, 1, "orders", "k"),
            row(4, 1, "orders", "other"),
            row(5, 1, "mail", null));
    // k: orders(1) then mail(2) then orders(3): three waves; the others join the first.
    assertThat(calls(BatchSender.inWaves(batch)))
        .containsExactly("orders:1,4,", "mail:5,", "mail:2,", "orders:3,");
  }

  @Test
  void aKeyStaysInItsWaveWhileItsDestinationDoesNotChange() {
    List<OutboxRow> batch =
        List.of(row(1, 1, "orders", "k"), row(2, 1, "orders", "k"), row(3, 1, "mail", "j"));
    assertThat(calls(BatchSender.inWaves(batch))).containsExactly("orders:1,2,", "mail:3,");
  }
}
