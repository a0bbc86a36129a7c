"""Block devices by every name they go by: disks and partitions, LVM volumes (``/dev/VG/LV``,
``/dev/mapper/*``), device-mapper, md, nbd, pmem, zram, rbd, loop, optical, bcache, drbd and
zvols, ``/dev/disk/by-*``, what ``/sys/block`` exposes, and on the machine itself any path
that resolves to a block device (a symlink to one, or a device node under another name).

Writing one destroys what is on it, so the floor refuses it. ``/proc/<pid>/root`` is taken off
a path before it gets here (:func:`.paths.resolve`): ``/proc/self/root/dev/sda`` is ``/dev/sda``.
"""

from __future__ import annotations

import os
import re
import stat

from .globs import glob_path_matches, has_glob
from .scanning import words

# /dev/NAME: the kernel's names for block devices (Linux, and macOS's disks)
_BLOCK_NAME = re.compile(
    r"(?:sd|hd|vd|xvd|ubd|rssd|dasd)[a-z]+\d*"
    r"|nvme\d+(?:n\d+(?:p\d+)?)?|mmcblk\d+(?:p\d+|boot\d+|rpmb)?"
    r"|r?disk\d+(?:s\d+)*|md\d+(?:p\d+)?|md_d\d+|dm-\d+|nbd\d+(?:p\d+)?|pmem\d+(?:\.\d+)?(?:s|p\d+)?"
    r"|zram\d+|rbd\d+(?:p\d+)?|loop\d+(?:p\d+)?|sr\d+|scd\d+|bcache\d+|drbd\d+|zd\d+|skd\d+|ram\d+"
    r"|fd\d+|mtd(?:block)?\d+|sg\d+|root|ubi\w*|mem|kmem|port"
)
# /dev/DIR/...: folders of /dev that hold no block device (any other one may: an LVM volume
# group is a folder named as its owner chose, /dev/VG/LV)
_NOT_BLOCK_FOLDERS = words(
    "pts shm mqueue hugepages fd net input snd dri bus char cpu usb v4l vfio serial dma_heap bsg "
    "hidraw gpiochip dvb cec i2c tty vhost-net vhost-vsock xen"
)
# what /sys shows of a block device: writing there deletes or reconfigures the disk
_SYS_BLOCK = re.compile(r"^/sys/(?:block|class/block|dev/block)/.|^/sys/devices/.*/block/.")
SAMPLES = (
    "/dev/sda",
    "/dev/sda1",
    "/dev/vda",
    "/dev/xvda",
    "/dev/hda",
    "/dev/nvme0n1",
    "/dev/mmcblk0",
    "/dev/disk0",
    "/dev/md0",
    "/dev/dm-0",
    "/dev/nbd0",
    "/dev/loop0",
    "/dev/zram0",
    "/dev/pmem0",
    "/dev/mapper/root",
)


def block_device(path: str) -> bool:
    """Is the resolved `path` a block device by its name (a glob: could it match one)?"""
    if path.startswith("/sys/"):
        return _SYS_BLOCK.match(path) is not None
    if not path.startswith("/dev/"):
        return False
    if has_glob(path):
        return any(glob_path_matches(path, sample) for sample in SAMPLES)
    rest = path[5:].split("/")
    if len(rest) == 1:
        return _BLOCK_NAME.fullmatch(rest[0]) is not None
    return rest[0] not in _NOT_BLOCK_FOLDERS and all(rest)


def block_device_here(path: str) -> bool:
    """`path` by its name, and on this machine by what it is: a device node or a symlink that
    resolves to a block device (`ln -s /dev/sda disk.img` then `dd of=disk.img`). A path that
    does not exist here is judged by its name alone."""
    if block_device(path):
        return True
    if not path.startswith("/") or has_glob(path) or any(ch < " " for ch in path):
        return False
    try:
        real = os.path.realpath(path)  # a link to a disk that is not here is that disk's name still
        if real != path and block_device(real):
            return True
        return stat.S_ISBLK(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False
