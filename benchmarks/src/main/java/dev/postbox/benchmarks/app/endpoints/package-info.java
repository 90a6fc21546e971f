/**
 * The peers of the application benchmark, as endpoints of a benchmark build only: {@code
 * AppBenchmark} packs this package into a jar that it adds to its own copy of the payments WAR. The
 * shipped WAR never holds them. {@code POST /bench/bare} writes the order and no event (the ceiling
 * of the web and database path); {@code POST /bench/bypass} writes the order, commits, and
 * publishes its event straight to the broker from the request (the unsafe dual write the outbox
 * exists to avoid); {@code GET /bench/latencies} reads each order's and its notification's times.
 */
package dev.postbox.benchmarks.app.endpoints;
