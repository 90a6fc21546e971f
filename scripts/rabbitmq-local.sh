#!/usr/bin/env bash
# The machine's RabbitMQ server (a system package, not a download), for the payments app and demos.
#
#   scripts/rabbitmq-local.sh start    # starts it with `rabbitmq-server -detached` if it is down
#   scripts/rabbitmq-local.sh status
#   scripts/rabbitmq-local.sh stop     # stops only a server this script started
#
# The app's -Prabbitmq profile connects to 127.0.0.1:5672, vhost /. The adapter declares the queues
# it needs (quorum queues, no plugin). Its local account is the server's guest, which RabbitMQ lets
# in from loopback only; scripts/payments.sh passes it in dev mode.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=${RABBITMQ_LOCAL_DIR:-$ROOT/target/rabbitmq-local}
PORT=${RABBITMQ_PORT:-5672}
SERVICE=rabbitmq-local
MARK=$DIR/started-here

listening() { (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; }

case "${1:-}" in
  start)
    if rabbitmqctl -q status >/dev/null 2>&1 && listening; then
      echo "$SERVICE: already running on port $PORT"
      exit 0
    fi
    command -v rabbitmq-server >/dev/null || { echo "$SERVICE: rabbitmq-server is not installed" >&2; exit 1; }
    mkdir -p "$DIR"
    rabbitmq-server -detached
    touch "$MARK"
    # The node takes a few seconds to be reachable at all; await_startup fails until then.
    for _ in $(seq 1 120); do
      if rabbitmqctl -q await_startup >/dev/null 2>&1 && listening; then
        echo "$SERVICE: up on port $PORT"
        exit 0
      fi
      sleep 1
    done
    echo "$SERVICE: not serving on port $PORT after 120s; see /var/log/rabbitmq/" >&2
    exit 1
    ;;
  stop)
    if [ -f "$MARK" ]; then
      rabbitmqctl -q stop >/dev/null 2>&1 || true
      rm -f "$MARK"
      echo "$SERVICE: stopped"
    else
      echo "$SERVICE: not started by this script; left running"
    fi
    ;;
  status)
    if rabbitmqctl -q status >/dev/null 2>&1; then echo "$SERVICE: running on port $PORT"; else echo "$SERVICE: not running"; exit 1; fi
    ;;
  *)
    echo "usage: $0 start|stop|status" >&2
    exit 2
    ;;
esac
