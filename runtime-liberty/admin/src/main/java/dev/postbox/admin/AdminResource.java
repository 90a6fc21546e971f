package dev.postbox.admin;

import dev.postbox.runtime.api.BrokerOutage;
import dev.postbox.runtime.api.DeadLetter;
import dev.postbox.runtime.api.DeadLetterGroup;
import dev.postbox.runtime.api.DeadLetterOperations;
import dev.postbox.runtime.api.DeadLetterReason;
import dev.postbox.runtime.api.FailedFilter;
import dev.postbox.runtime.api.FailedRow;
import dev.postbox.runtime.api.InboxCounts;
import dev.postbox.runtime.api.InboxOperations;
import dev.postbox.runtime.api.InboxSubscription;
import dev.postbox.runtime.api.Lag;
import dev.postbox.runtime.api.Lease;
import dev.postbox.runtime.api.NotReplayableException;
import dev.postbox.runtime.api.OutboxOperations;
import dev.postbox.runtime.api.ReplayResult;
import jakarta.enterprise.context.RequestScoped;
import jakarta.inject.Inject;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.QueryParam;
import jakarta.ws.rs.core.MediaType;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.TreeMap;
import org.eclipse.microprofile.openapi.annotations.enums.SecuritySchemeType;
import org.eclipse.microprofile.openapi.annotations.media.Content;
import org.eclipse.microprofile.openapi.annotations.media.Schema;
import org.eclipse.microprofile.openapi.annotations.responses.APIResponse;
import org.eclipse.microprofile.openapi.annotations.security.SecurityRequirement;
import org.eclipse.microprofile.openapi.annotations.security.SecurityScheme;
import org.eclipse.microprofile.openapi.annotations.tags.Tag;

/**
 * The operator's API under {@code /admin}, for the role {@code postbox-admin} only ({@link
 * AdminGuard}, and the constraint in this jar's web-fragment.xml): outbox lag, leases, FAILED rows
 * with retry and discard, inbox statistics, dead letters with inspect, replay and discard, bulk
 * replay. Ids and page sizes are validated; bad ones get 400 with a message.
 */
@AdminOnly
@Path("/admin")
@RequestScoped
@Produces(MediaType.APPLICATION_JSON)
@Tag(name = "operator", description = "Outbox and inbox operations, for the postbox-admin role.")
@SecurityScheme(
    securitySchemeName = AdminResource.SECURITY,
    type = SecuritySchemeType.HTTP,
    scheme = "basic",
    description = "The server's user registry; the operator's API needs the role postbox-admin.")
@SecurityRequirement(name = AdminResource.SECURITY)
public class AdminResource {

  /** The security scheme's name in the OpenAPI document. */
  public static final String SECURITY = "postbox-basic";

  /** The role the operator's API needs. */
  public static final String ROLE = "postbox-admin";

  private static final int MAX_PAGE = 500;

  @Inject OutboxOperations outbox;

  @Inject InboxOperations inbox;

  // ---- outbox ----

  /** Outbox lag and counts. */
  public record OutboxStatus(
      long pending,
      long failed,
      Instant oldestPending,
      double oldestPendingAgeSeconds,
      long publishedByThisInstance,
      List<Integer> partitionsOwnedHere,
      List<BrokerOutage> brokerOutages,
      long scheduled,
      Instant nextDue) {}

  @GET
  @Path("/outbox")
  public OutboxStatus outbox() {
    Lag lag = outbox.lag();
    double age =
        lag.oldestPending() == null
            ? 0
            : Duration.between(lag.oldestPending(), Instant.now()).toMillis() / 1000.0;
    return new OutboxStatus(
        lag.pending(),
        lag.failed(),
        lag.oldestPending(),
        age,
        outbox.publishedByThisInstance(),
        outbox.ownedPartitions().stream().sorted().toList(),
        outbox.brokerOutages(),
        lag.scheduled(),
        lag.nextDue());
  }

  /** Partition leases, grouped by the instance holding them. */
  @GET
  @Path("/outbox/leases")
  public Map<String, List<Integer>> leases() {
    Map<String, List<Integer>> byOwner = new TreeMap<>();
    Instant now = outbox.databaseNow(); // leases live in the database's clock
    for (Lease l : outbox.leases()) {
      String owner =
          l.owner() == null || l.until() == null || l.until().isBefore(now)
              ? "(unowned)"
              : l.owner();
      byOwner.computeIfAbsent(owner, o -> new ArrayList<>()).add(l.partition());
    }
    return byOwner;
  }

  @GET
  @Path("/outbox/failed")
  public List<FailedRow> failed(
      @org.eclipse.microprofile.openapi.annotations.parameters.Parameter(
              schema =
                  @org.eclipse.microprofile.openapi.annotations.media.Schema(
                      type = org.eclipse.microprofile.openapi.annotations.enums.SchemaType.INTEGER,
                      minimum = "1",
                      maximum = "500"))
          @QueryParam("limit")
          String limit) {
    return outbox.failed(ApiError.limit(limit, 50, MAX_PAGE));
  }

  @POST
  @Path("/outbox/failed/{id}/retry")
  @APIResponse(responseCode = "200", description = "Sent again from attempt 0.")
  @APIResponse(
      responseCode = "404",
      description = "No such FAILED outbox row.",
      content =
          @Content(
              mediaType = MediaType.APPLICATION_JSON,
              schema = @Schema(implementation = ApiError.Body.class)))
  public Map<String, Object> retry(@PathParam("id") String id) {
    long rowId = ApiError.id("id", id);
    if (!outbox.retry(rowId)) {
      throw ApiError.notFound("no FAILED outbox row " + rowId);
    }
    return Map.of("id", rowId, "status", "PENDING");
  }

  @POST
  @Path("/outbox/failed/{id}/discard")
  @APIResponse(
      responseCode = "200",
      description = "Discarded: never sent; its key's later events go on.")
  @APIResponse(
      responseCode = "404",
      description = "No such FAILED outbox row.",
      content =
          @Content(
              mediaType = MediaType.APPLICATION_JSON,
              schema = @Schema(implementation = ApiError.Body.class)))
  public Map<String, Object> discard(@PathParam("id") String id) {
    long rowId = ApiError.id("id", id);
    if (!outbox.discard(rowId)) {
      throw ApiError.notFound("no FAILED outbox row " + rowId);
    }
    return Map.of("id", rowId, "status", "DISCARDED");
  }

  /**
   * Sends again every FAILED row the filter matches: {@code destination}, {@code type}, and a
   * creation time range {@code from} (inclusive) to {@code to} (exclusive), ISO-8601 instants. With
   * no filter at all it takes every FAILED row only when {@code all=true} says so.
   */
  @POST
  @Path("/outbox/failed/retry")
  public Map<String, Object> retryFailed(
      @QueryParam("destination") String destination,
      @QueryParam("type") String type,
      @QueryParam("from") String from,
      @QueryParam("to") String to,
      @org.eclipse.microprofile.openapi.annotations.parameters.Parameter(
              schema =
                  @org.eclipse.microprofile.openapi.annotations.media.Schema(
                      type = org.eclipse.microprofile.openapi.annotations.enums.SchemaType.BOOLEAN))
          @QueryParam("all")
          String all) {
    return Map.of(
        "retried",
        outbox.retryAll(filter(destination, type, from, to, ApiError.flag("all", all))),
        "status",
        "PENDING");
  }

  /** Gives up on every FAILED row the filter matches; the same filter as the bulk retry. */
  @POST
  @Path("/outbox/failed/discard")
  public Map<String, Object> discardFailed(
      @QueryParam("destination") String destination,
      @QueryParam("type") String type,
      @QueryParam("from") String from,
      @QueryParam("to") String to,
      @org.eclipse.microprofile.openapi.annotations.parameters.Parameter(
              schema =
                  @org.eclipse.microprofile.openapi.annotations.media.Schema(
                      type = org.eclipse.microprofile.openapi.annotations.enums.SchemaType.BOOLEAN))
          @QueryParam("all")
          String all) {
    return Map.of(
        "discarded",
        outbox.discardAll(filter(destination, type, from, to, ApiError.flag("all", all))),
        "status",
        "DISCARDED");
  }

  private static FailedFilter filter(
      String destination, String type, String from, String to, boolean all) {
    FailedFilter f =
        new FailedFilter(
            blankToNull(destination, "destination", 512),
            blankToNull(type, "type", 1024),
            instant("from", from),
            instant("to", to));
    if (f.equals(FailedFilter.ALL) && !all) {
      throw ApiError.badRequest(
          "name destination, type, from or to; or all=true to take every FAILED row");
    }
    if (f.createdFrom() != null
        && f.createdBefore() != null
        && !f.createdFrom().isBefore(f.createdBefore())) {
      throw ApiError.badRequest("from must be before to");
    }
    return f;
  }

  private static String blankToNull(String value, String name, int max) {
    return ApiError.text(name, value, max);
  }

  /** The times every database stores: an outbox row is never older or younger. */
  private static final Instant EARLIEST = Instant.parse("1970-01-01T00:00:00Z");

  private static final Instant LATEST = Instant.parse("9999-12-31T23:59:59Z");

  static Instant instant(String name, String value) {
    if (value == null || value.isBlank()) {
      return null;
    }
    Instant t;
    try {
      t = Instant.parse(value.trim());
    } catch (java.time.format.DateTimeParseException e) {
      throw ApiError.badRequest(name + " must be an ISO-8601 instant, e.g. 2026-01-31T12:00:00Z");
    }
    if (t.isBefore(EARLIEST) || t.isAfter(LATEST)) {
      throw ApiError.badRequest(name + " must lie between 1970 and 9999");
    }
    return t;
  }

  // ---- inbox ----

  /** One subscription's counts since this instance started, and its open dead letters. */
  public record InboxStats(
      String subscription,
      String mode,
      long processed,
      long duplicates,
      long duplicatesSinceFirstStart,
      long conflicts,
      long retries,
      long deadLettered,
      long openDeadLetters,
      Long deferredQueue) {}

  @GET
  @Path("/inbox")
  public List<InboxStats> inbox() {
    List<InboxStats> out = new ArrayList<>();
    for (InboxSubscription s : inbox.subscriptions()) {
      InboxCounts counts = s.counts();
      OptionalLong queue = s.deferredQueue();
      out.add(
          new InboxStats(
              s.name(),
              s.deferred() ? "deferred" : "inline",
              counts.processed(),
              counts.duplicates(),
              s.duplicatesSinceFirstStart(),
              counts.conflicts(),
              counts.retries(),
              counts.deadLettered(),
              s.deadLetters().openCount(),
              queue.isPresent() ? queue.getAsLong() : null));
    }
    return out;
  }

  // ---- dead letters ----

  /** A dead letter as listed: no payload (the listing does not load them; see one letter). */
  public record LetterSummary(
      long id,
      String subscription,
      String eventId,
      String type,
      String key,
      String reason,
      String error,
      int attempts,
      int redrives,
      Instant createdAt) {
    static LetterSummary of(DeadLetter d) {
      return new LetterSummary(
          d.id(),
          d.subscription(),
          d.eventId(),
          d.type(),
          d.key(),
          d.reason().name(),
          d.error(),
          d.attempts(),
          d.redrives(),
          d.createdAt());
    }
  }

  /** A dead letter in full: headers, metadata and payload (text, or base64 if not UTF-8). */
  public record LetterDetail(
      LetterSummary letter,
      String status,
      String source,
      Instant eventTime,
      Map<String, String> headers,
      Map<String, String> metadata,
      String payload,
      boolean payloadBase64,
      boolean replayable) {}

  @GET
  @Path("/dead-letters")
  public List<LetterSummary> deadLetters(
      @QueryParam("subscription") String subscription,
      @org.eclipse.microprofile.openapi.annotations.parameters.Parameter(
              schema =
                  @org.eclipse.microprofile.openapi.annotations.media.Schema(
                      type = org.eclipse.microprofile.openapi.annotations.enums.SchemaType.INTEGER,
                      minimum = "1",
                      maximum = "500"))
          @QueryParam("limit")
          String limit) {
    int page = ApiError.limit(limit, 50, MAX_PAGE);
    List<LetterSummary> out = new ArrayList<>();
    for (InboxSubscription r : selected(subscription)) {
      r.deadLetters().open(page).forEach(d -> out.add(LetterSummary.of(d)));
    }
    out.sort(java.util.Comparator.comparingLong(LetterSummary::id));
    return out.size() > page ? out.subList(0, page) : out;
  }

  @GET
  @Path("/dead-letters/{id}")
  @APIResponse(
      responseCode = "200",
      description = "The letter, with its payload, headers and error.")
  @APIResponse(
      responseCode = "404",
      description = "No such dead letter.",
      content =
          @Content(
              mediaType = MediaType.APPLICATION_JSON,
              schema = @Schema(implementation = ApiError.Body.class)))
  public LetterDetail deadLetter(@PathParam("id") String id) {
    DeadLetter d = letter(ApiError.id("id", id));
    String payload;
    boolean base64 = false;
    try {
      payload =
          StandardCharsets.UTF_8
              .newDecoder()
              .decode(ByteBuffer.wrap(d.payload() == null ? new byte[0] : d.payload()))
              .toString();
    } catch (CharacterCodingException notText) {
      payload = Base64.getEncoder().encodeToString(d.payload());
      base64 = true;
    }
    return new LetterDetail(
        LetterSummary.of(d),
        d.status(),
        d.source(),
        d.eventTime(),
        d.headers(),
        d.metadata(),
        payload,
        base64,
        d.replayable());
  }

  @POST
  @Path("/dead-letters/{id}/replay")
  @APIResponse(responseCode = "200", description = "Replayed through the inbox.")
  @APIResponse(
      responseCode = "404",
      description = "No such dead letter.",
      content =
          @Content(
              mediaType = MediaType.APPLICATION_JSON,
              schema = @Schema(implementation = ApiError.Body.class)))
  @APIResponse(
      responseCode = "409",
      description =
          "The letter is not open, is a CONFLICT that needs force=true, belongs to a"
              + " subscription that does not run here, or its handler failed again (it stays open).",
      content =
          @Content(
              mediaType = MediaType.APPLICATION_JSON,
              schema = @Schema(implementation = ApiError.Body.class)))
  public Map<String, Object> replay(
      @PathParam("id") String id,
      @org.eclipse.microprofile.openapi.annotations.parameters.Parameter(
              schema =
                  @org.eclipse.microprofile.openapi.annotations.media.Schema(
                      type = org.eclipse.microprofile.openapi.annotations.enums.SchemaType.BOOLEAN))
          @QueryParam("force")
          String forced) {
    long letterId = ApiError.id("id", id);
    boolean force = ApiError.flag("force", forced);
    DeadLetter dl = letter(letterId);
    DeadLetterOperations letters = lettersOf(dl);
    try {
      boolean ran = letters.replay(letterId, force);
      Map<String, Object> out = new LinkedHashMap<>();
      out.put("id", letterId);
      out.put("status", "REPLAYED");
      out.put("handlerRan", ran);
      out.put(
          "payload",
          dl.reason() == DeadLetterReason.CONFLICT
              ? "the letter's own payload: the conflicting one, not the one first processed"
              : "the letter's own payload, as delivered");
      return out;
    } catch (NotReplayableException e) {
      throw ApiError.conflict(e.getMessage());
    } catch (RuntimeException handlerFailedAgain) {
      throw ApiError.conflict(
          "the handler failed again; the letter stays open: " + handlerFailedAgain.getMessage());
    }
  }

  @POST
  @Path("/dead-letters/{id}/discard")
  @APIResponse(responseCode = "200", description = "Discarded.")
  @APIResponse(
      responseCode = "404",
      description = "No such dead letter.",
      content =
          @Content(
              mediaType = MediaType.APPLICATION_JSON,
              schema = @Schema(implementation = ApiError.Body.class)))
  @APIResponse(
      responseCode = "409",
      description = "The letter is not open.",
      content =
          @Content(
              mediaType = MediaType.APPLICATION_JSON,
              schema = @Schema(implementation = ApiError.Body.class)))
  public Map<String, Object> discardLetter(@PathParam("id") String id) {
    long letterId = ApiError.id("id", id);
    if (!lettersOf(letter(letterId)).discard(letterId)) {
      throw ApiError.conflict("dead letter " + letterId + " is not open");
    }
    return Map.of("id", letterId, "status", "DISCARDED");
  }

  /** Replays every open letter of a subscription, or only those of one event type. */
  @POST
  @Path("/dead-letters/replay")
  public ReplayResult replayAll(
      @QueryParam("subscription") String subscription, @QueryParam("type") String type) {
    if (subscription == null || subscription.isBlank()) {
      throw ApiError.badRequest("subscription is required");
    }
    return running(subscription).deadLetters().replayAll(blankToNull(type, "type", 1024));
  }

  /**
   * Open dead letters grouped by subscription, reason and error class (the Java class the error
   * starts with), the largest group first: one cause usually makes one group.
   */
  @GET
  @Path("/dead-letters/groups")
  public List<DeadLetterGroup> deadLetterGroups(@QueryParam("subscription") String subscription) {
    List<DeadLetterGroup> out = new ArrayList<>();
    for (InboxSubscription s : selected(subscription)) {
      out.addAll(s.deadLetters().openGroups());
    }
    out.sort(java.util.Comparator.comparingLong(DeadLetterGroup::count).reversed());
    return out;
  }

  /**
   * Replays one group's open letters, oldest first, up to {@code through} (the group's {@code
   * lastId} as the operator saw it) so that letters that joined since are left for a second look.
   */
  @POST
  @Path("/dead-letters/groups/replay")
  @APIResponse(responseCode = "200", description = "What the replay did, letter by letter.")
  public ReplayResult replayGroup(
      @QueryParam("subscription") String subscription,
      @QueryParam("reason") String reason,
      @QueryParam("errorClass") String errorClass,
      @QueryParam("through") String through) {
    Group g = group(subscription, reason, errorClass, through);
    return g.letters().replayGroup(g.reason(), g.errorClass(), g.through());
  }

  /** Discards one group's open letters up to {@code through}, in one statement. */
  @POST
  @Path("/dead-letters/groups/discard")
  @APIResponse(responseCode = "200", description = "How many letters were discarded.")
  public Map<String, Object> discardGroup(
      @QueryParam("subscription") String subscription,
      @QueryParam("reason") String reason,
      @QueryParam("errorClass") String errorClass,
      @QueryParam("through") String through) {
    Group g = group(subscription, reason, errorClass, through);
    return Map.of("discarded", g.letters().discardGroup(g.reason(), g.errorClass(), g.through()));
  }

  private record Group(
      DeadLetterOperations letters, DeadLetterReason reason, String errorClass, long through) {}

  private Group group(String subscription, String reason, String errorClass, String through) {
    if (subscription == null || subscription.isBlank()) {
      throw ApiError.badRequest("subscription is required");
    }
    if (reason == null || reason.isBlank()) {
      throw ApiError.badRequest("reason is required");
    }
    DeadLetterReason r;
    try {
      r = DeadLetterReason.valueOf(reason);
    } catch (IllegalArgumentException e) {
      throw ApiError.badRequest(
          "reason must be one of "
              + java.util.Arrays.toString(DeadLetterReason.values())
              + ", not '"
              + ApiError.clip(reason)
              + "'");
    }
    long bound = through == null || through.isBlank() ? 0 : ApiError.id("through", through);
    return new Group(
        running(subscription).deadLetters(), r, blankToNull(errorClass, "errorClass", 255), bound);
  }

  // ---- helpers ----
  private List<InboxSubscription> selected(String subscription) {
    if (subscription == null || subscription.isBlank()) {
      return inbox.subscriptions();
    }
    return List.of(running(subscription));
  }

  private InboxSubscription running(String subscription) {
    ApiError.text("subscription", subscription, 300);
    return inbox
        .subscription(subscription)
        .orElseThrow(
            () ->
                ApiError.badRequest(
                    "no subscription '"
                        + subscription
                        + "'; known: "
                        + inbox.subscriptions().stream().map(InboxSubscription::name).toList()));
  }

  private DeadLetter letter(long id) {
    Optional<InboxSubscription> any = inbox.subscriptions().stream().findFirst();
    return any.flatMap(r -> r.deadLetters().get(id))
        .orElseThrow(() -> ApiError.notFound("no dead letter " + id));
  }

  private DeadLetterOperations lettersOf(DeadLetter d) {
    return inbox
        .subscription(d.subscription())
        .orElseThrow(
            () ->
                ApiError.conflict(
                    "dead letter "
                        + d.id()
                        + " belongs to "
                        + d.subscription()
                        + ", which does not run here"))
        .deadLetters();
  }
}
