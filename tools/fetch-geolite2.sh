#!/usr/bin/env bash
# Fetches GeoLite2-City.mmdb (2018 data) out of the PyPI package maxminddb-geolite2, for the geo
# compile benchmark: .build/geo/GeoLite2-City.mmdb. Keep it out of git (it is under .build/):
# GeoLite2 data is MaxMind's, under its own licence (CC BY-SA 4.0 for this 2018 release).
set -euo pipefail
cd "$(dirname "$0")/.."
out=.build/geo/GeoLite2-City.mmdb
[ -s "$out" ] && { echo "$out"; exit 0; }
mkdir -p .build/geo
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pip download --quiet --no-deps --no-binary :all: maxminddb-geolite2==2018.703 -d "$tmp"
tar -xzf "$tmp"/maxminddb-geolite2-*.tar.gz -C "$tmp"
find "$tmp" -name GeoLite2-City.mmdb -exec cp {} "$out" \;
[ -s "$out" ] || { echo "fetch-geolite2: no GeoLite2-City.mmdb in the package" >&2; exit 1; }
echo "$out"
