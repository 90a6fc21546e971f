#!/usr/bin/env bash
# Where a JFR recording's CPU samples fall: the share of execution samples whose stack holds each
# of a list of markers (what the payments app's threads spend their time on), and the top leaf
# methods. Usage: benchmarks/scripts/jfr-top.sh RECORDING.jfr
set -euo pipefail
rec="$1"
jfr="${JAVA_HOME:+$JAVA_HOME/bin/}jfr"
tmp="$(mktemp)"
trap 'rm -f "$tmp"' EXIT
"$jfr" print --events jdk.ExecutionSample --stack-depth 64 "$rec" > "$tmp"
python3 - "$tmp" <<'PY'
import re, sys, collections
text = open(sys.argv[1]).read()
samples = [s for s in text.split("jdk.ExecutionSample") if "stackTrace" in s]
n = len(samples)
markers = {
    "JDBC (PostgreSQL driver)": "org.postgresql.",
    "H2 database": "org.h2.",
    "Kafka client": "org.apache.kafka.clients",
    "Artemis": "org.apache.activemq.artemis",
    "relay (publish, claim, settle)": "dev.postbox.runtime.relay.",
    "inbox (process, record)": "dev.postbox.runtime.inbox.",
    "JAX-RS (RESTEasy)": "org.jboss.resteasy.",
    "HTTP channel (Liberty)": "com.ibm.ws.http.",
    "transactions (Liberty)": "com.ibm.tx.",
    "connection pool (Liberty)": "com.ibm.ws.rsadapter.",
    "CDI (Weld)": "org.jboss.weld.",
    "JSON (Jackson, JSON-B)": "com.fasterxml.jackson.|org.eclipse.yasson.",
}
print(f"{n} execution samples")
for name, m in markers.items():
    k = sum(1 for s in samples if re.search(m.replace(".", r"\."), s))
    print(f"{100 * k / max(n, 1):5.1f} %  {name}")
leaf = collections.Counter()
for s in samples:
    frames = re.findall(r"^\s+([\w$.<>]+)\(", s, re.M)
    if frames:
        leaf[frames[0]] += 1
print("top leaf methods:")
for m, k in leaf.most_common(15):
    print(f"{100 * k / max(n, 1):5.1f} %  {m}")
PY
