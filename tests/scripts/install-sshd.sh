#!/usr/bin/env bash
# Installs what the tests with a real sshd on a loopback port need: Debian's openssh-server
# (/usr/sbin/sshd), and its privilege separation directory (/run/sshd) when run as root. The
# package's scripts must not start a system sshd on port 22: a temporary policy-rc.d forbids
# starting services while it installs.
#
# Already installed: only makes /run/sshd (as root) and exits 0. Not root, or no apt-get: says
# what to install and exits 0; the tests that need sshd then skip, naming what is missing.
#
# For testing this script's paths, the environment may point it elsewhere:
# INSTALL_SSHD_BIN (/usr/sbin/sshd), INSTALL_SSHD_PRIVSEP_DIR (/run/sshd),
# INSTALL_SSHD_POLICY_RC_D (/usr/sbin/policy-rc.d), INSTALL_SSHD_APT_GET (apt-get),
# INSTALL_SSHD_UID (the effective uid).
set -euo pipefail

sshd=${INSTALL_SSHD_BIN:-/usr/sbin/sshd}
privsep_dir=${INSTALL_SSHD_PRIVSEP_DIR:-/run/sshd}
policy_rc_d=${INSTALL_SSHD_POLICY_RC_D:-/usr/sbin/policy-rc.d}
apt_get=${INSTALL_SSHD_APT_GET:-apt-get}
uid=${INSTALL_SSHD_UID:-$(id -u)}

say() {
    printf 'install-sshd: %s\n' "$*" >&2
}

# sshd refuses to start as root without its privilege separation directory.
make_privsep_dir() {
    if [ "$uid" = 0 ] && [ ! -d "$privsep_dir" ]; then
        mkdir -p "$privsep_dir"
        chmod 0755 "$privsep_dir"
    fi
}

if [ -x "$sshd" ]; then
    make_privsep_dir
    say "$sshd is installed"
    exit 0
fi

if [ "$uid" != 0 ]; then
    say "$sshd not found and not root: install Debian's openssh-server" \
        "(sudo apt-get install openssh-server) or run this script as root;" \
        "until then the tests with a real sshd skip"
    exit 0
fi

if ! command -v "$apt_get" >/dev/null 2>&1; then
    say "$sshd not found and no apt-get: install OpenSSH's server (sshd) with this system's" \
        "package manager; until then the tests with a real sshd skip"
    exit 0
fi

# Forbid the package's scripts to start services while it installs (exit 101: "action
# forbidden"); an existing policy-rc.d is put back afterwards.
backup=""
if [ -e "$policy_rc_d" ]; then
    backup=$(mktemp "${policy_rc_d}.XXXXXX")
    cp -p "$policy_rc_d" "$backup"
fi
restore_policy() {
    if [ -n "$backup" ]; then
        mv -f "$backup" "$policy_rc_d"
    else
        rm -f "$policy_rc_d"
    fi
}
trap restore_policy EXIT
printf '#!/bin/sh\nexit 101\n' >"$policy_rc_d"
chmod 0755 "$policy_rc_d"

export DEBIAN_FRONTEND=noninteractive
install() {
    "$apt_get" install -y --no-install-recommends openssh-server
}
if ! install; then
    say "the first install failed; updating the package lists and trying again"
    "$apt_get" update
    install
fi

if [ ! -x "$sshd" ]; then
    say "openssh-server installed, but $sshd is still missing"
    exit 1
fi
make_privsep_dir
say "installed $sshd (openssh-server); no system sshd was started"
