#!/usr/bin/env bash
# A standalone ActiveMQ Artemis broker from the Maven distribution, for the payments app and demos.
#
#   scripts/artemis-local.sh start    # listens on localhost:${ARTEMIS_PORT:-61616}, no security
#   scripts/artemis-local.sh status
#   scripts/artemis-local.sh stop
#
# The broker instance lives in ${ARTEMIS_LOCAL_DIR:-target/artemis-local}. Remove it for a fresh one.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=${ARTEMIS_LOCAL_DIR:-$ROOT/target/artemis-local}
PORT=${ARTEMIS_PORT:-61616}
SERVICE=artemis-local
LOG=$DIR/artemis.log
# shellcheck source=lib/local-service.sh
. "$ROOT/scripts/lib/local-service.sh"
PID_FILE=$DIR/artemis.pid

case "${1:-}" in
  start)
    if service_running; then echo "artemis-local: already running (pid $(cat "$PID_FILE"))"; exit 0; fi
    mkdir -p "$DIR"
    if [ ! -d "$DIR/dist" ]; then
      echo "artemis-local: fetching the Artemis distribution"
      "$ROOT/mvnw" -B -q -f "$ROOT/scripts/artemis-local/pom.xml" dependency:copy-dependencies \
        -DoutputDirectory="$DIR/download"
      mkdir -p "$DIR/dist"
      tar -xzf "$DIR"/download/apache-artemis-*-bin.tar.gz -C "$DIR/dist" --strip-components=1
    fi
    if [ ! -d "$DIR/instance" ]; then
      "$DIR/dist/bin/artemis" create "$DIR/instance" --silent --nio --no-web --require-login=false \
        --allow-anonymous --user admin --password admin --host localhost \
        --default-port "$PORT" --no-amqp-acceptor --no-mqtt-acceptor --no-stomp-acceptor \
        --no-hornetq-acceptor >/dev/null
    fi
    nohup "$DIR/instance/bin/artemis" run >"$DIR/artemis.log" 2>&1 &
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
