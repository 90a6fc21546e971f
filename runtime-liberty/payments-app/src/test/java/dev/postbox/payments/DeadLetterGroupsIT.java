package dev.postbox.payments;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.postbox.spi.Envelope;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The operator's API groups open dead letters by subscription, reason and error class, and replays
 * or discards a group as the operator saw it (through its newest letter), on the running payments
 * server.
 */
class DeadLetterGroupsIT {

  private static final String ADMIN = "admin:admin";
  private static final String SUBSCRIPTION = "orders/payments";
  private static final String UNPROCESSABLE = "dev.postbox.runtime.api.UnprocessableEventException";

  private final PaymentsApi api = new PaymentsApi();

  @Test
  void lettersAreGroupedByReasonAndErrorClassAndAGroupIsReplayedAndDiscardedAsSeen() {
    String run = Long.toString(System.nanoTime());
    Envelope bad1 = DirectPublish.undecodableOrder("grp-" + run + "-1");
    Envelope bad2 = DirectPublish.undecodableOrder("grp-" + run + "-2");
    Envelope unheard = DirectPublish.unheardOf("grp-" + run);
    DirectPublish.publish(bad1, bad2, unheard);
    await().atMost(Duration.ofSeconds(30)).until(() -> openLetterIds(bad1, bad2, unheard) == 3);

    String groups =
        api.get("/admin/dead-letters/groups?subscription=orders%2Fpayments", ADMIN).body();
    String malformed = group(groups, "MALFORMED", UNPROCESSABLE);
    String unknown = group(groups, "UNKNOWN_TYPE", null);
    assertThat(malformed).as(groups).isNotNull();
    assertThat(unknown).as(groups).isNotNull();
    assertThat(number(malformed, "count")).isGreaterThanOrEqualTo(2);
    assertThat(malformed).contains("does not decode as");
    assertThat(number(unknown, "count")).isGreaterThanOrEqualTo(1);
    long through = number(malformed, "lastId");

    // Replaying the group runs each letter again: still undecodable, so each fails and stays open.
    var replay = api.post(groupAction("replay", "MALFORMED", UNPROCESSABLE, through), null, ADMIN);
    assertThat(replay.statusCode()).isEqualTo(200);
    assertThat(number(replay.body(), "replayed")).isZero();
    assertThat(number(replay.body(), "failed")).isGreaterThanOrEqualTo(2);
    assertThat(openLetterIds(bad1, bad2)).isEqualTo(2);

    // A letter that joins the group after the operator looked is not discarded with it.
    Envelope late = DirectPublish.undecodableOrder("grp-" + run + "-late");
    DirectPublish.publish(late);
    await().atMost(Duration.ofSeconds(30)).until(() -> openLetterIds(late) == 1);
    var discard =
        api.post(groupAction("discard", "MALFORMED", UNPROCESSABLE, through), null, ADMIN);
    assertThat(discard.statusCode()).isEqualTo(200);
    assertThat(number(discard.body(), "discarded")).isEqualTo(number(malformed, "count"));
    assertThat(openLetterIds(bad1, bad2)).isZero();
    assertThat(openLetterIds(late)).isEqualTo(1);
    assertThat(openLetterIds(unheard)).as("another group is untouched").isEqualTo(1);

    // The group without an error class is addressed by leaving errorClass out.
    var unknownDiscard = api.post(groupAction("discard", "UNKNOWN_TYPE", null, 0), null, ADMIN);
    assertThat(number(unknownDiscard.body(), "discarded")).isGreaterThanOrEqualTo(1);
    assertThat(openLetterIds(unheard)).isZero();
    api.post(groupAction("discard", "MALFORMED", UNPROCESSABLE, 0), null, ADMIN);
    assertThat(openLetterIds(late)).isZero();
  }

  @Test
  void badGroupRequestsGet400AndTheGroupsNeedTheAdminRole() {
    var badReason = api.post(groupAction("discard", "NOPE", null, 0), null, ADMIN);
    assertThat(badReason.statusCode()).isEqualTo(400);
    assertThat(badReason.body()).contains("reason must be one of").doesNotContain("Exception");
    var noSubscription =
        api.post("/admin/dead-letters/groups/discard?reason=MALFORMED", null, ADMIN);
    assertThat(noSubscription.statusCode()).isEqualTo(400);
    assertThat(noSubscription.body()).contains("subscription is required");
    var unknownSubscription =
        api.post(
            "/admin/dead-letters/groups/replay?subscription=nope&reason=MALFORMED", null, ADMIN);
    assertThat(unknownSubscription.statusCode()).isEqualTo(400);
    var badThrough =
        api.post(
            "/admin/dead-letters/groups/discard?subscription=orders%2Fpayments&reason=MALFORMED"
                + "&through=abc",
            null, ADMIN);
    assertThat(badThrough.statusCode()).isEqualTo(400);
    assertThat(badThrough.body()).contains("through must be a positive whole number");
    assertThat(api.get("/admin/dead-letters/groups").statusCode()).isEqualTo(401);
    assertThat(api.get("/admin/dead-letters/groups", "viewer:viewer").statusCode()).isEqualTo(403);
    assertThat(
            api.post(groupAction("discard", "MALFORMED", null, 0), null, "viewer:viewer")
                .statusCode())
        .isEqualTo(403);
  }

  private static String groupAction(String action, String reason, String errorClass, long through) {
    StringBuilder path =
        new StringBuilder("/admin/dead-letters/groups/")
            .append(action)
            .append("?subscription=")
            .append(URLEncoder.encode(SUBSCRIPTION, StandardCharsets.UTF_8))
            .append("&reason=")
            .append(reason);
    if (errorClass != null) {
      path.append("&errorClass=").append(URLEncoder.encode(errorClass, StandardCharsets.UTF_8));
    }
    if (through > 0) {
      path.append("&through=").append(through);
    }
    return path.toString();
  }

  /** The JSON object of one group in the list, or null. */
  private static String group(String groups, String reason, String errorClass) {
    for (String g : groups.split("\\},\\{")) {
      boolean sameClass =
          errorClass == null
              ? !g.contains("\"errorClass\":\"")
              : g.contains("\"errorClass\":\"" + errorClass + "\"");
      if (g.contains("\"subscription\":\"" + SUBSCRIPTION + "\"")
          && g.contains("\"reason\":\"" + reason + "\"")
          && sameClass) {
        return g;
      }
    }
    return null;
  }

  private static long number(String json, String field) {
    Matcher m = Pattern.compile("\"" + field + "\":(\\d+)").matcher(json);
    assertThat(m.find()).as(field + " in " + json).isTrue();
    return Long.parseLong(m.group(1));
  }

  /** How many of these events have an open dead letter in orders/payments. */
  private long openLetterIds(Envelope... events) {
    String open =
        api.get("/admin/dead-letters?subscription=orders%2Fpayments&limit=500", ADMIN).body();
    long n = 0;
    for (Envelope e : events) {
      if (open.contains("\"eventId\":\"" + e.id() + "\"")) {
        n++;
      }
    }
    return n;
  }
}
