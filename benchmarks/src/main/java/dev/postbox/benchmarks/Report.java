package dev.postbox.benchmarks;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * What a harness measured, round by round: each peer's figures from every round, summarised as the
 * median with its min–max, the goals checked against the medians, and all of it written as JSON for
 * {@code benchmarks/scripts/bench-report.py}, which draws the charts and tables of {@code
 * docs/benchmarks.md}.
 *
 * <p>A harness runs every peer once per round, so peers are interleaved: a machine that slows down
 * halfway slows every peer's later rounds, not one peer's. Ratios between peers (a share of a
 * limit) are computed within a round and recorded as figures of their own, then summarised like the
 * others.
 *
 * <p>The harness's options: {@code --rounds N} (default 5) and {@code --json FILE} (default {@code
 * target/results/<harness>.json}, relative to the working directory); the rest are its own.
 */
public final class Report {

  /** One figure of one peer, with every round's value in round order. */
  public record Figure(String peer, String metric, String unit, List<Double> values) {

    public double median() {
      List<Double> sorted = values.stream().sorted().toList();
      int n = sorted.size();
      return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
    }

    public double min() {
      return values.stream().mapToDouble(Double::doubleValue).min().orElse(Double.NaN);
    }

    public double max() {
      return values.stream().mapToDouble(Double::doubleValue).max().orElse(Double.NaN);
    }
  }

  /** A goal of the issue, checked against a figure's median. */
  public record Goal(String text, String peer, String metric, String op, double target) {

    boolean met(double median) {
      return op.equals(">=") ? median >= target : median < target;
    }
  }

  private final String harness;
  private final int rounds;
  private final Path json;
  private final List<String> rest;
  private final Map<String, Figure> figures = new LinkedHashMap<>();
  private final List<Goal> goals = new ArrayList<>();
  private final Map<String, Object> machine = new LinkedHashMap<>();
  private final Instant started = Instant.now().truncatedTo(ChronoUnit.SECONDS);

  private Report(String harness, int rounds, Path json, List<String> rest) {
    this.harness = harness;
    this.rounds = rounds;
    this.json = json;
    this.rest = rest;
    machine.put("cores", Runtime.getRuntime().availableProcessors());
    machine.put("java", System.getProperty("java.version"));
    machine.put("os", System.getProperty("os.name") + " " + System.getProperty("os.arch"));
    if (ManagementFactory.getOperatingSystemMXBean()
        instanceof com.sun.management.OperatingSystemMXBean os) {
      machine.put("memoryGiB", Math.round(os.getTotalMemorySize() / (1024.0 * 1024 * 1024)));
    }
  }

  /** Reads {@code --rounds} and {@code --json} from the arguments; {@link #args()} has the rest. */
  public static Report of(String harness, String[] args) {
    int rounds = 5;
    Path json = Path.of("target", "results", harness + ".json");
    List<String> rest = new ArrayList<>();
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--rounds" -> rounds = Integer.parseInt(value(args, ++i, "--rounds"));
        case "--json" -> json = Path.of(value(args, ++i, "--json"));
        default -> rest.add(args[i]);
      }
    }
    if (rounds < 1) {
      throw new IllegalArgumentException("--rounds must be at least 1, was " + rounds);
    }
    return new Report(harness, rounds, json, rest);
  }

  private static String value(String[] args, int i, String option) {
    if (i >= args.length) {
      throw new IllegalArgumentException(option + " needs a value");
    }
    return args[i];
  }

  public int rounds() {
    return rounds;
  }

  /** The arguments besides {@code --rounds} and {@code --json}. */
  public List<String> args() {
    return rest;
  }

  /** A fact about the machine or setup, written with the results (a database's version, say). */
  public void machine(String name, Object value) {
    machine.put(name, value);
  }

  /** Records one round's value of a peer's figure. */
  public void add(String peer, String metric, String unit, double value) {
    figures
        .computeIfAbsent(
            peer + "\u0000" + metric, k -> new Figure(peer, metric, unit, new ArrayList<>()))
        .values()
        .add(value);
  }

  /** The figure recorded so far, or {@code null}. */
  public Figure figure(String peer, String metric) {
    return figures.get(peer + "\u0000" + metric);
  }

  /** The value of a peer's figure in the latest round (for ratios within a round). */
  public double last(String peer, String metric) {
    List<Double> v = Objects.requireNonNull(figure(peer, metric), peer + ": " + metric).values();
    return v.get(v.size() - 1);
  }

  /** A goal: the median of the peer's figure must be {@code >=} or {@code <} the target. */
  public void goal(String text, String peer, String metric, String op, double target) {
    if (!op.equals(">=") && !op.equals("<")) {
      throw new IllegalArgumentException("op is >= or <, was " + op);
    }
    goals.add(new Goal(text, peer, metric, op, target));
  }

  /** Prints the summary and the goals, and writes the JSON. */
  public void finish() throws IOException {
    System.out.printf(
        "%n%s: medians of %d round%s, interleaved (min-max)%n",
        harness, rounds, rounds == 1 ? "" : "s");
    System.out.printf("%-40s %-22s %14s %26s%n", "peer", "metric", "median", "min - max");
    for (Figure f : figures.values()) {
      System.out.printf(
          "%-40s %-22s %14s %26s%n",
          f.peer(),
          f.metric() + " (" + f.unit() + ")",
          format(f.median()),
          format(f.min()) + " - " + format(f.max()));
    }
    List<Map<String, Object>> goalsOut = new ArrayList<>();
    for (Goal g : goals) {
      Figure f = Objects.requireNonNull(figure(g.peer(), g.metric()), "no figure for " + g);
      boolean met = g.met(f.median());
      System.out.printf(
          "goal %-60s %s (median %s)%n", g.text(), met ? "MET" : "MISSED", format(f.median()));
      Map<String, Object> out = new LinkedHashMap<>();
      out.put("goal", g.text());
      out.put("peer", g.peer());
      out.put("metric", g.metric());
      out.put("op", g.op());
      out.put("target", g.target());
      out.put("median", f.median());
      out.put("met", met);
      goalsOut.add(out);
    }
    List<Map<String, Object>> figuresOut = new ArrayList<>();
    for (Figure f : figures.values()) {
      Map<String, Object> out = new LinkedHashMap<>();
      out.put("peer", f.peer());
      out.put("metric", f.metric());
      out.put("unit", f.unit());
      out.put("values", f.values());
      out.put("median", f.median());
      out.put("min", f.min());
      out.put("max", f.max());
      figuresOut.add(out);
    }
    Map<String, Object> doc = new LinkedHashMap<>();
    doc.put("harness", harness);
    doc.put("started", started.toString());
    doc.put("finished", Instant.now().truncatedTo(ChronoUnit.SECONDS).toString());
    doc.put("rounds", rounds);
    doc.put("args", rest);
    doc.put("machine", machine);
    doc.put("figures", figuresOut);
    doc.put("goals", goalsOut);
    Path parent = json.toAbsolutePath().getParent();
    Files.createDirectories(parent);
    new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValue(json.toFile(), doc);
    System.out.println("written: " + json);
  }

  private static String format(double v) {
    if (Double.isNaN(v)) {
      return "-";
    }
    return Math.abs(v) >= 100 ? String.format("%,.0f", v) : String.format("%.1f", v);
  }
}
