# Shared by scripts/*-local.sh: a background process with a pid file, started once, stopped cleanly.
# The caller sets SERVICE (a name for messages), PID_FILE, PORT and LOG before using these.

service_running() { [ -f "$PID_FILE" ] && kill -0 "$(cat "$PID_FILE")" 2>/dev/null; }

service_listening() { (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; }

# service_await_port: waits up to 60 s for PORT after the process was started with its pid in PID_FILE.
service_await_port() {
  for _ in $(seq 1 60); do
    if service_listening; then echo "$SERVICE: up on port $PORT (pid $(cat "$PID_FILE"))"; return 0; fi
    service_running || { echo "$SERVICE: exited; see $LOG" >&2; return 1; }
    sleep 1
  done
  echo "$SERVICE: not listening after 60s; see $LOG" >&2
  return 1
}

service_stop() {
  if service_running; then
    kill "$(cat "$PID_FILE")"
    for _ in $(seq 1 30); do service_running || break; sleep 1; done
    service_running && kill -9 "$(cat "$PID_FILE")"
    echo "$SERVICE: stopped"
  else
    echo "$SERVICE: not running"
  fi
  rm -f "$PID_FILE"
}

service_status() {
  if service_running; then echo "$SERVICE: running (pid $(cat "$PID_FILE")) on port $PORT"; else echo "$SERVICE: not running"; return 1; fi
}
