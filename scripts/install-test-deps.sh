#!/usr/bin/env bash
# Installs the Debian packages the system, image and browser test suites need (root, Debian 12).
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
    # browser tier (tests/ui, ./lab ui): headless Chromium driven by selenium through Debian's chromedriver
    chromium
    chromium-driver
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

# Tools from Debian testing, unpacked into /opt/kubelab-test/<package>, never installed: the host's own
# packages and apt state stay as they are (apt reads a sources list, lists and cache of its own in a temp
# folder). Each is a dpkg-deb -x of the package, so its binaries are in <folder>/usr/bin.
# - containerd (2.x) beside Debian 12's 1.6: the image suite checks side-loading and the node's containerd
#   config on both (2.x imports through its transfer service; Ubuntu 24.04's nodes run 2.2);
# - kubectl of the lab's Kubernetes minor (Debian testing packages 1.36): the suites that run kubectl run this
#   one rather than whatever kubectl the host has.
TESTING_TOOLS_DIR="${KUBELAB_TESTING_TOOLS_DIR:-/opt/kubelab-test}"
TESTING_TOOLS=(containerd kubectl)
install_testing_tools() {
    local wanted=() pkg tmp apt_own
    for pkg in "${TESTING_TOOLS[@]}"; do
        [ -x "$TESTING_TOOLS_DIR/$pkg/usr/bin/$pkg" ] || wanted+=("$pkg")
    done
    if [ "${#wanted[@]}" -gt 0 ]; then
        tmp="$(mktemp -d)"
        mkdir -p "$tmp/lists/partial" "$tmp/cache/archives/partial" "$TESTING_TOOLS_DIR"
        echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian testing main" \
            > "$tmp/sources.list"
        apt_own=(-o Dir::Etc::SourceList="$tmp/sources.list" -o Dir::Etc::SourceParts=/dev/null
                 -o Dir::State::Lists="$tmp/lists" -o Dir::Cache="$tmp/cache" -o APT::Sandbox::User=root
                 # nothing counts as installed: a host package of the same name (another vendor's kubectl)
                 # would otherwise be the version apt picks
                 -o Dir::State::status=/dev/null)
        apt-get "${apt_own[@]}" update -qq
        (cd "$tmp" && apt-get "${apt_own[@]}" download -qq "${wanted[@]}")
        for pkg in "${wanted[@]}"; do
            rm -rf "$TESTING_TOOLS_DIR/$pkg.partial" "$TESTING_TOOLS_DIR/$pkg"
            dpkg-deb -x "$tmp/${pkg}"_*.deb "$TESTING_TOOLS_DIR/$pkg.partial"
            mv "$TESTING_TOOLS_DIR/$pkg.partial" "$TESTING_TOOLS_DIR/$pkg"
        done
        rm -rf "$tmp"
    fi
    echo "test dependencies from Debian testing in $TESTING_TOOLS_DIR:" \
        "$("$TESTING_TOOLS_DIR/containerd/usr/bin/containerd" --version | cut -d' ' -f3)," \
        "kubectl $("$TESTING_TOOLS_DIR/kubectl/usr/bin/kubectl" version --client | sed -n 's/^Client Version: //p')"
}

install_packages
install_testing_tools
