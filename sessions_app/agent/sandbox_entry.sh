#!/bin/sh
# The first thing that runs inside an agent's sandbox (sessions_app/agent/sandbox.py).
#
#   sandbox_entry.sh [PORT SOCKET]... -- AGENT COMMAND...
#
# The sandbox has a network of its own with nothing in it but loopback. For each endpoint the
# launcher allows, a forwarder listens on 127.0.0.1:PORT and joins each connection to SOCKET,
# whose other end (the worker, recovery/providers/acp/egress.py) connects to the real endpoint.
# Once every forwarder listens, the agent replaces this shell.
set -eu

while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do
  port=$1
  socket=$2
  shift 2
  socat "TCP-LISTEN:$port,bind=127.0.0.1,fork,reuseaddr" "UNIX-CONNECT:$socket" &
  # /proc/net/tcp lists this namespace's sockets: state 0A is LISTEN, the port is in hex.
  listening=":$(printf '%04X' "$port") 00000000:0000 0A"
  tries=0
  until grep -q "$listening" /proc/net/tcp; do
    tries=$((tries + 1))
    if [ "$tries" -gt 500 ]; then
      echo "kandev sandbox: the forwarder for port $port did not start" >&2
      exit 70
    fi
    sleep 0.01
  done
done
[ "$#" -gt 0 ] && shift
exec "$@"
