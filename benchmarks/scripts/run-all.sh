#!/usr/bin/env bash
# Runs the harnesses whose figures docs/benchmarks.md shows, each peer ROUNDS times (default 5),
# interleaved; writes their JSON to benchmarks/target/results/ and, from it, the charts
# docs/benchmarks-<harness>.svg and the Markdown tables (printed, and kept in
# benchmarks/target/results/tables.md).
#
#   benchmarks/scripts/run-all.sh            # every harness
#   benchmarks/scripts/run-all.sh relay      # some of them: relay, inbox, app
#   APP_ARGS="--setups embedded" benchmarks/scripts/run-all.sh app   # the app harness's own options
#   ROUNDS=1 benchmarks/scripts/run-all.sh retention   # not in the default list: 20M rows a round
#   ROUNDS=3 benchmarks/scripts/run-all.sh scheduled   # scheduled events: 1M-row claim, lateness
#
# Needs the local PostgreSQL (127.0.0.1:5432, database test) and python3; starts its own Kafka
# brokers and, for app, its own Liberty servers (from benchmarks/target, built by -Papp).
# Nothing else should run on the machine meanwhile: the figures are the machine's.
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds="${ROUNDS:-5}"
out="$PWD/benchmarks/target/results"
mkdir -p "$out"
declare -A main=(
  [relay]=dev.postbox.runtime.relay.RelayBenchmark
  [inbox]=dev.postbox.runtime.inbox.InboxBenchmark
  [app]=dev.postbox.benchmarks.app.AppBenchmark
  [retention]=dev.postbox.runtime.inbox.RetentionBenchmark
  [scheduled]=dev.postbox.runtime.relay.ScheduledBenchmark
)
harnesses=("$@")
[ ${#harnesses[@]} -gt 0 ] || harnesses=(relay inbox app)
./mvnw -q -B -pl benchmarks,runtime-liberty/payments-app -am install -DskipTests -DskipITs
./mvnw -q -B -pl benchmarks -Papp package -DskipTests
for h in "${harnesses[@]}"; do
  [ -n "${main[$h]:-}" ] || { echo "unknown harness: $h (relay, inbox, app, retention, scheduled)" >&2; exit 2; }
  extra=""
  [ "$h" != app ] || extra="${APP_ARGS:-}"
  echo "== $h: $rounds rounds"
  rm -f "$out/$h.json"
  ./mvnw -q -B -pl benchmarks exec:java -Dexec.mainClass="${main[$h]}" \
    -Dexec.args="--rounds $rounds --json $out/$h.json $extra" | grep -v '^[0-9:. ]*\(INFO\|WARN\) ' || true
  [ -s "$out/$h.json" ] || { echo "$h wrote no results" >&2; exit 1; }
done
files=()
for h in "${harnesses[@]}"; do files+=("$out/$h.json"); done
python3 benchmarks/scripts/bench-report.py "${files[@]}" --svg-dir docs | tee "$out/tables.md"
