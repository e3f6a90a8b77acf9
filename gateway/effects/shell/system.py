"""System administration programs: the analysis follows none of them (an unknown program's path-like words
are its ``paths``), but the policy judges them by class: disks, boot, services, firewalls, users, kernel
modules, other processes, containers. Misuse is hard to undo or reaches beyond the workspace.

    FAMILY.classes["dangerous_programs"]   # mkfs, shutdown, iptables, useradd, mount, kill, ...
"""

from __future__ import annotations

from gateway.effects.shell.family import Family
from gateway.effects.shell.words import names

__all__ = ["FAMILY"]

FAMILY = Family(
    name="system",
    classes={
        "dangerous_programs": names(
            "mkfs mkfs.ext4 mkfs.xfs mkfs.vfat fdisk sfdisk parted wipefs shutdown reboot halt poweroff init "
            "telinit service launchctl crontab at iptables ip6tables nft ufw useradd userdel usermod passwd "
            "chpasswd visudo mount umount insmod rmmod modprobe sysctl kill killall pkill chattr setfacl nsenter "
            "chroot"
        ),
        "read_only_programs": names("lsof"),
    },
)
