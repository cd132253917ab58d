#!/usr/bin/env bash
# Makes a fresh Debian bookworm machine (root, Node 20) ready to run holm, and is cheap to run
# again: every step checks first and does nothing when there is nothing to do.
#
#   bash scripts/setup.sh          (or: npm run setup)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
readonly started=$SECONDS
docker=/usr/bin/docker # /usr/local/bin/docker on some hosts is a different, client-only binary

step() { printf '\n==> %s\n' "$*"; }
note() { printf '    %s\n' "$*"; }
fail() {
  printf 'setup: %s\n' "$*" >&2
  exit 1
}

[[ $(id -u) == 0 ]] || fail "run as root (debootstrap, apt and dockerd need it)"
command -v node >/dev/null || fail "Node 20 or later is required"
node_major=$(node -p 'process.versions.node.split(".")[0]')
((node_major >= 20)) || fail "Node 20 or later is required, found $(node -v)"

step "Debian packages"
# The desktop lives in the box image. On the host: chromium for the end-to-end tests, imagemagick
# for comparing screenshots, and the X tools the in-box agent's own tests run it against.
wanted=(docker.io debootstrap chromium imagemagick iptables iproute2
  xvfb x11vnc xdotool fluxbox wmctrl xclip x11-utils xterm ffmpeg)
missing=()
for pkg in "${wanted[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)
  [[ $status == installed ]] || missing+=("$pkg")
done
if ((${#missing[@]})); then
  note "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -qy "${missing[@]}"
else
  note "all present: ${wanted[*]}"
fi

# Installs Debian packages whose services must not start on this machine: the package's scripts are
# told "no services" (policy-rc.d exit 101, Debian's way) unless a policy is there already.
install_quiet_services() {
  export DEBIAN_FRONTEND=noninteractive
  local policy_added=""
  if [[ ! -e /usr/sbin/policy-rc.d ]]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
    chmod 755 /usr/sbin/policy-rc.d
    policy_added=1
  fi
  [[ -n $(apt-cache policy "$1" | awk '/Candidate:/ && $2 != "(none)"') ]] || apt-get update -q
  apt-get install -qy --no-install-recommends "$@" || { [[ -z $policy_added ]] || rm -f /usr/sbin/policy-rc.d; fail "could not install $*"; }
  [[ -z $policy_added ]] || rm -f /usr/sbin/policy-rc.d
}

step "OpenSSH server (for the tests' ssh:// engine)"
# tests/support/remote-engine.ts runs its own `sshd -f CONF -D` in a network namespace, in front of
# a second dockerd (ADR 0019). Only the binary is needed: this machine's own ssh service must
# not start.
if [[ ! -x /usr/sbin/sshd ]]; then
  note "installing openssh-server (its service is not started)"
  install_quiet_services openssh-server
else
  note "sshd present ($(/usr/sbin/sshd -V 2>&1 | head -n 1))"
fi

step "Caddy and nginx (docs/reverse-proxy.md's recipes, tested)"
# tests/integration/reverse-proxy.test.ts starts each with the recipe's config on ports of its own,
# in front of a test server. Only the binaries: their services do not start.
if ! command -v caddy >/dev/null || ! command -v nginx >/dev/null; then
  note "installing caddy and nginx-light (their services are not started)"
  install_quiet_services caddy nginx-light
else
  note "caddy and nginx present"
fi

step "PostgreSQL"
# Only when asked: HOLM_STORAGE_BACKEND=postgres (a server on PostgreSQL) or HOLM_TEST_POSTGRES=1 /
# HOLM_TEST_STORE=postgres (tests on PostgreSQL). The default store is embedded SQLite: no service.
if [[ ${HOLM_STORAGE_BACKEND:-} == postgres || ${HOLM_TEST_POSTGRES:-} == 1 || ${HOLM_TEST_STORE:-} == postgres ]]; then
  status=$(dpkg-query -W -f='${db:Status-Status}' postgresql 2>/dev/null || true)
  if [[ $status != installed ]]; then
    note "installing Debian's postgresql"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -qy postgresql
  fi
  # Debian's cluster (bookworm: 15/main); started unless it runs already.
  read -r pg_version pg_cluster pg_port pg_status _ < <(pg_lsclusters --no-header | head -n 1) ||
    fail "postgresql is installed but has no cluster (pg_createcluster 15 main --start)"
  if [[ $pg_status != online* ]]; then
    note "starting cluster $pg_version/$pg_cluster"
    pg_ctlcluster "$pg_version" "$pg_cluster" start
  fi
  psql_su() { su postgres -c "psql -p $pg_port -v ON_ERROR_STOP=1 -qAtX $(printf '%q ' "$@")"; }
  for ((i = 0; i < 30; i++)); do
    psql_su -c 'select 1' >/dev/null 2>&1 && break
    sleep 1
  done
  psql_su -c 'select 1' >/dev/null || fail "PostgreSQL $pg_version/$pg_cluster does not answer on port $pg_port"
  # A role for holm and for the tests, which create and drop a database per test server
  # (tests/support/server.ts): CREATEDB, no superuser. The password is for loopback only.
  if [[ $(psql_su -c "select 1 from pg_roles where rolname = 'holm'") != 1 ]]; then
    note "creating role holm (CREATEDB)"
    psql_su -c "create role holm login createdb password 'holm'"
  fi
  # A test database is dropped WITH (FORCE): ending an autovacuum worker on it needs this.
  if [[ $(psql_su -c "select 1 from pg_auth_members m join pg_roles r on r.oid = m.roleid join pg_roles u on u.oid = m.member where r.rolname = 'pg_signal_backend' and u.rolname = 'holm'") != 1 ]]; then
    note "granting pg_signal_backend to holm"
    psql_su -c "grant pg_signal_backend to holm"
  fi
  # C collation: text sorts by bytes, as on SQLite.
  if [[ $(psql_su -c "select 1 from pg_database where datname = 'holm'") != 1 ]]; then
    note "creating database holm (owner holm, C collation)"
    psql_su -c "create database holm owner holm template template0 encoding 'UTF8' lc_collate 'C' lc_ctype 'C'"
  fi
  note "PostgreSQL $pg_version/$pg_cluster on port $pg_port: HOLM_DATABASE_URL=postgres://holm:holm@127.0.0.1:$pg_port/holm"
else
  note "not needed (HOLM_STORAGE_BACKEND=${HOLM_STORAGE_BACKEND:-memory}); set HOLM_TEST_POSTGRES=1 for the tests on PostgreSQL"
fi

step "Redis"
# Only when asked: HOLM_REDIS_URL names a Redis on this machine, or HOLM_TEST_REDIS=1 (the tests of
# several servers, tests/integration/cluster-*.test.ts). Several holm servers share takeovers'
# news, access changes, batch locks and socket.io rooms through it (docs/decisions/0021).
if [[ ${HOLM_TEST_REDIS:-} == 1 || ${HOLM_REDIS_URL:-} == redis://*127.0.0.1* ]]; then
  if ! command -v redis-server >/dev/null; then
    note "installing Debian's redis-server"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -qy redis-server
  fi
  # A password of its own, kept where only root reads it: nothing else on the machine may publish
  # on holm's channels. Loopback only, no snapshots (what it holds is news and leases, not data).
  redis_dir=/var/lib/holm-redis
  install -d -m 0700 "$redis_dir"
  [[ -s $redis_dir/password ]] || (umask 077 && head -c 24 /dev/urandom | base64 | tr -d '/+=' > "$redis_dir/password")
  redis_pass=$(cat "$redis_dir/password")
  redis_port=${HOLM_REDIS_PORT:-6390}
  if ! REDISCLI_AUTH=$redis_pass redis-cli -p "$redis_port" ping 2>/dev/null | grep -q PONG; then
    note "starting redis-server on 127.0.0.1:$redis_port"
    (umask 077 && printf 'bind 127.0.0.1\nport %s\nrequirepass %s\nsave ""\nappendonly no\ndaemonize yes\ndir %s\nlogfile %s/redis.log\npidfile %s/redis.pid\n' \
      "$redis_port" "$redis_pass" "$redis_dir" "$redis_dir" "$redis_dir" > "$redis_dir/redis.conf")
    redis-server "$redis_dir/redis.conf"
    for ((i = 0; i < 30; i++)); do
      REDISCLI_AUTH=$redis_pass redis-cli -p "$redis_port" ping 2>/dev/null | grep -q PONG && break
      sleep 0.2
    done
  fi
  REDISCLI_AUTH=$redis_pass redis-cli -p "$redis_port" ping 2>/dev/null | grep -q PONG || fail "redis-server does not answer on port $redis_port"
  note "Redis on 127.0.0.1:$redis_port: HOLM_REDIS_URL=redis://:<password in $redis_dir/password>@127.0.0.1:$redis_port"
else
  note "not needed (one server); set HOLM_TEST_REDIS=1 for the tests of several servers"
fi

step "Docker engine"
if "$docker" info >/dev/null 2>&1; then
  note "dockerd answers"
else
  # A dockerd that was killed leaves its pid file. dockerd refuses to start when that pid now
  # belongs to another process (pids are reused once the machine has run a while): "pid file
  # found, ensure docker is not running". Remove the file unless the pid is a live dockerd.
  for pidfile in /var/run/docker.pid /var/run/docker/containerd/containerd.pid; do
    [[ -f $pidfile ]] || continue
    pid=$(<"$pidfile")
    comm=$(cat "/proc/$pid/comm" 2>/dev/null || true)
    if [[ $comm != dockerd && $comm != containerd ]]; then
      note "removing stale $pidfile (pid ${pid:-none} is ${comm:-not running})"
      rm -f "$pidfile"
    fi
  done
  note "starting dockerd (log: /var/log/holm-dockerd.log)"
  setsid dockerd >/var/log/holm-dockerd.log 2>&1 </dev/null &
  dockerd_pid=$!
  for ((i = 0; i < 120; i++)); do
    "$docker" info >/dev/null 2>&1 && break
    kill -0 "$dockerd_pid" 2>/dev/null || break
    sleep 1
  done
  if ! "$docker" info >/dev/null 2>&1; then
    tail -n 20 /var/log/holm-dockerd.log >&2 || true
    fail "dockerd did not answer (waited ${i} s); the end of /var/log/holm-dockerd.log is above"
  fi
  note "dockerd answers after ~${i} s"
fi

step "npm dependencies"
# npm rewrites node_modules/.package-lock.json on every install: it marks when they last matched.
if [[ ! -f node_modules/.package-lock.json || package-lock.json -nt node_modules/.package-lock.json ]]; then
  note "npm ci"
  npm ci
else
  note "node_modules is up to date with package-lock.json"
fi

step "Build (react-router, server, agent bundle)"
stamp=build/.setup-stamp
sources=()
for p in app server server.ts images/x11/agent scripts/build-agent.mjs public package.json \
  package-lock.json vite.config.ts react-router.config.ts tsconfig.json tsconfig.server.json; do
  [[ -e $p ]] && sources+=("$p")
done
if [[ ! -f $stamp ]] || [[ -n $(find "${sources[@]}" -newer "$stamp" -print -quit) ]]; then
  note "npm run build"
  # Stamped with the time the build started, so an edit made during the build is not missed.
  started_at=$(mktemp)
  npm run build
  mv "$started_at" "$stamp"
else
  note "build/ is newer than every source"
fi

step "Box images (base and default desktop)"
node --import tsx scripts/build-images.ts

step "Done in $((SECONDS - started)) s"
