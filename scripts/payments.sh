#!/usr/bin/env bash
# The main job: builds Postbox and runs the payments app on Open Liberty, in the foreground,
# on http://localhost:9080 with the embedded defaults (an H2 file database and an Artemis broker
# inside the server). Ctrl-C stops it; its data stays under
# runtime-liberty/payments-app/target/liberty/wlp/usr/servers/payments/.
#
#   scripts/payments.sh              # embedded H2 + embedded Artemis
#   scripts/payments.sh -Pkafka      # the Kafka adapter; start a broker with scripts/kafka-local.sh
#   scripts/payments.sh -Psqs        # the SQS adapter; start ElasticMQ with scripts/elasticmq-local.sh
#   scripts/payments.sh -Prabbitmq   # the RabbitMQ adapter on 127.0.0.1:5672 (started if it is down)
#
# Other settings come from the environment, e.g. DB_URL, DB_DRIVER, DB_USER, DB_PASSWORD,
# POSTBOX_BROKER_BOOTSTRAP_SERVERS, ADMIN_PASSWORD (see docs/payments-app.md).
set -euo pipefail
cd "$(dirname "$0")/.."
# A local demo: the server accepts the demo users' shipped passwords only in dev mode. Set
# ADMIN_PASSWORD and VIEWER_PASSWORD (and PAYMENTS_DEV_MODE=false) for anything else.
export PAYMENTS_DEV_MODE="${PAYMENTS_DEV_MODE:-true}"
if [[ "$PAYMENTS_DEV_MODE" == "true" && -z "${ADMIN_PASSWORD:-}" ]]; then
  echo "payments.sh: dev mode; the console and /admin take admin / admin (viewer / viewer for read-only 403s)"
fi
if [[ " $* " == *" -Prabbitmq "* ]]; then
  scripts/rabbitmq-local.sh start
  # The local server's guest account (RabbitMQ lets it in from loopback only), in dev mode only.
  if [[ "$PAYMENTS_DEV_MODE" == "true" && -z "${POSTBOX_BROKER_USERNAME:-}" ]]; then
    export POSTBOX_BROKER_USERNAME=guest POSTBOX_BROKER_PASSWORD=guest
    echo "payments.sh: dev mode; RabbitMQ as guest on 127.0.0.1 (set POSTBOX_BROKER_USERNAME and POSTBOX_BROKER_PASSWORD for another account)"
  fi
fi
./mvnw -B -q -pl runtime-liberty/payments-app -am install -DskipTests -DskipITs "$@"
exec ./mvnw -B -pl runtime-liberty/payments-app liberty:run "$@"
