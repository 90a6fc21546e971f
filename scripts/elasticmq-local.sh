#!/usr/bin/env bash
# A standalone SQS-compatible server (ElasticMQ) from Maven jars, for the payments app and demos.
#
#   scripts/elasticmq-local.sh start    # SQS API on http://localhost:${ELASTICMQ_PORT:-9324}
#   scripts/elasticmq-local.sh status
#   scripts/elasticmq-local.sh stop
#
# Queues listed in ELASTICMQ_QUEUES (space-separated; names ending in .fifo are FIFO) are created at
# start. Use any access key and secret, and any region, with endpoint http://localhost:9324.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=${ELASTICMQ_LOCAL_DIR:-$ROOT/target/elasticmq-local}
PORT=${ELASTICMQ_PORT:-9324}
QUEUES=${ELASTICMQ_QUEUES:-payments payments.fifo}
PID_FILE=$DIR/elasticmq.pid

running() { [ -f "$PID_FILE" ] && kill -0 "$(cat "$PID_FILE")" 2>/dev/null; }
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; }

case "${1:-}" in
  start)
    if running; then echo "elasticmq-local: already running (pid $(cat "$PID_FILE"))"; exit 0; fi
    mkdir -p "$DIR"
    if [ ! -d "$DIR/lib" ]; then
      echo "elasticmq-local: fetching the ElasticMQ jars"
      "$ROOT/mvnw" -B -q -f "$ROOT/scripts/elasticmq-local/pom.xml" dependency:copy-dependencies \
        -DoutputDirectory="$DIR/lib" -DincludeScope=runtime
    fi
    {
      echo 'include classpath("application.conf")'
      echo "node-address { protocol = http, host = localhost, port = $PORT, context-path = \"\" }"
      echo "rest-sqs { enabled = true, bind-port = $PORT, bind-hostname = \"127.0.0.1\" }"
      echo "rest-stats { enabled = false }"
      echo "queues {"
      for q in $QUEUES; do
        name=${q%.fifo}
        if [ "$q" != "$name" ]; then
          echo "  \"$q\" { fifo = true, contentBasedDeduplication = false }"
        else
          echo "  \"$q\" { }"
        fi
      done
      echo "}"
    } >"$DIR/elasticmq.conf"
    nohup java -Xmx256m -Dconfig.file="$DIR/elasticmq.conf" -cp "$DIR/lib/*" org.elasticmq.server.Main \
      >"$DIR/elasticmq.log" 2>&1 &
    echo $! >"$PID_FILE"
    for _ in $(seq 1 60); do
      if listening; then echo "elasticmq-local: up on http://localhost:$PORT (pid $(cat "$PID_FILE")); queues: $QUEUES"; exit 0; fi
      running || { echo "elasticmq-local: exited; see $DIR/elasticmq.log" >&2; exit 1; }
      sleep 1
    done
    echo "elasticmq-local: not listening after 60s; see $DIR/elasticmq.log" >&2
    exit 1
    ;;
  stop)
    if running; then
      kill "$(cat "$PID_FILE")"
      for _ in $(seq 1 30); do running || break; sleep 1; done
      running && kill -9 "$(cat "$PID_FILE")"
      echo "elasticmq-local: stopped"
    else
      echo "elasticmq-local: not running"
    fi
    rm -f "$PID_FILE"
    ;;
  status)
    if running; then echo "elasticmq-local: running (pid $(cat "$PID_FILE"))"; else echo "elasticmq-local: not running"; exit 1; fi
    ;;
  *)
    echo "usage: $0 start|stop|status" >&2
    exit 2
    ;;
esac
