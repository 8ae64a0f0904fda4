#!/usr/bin/env bash
# Starts a throwaway PostgreSQL server (Debian's `postgresql` package) for the Responses store tests and
# prints the URL to reach it. PostgreSQL refuses to run as root, so as root it runs as the `postgres` user.
# Usage: url=$(bash .ci/postgres.sh)
set -euo pipefail
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -x "$bin/initdb" ] || { echo "postgresql is not installed" >&2; exit 1; }
port=${PGPORT_TEST:-$((20000 + $$ % 20000))}
dir=$(mktemp -d /tmp/oai-pg.XXXXXX)
as=()
if [ "$(id -u)" -eq 0 ]; then
  chown postgres "$dir"
  as=(runuser -u postgres --)
fi
"${as[@]}" "$bin/initdb" -D "$dir/data" -A trust -U postgres >"$dir/initdb.log" 2>&1
# A port another server holds (a run still going, one left behind) makes the start fail: try the next ones.
for try in 1 2 3 4 5; do
  if "${as[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
    -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off" start >/dev/null; then
    echo "postgres://postgres@127.0.0.1:$port/postgres"
    exit 0
  fi
  port=$((20000 + (port - 20000 + 7919) % 20000))
done
echo "postgres: no port to listen on (see $dir/server.log)" >&2
exit 1
