#!/usr/bin/env bash
# The Debian packages Kandev runs on, beside Python and Node.js: bubblewrap and socat confine
# every agent (sessions_app/agent/sandbox.py), git serves the agents' workspaces. Installs what
# is missing when run as root (make install, .ci/run, the Dockerfile); otherwise names the
# command to run and fails, so nothing starts an agent unconfined by accident.
set -euo pipefail

declare -A needed=([bwrap]=bubblewrap [socat]=socat [git]=git)
missing=()
for tool in "${!needed[@]}"; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("${needed[$tool]}")
done
[ "${#missing[@]}" -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "Missing system packages: ${missing[*]}" >&2
  echo "Install them with: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "Installing system packages: ${missing[*]}"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
