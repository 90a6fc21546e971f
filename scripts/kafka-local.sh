#!/usr/bin/env bash
# A standalone single-node Kafka (KRaft) from Maven jars, for the payments app and demos.
#
#   scripts/kafka-local.sh start    # listens on localhost:${KAFKA_PORT:-9092}
#   scripts/kafka-local.sh status
#   scripts/kafka-local.sh stop
#
# Data and logs live in ${KAFKA_LOCAL_DIR:-target/kafka-local}. Remove that folder for a fresh broker.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=${KAFKA_LOCAL_DIR:-$ROOT/target/kafka-local}
PORT=${KAFKA_PORT:-9092}
CONTROLLER_PORT=${KAFKA_CONTROLLER_PORT:-9093}
SERVICE=kafka-local
LOG=$DIR/kafka.log
# shellcheck source=lib/local-service.sh
. "$ROOT/scripts/lib/local-service.sh"
PID_FILE=$DIR/kafka.pid

case "${1:-}" in
  start)
    if service_running; then echo "kafka-local: already running (pid $(cat "$PID_FILE")) on localhost:$PORT"; exit 0; fi
    mkdir -p "$DIR"
    if [ ! -d "$DIR/lib" ]; then
      echo "kafka-local: fetching the Kafka jars"
      "$ROOT/mvnw" -B -q -f "$ROOT/scripts/kafka-local/pom.xml" dependency:copy-dependencies \
        -DoutputDirectory="$DIR/lib" -DincludeScope=runtime
    fi
    cat > "$DIR/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=localhost:$CONTROLLER_PORT
listeners=PLAINTEXT://localhost:$PORT,CONTROLLER://localhost:$CONTROLLER_PORT
advertised.listeners=PLAINTEXT://localhost:$PORT
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=$DIR/data
num.partitions=8
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
PROPS
    cat > "$DIR/log4j2.xml" <<'XML'
<Configuration status="WARN">
  <Appenders><Console name="out" target="SYSTEM_OUT"><PatternLayout pattern="%d %-5level %c{1} - %msg%n"/></Console></Appenders>
  <Loggers><Root level="warn"><AppenderRef ref="out"/></Root></Loggers>
</Configuration>
XML
    if [ ! -f "$DIR/data/meta.properties" ]; then
      CLUSTER_ID=$(java -cp "$DIR/lib/*" kafka.tools.StorageTool random-uuid)
      java -cp "$DIR/lib/*" kafka.tools.StorageTool format --standalone -t "$CLUSTER_ID" \
        -c "$DIR/server.properties" >/dev/null
    fi
    nohup java -Xmx512m -Dlog4j2.configurationFile="$DIR/log4j2.xml" -cp "$DIR/lib/*" \
      kafka.Kafka "$DIR/server.properties" >"$DIR/kafka.log" 2>&1 &
    echo $! >"$PID_FILE"
    service_await_port
    ;;
  stop)
    service_stop
    ;;
  status)
    service_status
    ;;
  *)
    echo "usage: $0 start|stop|status" >&2
    exit 2
    ;;
esac
