#!/usr/bin/env bash
# Runs a real server from Debian for a test, in the foreground (the test stops it with SIGTERM):
#   scripts/test-server.sh postgres DIR PORT     PostgreSQL 15 on 127.0.0.1:PORT, data in DIR (made on first use),
#                                                trust for local connections, role `bess`; as root it runs as `postgres`
#   scripts/test-server.sh mosquitto CONF [DIR]  Mosquitto with that configuration file; DIR (its
#                                                persistence_location) is made writable for the broker
set -euo pipefail
case "${1:-}" in
  postgres)
    dir=$2 port=$3
    bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
    as=()
    if [[ $(id -u) -eq 0 ]]; then
      mkdir -p "$dir"
      chown postgres:postgres "$dir"
      as=(setpriv --reuid=postgres --regid=postgres --init-groups)
    fi
    if [[ ! -f "$dir/PG_VERSION" ]]; then
      "${as[@]}" "$bin/initdb" -D "$dir" -U bess -A trust --no-sync >/dev/null
    fi
    exec "${as[@]}" "$bin/postgres" -D "$dir" -p "$port" -k "$dir" -c listen_addresses=127.0.0.1 \
      -c max_connections=200 -c shared_buffers=256MB
    ;;
  mosquitto)
    if [[ -n "${3:-}" ]]; then
      mkdir -p "$3"
      # As root, mosquitto drops to its own user: that user writes the persistence file.
      [[ $(id -u) -eq 0 ]] && id mosquitto >/dev/null 2>&1 && chown mosquitto "$3"
    fi
    exec mosquitto -c "$2"
    ;;
  *)
    echo "usage: $0 postgres DIR PORT | mosquitto CONF" >&2
    exit 2
    ;;
esac
