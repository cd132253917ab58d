#!/bin/sh
# Makes /tmp/node18/node: Debian bookworm's Node 18 (the one boxes run), unpacked from its .deb
# files without installing it over the host's Node. Debian's build loads some builtins from
# /usr/share/nodejs, which is bind-mounted in a private mount namespace (needs root).
#   sh tests/agent/node18.sh && HOLM_AGENT_NODE=/tmp/node18/node npx vitest run --config vitest.agent.config.ts
set -eu
D=/tmp/node18
[ -x "$D/node" ] && "$D/node" -e 'process.exit(process.versions.node.startsWith("18.") ? 0 : 1)' && exit 0
mkdir -p "$D" && cd "$D"
apt-get download nodejs libnode108 libc-ares2 libuv1 node-acorn node-cjs-module-lexer node-undici >/dev/null
for f in *.deb; do dpkg -x "$f" root; done
cat > node <<'SH'
#!/bin/sh
R=/tmp/node18/root
exec unshare -m sh -c 'mkdir -p /usr/share/nodejs && mount --bind '"$R"'/usr/share/nodejs /usr/share/nodejs && LD_LIBRARY_PATH='"$R"'/usr/lib/x86_64-linux-gnu exec '"$R"'/usr/bin/node "$@"' node18 "$@"
SH
chmod +x node
./node --version
