#!/usr/bin/env bash
# A standalone SQS-compatible server (ElasticMQ) from Maven jars, for the payments app and demos.
#
#   scripts/elasticmq-local.sh start    # SQS API on http://localhost:${ELASTICMQ_PORT:-9324}
#   scripts/elasticmq-local.sh status
#   scripts/elasticmq-local.sh stop
#
# Queues listed in ELASTICMQ_QUEUES (space-separated; names ending in .fifo are FIFO) are created at
# start; the default is every queue the payments app uses (orders, payments), standard and FIFO.
# Use any access key and secret, and any region, with endpoint http://localhost:9324: the app's
# -Psqs profile sets placeholder ones.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=${ELASTICMQ_LOCAL_DIR:-$ROOT/target/elasticmq-local}
PORT=${ELASTICMQ_PORT:-9324}
QUEUES=${ELASTICMQ_QUEUES:-orders payments orders.fifo payments.fifo}
SERVICE=elasticmq-local
LOG=$DIR/elasticmq.log
# shellcheck source=lib/local-service.sh
. "$ROOT/scripts/lib/local-service.sh"
PID_FILE=$DIR/elasticmq.pid

case "${1:-}" in
  start)
    if service_running; then echo "elasticmq-local: already running (pid $(cat "$PID_FILE"))"; exit 0; fi
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
