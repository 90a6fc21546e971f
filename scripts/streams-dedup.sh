#!/usr/bin/env bash
# Runs the Kafka Streams deduplicator against any Kafka cluster.
#
#   scripts/streams-dedup.sh streams-dedup/dedup.properties.example
#
# Builds the module if needed, then runs dev.postbox.streams.dedup.DedupApp with the file.
# JAVA_OPTS is passed to the JVM. Run more copies with the same application.id to scale out.
# Works from any directory: the file is taken relative to where you are, Maven runs on the
# repository's own POM.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
[ $# -eq 1 ] || { echo "usage: $0 <dedup.properties>" >&2; exit 2; }
[ -f "$1" ] || { echo "$0: no such file: $1" >&2; exit 2; }
CONFIG=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
CLASSPATH_FILE=$ROOT/streams-dedup/target/runtime.classpath
if [ ! -f "$CLASSPATH_FILE" ] || [ ! -d "$ROOT/streams-dedup/target/classes" ]; then
  # the build writes runtime.classpath too (dependency:build-classpath in the module's POM)
  "$ROOT/mvnw" -B -q -f "$ROOT/pom.xml" -pl streams-dedup -am install -DskipTests
fi
exec java ${JAVA_OPTS:-} -cp "$ROOT/streams-dedup/target/classes:$(cat "$CLASSPATH_FILE")" \
  dev.postbox.streams.dedup.DedupApp "$CONFIG"
