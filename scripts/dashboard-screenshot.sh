#!/usr/bin/env bash
# Photographs the operator's dashboard (docs/ops/postbox-dashboard.json) over a running payments
# app: starts a Prometheus of its own scraping the app's /metrics every 5 s, drives orders (with
# duplicates) through the app for a few minutes, renders the dashboard's panels from Prometheus
# (scripts/dashboard-render.py; Grafana itself is not installable here) and takes a headless
# Chromium screenshot into docs/ops/postbox-dashboard.png.
#
#   scripts/payments.sh                       # in another terminal: the app on localhost:9080
#   scripts/dashboard-screenshot.sh [minutes] # default 4
#
# Needs Debian's prometheus and chromium. APP (default http://localhost:9080) and ADMIN
# (default admin:admin, the dev-mode demo user) say where the app is and who may load it.
set -euo pipefail
cd "$(dirname "$0")/.."
MINUTES="${1:-4}"
APP="${APP:-http://localhost:9080}"
ADMIN="${ADMIN:-admin:admin}"
PROM_PORT="${PROM_PORT:-9099}"
command -v prometheus >/dev/null || { echo "needs prometheus (apt-get install prometheus)"; exit 1; }
CHROME="$(command -v chromium || command -v chromium-browser || true)"
[[ -n "$CHROME" ]] || { echo "needs chromium (apt-get install chromium)"; exit 1; }
curl -fsS "$APP/metrics" >/dev/null || { echo "no app at $APP (start scripts/payments.sh)"; exit 1; }

work="$(mktemp -d)"
trap 'kill "${prom:-}" 2>/dev/null || true; rm -rf "$work"' EXIT
target="${APP#http://}"
cat > "$work/prometheus.yml" <<YML
global:
  scrape_interval: 5s
scrape_configs:
  - job_name: payments
    metrics_path: /metrics
    static_configs:
      - targets: ["${target%%/*}"]
YML
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/data" \
  --web.listen-address="127.0.0.1:$PROM_PORT" >"$work/prometheus.log" 2>&1 &
prom=$!
for _ in $(seq 60); do
  curl -fsS "http://127.0.0.1:$PROM_PORT/-/ready" >/dev/null 2>&1 && break
  sleep 1
done

echo "driving orders for $MINUTES min (bursts of 40, 20% duplicates)"
end=$((SECONDS + ${MINUTES%.*} * 60))
while (( SECONDS < end )); do
  curl -fsS -u "$ADMIN" -X POST "$APP/admin/load?orders=40&duplicatePercent=20" >/dev/null || true
  sleep 3
done
sleep 15 # two more scrapes after the last burst

python3 scripts/dashboard-render.py --prometheus "http://127.0.0.1:$PROM_PORT" \
  --minutes "$MINUTES" --out "$work/dashboard.html"
"$CHROME" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$work/chrome" --hide-scrollbars --window-size=1520,1330 \
  --screenshot="$PWD/docs/ops/postbox-dashboard.png" "file://$work/dashboard.html"
echo "wrote docs/ops/postbox-dashboard.png"
