#!/bin/sh
# Runs inside the freshly bootstrapped root file system (chroot) of the worker image.
set -eu

# Trust the build host's extra certificate authorities (TLS-inspecting proxies).
update-ca-certificates >/dev/null

# A local apt repository (build.sh adds it when it has extra Python packages): read its list now,
# so that apt knows its packages before the first full update.
if [ -r /etc/apt/sources.list.d/cloudtpu-python.list ]; then
  apt-get update -qq -o Dir::Etc::SourceList=/etc/apt/sources.list.d/cloudtpu-python.list \
    -o Dir::Etc::SourceParts=- -o APT::Get::List-Cleanup=0
fi

# Units that have no business in a container.
for unit in getty@tty1.service console-getty.service serial-getty@.service \
    systemd-udevd.service systemd-udevd-control.socket systemd-udevd-kernel.socket \
    systemd-timesyncd.service systemd-firstboot.service systemd-remount-fs.service \
    sys-kernel-config.mount sys-kernel-debug.mount sys-kernel-tracing.mount \
    apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer; do
  ln -sf /dev/null "/etc/systemd/system/$unit"
done

# Every container gets its own machine id and SSH host keys, like every VM does.
: > /etc/machine-id
rm -f /etc/ssh/ssh_host_*
cat > /etc/systemd/system/cloudtpu-hostkeys.service <<'UNIT'
[Unit]
Description=Generate SSH host keys on first boot
Before=ssh.service
ConditionPathExists=!/etc/ssh/ssh_host_ed25519_key

[Service]
Type=oneshot
ExecStart=/usr/bin/ssh-keygen -A

[Install]
WantedBy=multi-user.target
UNIT
ln -sf /etc/systemd/system/cloudtpu-hostkeys.service \
  /etc/systemd/system/multi-user.target.wants/cloudtpu-hostkeys.service

# Accounts from "user:key" lines, as the TPU VM guest agent does with the
# node's ssh-keys metadata: /etc/cloudtpu/ssh-keys is read at boot and on demand.
install -d -m 0755 /etc/cloudtpu
cat > /usr/local/sbin/cloudtpu-accounts <<'SCRIPT'
#!/bin/sh
# Create login users with passwordless sudo from "user:ssh-key" lines.
set -eu
keys=${1:-/etc/cloudtpu/ssh-keys}
[ -r "$keys" ] || exit 0
grep -v '^[[:space:]]*\(#\|$\)' "$keys" | while IFS= read -r line; do
  user=${line%%:*}
  key=${line#*:}
  case "$user" in ''|*[!a-z0-9_-]*) echo "skipping bad user name: $user" >&2; continue ;; esac
  id "$user" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$user"
  home=$(getent passwd "$user" | cut -d: -f6)
  install -d -m 0700 -o "$user" -g "$user" "$home/.ssh"
  touch "$home/.ssh/authorized_keys"
  grep -qxF "$key" "$home/.ssh/authorized_keys" || printf '%s\n' "$key" >> "$home/.ssh/authorized_keys"
  chown "$user:$user" "$home/.ssh/authorized_keys"
  chmod 0600 "$home/.ssh/authorized_keys"
  printf '%s ALL=(ALL:ALL) NOPASSWD:ALL\n' "$user" > "/etc/sudoers.d/90-cloudtpu-$user"
  chmod 0440 "/etc/sudoers.d/90-cloudtpu-$user"
done
SCRIPT
chmod 0755 /usr/local/sbin/cloudtpu-accounts
cat > /etc/systemd/system/cloudtpu-accounts.service <<'UNIT'
[Unit]
Description=Create login users from /etc/cloudtpu/ssh-keys
Before=ssh.service

[Service]
Type=oneshot
ExecStart=/usr/local/sbin/cloudtpu-accounts

[Install]
WantedBy=multi-user.target
UNIT
ln -sf /etc/systemd/system/cloudtpu-accounts.service \
  /etc/systemd/system/multi-user.target.wants/cloudtpu-accounts.service

# The node's startup-script metadata, run as root at every boot once the network, the accounts
# and sshd are up, as the TPU VM guest agent does: a script with a #! line runs as itself,
# anything else with bash. Output goes to the journal and /var/log/cloudtpu-startup.log.
cat > /usr/local/sbin/cloudtpu-startup <<'SCRIPT'
#!/bin/bash
# Run /etc/cloudtpu/startup-script (the node's startup-script metadata); exit with its status.
set -uo pipefail
umask 077
script=${1:-/etc/cloudtpu/startup-script}
log=/var/log/cloudtpu-startup.log
[ -s "$script" ] || exit 0
chmod 0700 "$script"
if [ "$(head -c 2 "$script")" = '#!' ]; then run=("$script"); else run=(/bin/bash "$script"); fi
echo "startup-script: started $(date -u +%Y-%m-%dT%H:%M:%SZ)" | tee -a "$log"
rc=0
"${run[@]}" < /dev/null 2>&1 | tee -a "$log" || rc=$?
echo "startup-script: finished $(date -u +%Y-%m-%dT%H:%M:%SZ), exit status $rc" | tee -a "$log"
exit "$rc"
SCRIPT
chmod 0755 /usr/local/sbin/cloudtpu-startup
cat > /etc/systemd/system/cloudtpu-startup.service <<'UNIT'
[Unit]
Description=Run the node's startup-script metadata
Wants=network-online.target
After=network-online.target cloudtpu-accounts.service ssh.service
ConditionFileNotEmpty=/etc/cloudtpu/startup-script

[Service]
Type=oneshot
ExecStart=/usr/local/sbin/cloudtpu-startup
TimeoutStartSec=0
Environment=HOME=/root

[Install]
WantedBy=multi-user.target
UNIT
ln -sf /etc/systemd/system/cloudtpu-startup.service \
  /etc/systemd/system/multi-user.target.wants/cloudtpu-startup.service

# No DNS or resolv.conf baked in: Docker provides them.
rm -f /etc/hostname
apt-get clean
rm -rf /var/cache/apt/*.bin /usr/share/doc/* /usr/share/man/* /usr/share/info/*
