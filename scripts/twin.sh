#!/usr/bin/env bash
# The lab's twin on one machine: the AWS lab's hosts (terraform/) as network namespaces.
#
#   scripts/twin.sh up [--guns 1|2|3] [--target NAME] [--db-delay MS] [--probe-arg ARG]…
#   scripts/twin.sh run [--gun N] -- ARGS…      # loadgen ARGS… in a gun, with the twin's environment
#   scripts/twin.sh exec [--gun N] -- CMD…      # any command there (a shell: -- bash)
#   scripts/twin.sh env [--gun N]               # the environment, as export lines for eval
#   scripts/twin.sh op -- ARGS…                 # loadgen ARGS… in sd-op, the operator's machine
#   scripts/twin.sh op-exec -- CMD…             # any command there (ssh -F "$TWIN_SSH_CONFIG" sd-gun2 …)
#   scripts/twin.sh psql [ARGS…]                # psql on the targets' database, in sd-db
#   scripts/twin.sh status | down
#
# Hosts and links (docs/lab.md, "The lab's twin on one machine"), each a network namespace:
#
#   sd-gun  10.77.1.2   ─┬─ 10.77.1.1 sd-api: target :8080, probe :7700,
#   sd-gun2 10.77.1.3   ─┤              Toxiproxy 127.0.0.1:15432 ─ 10.77.2.1 ── 10.77.2.2 sd-db :5432
#   sd-gun3 10.77.1.4   ─┤
#   sd-op   10.77.1.254 ─┘  (the operator: the target's /healthz)
#   sd-gun  10.77.3.2   ─┬────────────────────────────────────────────────────── 10.77.3.1 sd-db :5432
#   sd-gun2 10.77.3.3   ─┤  (the store link: database showdown_runs only)
#   sd-gun3 10.77.3.4   ─┤
#   sd-op   10.77.3.254 ─┘
#   sd-gun  10.77.4.2:22 ─┬─ 10.77.4.1 sd-op: the operator's machine (loadgen experiment run)
#   sd-gun2 10.77.4.3:22 ─┤  (the ssh link: sshd in each gun, root with $state/ssh/id_ed25519)
#   sd-gun3 10.77.4.4:22 ─┘
#
# Run as root. Everything `up` makes is recorded in the state directory ($TWIN_STATE_DIR,
# default /run/showdown-twin), and `down`, or a failed `up`, removes exactly that.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
state=${TWIN_STATE_DIR:-/run/showdown-twin}

# Addresses: one /24 for the guns' side of the API host (the lab's public subnet), one /30
# between the API host and the database, one /24 for the guns' store link to the database, one
# /24 for the operator's ssh link to the guns. The operator also joins the first and the third,
# as .254: it checks the target's health and writes the same store as the guns.
front_net=10.77.1
api_addr=$front_net.1
db_link_api=10.77.2.1
db_link_db=10.77.2.2
store_net=10.77.3
store_addr=$store_net.1
ops_net=10.77.4
ops_addr=$ops_net.1
op_host=254
sshd=/usr/sbin/sshd
target_port=8080
probe_port=7700
proxy_listen=127.0.0.1:15432
proxy_api=127.0.0.1:8474
toxiproxy_version=v2.12.0
target_user=sd-target
# The probe runs as the target's user (the unit's user.conf): it reads all it measures of the
# target with no capability.
probe_user=$target_user

say() { printf '%s\n' "$*"; }
die() { printf 'twin: %s\n' "$*" >&2; exit 1; }
usage() { sed -n '3,11p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

gun_ns() { if [ "$1" = 1 ]; then echo sd-gun; else echo "sd-gun$1"; fi; }

# A binary of this repository's build, or $LOADGEN / $PROBE, or one on PATH.
binary() { # binary NAME VARIABLE
  local name=$1 override=${!2:-}
  if [ -n "$override" ]; then echo "$override"; return; fi
  local built=${CARGO_TARGET_DIR:-$root/target}/release/$name
  if [ -x "$built" ]; then echo "$built"; return; fi
  command -v "$name" 2>/dev/null || die "no $name binary: cargo build --release -p $name (or set \$$2)"
}

pg_bin() { # the newest PostgreSQL server's tools (Debian keeps them off PATH)
  local found
  found=$(find /usr/lib/postgresql/*/bin -name "$1" 2>/dev/null | sort -V | tail -n 1)
  [ -n "$found" ] || found=$(command -v "$1" 2>/dev/null) || true
  [ -n "$found" ] || die "no PostgreSQL $1: apt-get install postgresql"
  echo "$found"
}

# Waits until "$@" succeeds, for at most $2 seconds; $1 says what for. A process name in $3
# ("--alive NAME") fails the wait at once, with its log, if that process has exited.
wait_for() { # wait_for WHAT SECONDS [--alive NAME] CMD…
  local what=$1 deadline=$((SECONDS + $2)) alive=
  shift 2
  if [ "$1" = --alive ]; then alive=$2; shift 2; fi
  until "$@" >/dev/null 2>&1; do
    if [ -n "$alive" ] && ! process_alive "$alive"; then
      tail -n 20 "$state/logs/$alive.log" >&2 || true
      die "$alive exited while waiting for $what (log above: $state/logs/$alive.log)"
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      [ -z "$alive" ] || tail -n 20 "$state/logs/$alive.log" >&2 || true
      die "timed out waiting for $what"
    fi
    sleep 0.1
  done
}

# --- processes: each a session (and process group) of its own, recorded as "PID STARTTIME" ---

start_ticks() { # field 22 of /proc/PID/stat; the comm field may hold spaces, so cut after ')'
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  # shellcheck disable=SC2086 # split into fields on purpose
  set -- $stat
  echo "${20}"
}

start_process() { # start_process NAME NAMESPACE CMD…
  local name=$1 ns=$2 pid ticks
  shift 2
  # Not a job-control shell, so the child is no group leader and setsid needs no fork; ip
  # netns exec and setpriv exec too: the PID recorded is the process's, and its group's id.
  setsid ip netns exec "$ns" "$@" >"$state/logs/$name.log" 2>&1 </dev/null &
  pid=$!
  ticks=$(start_ticks "$pid") || { tail -n 20 "$state/logs/$name.log" >&2; die "$name exited at once"; }
  echo "$pid $ticks" >"$state/pids/$name"
}

# The recorded process's PID if it is still the process this script started, else nothing.
recorded_pid() {
  local pid ticks
  [ -f "$state/pids/$1" ] || return 1
  read -r pid ticks <"$state/pids/$1"
  [ "$(start_ticks "$pid" 2>/dev/null)" = "$ticks" ] || return 1
  echo "$pid"
}

process_alive() { # recorded, and not a zombie
  local pid stat
  pid=$(recorded_pid "$1") || return 1
  stat=$(cat "/proc/$pid/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  [ "${stat:0:1}" != Z ]
}

# Whether any process of group $1 is still running. Zombies do not count: the processes were
# handed to PID 1 when `up` exited, and it reaps when it will (seconds, on some VMs' inits).
group_alive() {
  ps -eo pgid=,stat= | awk -v g="$1" '$1 == g && $2 !~ /^Z/ { found = 1 } END { exit !found }'
}

# Stops a recorded process as systemd's KillMode=mixed does: SIGNAL to the process itself (so
# that PostgreSQL or a Node cluster shuts its children down its own way), then SIGKILL to its
# whole group after a grace period. A PID that now belongs to another process (a different
# start time) is left alone; a group whose leader has exited is still ours, since the kernel
# does not reuse a PID while it names a group.
stop_process() { # stop_process NAME SIGNAL GRACE_SECONDS
  local name=$1 signal=$2 grace=$3 pid ticks deadline now
  [ -f "$state/pids/$name" ] || return 0
  read -r pid ticks <"$state/pids/$name"
  now=$(start_ticks "$pid" 2>/dev/null || true)
  if [ -n "$now" ] && [ "$now" != "$ticks" ]; then
    say "twin: PID $pid is no longer $name: left alone" >&2
    rm -f "$state/pids/$name"; return 0
  fi
  if [ -n "$now" ]; then kill "-$signal" "$pid" 2>/dev/null || true
  else kill "-$signal" -- "-$pid" 2>/dev/null || true; fi
  deadline=$((SECONDS + grace))
  while group_alive "$pid" && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.1; done
  if group_alive "$pid"; then
    say "twin: $name did not stop within ${grace}s of SIG$signal: SIGKILL" >&2
    kill -KILL -- "-$pid" 2>/dev/null || true
    deadline=$((SECONDS + 5))
    while group_alive "$pid" && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.1; done
  fi
  if group_alive "$pid"; then
    say "twin: process group $pid ($name) is still alive" >&2; return 1
  fi
  rm -f "$state/pids/$name"
}

# --- what `up` makes, recorded line by line so that teardown undoes exactly that ---

record() { echo "$2" >>"$state/$1"; }
recorded() { [ -f "$state/$1" ] && cat "$state/$1"; true; }

teardown() {
  local failed=0 ns user dir deadline i
  # The reverse of the start order: nothing watches or calls a process already gone. sshd's
  # SIGTERM stops its listener; each connection is a session of its own, and ends with its client.
  for i in 3 2 1; do stop_process "sshd-gun$i" TERM 5 || failed=1; done
  stop_process probe TERM 5 || failed=1
  stop_process target TERM 10 || failed=1
  stop_process toxiproxy TERM 5 || failed=1
  stop_process postgres INT 15 || failed=1 # SIGINT: PostgreSQL's fast shutdown
  deadline=$((SECONDS + 3)) # an ssh session's server ends a moment after its client
  for ns in $(recorded namespaces | tac); do
    while [ -n "$(ip netns pids "$ns" 2>/dev/null)" ] && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.1; done
    # Deleting a namespace deletes its veths and bridges; a process still inside would keep
    # it alive unnamed, so say so rather than leave it unseen.
    if [ -n "$(ip netns pids "$ns" 2>/dev/null)" ]; then
      say "twin: processes left in $ns (not started by this script): $(ip netns pids "$ns" | tr '\n' ' ')" >&2
      failed=1
    fi
    ip netns del "$ns" 2>/dev/null || { ip netns list | grep -qw "^$ns" && failed=1; }
  done
  for user in $(recorded users); do
    userdel "$user" 2>/dev/null || { say "twin: could not remove user $user" >&2; failed=1; }
  done
  for dir in $(recorded dirs | tac); do
    if ! rmdir "$dir" 2>/dev/null && [ -d "$dir" ]; then say "twin: could not remove $dir" >&2; failed=1; fi
  done
  rm -rf "$state"
  return "$failed"
}

# --- up ---

ensure_toxiproxy() {
  if command -v toxiproxy-server >/dev/null; then command -v toxiproxy-server; return; fi
  command -v go >/dev/null || die "toxiproxy-server is missing, and go to build it: install Go"
  local gobin
  gobin=$(mktemp -d)
  say "installing toxiproxy-server (go install github.com/Shopify/toxiproxy/v2/cmd/server@$toxiproxy_version)" >&2
  GOBIN=$gobin GOFLAGS=-mod=mod timeout 600 go install "github.com/Shopify/toxiproxy/v2/cmd/server@$toxiproxy_version" >&2 \
    || { rm -rf "$gobin"; die "go install of Toxiproxy failed"; }
  install -m 0755 "$gobin/server" /usr/local/bin/toxiproxy-server
  rm -rf "$gobin"
  echo /usr/local/bin/toxiproxy-server
}

ensure_user() { # a system user with no home and no shell, removed again by down if made here
  id "$1" >/dev/null 2>&1 && return
  useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$1"
  record users "$1"
}

make_ns() {
  ip netns add "$1"
  record namespaces "$1"
  ip -n "$1" link set lo up
  # No namespace routes for another: a gun reaches the database only on its store link. IPv4
  # only, so that no link-local IPv6 address offers a way the plan does not show.
  ip netns exec "$1" sysctl -qw net.ipv4.ip_forward=0 net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
}

# A veth pair made directly in its two namespaces, so that neither end ever exists on the host.
link() { # link NS_A IF_A ADDR_A NS_B IF_B [ADDR_B | master BRIDGE]
  ip link add "$2" netns "$1" type veth peer name "$5" netns "$4"
  ip -n "$1" addr add "$3" dev "$2"
  ip -n "$1" link set "$2" up
  if [ "$6" = master ]; then
    ip -n "$4" link set "$5" master "$7"
  else
    ip -n "$4" addr add "$6" dev "$5"
  fi
  ip -n "$4" link set "$5" up
}

bridge() { # bridge NS NAME ADDR
  ip -n "$1" link add "$2" type bridge
  ip -n "$1" addr add "$3" dev "$2"
  ip -n "$1" link set "$2" up
}

tcp_open() { # tcp_open NS HOST PORT: something accepts connections there
  ip netns exec "$1" timeout 2 bash -c "exec 3<>/dev/tcp/$2/$3" 2>/dev/null
}

pg_admin() { # psql as the superuser over the cluster's socket; within $pg_timeout s if set
  ${pg_timeout:+timeout "$pg_timeout"} runuser -u postgres -- \
    psql -X -q -v ON_ERROR_STOP=1 -h "$state/pg/socket" -U postgres "$@"
}

start_postgres() {
  local initdb postgres pgdata=$state/pg/data pg_timeout=30
  initdb=$(pg_bin initdb); postgres=$(pg_bin postgres)
  id postgres >/dev/null 2>&1 || die "no postgres user: apt-get install postgresql"
  install -d -m 0700 -o postgres -g postgres "$state/pg" "$state/pg/socket"
  timeout 60 runuser -u postgres -- "$initdb" -D "$pgdata" -U postgres -A reject -E UTF8 --no-sync >"$state/logs/initdb.log" 2>&1 \
    || { cat "$state/logs/initdb.log" >&2; die "initdb failed"; }
  # Trust, but only where each client is: the API host's link for the targets' database, the
  # guns' store link for the runs' store, the socket for the superuser. Nothing else is reached.
  cat >"$pgdata/pg_hba.conf" <<EOF
local all           postgres                peer
host  showdown      showdown $db_link_api/32    trust
host  showdown_runs runs     $store_net.0/24 trust
EOF
  cat >>"$pgdata/postgresql.conf" <<EOF
listen_addresses = '$db_link_db,$store_addr'
unix_socket_directories = '$state/pg/socket'
max_connections = 300
logging_collector = off
EOF
  start_process postgres sd-db setpriv --reuid=postgres --regid=postgres --init-groups "$postgres" -D "$pgdata"
  wait_for "PostgreSQL in sd-db" 30 --alive postgres "$(pg_bin pg_isready)" -q -h "$state/pg/socket" -t 1
  pg_admin -d postgres <<'EOF'
CREATE ROLE showdown LOGIN;
CREATE ROLE runs LOGIN;
CREATE DATABASE showdown OWNER showdown;
CREATE DATABASE showdown_runs OWNER runs;
EOF
  # As the targets' role, so that it owns the table it inserts into.
  PGOPTIONS="-c role=showdown" pg_admin -d showdown -f "$root/targets/schema.sql" >/dev/null
}

toxiproxy_api() { # toxiproxy_api METHOD PATH [JSON]
  ip netns exec sd-api curl -fsS --max-time 5 -X "$1" -H 'Content-Type: application/json' \
    ${3:+--data "$3"} "http://$proxy_api$2"
}

start_toxiproxy() { # the database's distance: Toxiproxy's latency toxic, each way
  local server=$1 delay=$2 nobody_group
  nobody_group=$(id -gn nobody)
  start_process toxiproxy sd-api setpriv --reuid=nobody --regid="$nobody_group" --clear-groups --no-new-privs \
    "$server" -host "${proxy_api%:*}" -port "${proxy_api#*:}"
  wait_for "Toxiproxy's API" 15 --alive toxiproxy toxiproxy_api GET /version
  toxiproxy_api POST /proxies \
    "{\"name\":\"sd-db\",\"listen\":\"$proxy_listen\",\"upstream\":\"$db_link_db:5432\",\"enabled\":true}" >/dev/null
  local stream
  for stream in upstream downstream; do
    toxiproxy_api POST /proxies/sd-db/toxics \
      "{\"name\":\"delay_$stream\",\"type\":\"latency\",\"stream\":\"$stream\",\"toxicity\":1.0,\"attributes\":{\"latency\":$delay,\"jitter\":0}}" >/dev/null
  done
}

target_built() {
  case "$1" in
    node | node-cluster) [ -d "$root/targets/node/node_modules" ] ;;
    go | go-goroutine) [ -x "$root/targets/go/showdown-target-go" ] ;;
    rust) [ -x "${CARGO_TARGET_DIR:-$root/target}/frame-pointers/release/showdown-target-rust" ] ;;
    *) die "no target named '$1': use node, node-cluster, go, go-goroutine or rust" ;;
  esac
}

start_target() {
  local name=$1 secret pid
  # targets/run builds a missing target, which its unprivileged user could not: build it here.
  target_built "$name" || timeout 900 "$root/targets/build" "$name"
  secret=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
  start_process target sd-api setpriv --reuid="$target_user" --regid="$target_user" --clear-groups --no-new-privs \
    env -i PATH="$PATH" HOME=/nonexistent ${CARGO_TARGET_DIR:+CARGO_TARGET_DIR=$CARGO_TARGET_DIR} \
    PORT="$target_port" HOST="$api_addr" DATABASE_URL="postgres://showdown@$proxy_listen/showdown" SECRET="$secret" \
    bash "$root/targets/run" "$name"
  wait_for "the target's ready line" 60 --alive target grep -q '^listening pid=' "$state/logs/target.log"
  pid=$(recorded_pid target)
  grep -q "^listening pid=$pid " "$state/logs/target.log" || die "the target's ready line names another PID than $pid"
  # Healthy means listening and its database answering: through Toxiproxy, from a gun.
  wait_for "the target's /healthz from sd-gun" 30 --alive target \
    ip netns exec sd-gun curl -fsS --max-time 2 "http://$api_addr:$target_port/healthz"
}

# The probe with the systemd unit's privileges and no more: as the target's user (user.conf),
# no capability unless it profiles (--probe-arg --profile: CAP_PERFMON and CAP_SYSLOG, as
# profile.conf grants, in the bounding, inheritable and ambient sets), no new privileges,
# umask 077; TLS with a generated certificate and a token, as it listens beyond loopback.
start_probe() {
  local probe
  probe=$(binary probe PROBE)
  install -d -m 0700 -o "$probe_user" -g "$probe_user" "$state/probe"
  (umask 077; head -c 32 /dev/urandom | base64 >"$state/probe/token")
  chown "$probe_user:" "$state/probe/token"
  local caps=-all arg
  for arg in "$@"; do [ "$arg" = --profile ] && caps=-all,+perfmon,+syslog; done
  start_process probe sd-api setpriv --reuid="$probe_user" --regid="$probe_user" --clear-groups \
    --inh-caps="$caps" --ambient-caps="$caps" --bounding-set="$caps" --no-new-privs \
    bash -c 'umask 077 && exec "$@"' probe "$probe" serve --port "$target_port" --interval 100ms \
    --listen "$api_addr:$probe_port" --token-file "$state/probe/token" --tls-generate "$state/probe/tls" "$@"
  wait_for "the probe on $api_addr:$probe_port" 15 --alive probe \
    tcp_open sd-api "$api_addr" "$probe_port"
  # The guns' copies: the token (root's, 0600) and the certificate, for --probe-ca.
  install -d -m 0700 "$state/gun"
  install -m 0600 "$state/probe/token" "$state/gun/probe.token"
  install -m 0644 "$state/probe/tls/probe.crt" "$state/gun/probe.crt"
}

gun_ssh_addr() { echo "$ops_net.$(($1 + 1))"; }

# The operator's way to the guns, as to the lab's gun hosts: root over OpenSSH with a key of its
# own, each gun's host key known in advance. Everything in $state/ssh; sshd in the foreground.
start_sshd() { # start_sshd GUNS
  local guns=$1 i gun addr dir=$state/ssh
  install -d -m 0700 "$dir"
  # Privilege separation's empty directory (Debian's package leaves it to systemd's unit).
  if [ ! -d /run/sshd ]; then
    install -d -m 0755 /run/sshd
    record dirs /run/sshd
  fi
  ssh-keygen -q -t ed25519 -N '' -C "showdown-twin operator" -f "$dir/id_ed25519"
  cp "$dir/id_ed25519.pub" "$dir/authorized_keys"
  chmod 0600 "$dir/authorized_keys"
  : >"$dir/known_hosts"
  : >"$dir/config"
  : >"$state/guns"
  for i in $(seq 1 "$guns"); do
    gun=$(gun_ns "$i"); addr=$(gun_ssh_addr "$i")
    ssh-keygen -q -t ed25519 -N '' -C "$gun" -f "$dir/$gun.host_key"
    # A home of its own, as each of the lab's guns has: what a runner copies to one gun's
    # $HOME is not written over by another's copy. (The working directory stays root's.)
    install -d -m 0700 "$state/home/$gun"
    echo "$addr $(cut -d' ' -f1,2 "$dir/$gun.host_key.pub")" >>"$dir/known_hosts"
    # StrictModes off: $TWIN_STATE_DIR may be anywhere (under /tmp, 1777); its ssh directory
    # is root's, 0700, made here. No AcceptEnv: a session has sshd's environment (and HOME) only.
    cat >"$dir/$gun.sshd_config" <<EOF
ListenAddress $addr
Port 22
HostKey $dir/$gun.host_key
AuthorizedKeysFile $dir/authorized_keys
AuthenticationMethods publickey
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
UsePAM no
StrictModes no
PidFile none
PrintMotd no
PrintLastLog no
MaxSessions 64
MaxStartups 64
SetEnv HOME=$state/home/$gun
Subsystem sftp /usr/lib/openssh/sftp-server
EOF
    "$sshd" -t -f "$dir/$gun.sshd_config" || die "sshd refuses $dir/$gun.sshd_config"
    # The gun by its namespace's name, or by its address (as a runner may name a lab's gun).
    cat >>"$dir/config" <<EOF
Host $gun $addr
  HostName $addr
  User root
  IdentityFile $dir/id_ed25519
  IdentitiesOnly yes
  UserKnownHostsFile $dir/known_hosts
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
  UpdateHostKeys no
  BatchMode yes
  ConnectTimeout 5
EOF
    echo "$gun" >>"$state/guns"
    start_process "sshd-gun$i" "$gun" "$sshd" -D -e -f "$dir/$gun.sshd_config"
  done
  for i in $(seq 1 "$guns"); do
    gun=$(gun_ns "$i")
    wait_for "ssh from sd-op to $gun" 15 --alive "sshd-gun$i" \
      ip netns exec sd-op ssh -F "$dir/config" "$gun" true
  done
}

write_env() { # the environment of every gun: the same for all but the gun's own name
  local fingerprint
  # The fingerprint the probe printed, computed again from its certificate.
  fingerprint=$(openssl x509 -in "$state/gun/probe.crt" -noout -fingerprint -sha256 | sed 's/^.*=//')
  grep -q "$fingerprint" "$state/logs/probe.log" || die "the probe's certificate is not the one it printed"
  cat >"$state/env" <<EOF
TWIN_TARGET=$1
TWIN_TARGET_URL=http://$api_addr:$target_port
TWIN_TARGET_PID=$(recorded_pid target)
TWIN_PROBE=$api_addr:$probe_port
TWIN_PROBE_TOKEN_FILE=$state/gun/probe.token
TWIN_PROBE_FINGERPRINT=$fingerprint
TWIN_PROBE_CA=$state/gun/probe.crt
TWIN_DB_DELAY_MS=$2
TWIN_GUNS=$3
SHOWDOWN_DB=postgres://runs@$store_addr/showdown_runs
TWIN_SSH_CONFIG=$state/ssh/config
TWIN_GUNS_FILE=$state/guns
EOF
}

up_exit() { # a failed or interrupted up leaves nothing behind
  local status=$?
  if [ ! -f "$state/up" ]; then
    say "twin: up failed; removing what it made" >&2
    teardown || true
  fi
  exit "$status"
}

cmd_up() {
  local guns=1 target=go delay=1 probe_args=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --guns) guns=${2:-}; shift 2 ;;
      --target) target=${2:-}; shift 2 ;;
      --db-delay) delay=${2:-}; shift 2 ;;
      --probe-arg) probe_args+=("${2:-}"); shift 2 ;; # more `probe serve` flags, e.g. --slow-budget=5
      *) usage ;;
    esac
  done
  case "$guns" in 1 | 2 | 3) ;; *) die "--guns must be 1, 2 or 3" ;; esac
  [[ "$delay" =~ ^[0-9]+$ ]] || die "--db-delay is whole milliseconds (Toxiproxy's latency toxic), each way"
  target_built "$target" || true # checks the name now; builds later
  if [ -f "$state/up" ]; then
    die "the twin is already up (since $(cat "$state/up")): scripts/twin.sh status, or down first"
  fi

  # Everything needed, before anything is made.
  local tool toxiproxy ns
  for tool in ip setpriv setsid runuser curl openssl useradd; do
    command -v "$tool" >/dev/null || die "$tool is missing"
  done
  for tool in "$sshd" ssh ssh-keygen; do
    command -v "$tool" >/dev/null || die "$tool is missing: apt-get install openssh-server openssh-client"
  done
  binary loadgen LOADGEN >/dev/null
  binary probe PROBE >/dev/null
  pg_bin initdb >/dev/null
  toxiproxy=$(ensure_toxiproxy)
  for ns in sd-gun sd-gun2 sd-gun3 sd-api sd-db sd-op; do
    if ip netns list | grep -qw "^$ns"; then
      die "namespace $ns exists already: another twin is coming up, or one was left behind (scripts/twin.sh down, or ip netns del $ns)"
    fi
  done
  mkdir -m 0755 "$state" 2>/dev/null \
    || die "$state exists: another twin is coming up, or a crashed one left it (scripts/twin.sh down)"
  trap up_exit EXIT
  trap 'exit 130' INT TERM
  mkdir -m 0700 "$state/pids"
  mkdir -m 0755 "$state/logs"
  started=$SECONDS

  ensure_user "$target_user"
  # The target and the probe run from this checkout as users of their own: a checkout under a
  # private home (/root) cannot serve them.
  setpriv --reuid="$target_user" --regid="$target_user" --clear-groups test -r "$root/targets/run" \
    || die "$target_user cannot read $root/targets: put the checkout where other users can read it (e.g. /opt/showdown)"
  setpriv --reuid="$probe_user" --regid="$probe_user" --clear-groups test -x "$(binary probe PROBE)" \
    || die "$probe_user cannot run $(binary probe PROBE): put it where other users can (e.g. /usr/local/bin, and set PROBE)"

  local i gun
  for ns in sd-api sd-db sd-op; do make_ns "$ns"; done
  bridge sd-api sd-br-guns "$api_addr/24"
  bridge sd-db sd-br-store "$store_addr/24"
  bridge sd-op sd-br-ops "$ops_addr/24"
  link sd-api sd-to-db "$db_link_api/30" sd-db sd-to-api "$db_link_db/30"
  link sd-op sd-to-api "$front_net.$op_host/24" sd-api sd-to-op master sd-br-guns
  link sd-op sd-to-store "$store_net.$op_host/24" sd-db sd-to-op master sd-br-store
  for i in $(seq 1 "$guns"); do
    gun=$(gun_ns "$i")
    make_ns "$gun"
    link "$gun" sd-to-api "$front_net.$((i + 1))/24" sd-api "sd-to-${gun#sd-}" master sd-br-guns
    link "$gun" sd-to-store "$store_net.$((i + 1))/24" sd-db "sd-to-${gun#sd-}" master sd-br-store
    link "$gun" sd-to-ops "$(gun_ssh_addr "$i")/24" sd-op "sd-to-${gun#sd-}" master sd-br-ops
  done

  start_postgres
  start_toxiproxy "$toxiproxy" "$delay"
  start_target "$target"
  start_probe "${probe_args[@]}"
  start_sshd "$guns"
  write_env "$target" "$delay" "$guns"
  date -u +%Y-%m-%dT%H:%M:%SZ >"$state/up"

  say "The twin is up in $((SECONDS - started))s: $guns gun(s), target $target, the database $delay ms away each way (Toxiproxy)."
  say ""
  say "  target  $api_addr:$target_port in sd-api, as $target_user (PID $(recorded_pid target))"
  say "  probe   $api_addr:$probe_port in sd-api, as $probe_user, TLS $(sed -n 's/^TWIN_PROBE_FINGERPRINT=//p' "$state/env")"
  say "  store   $(sed -n 's/^SHOWDOWN_DB=//p' "$state/env") (SHOWDOWN_DB in the guns and sd-op)"
  say "  ssh     root@$(gun_ssh_addr 1)…$(gun_ssh_addr "$guns") from sd-op: ssh -F $state/ssh/config $(paste -sd' ' "$state/guns")"
  say ""
  say "Attack from a gun (the variables are the guns' environment; eval them to use them here):"
  say "  eval \"\$(scripts/twin.sh env)\""
  say "  scripts/twin.sh run -- attack --rate 300 --duration 10s --probe \"\$TWIN_PROBE\" \\"
  say "    --probe-token-file \"\$TWIN_PROBE_TOKEN_FILE\" --probe-fingerprint \"\$TWIN_PROBE_FINGERPRINT\" \\"
  say "    -m POST --body '{\"email\":\"u{{seq}}@example.com\",\"password\":\"{{hex:40}}\"}' \"\$TWIN_TARGET_URL/users\""
  say "  scripts/twin.sh run -- runs list"
  say ""
  say "Drive the guns from the operator's machine, sd-op (TWIN_SSH_CONFIG, TWIN_GUNS_FILE):"
  say "  scripts/twin.sh op-exec -- ssh -F $state/ssh/config $(gun_ns "$guns") hostname -I"
  say "  scripts/twin.sh op -- experiment run …"
  say "  scripts/twin.sh down"
}

# --- the other commands ---

need_up() { [ -f "$state/up" ] || die "the twin is not up: scripts/twin.sh up"; }

gun_arg() { # parses [--gun N] --, leaving the rest in REST
  gun=1
  while [ $# -gt 0 ]; do
    case "$1" in
      --gun) gun=${2:-}; shift 2 ;;
      --) shift; break ;;
      *) break ;;
    esac
  done
  local guns
  guns=$(sed -n 's/^TWIN_GUNS=//p' "$state/env")
  if ! [[ "$gun" =~ ^[0-9]+$ ]] || [ "$gun" -lt 1 ] || [ "$gun" -gt "$guns" ]; then
    die "--gun must be 1..$guns (scripts/twin.sh up --guns 2 for two)"
  fi
  rest=("$@")
}

gun_env() { # the environment file's lines, and the gun's own
  cat "$state/env"
  echo "TWIN_GUN=$(gun_ns "$1")"
  echo "TWIN_SHARD=$(($1 - 1))/$(sed -n 's/^TWIN_GUNS=//p' "$state/env")"
}

cmd_exec() {
  need_up
  local gun rest=()
  gun_arg "$@"
  [ ${#rest[@]} -gt 0 ] || usage
  local vars=()
  mapfile -t vars < <(gun_env "$gun")
  exec ip netns exec "$(gun_ns "$gun")" env "${vars[@]}" "${rest[@]}"
}

cmd_run() {
  need_up
  local gun rest=()
  gun_arg "$@"
  local loadgen
  loadgen=$(binary loadgen LOADGEN)
  cmd_exec --gun "$gun" -- "$loadgen" "${rest[@]}"
}

cmd_env() {
  need_up
  local gun rest=() line
  gun_arg "$@"
  while IFS= read -r line; do printf 'export %s=%q\n' "${line%%=*}" "${line#*=}"; done < <(gun_env "$gun")
}

op_rest() { # parses [--] CMD…, leaving it in REST
  [ "${1:-}" != -- ] || shift
  [ $# -gt 0 ] || usage
  rest=("$@")
}

op_env() { # the environment file's lines, and the operator's own
  cat "$state/env"
  echo "TWIN_STATE_DIR=$state"
}

cmd_op_exec() {
  need_up
  local rest=() vars=()
  op_rest "$@"
  mapfile -t vars < <(op_env)
  exec ip netns exec sd-op env "${vars[@]}" "${rest[@]}"
}

cmd_op() {
  need_up
  local rest=() loadgen
  op_rest "$@"
  loadgen=$(binary loadgen LOADGEN)
  cmd_op_exec -- "$loadgen" "${rest[@]}"
}

cmd_psql() {
  need_up
  pg_admin -d showdown "$@"
}

cmd_status() {
  if [ ! -f "$state/up" ]; then
    say "The twin is down."
    [ ! -d "$state" ] || say "  but $state is there: a twin coming up, or a crashed one (scripts/twin.sh down)"
    exit 3
  fi
  say "The twin is up since $(cat "$state/up") ($state)."
  local name pid ns i sshds=()
  for i in $(seq 1 "$(sed -n 's/^TWIN_GUNS=//p' "$state/env")"); do sshds+=("sshd-gun$i"); done
  for name in postgres toxiproxy target probe "${sshds[@]}"; do
    if pid=$(recorded_pid "$name"); then
      say "  $name: PID $pid, $(ps -o user= -p "$pid") ($(tr '\0' ' ' <"/proc/$pid/cmdline" | cut -c1-100))"
    else
      say "  $name: NOT RUNNING (log: $state/logs/$name.log)"
    fi
  done
  for ns in $(recorded namespaces); do
    say "  $ns: $(ip -n "$ns" -br -4 addr show | awk '$1 != "lo" {print $1, $3}' | tr '\n' ' ')"
  done
  say "  the database's delay: $(toxiproxy_api GET /proxies/sd-db/toxics 2>/dev/null || echo 'Toxiproxy not answering')"
  sed 's/^/  /' "$state/env"
}

cmd_down() {
  if [ ! -d "$state" ]; then say "The twin is not up: nothing to do."; return; fi
  if teardown; then say "The twin is down: its namespaces, links, processes, users and $state are gone."
  else die "the twin is down, with the leftovers named above"; fi
}

[ "$(id -u)" = 0 ] || die "run as root: it makes network namespaces and runs services as users of their own"
command=${1:-}
[ $# -eq 0 ] || shift
case "$command" in
  up) cmd_up "$@" ;;
  down) cmd_down ;;
  status) cmd_status ;;
  run) cmd_run "$@" ;;
  exec) cmd_exec "$@" ;;
  env) cmd_env "$@" ;;
  op) cmd_op "$@" ;;
  op-exec) cmd_op_exec "$@" ;;
  psql) cmd_psql "$@" ;;
  *) usage ;;
esac
