#!/usr/bin/env bash
# Builds a Debian bookworm Vagrant box for the lxc provider with debootstrap and adds it to Vagrant.
#
#   scripts/build-lxc-box.sh [BOX_NAME]        (default BOX_NAME: kubelab/debian12-lxc)
#
# The box (rootfs.tar.gz + metadata.json + lxc-config, the format vagrant-lxc 1.x reads) is cached in
# $KUBELAB_CACHE (default /var/cache/kubelab) under a name holding a hash of this script, so a rerun with
# an unchanged script only checks that Vagrant has that build and returns in about a second. Changing this
# script changes the hash and rebuilds. Downloaded .debs are cached too, so a rebuild skips the downloads.
#
# The machine it makes: systemd, dbus, openssh-server, sudo, iproute2, python3; user `vagrant` with
# Vagrant's published insecure key and password-less sudo (Vagrant swaps the key on first `up`);
# systemd-networkd enabled; SSH host keys made on each machine's first boot, so no two machines share one.
# Needs root, debootstrap, and Debian's package mirror (the host's own apt source is used).
set -euo pipefail

BOX_NAME="${1:-kubelab/debian12-lxc}"
SUITE=bookworm
CACHE="${KUBELAB_CACHE:-/var/cache/kubelab}"
INCLUDE=systemd,systemd-sysv,dbus,openssh-server,sudo,iproute2,python3,ca-certificates,netbase

die() { echo "error: $*" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || die "$0 must run as root (debootstrap and lxc need it); try: sudo $0"
for tool in debootstrap vagrant tar gzip; do
    command -v "$tool" >/dev/null || die "$tool is missing; run scripts/install-test-deps.sh"
done

# Same mirror the host's apt uses (deb822 or one-line format), Debian's own as a fallback.
mirror() {
    local uri
    uri="$(grep -hE '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}' | grep -v security | head -n1 || true)"
    [ -n "$uri" ] || uri="$(grep -hE '^deb ' /etc/apt/sources.list 2>/dev/null | awk '{print $2}' | grep -v security | head -n1 || true)"
    echo "${uri:-http://deb.debian.org/debian}"
}

build_hash="$(sha256sum "$0" | cut -c1-16)"
box_file="$CACHE/boxes/$(echo "$BOX_NAME" | tr / -)-$build_hash.box"

# Vagrant keeps an added box's metadata.json; it carries the build hash, so a matching one means done.
installed_hash() {
    local vagrant_home="${VAGRANT_HOME:-$HOME/.vagrant.d}"
    local meta
    meta="$(ls "$vagrant_home"/boxes/"$(echo "$BOX_NAME" | sed 's#/#-VAGRANTSLASH-#g')"/*/lxc/metadata.json 2>/dev/null | head -n1)"
    [ -n "$meta" ] && sed -n 's/.*"kubelab_build": *"\([0-9a-f]*\)".*/\1/p' "$meta"
}

if [ "$(installed_hash)" = "$build_hash" ]; then
    echo "box $BOX_NAME: build $build_hash already added to Vagrant"
    exit 0
fi

build_rootfs() {
    local rootfs="$1"
    mkdir -p "$CACHE/debootstrap"
    debootstrap --variant=minbase --include="$INCLUDE" --cache-dir="$CACHE/debootstrap" \
        "$SUITE" "$rootfs" "$(mirror)" >"$rootfs.log" 2>&1 \
        || { cp "$rootfs.log" "$CACHE/boxes/debootstrap-failed.log"; tail -n 30 "$rootfs.log" >&2
             die "debootstrap failed (full log: $CACHE/boxes/debootstrap-failed.log)"; }

    local key
    key="$(find /usr/share -path '*vagrant*/keys/vagrant.pub' 2>/dev/null | head -n1)"
    [ -n "$key" ] || die "Vagrant's insecure public key (keys/vagrant.pub) not found; is vagrant installed?"

    chroot "$rootfs" /bin/sh -eu <<'CHROOT'
useradd --create-home --shell /bin/bash --user-group vagrant
echo 'vagrant:vagrant' | chpasswd
echo 'vagrant ALL=(ALL) NOPASSWD:ALL' > /etc/sudoers.d/vagrant
chmod 0440 /etc/sudoers.d/vagrant
install -d -m 0700 -o vagrant -g vagrant /home/vagrant/.ssh
systemctl enable systemd-networkd.service ssh.service
# Inside a container these only fail or wait: no consoles to manage, no kernel clock to set.
systemctl mask getty@tty1.service console-getty.service systemd-timesyncd.service \
    systemd-networkd-wait-online.service 2>/dev/null || true
CHROOT
    install -m 0600 -o 1000 -g 1000 "$key" "$rootfs/home/vagrant/.ssh/authorized_keys"
    [ "$(chroot "$rootfs" id -u vagrant)" = 1000 ] || die "the vagrant user did not get uid 1000"

    # Host keys per machine: made before sshd starts on first boot.
    rm -f "$rootfs"/etc/ssh/ssh_host_*
    cat >"$rootfs/etc/systemd/system/ssh-hostkeys.service" <<'UNIT'
[Unit]
Description=Generate this machine's SSH host keys
Before=ssh.service
ConditionPathExists=!/etc/ssh/ssh_host_ed25519_key

[Service]
Type=oneshot
ExecStart=/usr/bin/ssh-keygen -A

[Install]
RequiredBy=ssh.service
UNIT
    chroot "$rootfs" systemctl enable ssh-hostkeys.service
    # UseDNS off and no GSSAPI: logins from the host are not delayed by lookups that cannot succeed.
    printf 'UseDNS no\nGSSAPIAuthentication no\n' >"$rootfs/etc/ssh/sshd_config.d/kubelab.conf"

    : >"$rootfs/etc/machine-id"           # systemd makes a fresh one per machine
    echo "localhost" >"$rootfs/etc/hostname"
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* \
        "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/locale/*
}

write_box() {
    local work="$1" out="$2"
    # vagrant-lxc's template strips two path components: entries must read ./rootfs/...
    tar --numeric-owner -C "$work" -cf - ./rootfs | gzip -1 >"$work/rootfs.tar.gz"
    cat >"$work/lxc-config" <<'CONF'
lxc.include = /usr/share/lxc/config/common.conf
lxc.arch = amd64
CONF
    cat >"$work/metadata.json" <<JSON
{"provider": "lxc", "version": "1.0.0", "built-on": "$(date -u +%FT%TZ)", "kubelab_build": "$build_hash"}
JSON
    tar -C "$work" -cf "$out.tmp" metadata.json lxc-config rootfs.tar.gz
    mv "$out.tmp" "$out"
}

if [ ! -f "$box_file" ]; then
    echo "box $BOX_NAME: building $box_file (debootstrap $SUITE, about a minute)"
    mkdir -p "$CACHE/boxes"
    work="$(mktemp -d "$CACHE/boxes/build.XXXXXX")"
    trap 'rm -rf "$work"' EXIT
    build_rootfs "$work/rootfs"
    write_box "$work" "$box_file"
    # Older builds of this box are superseded by this one.
    find "$CACHE/boxes" -maxdepth 1 -name "$(echo "$BOX_NAME" | tr / -)-*.box" ! -name "$(basename "$box_file")" -delete
fi

echo "box $BOX_NAME: adding $box_file to Vagrant"
vagrant box add --force --name "$BOX_NAME" --provider lxc "$box_file" >/dev/null
[ "$(installed_hash)" = "$build_hash" ] || die "vagrant box add did not install build $build_hash of $BOX_NAME"
echo "box $BOX_NAME: ready (build $build_hash)"
