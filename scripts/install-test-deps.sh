#!/usr/bin/env bash
# Installs the Debian packages the system and image test suites need (root, Debian 12).
# Idempotent and quick when everything is present: apt runs only if a listed package is missing.
# --no-install-recommends matters: Vagrant's recommends pull in libvirt and make it the default provider.
#
# To add packages for another suite, append them to the list below with a comment naming the suite.
set -euo pipefail

PACKAGES=(
    # system suite: Vagrant with the lxc provider on a locally built box
    vagrant
    vagrant-lxc
    lxc
    debootstrap
    openssh-client
    iproute2
    iptables
    rsync
    sudo
    # provisioning (tests/deploys, tests/system/test_provision.py): stand-in Kubernetes packages in a
    # signed apt repository: dpkg-scanpackages (dpkg-dev), gpg (gnupg)
    dpkg-dev
    gnupg
    # image suite (deploy-scheduler): build with buildah, import and run with a private containerd
    buildah
    containerd
    runc
)

if [ "$(id -u)" -ne 0 ]; then
    echo "error: $0 installs Debian packages and must run as root (try: sudo $0)" >&2
    exit 2
fi
if ! command -v apt-get >/dev/null; then
    echo "error: $0 needs apt-get (Debian or Ubuntu); install these by hand: ${PACKAGES[*]}" >&2
    exit 2
fi

missing=()
for pkg in "${PACKAGES[@]}"; do
    status="$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)"
    [ "$status" = "installed" ] || missing+=("$pkg")
done

if [ "${#missing[@]}" -eq 0 ]; then
    echo "test dependencies: all ${#PACKAGES[@]} Debian packages present"
    exit 0
fi

echo "test dependencies: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
