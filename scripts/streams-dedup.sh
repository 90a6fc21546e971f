#!/usr/bin/env bash
# Runs the Kafka Streams deduplicator against any Kafka cluster.
#
#   scripts/streams-dedup.sh streams-dedup/dedup.properties.example
#
# Builds the module if needed, then runs dev.postbox.streams.dedup.DedupApp with the file.
# JAVA_OPTS is passed to the JVM. Run more copies with the same application.id to scale out.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
[ $# -eq 1 ] || { echo "usage: $0 <dedup.properties>" >&2; exit 2; }
CLASSPATH_FILE=$ROOT/streams-dedup/target/runtime.classpath
if [ ! -f "$CLASSPATH_FILE" ] || [ ! -d "$ROOT/streams-dedup/target/classes" ]; then
  "$ROOT/mvnw" -B -q -pl streams-dedup -am install -DskipTests
  "$ROOT/mvnw" -B -q -pl streams-dedup dependency:build-classpath \
    -Dmdep.outputFile="$CLASSPATH_FILE" -Dmdep.includeScope=runtime
fi
exec java ${JAVA_OPTS:-} -cp "$ROOT/streams-dedup/target/classes:$(cat "$CLASSPATH_FILE")" \
  dev.postbox.streams.dedup.DedupApp "$1"
