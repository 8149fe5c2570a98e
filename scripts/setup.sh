#!/usr/bin/env bash
# Installs what durable needs to build and test on Debian 12; does nothing when all is present.
set -euo pipefail

packages=(g++ cmake make pkg-config libpqxx-dev libfmt-dev libspdlog-dev nlohmann-json3-dev catch2
          libhowardhinnant-date-dev tzdata postgresql libcpp-httplib-dev libcli11-dev clang-format clang-tidy
          chromium chromium-driver libsodium-dev libssl-dev openssl faketime pgbouncer)

missing=()
for pkg in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$pkg")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "setup: all dependencies present"
  exit 0
fi

sudo=()
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo=(sudo)
  else
    echo "setup: missing ${missing[*]}; run this script as root or install sudo" >&2
    exit 1
  fi
fi

# Installing postgresql may also start Debian's own cluster service; durable's tests never use it.
"${sudo[@]}" apt-get update
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
echo "setup: installed ${missing[*]}"
