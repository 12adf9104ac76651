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

install_packages() {
    local missing=() pkg status
    for pkg in "${PACKAGES[@]}"; do
        status="$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)"
        [ "$status" = "installed" ] || missing+=("$pkg")
    done
    if [ "${#missing[@]}" -eq 0 ]; then
        echo "test dependencies: all ${#PACKAGES[@]} Debian packages present"
        return
    fi
    echo "test dependencies: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# image suite (tests/image/test_layer_delta.py): a containerd 2.x beside Debian 12's 1.6, so side-loading is
# checked on both import paths (2.x imports through its transfer service; Ubuntu 24.04's nodes run 2.2).
# Debian testing's build, unpacked into CONTAINERD2_DIR, never installed: the host's containerd and apt
# state stay as they are (apt reads a sources list, lists and cache of its own in a temp folder).
CONTAINERD2_DIR="${KUBELAB_CONTAINERD2_DIR:-/opt/kubelab-test/containerd2}"
install_containerd2() {
    if [ -x "$CONTAINERD2_DIR/usr/bin/containerd" ]; then
        echo "test dependencies: $("$CONTAINERD2_DIR/usr/bin/containerd" --version) in $CONTAINERD2_DIR"
        return
    fi
    local tmp apt_own
    tmp="$(mktemp -d)"
    mkdir -p "$tmp/lists/partial" "$tmp/cache/archives/partial"
    echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian testing main" \
        > "$tmp/sources.list"
    apt_own=(-o Dir::Etc::SourceList="$tmp/sources.list" -o Dir::Etc::SourceParts=/dev/null
             -o Dir::State::Lists="$tmp/lists" -o Dir::Cache="$tmp/cache" -o APT::Sandbox::User=root)
    apt-get "${apt_own[@]}" update -qq
    (cd "$tmp" && apt-get "${apt_own[@]}" download -qq containerd)
    rm -rf "$CONTAINERD2_DIR.partial"
    mkdir -p "$(dirname "$CONTAINERD2_DIR")"
    dpkg-deb -x "$tmp"/containerd_*.deb "$CONTAINERD2_DIR.partial"
    rm -rf "$tmp" "$CONTAINERD2_DIR"
    mv "$CONTAINERD2_DIR.partial" "$CONTAINERD2_DIR"
    echo "test dependencies: $("$CONTAINERD2_DIR/usr/bin/containerd" --version) in $CONTAINERD2_DIR"
}

install_packages
install_containerd2
