#!/bin/sh
# dir-provisioner.sh: a podctl exec provisioner that makes one directory per
# volume under a root directory (class parameter "root"), for example on
# another file system than the data dir. podctl checks every answer against
# the same parameter: a volume is always below the root.
#
#   install -D -m 755 dir-provisioner.sh /etc/podctl/provisioners/dir
#   podctl volume class create dirs --provisioner exec:dir --param root=/srv/volumes
#
#   dir-provisioner.sh provision < request.json  ->  {"path": "BASE/NAME", "capacity_bytes": N}
#   dir-provisioner.sh delete    < volume.json   ->  {} or {"ignored": "why"}
#
# Needs sh, coreutils and node (which podctl needs anyway) to read and write
# JSON. Errors go to stderr, with exit status 1. See README.md next to it.

PROG='dir-provisioner'

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

command -v node >/dev/null 2>&1 || die "node is needed to read the request (JSON on stdin); put it in podctl's PATH"

# A volume name is one path component: never "", ".", ".." or with a "/".
check_name() {
  case $1 in
  '' | . | .. | */* | -*) die "refusing volume name \"$1\": not a plain directory name" ;;
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

provision() {
  volume_name='' base='' size='' claim=''
  vars=$(json_get volume_name=volume_name base=class.parameters.root size=claim.size_bytes claim=claim.name) || die "bad provision request"
  eval "$vars"
  check_name "$volume_name"
  base=$(check_base "$base") || exit 1
  dir=$base/$volume_name
  if [ -L "$dir" ] || { [ -e "$dir" ] && [ ! -d "$dir" ]; }; then
    die "$dir exists and is not a directory: refusing to use it"
  fi
  if [ ! -d "$dir" ]; then
    # Not made yet (a call again after a crash finds it and answers the same).
    if [ -n "$size" ]; then
      avail=$(df -P -B1 -- "$base" | awk 'NR == 2 { print $4 }') || die "cannot read the free space of $base"
      [ "$avail" -ge "$size" ] 2>/dev/null ||
        die "claim ${claim:-?} asks for $size bytes; the file system of $base has $avail bytes available"
    fi
    mkdir -m 0750 -- "$dir" 2>/dev/null || [ -d "$dir" ] || die "cannot create $dir"
  fi
  # A directory has no limit of its own: the capacity is the size asked for (null without one).
  json_put "path=$dir" "capacity_bytes:int=$size"
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
  if [ ! -d "$base" ]; then
    # Its root is gone (or not mounted now): deleting now could be wrong.
    die "root directory $base of volume $name does not exist (not mounted?); not deleting $path"
  fi
  real_base=$(realpath -e -- "$base") || die "cannot resolve root directory $base"
  if [ "$path" != "$real_base/$name" ]; then
    json_put "ignored=$path is not $real_base/$name: not a directory $PROG made under its root"
    return
  fi
  if [ -L "$path" ]; then
    json_put "ignored=$path is a symbolic link, not a directory $PROG made"
    return
  fi
  if [ -e "$path" ]; then
    [ -d "$path" ] || die "$path is not a directory; not deleting it"
    rm -rf --one-file-system -- "$path" || die "cannot remove $path"
  fi
  # Gone already (a delete cut short and called again) is fine too.
  json_put
}

case ${1:-} in
provision) provision ;;
delete) delete ;;
*) die "usage: $0 provision|delete < request.json (run by podctl, see README.md)" ;;
esac
