#!/usr/bin/env bash
# Installs the official ACP TypeScript SDK (@agentclientprotocol/sdk) from the
# npm registry into a cache directory, for the opt-in test that drives e acp
# with it (internal/acp, TestTypeScriptSDK).
#
#   scripts/acp-sdk-setup.sh        # into ${E_TEST_CACHE:-$HOME/.cache/e-test}/acp-sdk-2.4.0
#
# Afterwards DIR/node_modules/@agentclientprotocol/sdk holds the SDK; Node 18+
# must be on PATH.
set -euo pipefail
SDK_VERSION=2.4.0
dir="${E_TEST_CACHE:-$HOME/.cache/e-test}/acp-sdk-$SDK_VERSION"
if [ -f "$dir/node_modules/@agentclientprotocol/sdk/package.json" ]; then
	echo "$dir"
	exit 0
fi
mkdir -p "$dir"
(cd "$dir" && npm install --loglevel=error --no-audit --no-fund --prefix . "@agentclientprotocol/sdk@$SDK_VERSION" >&2)
echo "$dir"
