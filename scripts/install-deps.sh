#!/usr/bin/env bash
# Installs everything stallscope needs on a fresh Debian machine: peer tools used as test
# oracles and by the capture agents (apt), then the package itself with its test extras
# (pip, which also builds the Rust core through setuptools-rust). Idempotent: apt runs only for a
# missing tool.
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
# chromium and chromedriver (Debian's): the report's browser test drives them headless (no browser download).
for tool in tshark:tshark tcptrace:tcptrace tcpdump:tcpdump ethtool:ethtool iperf3:iperf3 ip:iproute2 \
            chromium:chromium chromedriver:chromium-driver; do
  command -v "${tool%%:*}" >/dev/null 2>&1 || need+=("${tool##*:}")
done
if [ ${#need[@]} -gt 0 ] && [ "$(id -u)" = 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${need[@]}" >/dev/null
fi
command -v cargo >/dev/null 2>&1 || { echo "cargo (Rust) is required to build the native decoder" >&2; exit 1; }
python3 -m pip install -q --disable-pip-version-check -e ".[test]"
