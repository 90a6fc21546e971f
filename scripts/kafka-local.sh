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
PID_FILE=$DIR/kafka.pid

running() { [ -f "$PID_FILE" ] && kill -0 "$(cat "$PID_FILE")" 2>/dev/null; }

listening() { (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; }

case "${1:-}" in
  start)
    if running; then echo "kafka-local: already running (pid $(cat "$PID_FILE")) on localhost:$PORT"; exit 0; fi
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
    for _ in $(seq 1 60); do
      if listening; then echo "kafka-local: up on localhost:$PORT (pid $(cat "$PID_FILE"))"; exit 0; fi
      running || { echo "kafka-local: broker exited; see $DIR/kafka.log" >&2; exit 1; }
      sleep 1
    done
    echo "kafka-local: not listening after 60s; see $DIR/kafka.log" >&2
    exit 1
    ;;
  stop)
    if running; then
      kill "$(cat "$PID_FILE")"
      for _ in $(seq 1 30); do running || break; sleep 1; done
      running && kill -9 "$(cat "$PID_FILE")"
      echo "kafka-local: stopped"
    else
      echo "kafka-local: not running"
    fi
    rm -f "$PID_FILE"
    ;;
  status)
    if running; then echo "kafka-local: running (pid $(cat "$PID_FILE")) on localhost:$PORT"; else echo "kafka-local: not running"; exit 1; fi
    ;;
  *)
    echo "usage: $0 start|stop|status" >&2
    exit 2
    ;;
esac
