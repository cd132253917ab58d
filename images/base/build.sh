#!/usr/bin/env bash
# Builds the Debian bookworm base of every box image: no registry can be pulled from here, so
# the root filesystem comes from debootstrap and reaches Docker through `docker import`.
#
#   images/base/build.sh TAG        (as root; the builder passes holm-base:<hash of images/base>)
set -euo pipefail

tag=${1:?usage: build.sh TAG}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
docker=/usr/bin/docker   # /usr/local/bin/docker on some hosts is a client that cannot import
mirror=http://deb.debian.org/debian

log() { printf '[base %(%H:%M:%S)T] %s\n' -1 "$*"; }

[[ $(id -u) == 0 ]] || { echo "build.sh: debootstrap needs root" >&2; exit 1; }

root=$(mktemp -d /var/tmp/holm-base.XXXXXX)
cleanup() { rm -rf --one-file-system "$root"; }
trap cleanup EXIT

log "debootstrap --variant=minbase bookworm into $root"
debootstrap --variant=minbase bookworm "$root" "$mirror"

log "apt sources, apt and dpkg settings"
cp -a "$here/rootfs/." "$root/"
rm -f "$root/etc/apt/sources.list.d/"*

log "slimming (docs, manuals, translations) and cleaning apt caches"
find "$root/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
find "$root/usr/share/doc" -mindepth 1 -type d -empty -delete
rm -rf "$root"/usr/share/{man,info,groff,linda,locale}/* "$root/usr/share/lintian/overrides/"*
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/cache/apt/archives/partial/* \
  "$root"/var/cache/apt/*.bin "$root"/var/lib/apt/lists/* "$root"/var/log/*.log \
  "$root"/var/log/apt/* "$root"/tmp/* "$root"/var/tmp/*
mkdir -p "$root/var/lib/apt/lists/partial"
# Docker mounts its own at run time; the build host's values must not leak into the image.
: >"$root/etc/resolv.conf"
: >"$root/etc/hostname"

log "docker import $tag"
tar --numeric-owner --xattrs -C "$root" -c . |
  "$docker" import -c 'ENV LANG=C.UTF-8' -c 'CMD ["bash"]' -m "holm base (debootstrap minbase bookworm)" - "$tag"
log "done: $tag"
