#!/usr/bin/env bash
# Docker HEALTHCHECK of a box: every screen's X display must answer a real request (not just
# have a socket file), and the agent must answer GET /health with 200.
set -uo pipefail

screens=${HOLM_SCREENS:-1}
for ((n = 0; n < screens; n++)); do
  d=$((99 + n))
  if ! timeout 2 xdpyinfo -display ":$d" >/dev/null 2>&1; then
    echo "screen $n: X display :$d does not answer"
    exit 1
  fi
done

# bash's /dev/tcp keeps curl out of the image.
status=$(timeout 2 bash -c '
  exec 3<>/dev/tcp/127.0.0.1/7070 || exit 1
  printf "GET /health HTTP/1.0\r\nHost: localhost\r\nConnection: close\r\n\r\n" >&3
  IFS=" " read -r _ code _ <&3
  printf %s "$code"
' 2>/dev/null)
if [[ $status != 200 ]]; then
  echo "agent: GET /health answered '${status:-nothing}'"
  exit 1
fi
echo "ok: $screens screen(s), agent healthy"
