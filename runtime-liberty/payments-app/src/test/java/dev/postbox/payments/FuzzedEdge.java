package dev.postbox.payments;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A fuzzed HTTP edge against a running payments server: hostile bodies (random JSON, deep nesting,
 * duplicate keys, huge and odd strings, NUL, unpaired surrogates, invalid UTF-8, fractions,
 * exponents), odd content types, hostile {@code traceparent}, {@code tracestate} and {@code
 * Idempotency-Key} headers, bad query parameters and ids on every endpoint, and concurrent repeats
 * of one idempotent request.
 *
 * <p>What it asserts: never a 5xx; every 4xx answers a JSON object with an {@code error} string;
 * every order answered 201 is charged exactly once and notified exactly once within a bounded time,
 * and nothing else is charged. The seed is printed, so a failing run can be repeated.
 */
final class FuzzedEdge {

  /** What a run did, by status and by kind of input. */
  record Report(long seed, int requests, Map<Integer, Integer> byStatus, int accepted) {}

  private static final Pattern ORDER_ID = Pattern.compile("\"orderId\":\"([0-9a-f-]{36})\"");
  private static final Pattern CREATED = Pattern.compile("\"createdAt\":\"([^\"]+)\"");
  private static final Pattern AMOUNT = Pattern.compile("\"amountCents\":(\\d+)");

  private final PaymentsApi api;
  private final String url;
  private final HttpClient http =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
  private final Map<String, Long> acceptedOrders = new ConcurrentHashMap<>();
  private final Map<String, String> acceptedBy = new ConcurrentHashMap<>();
  private final Map<Integer, AtomicInteger> statuses = new ConcurrentHashMap<>();
  private final List<String> failures = Collections.synchronizedList(new ArrayList<>());
  private final AtomicInteger requests = new AtomicInteger();
  private volatile Instant start = Instant.MAX;

  /** Makes this run's idempotency keys its own: a key of an earlier run would replay its order. */
  private final String run = Long.toHexString(System.nanoTime());

  FuzzedEdge(String url) {
    this.url = url;
    this.api = new PaymentsApi(url);
  }

  /**
   * Runs about {@code budget} of hostile requests from 4 clients, then waits for the chain.
   *
   * @return what happened; the assertions have been made
   */
  Report run(long seed, Duration budget) throws Exception {
    System.out.println("FuzzedEdge: seed " + seed + " against " + url);
    awaitQuiet();
    long orders0 = api.ledger("orders");
    start = Instant.now();
    long charges0 = api.ledger("charges");
    long chargedOrders0 = api.ledger("chargedOrders");
    long cents0 = api.ledger("chargedTotalCents");
    long notifications0 = api.ledger("notifications");
    long doubles0 = api.ledger("doubleCharged");

    long deadline = System.nanoTime() + budget.toNanos();
    ExecutorService clients = Executors.newFixedThreadPool(4);
    List<Future<?>> running = new ArrayList<>();
    for (int t = 0; t < 4; t++) {
      Random random = new Random(seed + t);
      running.add(
          clients.submit(
              () -> {
                while (System.nanoTime() < deadline && failures.size() < 20) {
                  oneRound(random);
                }
                return null;
              }));
    }
    for (Future<?> f : running) {
      f.get();
    }
    clients.shutdown();
    assertThat(failures).as("answers that broke the edge's promises (seed %d)", seed).isEmpty();

    // Every accepted order is charged and notified once, within a bounded time; nothing else is.
    int accepted = acceptedOrders.size();
    List<String> missing = new ArrayList<>();
    for (String orderId : acceptedOrders.keySet()) {
      if (api.get("/orders/" + orderId).statusCode() != 200) {
        missing.add(orderId + " from " + acceptedBy.get(orderId));
      }
    }
    assertThat(missing).as("orders answered 201 that do not exist (seed %d)", seed).isEmpty();
    System.out.println(
        "FuzzedEdge: accepted "
            + accepted
            + ", orders placed since the start "
            + (api.ledger("orders") - orders0));
    long cents = acceptedOrders.values().stream().mapToLong(Long::longValue).sum();
    await()
        .atMost(Duration.ofSeconds(90))
        .alias(
            accepted
                + " orders accepted: each charged and notified (charges and notifications since"
                + " the start, seed "
                + seed
                + ")")
        .until(
            () ->
                api.ledger("charges") - charges0 >= accepted
                    && api.ledger("notifications") - notifications0 >= accepted);
    await()
        .during(Duration.ofSeconds(2))
        .atMost(Duration.ofSeconds(15))
        .until(
            () ->
                api.ledger("charges") - charges0 == accepted
                    && api.ledger("notifications") - notifications0 == accepted);
    assertThat(api.ledger("chargedOrders") - chargedOrders0).isEqualTo(accepted);
    assertThat(api.ledger("chargedTotalCents") - cents0).isEqualTo(cents);
    assertThat(api.ledger("doubleCharged")).as("orders charged twice").isEqualTo(doubles0);
    // The newest notifications (up to 500): each names an order of this run, once.
    Matcher notified = ORDER_ID.matcher(api.get("/notifications?limit=500").body());
    List<String> newest = new ArrayList<>();
    while (notified.find()) {
      newest.add(notified.group(1));
    }
    assertThat(newest).hasSize(Math.min(accepted, 500)).doesNotHaveDuplicates();
    assertThat(acceptedOrders.keySet()).containsAll(newest);
    Map<Integer, Integer> byStatus = new TreeMap<>();
    statuses.forEach((s, n) -> byStatus.put(s, n.get()));
    Report report = new Report(seed, requests.get(), byStatus, accepted);
    System.out.println("FuzzedEdge: " + report);
    return report;
  }

  /** Waits until earlier tests' orders have drained: the ledger stays still for 2 s. */
  private void awaitQuiet() {
    long[] last = {-1, -1};
    await()
        .atMost(Duration.ofSeconds(60))
        .pollInterval(Duration.ofSeconds(2))
        .until(
            () -> {
              long c = api.ledger("charges");
              long n = api.ledger("notifications");
              boolean still = c == last[0] && n == last[1];
              last[0] = c;
              last[1] = n;
              return still;
            });
  }

  private void oneRound(Random r) {
    switch (r.nextInt(10)) {
      case 0, 1, 2 -> postOrder(r, body(r), headers(r), contentType(r));
      case 3 -> postOrder(r, validBody(r), headers(r), "application/json");
      case 4 -> postOrder(r, randomJson(r, 0).getBytes(StandardCharsets.UTF_8), Map.of(), json(r));
      case 5 -> postOrder(r, rawBytes(r), headers(r), contentType(r));
      case 6 -> concurrentRepeats(r);
      case 7 -> getWithBadParameters(r);
      case 8 -> adminWithBadParameters(r);
      default -> postOrder(r, validBody(r), Map.of(), "application/json");
    }
  }

  // ---- requests ----

  private void postOrder(Random r, byte[] body, Map<String, String> headers, String type) {
    HttpRequest.Builder b =
        HttpRequest.newBuilder(URI.create(url + "/orders"))
            .POST(HttpRequest.BodyPublishers.ofByteArray(body));
    if (type != null) {
      b.header("Content-Type", type);
    }
    HttpResponse<String> resp = send(b, headers, "POST /orders " + show(body) + " " + headers);
    if (resp != null && resp.statusCode() == 201) {
      accept(resp, "POST /orders " + show(body) + " " + headers);
    }
  }

  /** The same idempotent order from 5 clients at once: one order, the others replay or wait. */
  private void concurrentRepeats(Random r) {
    String key = "fuzz-" + run + "-" + Long.toHexString(r.nextLong());
    byte[] body = validBody(r);
    List<Thread> threads = new ArrayList<>();
    Set<String> ids = ConcurrentHashMap.newKeySet();
    for (int i = 0; i < 5; i++) {
      Thread t =
          new Thread(
              () -> {
                HttpResponse<String> resp =
                    send(
                        HttpRequest.newBuilder(URI.create(url + "/orders"))
                            .header("Content-Type", "application/json")
                            .POST(HttpRequest.BodyPublishers.ofByteArray(body)),
                        Map.of("Idempotency-Key", key),
                        "concurrent repeat " + key);
                if (resp != null && resp.statusCode() == 201) {
                  ids.add(accept(resp, "concurrent repeat " + key));
                } else if (resp != null && resp.statusCode() != 409) {
                  failures.add("concurrent repeat " + key + " answered " + resp.statusCode());
                }
              });
      t.start();
      threads.add(t);
    }
    for (Thread t : threads) {
      try {
        t.join();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
    if (ids.size() > 1) {
      failures.add("one Idempotency-Key placed " + ids.size() + " orders: " + ids);
    }
  }

  private void getWithBadParameters(Random r) {
    String[] paths = {"/orders?limit=", "/notifications?limit=", "/orders/"};
    String path = paths[r.nextInt(paths.length)] + queryValue(r);
    send(HttpRequest.newBuilder(URI.create(url + path)).GET(), Map.of(), "GET " + path);
  }

  /**
   * Liberty refuses a path holding an encoded NUL itself, with its own HTML 400, before any
   * application code runs (docs/payments-app.md says so): only a 400 is checked for those.
   */
  private static boolean refusedByTheServer(String what, int status) {
    String path = what.contains("?") ? what.substring(0, what.indexOf('?')) : what;
    return status == 400 && path.contains("%00");
  }

  private void adminWithBadParameters(Random r) {
    String v = queryValue(r);
    String[] requests = {
      "GET /admin/dead-letters?limit=" + v,
      "GET /admin/dead-letters?subscription=" + v,
      "GET /admin/outbox/failed?limit=" + v,
      "GET /admin/dead-letters/" + v,
      "GET /admin/dead-letters/groups?subscription=" + v,
      "POST /admin/outbox/failed/retry?all=" + v,
      "POST /admin/outbox/failed/discard?destination=" + v,
      "POST /admin/outbox/failed/retry?type=" + v + "&from=" + v,
      "POST /admin/dead-letters/" + v + "/replay?force=" + v,
      "POST /admin/dead-letters/replay?subscription=" + v + "&type=" + v,
      "POST /admin/dead-letters/groups/discard?subscription=payments&reason=" + v,
      "POST /admin/load?orders=" + badCount(r),
      "POST /admin/outbox/failed/" + v + "/retry",
    };
    String pick = requests[r.nextInt(requests.length)];
    String method = pick.substring(0, pick.indexOf(' '));
    String path = pick.substring(pick.indexOf(' ') + 1);
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url + path));
    if (method.equals("POST")) {
      b.POST(HttpRequest.BodyPublishers.noBody());
    }
    String user =
        r.nextInt(5) == 0 ? (r.nextBoolean() ? "viewer:viewer" : "admin:wrong") : "admin:admin";
    b.header(
        "Authorization",
        "Basic " + Base64.getEncoder().encodeToString(user.getBytes(StandardCharsets.UTF_8)));
    HttpResponse<String> resp = send(b, Map.of(), pick + " as " + user);
    if (resp != null && path.startsWith("/admin/load") && resp.statusCode() == 200) {
      failures.add("a bad orders count was accepted: " + pick);
    }
  }

  /** Counts /admin/load must refuse (a valid one would place orders outside the tally). */
  private static String badCount(Random r) {
    String[] values = {"abc", "0", "-1", "1001", "1.5", "", "%00", "2147483648", "1e2", "%20"};
    return values[r.nextInt(values.length)];
  }

  /**
   * Sends and checks the answer: no 5xx, and a JSON object with an error for every 4xx. Returns
   * null when the client itself refuses to send the request (a header value Java will not write).
   */
  private HttpResponse<String> send(
      HttpRequest.Builder b, Map<String, String> headers, String what) {
    HttpResponse<String> resp;
    try {
      headers.forEach(b::header);
      resp =
          http.send(
              b.timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
    } catch (IllegalArgumentException unsendable) {
      return null; // e.g. a control character in a header: the client will not send it
    } catch (IOException e) {
      failures.add(what + ": no answer: " + e);
      return null;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return null;
    }
    requests.incrementAndGet();
    statuses.computeIfAbsent(resp.statusCode(), s -> new AtomicInteger()).incrementAndGet();
    int status = resp.statusCode();
    if (status >= 500) {
      failures.add(what + " answered " + status + ": " + clip(resp.body()));
    } else if (status >= 400 && !isJsonError(resp) && !refusedByTheServer(what, status)) {
      failures.add(what + " answered " + status + " without a JSON error: " + clip(resp.body()));
    }
    return resp;
  }

  private String accept(HttpResponse<String> resp, String what) {
    String body = resp.body();
    Matcher created = CREATED.matcher(body);
    if (created.find() && Instant.parse(created.group(1)).isBefore(start)) {
      failures.add(what + " answered an order placed before this run: " + body);
      return null;
    }
    Matcher id = ORDER_ID.matcher(body);
    Matcher amount = AMOUNT.matcher(body);
    if (!id.find() || !amount.find()) {
      failures.add(what + " answered 201 without an order: " + clip(body));
      return null;
    }
    acceptedOrders.put(id.group(1), Long.parseLong(amount.group(1)));
    acceptedBy.putIfAbsent(id.group(1), what);
    return id.group(1);
  }

  private static boolean isJsonError(HttpResponse<String> resp) {
    String type = resp.headers().firstValue("Content-Type").orElse("");
    String body = resp.body().strip();
    return type.startsWith("application/json")
        && body.startsWith("{\"error\":\"")
        && body.endsWith("}");
  }

  // ---- generators ----

  private static final String[] HOSTILE = {
    "\u0000",
    "\t",
    "\n",
    "\u001f",
    "\u007f",
    "\u0085",
    "\ud800",
    "\udc00",
    "\ud83d\ude00",
    "\ufffe",
    "\uffff",
    "\u2028",
    "\ufeff",
    "é",
    "中",
    "\"",
    "\\",
    "'",
    "<script>",
    "%00",
    "&",
    "=",
    "+",
    "#",
    "*",
    " ",
    "🙂"
  };

  private static String customer(Random r) {
    StringBuilder s = new StringBuilder();
    int n = r.nextInt(10) == 0 ? 150 + r.nextInt(100) : 1 + r.nextInt(20);
    for (int i = 0; i < n; i++) {
      s.append(
          r.nextInt(8) == 0 ? HOSTILE[r.nextInt(HOSTILE.length)] : (char) ('a' + r.nextInt(26)));
    }
    return s.toString();
  }

  /** A JSON string literal, with the escapes JSON allows, including NUL and lone surrogates. */
  private static String literal(String s) {
    StringBuilder out = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      if (c == '"' || c == '\\') {
        out.append('\\').append(c);
      } else if (c < 0x20 || Character.isSurrogate(c) || c > 0x7e) {
        out.append(String.format("\\u%04x", (int) c));
      } else {
        out.append(c);
      }
    }
    return out.append('"').toString();
  }

  private static String amount(Random r) {
    return switch (r.nextInt(13)) {
      case 0 -> "1.5";
      case 1 -> "1e2";
      case 2 -> "-5";
      case 3 -> "0";
      case 4 -> "99999999999999999999999";
      case 5 -> "\"100\"";
      case 6 -> "null";
      case 7 -> "[1]";
      case 8 -> "100.00";
      case 9 -> "1E400";
      case 10 -> r.nextBoolean() ? "1e2147483648" : "9".repeat(1_000 + r.nextInt(2_000));
      default -> Long.toString(1 + r.nextInt(100_000));
    };
  }

  private static byte[] validBody(Random r) {
    String c = "fuzz-" + (char) ('a' + r.nextInt(26)) + r.nextInt(1000);
    return ("{\"customer\":" + literal(c) + ",\"amountCents\":" + (1 + r.nextInt(100_000)) + "}")
        .getBytes(StandardCharsets.UTF_8);
  }

  private static byte[] body(Random r) {
    String c = literal(customer(r));
    String a = amount(r);
    String json =
        switch (r.nextInt(8)) {
          case 0 -> "{\"customer\":" + c + ",\"customer\":" + c + ",\"amountCents\":" + a + "}";
          case 1 -> "{\"amountCents\":" + a + "}";
          case 2 -> "{\"customer\":" + c + ",\"amountCents\":" + a + ",\"extra\":{\"x\":[1,2]}}";
          case 3 -> "{\"customer\":" + c + ",\"amountCents\":" + a;
          case 4 -> "[" + c + "," + a + "]";
          case 5 -> "{\"customer\":{\"name\":" + c + "},\"amountCents\":" + a + "}";
          default -> "{\"customer\":" + c + ",\"amountCents\":" + a + "}";
        };
    return json.getBytes(StandardCharsets.UTF_8);
  }

  private static String randomJson(Random r, int depth) {
    int pick = depth > 6 ? 3 + r.nextInt(4) : r.nextInt(8);
    return switch (pick) {
      case 0 -> {
        StringBuilder o = new StringBuilder("{");
        int n = r.nextInt(4);
        for (int i = 0; i < n; i++) {
          o.append(i > 0 ? "," : "")
              .append(literal(r.nextBoolean() ? "customer" : customer(r)))
              .append(':')
              .append(randomJson(r, depth + 1));
        }
        yield o.append('}').toString();
      }
      case 1 -> "[" + randomJson(r, depth + 1) + "," + randomJson(r, depth + 1) + "]";
      case 2 -> "[".repeat(40 + r.nextInt(2000)) + "]".repeat(r.nextInt(2) == 0 ? 0 : 40);
      case 3 -> literal(customer(r));
      case 4 -> amount(r);
      case 5 -> r.nextBoolean() ? "true" : "null";
      case 6 -> "{\"customer\":" + literal("x".repeat(r.nextInt(70_000))) + "}";
      default -> "{\"a\":".repeat(100) + "1" + "}".repeat(100);
    };
  }

  private static byte[] rawBytes(Random r) {
    switch (r.nextInt(4)) {
      case 0:
        return ("{\"customer\":\"a\u0000b\",\"amountCents\":5}").getBytes(StandardCharsets.UTF_8);
      case 1:
        {
          byte[] b = ("{\"customer\":\"ab\",\"amountCents\":5}").getBytes(StandardCharsets.UTF_8);
          b[14] = (byte) (0x80 + r.nextInt(0x40)); // a continuation byte out of place
          return b;
        }
      case 2:
        {
          byte[] b = new byte[r.nextInt(300)];
          r.nextBytes(b);
          return b;
        }
      default:
        return new byte[0];
    }
  }

  private static String contentType(Random r) {
    String[] types = {
      "application/json",
      "application/json; charset=utf-8",
      "application/json; charset=latin1",
      "application/json; charset=utf-16",
      "text/plain",
      "application/xml",
      "application/x-www-form-urlencoded",
      "garbage",
      "application/json;;;",
      null
    };
    return types[r.nextInt(types.length)];
  }

  private static String json(Random r) {
    return r.nextInt(4) == 0 ? "application/json; charset=utf-8" : "application/json";
  }

  private Map<String, String> headers(Random r) {
    Map<String, String> h = new HashMap<>();
    if (r.nextInt(3) == 0) {
      String[] parents = {
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-00000000000000000000000000000000-0000000000000000-01",
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-zz",
        "x".repeat(5000),
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01",
      };
      h.put("traceparent", parents[r.nextInt(parents.length)]);
    }
    if (r.nextInt(3) == 0) {
      String[] states = {
        "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE",
        "a=" + "b".repeat(10_000),
        ",,,,",
        "k=v".repeat(500),
        "é=ü",
      };
      h.put("tracestate", states[r.nextInt(states.length)]);
    }
    if (r.nextInt(3) == 0) {
      String[] keys = {
        "key-" + run + "-" + r.nextInt(50), // repeats, sometimes with another body: 422
        "",
        " ",
        "x".repeat(201),
        "x".repeat(200),
        "é",
        "a b",
        "key\u007f",
      };
      h.put("Idempotency-Key", keys[r.nextInt(keys.length)]);
    }
    return h;
  }

  private static String queryValue(Random r) {
    String[] values = {
      "abc",
      "-1",
      "0",
      "1",
      "500",
      "501",
      "2147483648",
      "1.5",
      "%20",
      "true",
      "maybe",
      "TRUE",
      "%00",
      "%ED%A0%80",
      "%C3",
      "%FF",
      "x".repeat(2000),
      "%E2%80%A8",
      "1e3",
      "",
      "null",
      "%2F..%2F"
    };
    return values[r.nextInt(values.length)];
  }

  private static String show(byte[] body) {
    String s = new String(body, 0, Math.min(body.length, 120), StandardCharsets.UTF_8);
    return body.length > 120 ? s + "...(" + body.length + " bytes)" : s;
  }

  private static String clip(String s) {
    return s == null ? "" : s.length() <= 200 ? s : s.substring(0, 200) + "...";
  }
}
