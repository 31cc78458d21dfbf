#!/bin/sh
# ext4-provisioner.sh: a podctl exec provisioner that gives each volume a
# file system of its own, so that its size is a real limit: an ext4 image
# file whose file system holds the size the claim asks for, under a root
# directory (class parameter "root", which podctl also checks every answer
# against), loop-mounted. A write past the size fails with ENOSPC.
#
#   install -D -m 755 ext4-provisioner.sh /etc/podctl/provisioners/ext4
#   podctl volume class create ext4 --provisioner exec:ext4 --param root=/srv/ext4-volumes
#
# For a volume NAME it makes, under ROOT:
#   NAME.img     the image (fallocate'd: the space is reserved on ROOT's file
#                system; --param preallocate=false makes it sparse instead)
#   NAME/        where the image is mounted (-o loop,nosuid,nodev)
#   NAME/data/   the volume's directory, inside the image: the path podctl gets.
#                It exists only while the image is mounted, so a volume whose
#                image is not mounted fails to start instead of writing to ROOT.
#
#   ext4-provisioner.sh provision < request.json  ->  {"path": "ROOT/NAME/data", "capacity_bytes": N}
#   ext4-provisioner.sh delete    < volume.json   ->  {} or {"ignored": "why"}
#
# capacity_bytes is the size of the mounted file system (statfs), at least
# the size asked for: ext4 keeps room for its own metadata, so the image is
# made that much larger (podctl refuses a volume smaller than its claim).
#
# Must run as root (podctl run as root), with mkfs.ext4 (e2fsprogs), mount,
# umount, mountpoint and losetup (util-linux), coreutils and node. Errors go
# to stderr, with exit status 1. See README.md next to it.

PROG='ext4-provisioner'
PATH=$PATH:/usr/sbin:/sbin
export PATH

# The smallest image mkfs.ext4 makes a file system on, rounded up.
MIN_BYTES=1048576

die() {
  printf '%s: %s\n' "$PROG" "$*" >&2
  exit 1
}

# Reads the JSON object on stdin and prints one shell assignment per
# NAME=dotted.key argument, the value single-quoted (so `eval` is safe);
# null or missing values give an empty string. Numbers must be integers.
JSON_GET='
const fs = require("node:fs")
let input
try {
  input = JSON.parse(fs.readFileSync(0, "utf8"))
} catch (e) {
  console.error(process.env.PROG + ": stdin is not a JSON object: " + e.message)
  process.exit(1)
}
if (input === null || typeof input !== "object" || Array.isArray(input)) {
  console.error(process.env.PROG + ": stdin is not a JSON object")
  process.exit(1)
}
const quote = (s) => "\x27" + s.replace(/\x27/g, "\x27\\\x27\x27") + "\x27"
for (const arg of process.argv.slice(1)) {
  const eq = arg.indexOf("=")
  const name = arg.slice(0, eq)
  let v = input
  for (const k of arg.slice(eq + 1).split(".")) v = v !== null && typeof v === "object" ? v[k] : undefined
  if (v === undefined || v === null) v = ""
  else if (typeof v === "number" && Number.isSafeInteger(v)) v = String(v)
  else if (typeof v !== "string") {
    console.error(process.env.PROG + ": " + arg.slice(eq + 1) + " is " + JSON.stringify(v) + ", not a string or an integer")
    process.exit(1)
  }
  if (v.includes("\0") || v.includes("\n")) {
    console.error(process.env.PROG + ": " + arg.slice(eq + 1) + " contains a NUL or a newline")
    process.exit(1)
  }
  process.stdout.write(name + "=" + quote(v) + "\n")
}
'

# Prints a JSON object built from KEY=VALUE arguments (KEY:int=N for numbers, empty: null).
JSON_PUT='
const out = {}
for (const arg of process.argv.slice(1)) {
  const eq = arg.indexOf("=")
  const [key, type] = arg.slice(0, eq).split(":")
  const v = arg.slice(eq + 1)
  out[key] = type === "int" ? (v === "" ? null : Number(v)) : v
}
process.stdout.write(JSON.stringify(out) + "\n")
'

json_get() { PROG=$PROG node -e "$JSON_GET" "$@"; }
json_put() { node -e "$JSON_PUT" "$@"; }

# Refuses, clearly, what cannot work: not root, or a tool missing.
check_host() {
  command -v node >/dev/null 2>&1 || die "node is needed to read the request (JSON on stdin); put it in podctl's PATH"
  [ "$(id -u)" -eq 0 ] || die "must run as root to loop-mount file systems (running as $(id -un 2>/dev/null || id -u)); run podctl as root, or use dir-provisioner.sh"
  for tool in "$@"; do
    command -v "$tool" >/dev/null 2>&1 || die "$tool is missing (PATH=$PATH): install e2fsprogs (mkfs.ext4) and util-linux (mount, umount, mountpoint, losetup)"
  done
}

# A volume name is one path component: never "", ".", ".." or with a "/".
check_name() {
  case $1 in
  '' | . | .. | */* | -*) die "refusing volume name \"$1\": not a plain file name" ;;
  esac
}

# The canonical root directory (parameter "root"), which must exist.
check_base() {
  [ -n "$1" ] || die "class parameter \"root\" is missing: podctl volume class create CLASS --provisioner exec:${0##*/} --param root=/abs/dir"
  case $1 in
  /*) ;;
  *) die "class parameter root=$1 must be an absolute path" ;;
  esac
  [ -d "$1" ] || die "root directory $1 does not exist or is not a directory (create it first)"
  realpath -e -- "$1" || die "cannot resolve root directory $1"
}

# The size (bytes) of the ext4 file system in image $1, mounted read-only on $2 for a moment.
fs_capacity() {
  mkdir -p -m 0700 -- "$2" || die "cannot create $2"
  # Left mounted by a call killed halfway: unmounted first.
  while mountpoint -q -- "$2" 2>/dev/null; do umount -- "$2" || die "cannot unmount $2"; done
  out=$(mount -t ext4 -o loop,ro,nosuid,nodev,noexec -- "$1" "$2" 2>&1) || { rmdir -- "$2"; die "cannot mount $1 on $2: $out (are loop devices available?)"; }
  cap=$(stat -f -c '%b %S' -- "$2" | awk '{ printf "%.0f", $1 * $2 }')
  umount -- "$2" || die "cannot unmount $2"
  rmdir -- "$2"
  echo "$cap"
}

# Makes image $1 whose file system holds at least $2 bytes: ext4's metadata
# (journal, inode tables) takes room of its own, so the image is made
# larger by what the last try fell short of, until it fits.
make_image() {
  want=$2
  try=$2
  for attempt in 1 2 3 4 5; do
    detach_loops "$1"
    rm -f -- "$1"
    case $3 in
    true) out=$(fallocate -l "$try" -- "$1" 2>&1) || { rm -f -- "$1"; die "cannot reserve $try bytes for $1: $out"; } ;;
    false) out=$(truncate -s "$try" -- "$1" 2>&1) || { rm -f -- "$1"; die "cannot create $1: $out"; } ;;
    *) die "class parameter preallocate=$3: expected true or false" ;;
    esac
    # -m 0: no blocks kept for root, so every app sees the same capacity.
    out=$(mkfs.ext4 -q -F -m 0 -- "$1" 2>&1) || { rm -f -- "$1"; die "mkfs.ext4 failed on $1: $out"; }
    cap=$(fs_capacity "$1" "$4") || { rm -f -- "$1"; exit 1; }
    [ "$cap" -ge "$want" ] && return 0
    # Short by this much (and a little more: a larger file system has larger tables).
    try=$((try + (want - cap) + (want - cap) / 8 + 65536))
  done
  rm -f -- "$1"
  die "could not make an ext4 image that holds $want bytes (the last held $cap)"
}

# Detaches every loop device still backed by image $1 (left by a crash between attaching and mounting).
detach_loops() {
  for dev in $(losetup --list --noheadings --output NAME --associated "$1" 2>/dev/null); do
    losetup --detach "$dev" 2>/dev/null || die "cannot detach loop device $dev of $1"
  done
}

provision() {
  check_host mkfs.ext4 mount mountpoint losetup
  volume_name='' base='' size='' claim='' prealloc=''
  vars=$(json_get volume_name=volume_name base=class.parameters.root size=claim.size_bytes claim=claim.name prealloc=class.parameters.preallocate) ||
    die "bad provision request"
  eval "$vars"
  check_name "$volume_name"
  base=$(check_base "$base") || exit 1
  img=$base/$volume_name.img
  mnt=$base/$volume_name
  data=$mnt/data

  # Each step is skipped when done already: a call again after a crash (or
  # for a volume provisioned already) finishes the work and answers the same.
  if ! mountpoint -q -- "$mnt" 2>/dev/null; then
    if [ ! -f "$img" ]; then
      [ -n "$size" ] || die "claim ${claim:-?} asks for no size: an ext4 volume needs one (podctl volume claim create ${claim:-NAME} --size 1Gi, or \"size\" in the manifest)"
      [ "$size" -ge "$MIN_BYTES" ] || die "claim ${claim:-?} asks for $size bytes: an ext4 volume needs at least $MIN_BYTES"
      # Made aside and renamed when complete: an image is never half made.
      make_image "$img.tmp" "$size" "${prealloc:-true}" "$base/.$volume_name.probe"
      mv -- "$img.tmp" "$img" || die "cannot rename $img.tmp to $img"
    fi
    if [ -L "$mnt" ] || { [ -e "$mnt" ] && [ ! -d "$mnt" ]; }; then
      die "$mnt exists and is not a directory: refusing to mount on it"
    fi
    mkdir -m 0755 -- "$mnt" 2>/dev/null || [ -d "$mnt" ] || die "cannot create mount point $mnt"
    detach_loops "$img"
    out=$(mount -t ext4 -o loop,nosuid,nodev -- "$img" "$mnt" 2>&1) || die "cannot mount $img on $mnt: $out (are loop devices available?)"
  fi
  if [ ! -d "$data" ]; then
    mkdir -m 0750 -- "$data" 2>/dev/null || [ -d "$data" ] || die "cannot create $data"
  fi
  # The real capacity: the mounted file system's size, as statfs says.
  capacity=$(stat -f -c '%b %S' -- "$mnt" | awk '{ printf "%.0f", $1 * $2 }') || die "cannot stat the file system on $mnt"
  json_put "path=$data" "capacity_bytes:int=$capacity"
}

delete() {
  name='' path='' base=''
  vars=$(json_get name=name path=path base=parameters.root) || die "bad delete request"
  eval "$vars"
  if [ -z "$path" ] || [ -z "$base" ]; then
    json_put "ignored=volume $name has no path or no root parameter: not made by $PROG"
    return
  fi
  check_name "$name"
  case $base in
  /*) ;;
  *) json_put "ignored=root $base is not an absolute path: not made by $PROG"; return ;;
  esac
  check_host umount mountpoint losetup
  [ -d "$base" ] || die "root directory $base of volume $name does not exist (not mounted?); not deleting $path"
  real_base=$(realpath -e -- "$base") || die "cannot resolve root directory $base"
  mnt=$real_base/$name
  img=$real_base/$name.img
  if [ "$path" != "$mnt/data" ]; then
    json_put "ignored=$path is not $mnt/data: not a volume $PROG made under its root"
    return
  fi
  # Unmount every mount stacked on the mount point (the loop device goes with
  # the last: mount -o loop attaches it with autoclear).
  n=0
  while mountpoint -q -- "$mnt" 2>/dev/null; do
    n=$((n + 1))
    [ "$n" -le 8 ] || die "$mnt is still mounted after $((n - 1)) unmounts"
    out=$(umount -- "$mnt" 2>&1) || die "cannot unmount $mnt: $out (is a process still using it? fuser -vm $mnt)"
  done
  detach_loops "$img"
  detach_loops "$img.tmp"
  probe=$real_base/.$name.probe
  while mountpoint -q -- "$probe" 2>/dev/null; do umount -- "$probe" || die "cannot unmount $probe"; done
  [ ! -d "$probe" ] || rmdir -- "$probe" || die "cannot remove $probe"
  rm -f -- "$img" "$img.tmp" || die "cannot remove $img"
  # Not mounted now: whatever is left in the mount point is on BASE, not in the volume.
  if [ -L "$mnt" ]; then
    rm -f -- "$mnt" || die "cannot remove $mnt"
  elif [ -e "$mnt" ]; then
    rm -rf --one-file-system -- "$mnt" || die "cannot remove $mnt"
  fi
  # Gone already (a delete cut short and called again) is fine too.
  json_put
}

case ${1:-} in
provision) provision ;;
delete) delete ;;
*) die "usage: $0 provision|delete < request.json (run by podctl, see README.md)" ;;
esac
