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
PID_FILE=$DIR/artemis.pid

running() { [ -f "$PID_FILE" ] && kill -0 "$(cat "$PID_FILE")" 2>/dev/null; }
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; }

case "${1:-}" in
  start)
    if running; then echo "artemis-local: already running (pid $(cat "$PID_FILE"))"; exit 0; fi
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
    for _ in $(seq 1 60); do
      if listening; then echo "artemis-local: up on tcp://localhost:$PORT (pid $(cat "$PID_FILE"))"; exit 0; fi
      running || { echo "artemis-local: broker exited; see $DIR/artemis.log" >&2; exit 1; }
      sleep 1
    done
    echo "artemis-local: not listening after 60s; see $DIR/artemis.log" >&2
    exit 1
    ;;
  stop)
    if running; then
      kill "$(cat "$PID_FILE")"
      for _ in $(seq 1 30); do running || break; sleep 1; done
      running && kill -9 "$(cat "$PID_FILE")"
      echo "artemis-local: stopped"
    else
      echo "artemis-local: not running"
    fi
    rm -f "$PID_FILE"
    ;;
  status)
    if running; then echo "artemis-local: running (pid $(cat "$PID_FILE"))"; else echo "artemis-local: not running"; exit 1; fi
    ;;
  *)
    echo "usage: $0 start|stop|status" >&2
    exit 2
    ;;
esac
