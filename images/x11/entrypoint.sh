#!/usr/bin/env bash
# PID 1 of a box. Starts, for every screen n, Xvfb on :$((99+n)), fluxbox, x11vnc on 5900+n
# (VNC authentication with the password the server put in /etc/holm/vnc.passwd) and Chromium with
# CDP on 127.0.0.1:9222+n only (the agent relays it to the server, signed); then the agent.
# Screens start side by side, one stage at a time, so N screens take about as long as one.
# Every long-lived process is a direct child so that `wait -n` sees it die: the box then stops
# with a non-zero status instead of living on half broken; only a browser that quit is started
# again (restart_browser).
# The contract (env, ports, displays) is images/README.md.
set -uo pipefail

# Secrets come as files (/etc/holm, written by the server while the box boots), never in the
# environment, which every process here and every `docker exec` would inherit. A variable passed
# anyway is dropped so no child gets it.
unset HOLM_AGENT_SECRET HOLM_VNC_PASSWORD
readonly vnc_passwd=/etc/holm/vnc.passwd

readonly t0=${EPOCHREALTIME/./}
# How long each in-box wait may take (seconds); below the server's ready timeout (90 s).
readonly part_wait_s=${HOLM_PART_WAIT_S:-75}

log() {
  local now=$EPOCHREALTIME
  local us=${now/./} frac=${now#*.}
  printf '%(%Y-%m-%dT%H:%M:%S)T.%s +%d.%03ds holm: %s\n' "${now%.*}" "${frac:0:3}" \
    $(((us - t0) / 1000000)) $((((us - t0) / 1000) % 1000)) "$*"
}

die() {
  log "fatal: $*"
  shutdown
  exit 1
}

# The box's exit status says what ended it (images/README.md): the server reads it from the engine
# and words its reason from it, so nothing a process in the box prints becomes the server's words.
# 0 TERM; 1 fatal (a check, a part that did not answer in time); 10 the display server; 11 the
# window manager; 12 the VNC server; 13 Chromium; 14 the agent; 15 another part.
part_status() {
  case $1 in
    Xvfb* | sway*) status=10 ;;
    fluxbox*) status=11 ;;
    x11vnc* | wayvnc*) status=12 ;;
    chromium*) status=13 ;;
    agent) status=14 ;;
    *) status=15 ;;
  esac
}

# part_died PID [STATUS]: logs which part ended and how (and a quiet part's last words, so the
# start log of a failed box says why), stops the rest and exits with that part's status.
part_died() {
  local pid=$1 rc=${2-} status line
  if [[ -z $rc ]]; then
    wait "$pid"
    rc=$?
  fi
  restart_browser "$pid" "$rc" && return 0
  log "${part[$pid]:-pid $pid} exited with status $rc; stopping the box"
  if [[ -n ${part_log[$pid]:-} ]]; then
    tail -n 6 "${part_log[$pid]}" 2>/dev/null | while IFS= read -r line; do log "  ${part[$pid]}: ${line:0:300}"; done
  fi
  part_status "${part[$pid]:-}"
  unset "part[$pid]"
  shutdown
  exit "$status"
}

# A kiosk: a screen's Chromium that quit (status 0: its last tab or window closed by ctrl+w or a
# page's window.close(), input the server cannot refuse without refusing typing; or a TERM, which
# Chromium answers by quitting) is started again on its display and profile, on a blank tab,
# instead of stopping the box and every other screen with it (docs/decisions/0011-cdp-proxy.md).
# A crash (a signal, a non-zero status) still stops the box with status 13. A browser quit more
# than browser_restarts_max times within a minute (a page or an agent quitting it in a loop) is
# started again once the oldest of those restarts is a minute old, not at once: the loop costs
# that screen its browser for a while, never the box (stopping it then took a person's screen 0
# with it while an agent quit screen 1's browser over and over).
readonly browser_restarts_max=${HOLM_BROWSER_RESTARTS_PER_MIN:-5}
# pid -> its screen, for the browsers and for the pauses before one starts again; per screen, the
# times (s) it was started again lately.
declare -A browser_screen=() browser_pause=()
declare -a browser_restarts=()

# restart_browser PID STATUS: starts that browser again, now or after a pause (a `sleep` part,
# whose end starts it); fails for anything else, which then stops the box.
restart_browser() {
  local pid=$1 rc=$2 n now t recent=() name
  ((rc == 0 && !stopping)) || return 1
  if [[ -n ${browser_pause[$pid]:-} ]]; then
    n=${browser_pause[$pid]}
    unset "part[$pid]" "browser_pause[$pid]"
    browser_restarts[n]="${browser_restarts[n]:-} $EPOCHSECONDS"
    log "screen $n: the pause is over; starting its browser again"
    start_browser "$n"
    return 0
  fi
  [[ -n ${browser_screen[$pid]:-} ]] || return 1
  n=${browser_screen[$pid]}
  name=${part[$pid]}
  now=$EPOCHSECONDS
  for t in ${browser_restarts[n]:-}; do ((now - t < 60)) && recent+=("$t"); done
  unset "part[$pid]" "part_log[$pid]" "browser_screen[$pid]"
  browser_restarts[n]="${recent[*]}"
  if ((${#recent[@]} >= browser_restarts_max)); then
    local pause=$((60 - (now - recent[0])))
    ((pause < 1)) && pause=1
    log "$name quit (status 0); started again ${#recent[@]} times within a minute already, so again in ${pause} s"
    sleep "$pause" &
    part[$!]="chromium $n (paused)"
    browser_pause[$!]=$n
    return 0
  fi
  browser_restarts[n]="${recent[*]} $now"
  log "$name quit (status 0); starting it again (restart $((${#recent[@]} + 1)) within a minute)"
  start_browser "$n"
}

# Ends the box when a part has ended. A part that ended while this script ran another command was
# reaped then, and `wait -n` never reports it (bash forgets a finished job at its next command):
# an agent killed as the box started left it waiting on the rest until the server gave up (90 s).
# Builtins only (kill -0; /proc for sway, which root may not signal), so it is cheap in a loop.
check_parts() {
  local pid
  for pid in "${!part[@]}"; do
    kill -0 "$pid" 2>/dev/null || [[ -e /proc/$pid ]] || part_died "$pid"
  done
}

screens=${HOLM_SCREENS:-1}
# x11 (Xvfb, fluxbox, x11vnc) or wayland (headless sway, wayvnc, grim; docs/decisions/0030).
desktop=${HOLM_DESKTOP:-x11}
width=${HOLM_WIDTH:-1280}
height=${HOLM_HEIGHT:-800}
features=",${HOLM_FEATURES:-},"
has_feature() { [[ $features == *",$1,"* ]]; }

# pid -> what it is, for the log line that says which part died.
declare -A part=() part_log=()
stopping=0

spawn() {
  local name=$1
  shift
  "$@" &
  part[$!]=$name
}

# For the chatty parts (fluxbox's "Failed to read" pairs, Chromium's D-Bus errors): their output goes to /var/log/holm/FILE.log, and stdout
# keeps this script's timeline. A part that dies is still logged here.
spawn_quiet() {
  local name=$1 file=$2
  shift 2
  "$@" >>"/var/log/holm/$file.log" 2>&1 &
  part[$!]=$name
  part_log[$!]=/var/log/holm/$file.log
}

# sigpipe_ignored CMD...: runs CMD with SIGPIPE ignored (for spawn_quiet, in its own subshell).
sigpipe_ignored() {
  trap '' PIPE
  exec "$@"
}

# alive PID: whether a child still runs. Not `kill -0` alone: root here has no CAP_KILL, so it
# cannot signal sway, which runs as desk (Wayland boxes); /proc still says (a zombie has ended).
alive() {
  kill -0 "$1" 2>/dev/null && return 0
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  [[ ${stat:0:1} != Z ]]
}

# term_and_wait TIMEOUT_MS PID...: TERM, then KILL whatever is left after the timeout.
term_and_wait() {
  local timeout_ms=$1
  local deadline=$((${EPOCHREALTIME/./} + timeout_ms * 1000)) pid alive
  shift
  (($#)) || return 0
  kill -TERM "$@" 2>/dev/null
  while :; do
    alive=0
    for pid in "$@"; do alive "$pid" && alive=1 && break; done
    ((alive)) && ((${EPOCHREALTIME/./} < deadline)) || break
    sleep 0.05
  done
  if ((alive)); then
    local left=()
    for pid in "$@"; do alive "$pid" && left+=("${part[$pid]:-pid $pid}"); done
    log "still running after ${timeout_ms}ms, killing: ${left[*]}"
    kill -KILL "$@" 2>/dev/null
  fi
  return 0
}

shutdown() {
  ((stopping)) && return
  stopping=1
  # Outside in, while each part's display still exists: Chromium then flushes its profile instead
  # of crashing on a lost X connection.
  local pid browsers=() wms=() clients=() servers=()
  for pid in "${!part[@]}"; do
    case ${part[$pid]} in
      chromium*) browsers+=("$pid") ;;
      fluxbox*) wms+=("$pid") ;;
      Xvfb* | sway*) servers+=("$pid") ;;
      *) clients+=("$pid") ;;
    esac
  done
  [[ -n ${DBUS_SESSION_BUS_PID:-} ]] && clients+=("$DBUS_SESSION_BUS_PID")
  term_and_wait 3000 "${browsers[@]}"
  # fluxbox's TERM handler is not async-signal-safe: about one stop in three it deadlocks inside
  # it (seen: futex wait with TERM blocked). It has nothing to save, so it gets KILL.
  ((${#wms[@]})) && kill -KILL "${wms[@]}" 2>/dev/null
  term_and_wait 1000 "${clients[@]}"
  # sway runs as desk, out of root's reach for signals: it is asked over its socket instead.
  if [[ $desktop == wayland ]]; then
    for ((n = 0; n < screens; n++)); do swaymsg -s "/run/holm/wl-$n/sway.sock" exit >/dev/null 2>&1; done
  fi
  term_and_wait 1000 "${servers[@]}"
}

trap 'log "TERM received, stopping"; shutdown; exit 0' TERM INT

[[ $desktop == x11 || $desktop == wayland ]] || die "HOLM_DESKTOP must be x11 or wayland, got '$desktop'"
[[ $screens =~ ^[1-8]$ ]] || die "HOLM_SCREENS must be 1-8, got '$screens'"
[[ $width =~ ^[0-9]{3,5}$ && $height =~ ^[0-9]{3,5}$ ]] ||
  die "HOLM_WIDTH and HOLM_HEIGHT must be whole pixels, got '$width' x '$height'"
[[ $browser_restarts_max =~ ^[0-9]{1,3}$ ]] ||
  die "HOLM_BROWSER_RESTARTS_PER_MIN must be a whole number, got '$browser_restarts_max'"

log "starting $screens $desktop screen(s) of ${width}x${height}, features '${HOLM_FEATURES:-}'"

# wait_for WHAT TIMEOUT_S PID CMD...: polls CMD until it succeeds; fails at once when PID (the
# process that should answer) has died, so a broken start does not sit out the whole timeout.
# The timeouts are long on purpose: on a busy machine (40 boxes starting, load 50 on 2 cores) X
# and fluxbox took longer than the 10 s these once were, and the box stopped itself while the
# server would still have waited (ADR 0016). The server's ready timeout is the one that gives up.
wait_for() {
  local what=$1 timeout=$2 pid=$3
  shift 3
  local deadline=$((${EPOCHREALTIME/./} + timeout * 1000000))
  until "$@" >/dev/null 2>&1; do
    # Any part, not only the one asked: the agent has no wait of its own.
    check_parts
    alive "$pid" || part_died "$pid"
    ((${EPOCHREALTIME/./} < deadline)) || die "$what did not answer within ${timeout}s"
    sleep 0.02
  done
  log "$what answers"
}

# fluxbox copies its default init over the file given with -rc when ~/.fluxbox does not exist.
mkdir -p /root/.config/holm /root/.fluxbox /tmp/.X11-unix /var/log/holm
chmod 1777 /tmp/.X11-unix

# Wayland (docs/decisions/0030): per screen a headless sway as `desk` (sway refuses root), its
# sockets in /run/holm/wl-$n (desk's, 0700); wayvnc as root on a UNIX socket in /run/holm/vnc
# (root's, 0700), which the agent alone uses: for input, and behind its VNC front on 5900+n that
# asks for the box's password like x11vnc does. No TCP port of the box answers without it.
start_sway() {
  local n rt conf
  for ((n = 0; n < screens; n++)); do
    # Made in the image (desk's, group-shared with root: root here cannot chown); emptied of what
    # a container that was killed left.
    rt=/run/holm/wl-$n
    [[ -d $rt && -d /run/holm/vnc ]] || die "no $rt or /run/holm/vnc: this image was not built for Wayland"
    find "$rt" -mindepth 1 -delete
    conf=$rt/sway.conf
    {
      printf 'output HEADLESS-1 resolution %sx%s position 0,0 bg #3b4252 solid_color\n' "$width" "$height"
      printf 'default_border none\ndefault_floating_border none\nfocus_follows_mouse no\nfocus_on_window_activation focus\n'
      printf 'seat * hide_cursor 0\n'
      if has_feature x11_apps; then
        # sway sets DISPLAY for its children once XWayland listens: the agent reads it from here.
        # XWayland lets in only desk; the apps the agent starts run as root (xhost, which also
        # starts XWayland now rather than at the first app).
        printf 'xwayland enable\nexec printf %%s "$DISPLAY" >"$XDG_RUNTIME_DIR/x11-display"\nexec xhost +si:localuser:root\n'
      else
        printf 'xwayland disable\n'
      fi
      if has_feature dock; then
        # The dock is waybar here (tint2 is an X11 client): launchers for spec.apps, then the
        # windows. It and what its launchers start run as desk, as sway's children.
        node /opt/holm/waybar/config.cjs /usr/share/applications/holm-app-*.desktop >"$rt/waybar.json"
        printf 'exec waybar -c %s -s /opt/holm/waybar/style.css\n' "$rt/waybar.json"
      fi
    } >"$conf"
    # umask 007: sway's sockets are desk's group's too, which root is in.
    spawn_quiet "sway $n" "sway-$n" sh -c 'umask 007 && exec "$@"' sway setpriv --reuid=desk --regid=desk --init-groups \
      env HOME=/home/desk XDG_RUNTIME_DIR="$rt" SWAYSOCK="$rt/sway.sock" WLR_BACKENDS=headless \
      WLR_RENDERER=pixman WLR_LIBINPUT_NO_DEVICES=1 WLR_HEADLESS_OUTPUTS=1 sway -c "$conf"
    server_pid[n]=$!
  done
  log "sway launched"
}

wait_sway() {
  local n rt
  for ((n = 0; n < screens; n++)); do
    rt=/run/holm/wl-$n
    wait_for "sway $n" "$part_wait_s" "${server_pid[n]}" swaymsg -s "$rt/sway.sock" -t get_version
    # The agent, wayvnc and Chromium name the display wayland-1: the first name wlroots picks in
    # a runtime directory of its own.
    [[ -S $rt/wayland-1 ]] || die "sway $n made no wayland-1 socket in $rt ($(ls "$rt" | tr '\n' ' '))"
  done
  for ((n = 0; n < screens; n++)); do
    rt=/run/holm/wl-$n
    # Below the agent's input path in priority, as x11vnc is. 60 frames a second: the agent's
    # frames come from wayvnc too, and at the default 30 a frame right after a click waited for
    # the next capture (npm run bench wayland: 1.30× → 1.10× X11's click + frame).
    # SIGPIPE ignored (an ignored signal stays ignored across exec): wayvnc 0.5 writes to a
    # viewer that has hung up without MSG_NOSIGNAL, and died of it (status 141), taking the box
    # down, whenever a viewer closed in the middle of an update. Ignored, the write fails with
    # EPIPE and wayvnc drops that client.
    spawn_quiet "wayvnc $n" "wayvnc-$n" sigpipe_ignored nice -n 10 env XDG_RUNTIME_DIR="$rt" WAYLAND_DISPLAY=wayland-1 \
      wayvnc --unix-socket --render-cursor --max-fps=60 "/run/holm/vnc/wayvnc-$n.sock"
    wm_pid[n]=$!
  done
  for ((n = 0; n < screens; n++)); do
    wait_for "wayvnc $n" "$part_wait_s" "${wm_pid[n]}" test -S "/run/holm/vnc/wayvnc-$n.sock"
  done
}

declare -a server_pid=() wm_pid=()
if [[ $desktop == wayland ]]; then
  mkdir -p /root/.config/holm /var/log/holm
  start_sway
else
  for ((n = 0; n < screens; n++)); do
    d=$((99 + n))
    rm -f "/tmp/.X$d-lock" "/tmp/.X11-unix/X$d"
    # -noreset: without it X resets when its last client leaves, and a readiness probe is one.
    spawn "Xvfb :$d" Xvfb ":$d" -screen 0 "${width}x${height}x24" -nolisten tcp -noreset
    server_pid[n]=$!
  done
  log "Xvfb launched"
fi

# One session bus for every screen; children inherit its address.
eval "$(dbus-launch --sh-syntax)" || die "dbus-launch failed"
log "dbus session bus at ${DBUS_SESSION_BUS_ADDRESS:-?}"

if has_feature audio; then
  spawn pulseaudio pulseaudio --daemonize=no --exit-idle-time=-1 --log-target=stderr --log-level=error
fi

# The agent answers /health with 503 until the displays do; starting it now overlaps its Node
# start-up with X's.
spawn agent node /opt/holm/agent.mjs
log "agent launched"

if [[ $desktop == wayland ]]; then
  wait_sway
else
  for ((n = 0; n < screens; n++)); do
    wait_for "X :$((99 + n))" "$part_wait_s" "${server_pid[n]}" xdpyinfo -display ":$((99 + n))"
  done

  # No password file, no VNC: an x11vnc without one would let any process or page in the box drive
  # it. The server writes the file (8 bytes) as the box boots; it is there long before X is.
  for ((i = 0; i < part_wait_s * 50; i++)); do
    [[ -f $vnc_passwd && $(stat -c %s "$vnc_passwd") == 8 ]] && break
    check_parts
    sleep 0.02
  done
  [[ -f $vnc_passwd && $(stat -c %s "$vnc_passwd") == 8 ]] || die "no VNC password file at $vnc_passwd after $part_wait_s s"
  log "VNC password file present"

  for ((n = 0; n < screens; n++)); do
    d=$((99 + n))
    # Below the agent's input path in priority: many viewers must not slow the agent down.
    # -rfbauth: VNC authentication only (libvncserver's WebSocket upgrade on this port asks for it
    # too). Not -noremote/-novncconnect (an X client already owns the display anyway): with them,
    # one drag in three lost its motion and button release in Chromium (tests/integration/drive).
    # XDAMAGE on (x11vnc's default): told what changed, it polls the X server less while watched
    # (Xvfb 0.2-0.4 % of a core for a still screen against 1.0-1.2 % with -noxdamage) and sends
    # every small change (a 10 Hz counter: 9.9 updates/s against 6.6). Unwatched, it costs the same.
    spawn "x11vnc :$d" nice -n 10 x11vnc -display ":$d" -rfbport $((5900 + n)) -rfbauth "$vnc_passwd" -forever -shared \
      -quiet
    dir=/root/.config/holm/fluxbox-$n
    mkdir -p "$dir"
    for f in /opt/holm/fluxbox/*; do
      sed -e "s|@DIR@|$dir|g" -e "s|@SCREEN@|$n|g" "$f" >"$dir/${f##*/}"
    done
    spawn_quiet "fluxbox :$d" "fluxbox-$n" env DISPLAY=":$d" fluxbox -rc "$dir/init"
    wm_pid[n]=$!
  done
  log "x11vnc and fluxbox launched"

  # Chromium started before the window manager draws its own frame, and the page moves by ~20 px
  # between runs: wait until fluxbox owns each display.
  for ((n = 0; n < screens; n++)); do
    wait_for "fluxbox :$((99 + n))" "$part_wait_s" "${wm_pid[n]}" env DISPLAY=":$((99 + n))" wmctrl -m
  done

fi

chromium_flags=(
  --no-sandbox
  --test-type # hides the --no-sandbox warning bar, which would push the page down
  --disable-gpu
  --disable-dev-shm-usage
  --no-first-run
  --no-default-browser-check
  --hide-crash-restore-bubble
  --password-store=basic
  --disable-background-networking
  --disable-component-update
  --disable-sync
  --start-maximized
  # Density (ADR 0016). The omnibox popup is a WebUI page in a renderer of its own that kept
  # working while hidden (0.47 % of a core, 22 MiB of an idle box, measured here): the native
  # popup shows the same suggestions. The spare renderer is a process kept warm for the next
  # site (7 MiB); a navigation starts one when it needs it.
  --disable-features=WebUIOmniboxPopup,WebUIOmniboxAimPopup,WebUIOmniboxFullPopup,SpareRendererForSitePerProcess
  --disable-breakpad
)
chromium_env=()
if has_feature accessibility && { [[ $desktop != wayland ]] || has_feature x11_apps; }; then
  # Qt apps find the accessibility bus through the root window's AT_SPI_BUS: in these boxes their
  # session-bus path fails ("Not connected to D-Bus server") and they never register. GTK and
  # Chromium ask the session bus. In the background (and not this shell's child, whose exit would
  # stop the box): activating the bus takes a moment. On Wayland the X11 apps' root is XWayland's,
  # once sway has written its name and let root in (both a moment after sway starts).
  ( (
    a11y=$(dbus-send --session --print-reply --dest=org.a11y.Bus /org/a11y/bus org.a11y.Bus.GetAddress 2>/dev/null |
      sed -n 's/.*string "\(.*\)"/\1/p')
    [[ -n $a11y ]] || exit 0
    for ((n = 0; n < screens; n++)); do
      if [[ $desktop == wayland ]]; then
        for ((try = 0; try < 100; try++)); do
          xdisplay=$(cat "/run/holm/wl-$n/x11-display" 2>/dev/null) &&
            xprop -display "$xdisplay" -root -f AT_SPI_BUS 8s -set AT_SPI_BUS "$a11y" 2>/dev/null && break
          sleep 0.2
        done
      else
        xprop -display ":$((99 + n))" -root -f AT_SPI_BUS 8s -set AT_SPI_BUS "$a11y"
      fi
    done
  ) & )
fi
if has_feature accessibility; then
  # Chromium joins the AT-SPI bus only when told to: without ACCESSIBILITY_ENABLED it never
  # registers, and the flag builds the page's tree before any client asks for it.
  chromium_env+=(ACCESSIBILITY_ENABLED=1)
  chromium_flags+=(--force-renderer-accessibility)
fi

# The dock: with spec.apps, a launcher per app (its desktop entry, made at image build) before the
# taskbar; without, the taskbar alone.
tint2rc=/opt/holm/tint2/tint2rc
apps=(/usr/share/applications/holm-app-*.desktop)
if has_feature dock && [[ -e ${apps[0]} ]]; then
  tint2rc=/tmp/holm-tint2rc
  {
    sed 's/^panel_items = T$/panel_items = LT/' /opt/holm/tint2/tint2rc
    printf '\n# launchers (spec.apps)\nlauncher_padding = 4 2 4\nlauncher_background_id = 0\nlauncher_icon_size = 22\nlauncher_tooltip = 1\n'
    for f in "${apps[@]}"; do printf 'launcher_item_app = %s\n' "$f"; done
  } >"$tint2rc"
fi

# start_browser N: screen N's Chromium, at the box's start and again when it quits (restart_browser).
start_browser() {
  local n=$1 d=$((99 + $1)) profile=/root/.config/holm/chromium-$1
  # Left behind by a container that was killed; Chromium would take them for a running twin.
  rm -f "$profile"/Singleton{Lock,Socket,Cookie}
  if [[ $desktop == wayland ]]; then
    # No smooth scrolling: on headless sway Chromium's scroll animation stalled half-way for
    # over 300 ms (285 of 900 px), so a frame taken after a scroll showed a page mid-way.
    spawn_quiet "chromium $n" "chromium-$n" env XDG_RUNTIME_DIR="/run/holm/wl-$n" WAYLAND_DISPLAY=wayland-1 \
      "${chromium_env[@]}" chromium --ozone-platform=wayland --disable-smooth-scrolling "${chromium_flags[@]}" \
      "--user-data-dir=$profile" "--remote-debugging-port=$((9222 + n))" about:blank
  else
    spawn_quiet "chromium :$d" "chromium-$n" env DISPLAY=":$d" "${chromium_env[@]}" chromium "${chromium_flags[@]}" \
      "--user-data-dir=$profile" "--remote-debugging-port=$((9222 + n))" about:blank
  fi
  browser_screen[$!]=$n
}

for ((n = 0; n < screens; n++)); do
  d=$((99 + n))
  if has_feature dock && [[ $desktop != wayland ]]; then
    spawn_quiet "tint2 :$d" "tint2-$n" env DISPLAY=":$d" tint2 -c "$tint2rc"
  fi
  mkdir -p "/root/.config/holm/chromium-$n"
  start_browser "$n"
done
log "chromium launched"

while :; do
  check_parts
  dead=
  wait -n -p dead
  rc=$?
  if [[ -z $dead ]]; then
    # A trapped signal also ends `wait`, but its trap exits; so this is "no children left".
    ((${#part[@]})) || die "no part of the box is left running"
    continue
  fi
  part_died "$dead" "$rc"
done
