"""The bash that holds an operation inside bubblewrap on another machine (see remote_sandbox.py).

Python sets the variables first: `S` the session's folder there, `W` the workspace, `D` the app's
data dir, `H` the real home, `T` a token the operation never sees (the script's own lines start
with it), `C` where the operation starts, `CMD` the operation (a bash script); and, confined,
the arrays `STORES` (places to hide), `EXTRA` (more writable roots), `UNSET` (variables to drop),
`P` (protected names), `F` (the system-call filter, base64; empty: none for this architecture),
`RESOLV` (where /etc/resolv.conf points), `NET` (1: the network stays) and `CLEAR` (1: the
environment could not be judged, so the operation gets a bare one).

The session's folder holds its private /tmp and /var/tmp, the filter, and the list of `.env`
files, SSH keys and `.git` folders under the home and the writable roots (`found`). That list is
made by the first operation of the session (which waits for it: SCAN_S at most, else nothing
runs) and made again, while an operation runs, when it is older than REFRESH_S; an operation the
user let run outside the sandbox marks it stale, so the next one waits for a fresh one.
"""

from __future__ import annotations

READ_ONLY = "Read-only file system"  # what an operation meets where the sandbox keeps it from writing
SCAN_S = 60  # the first scan of a session may take this long; then the operation is refused
REFRESH_S = 10  # a list older than this is made again while the next operation runs

# Bare: no sandbox there (or off, or let out by the user), in the workspace all the same.
BARE = r"""[ -d "$W" ] || mkdir -p -m 700 -- "$W" 2>/dev/null
[ ! -d "$S" ] || : > "$S/stale"
cd -- "$W" 2>/dev/null || cd || exit 1
cd -- "$C" || exit 1
exec bash -c "$CMD"
"""

_KEYS = " -o ".join(
    f"-name {n}" for n in ("id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "id_ecdsa_sk", "id_ed25519_sk")
)
_HARMLESS = " -o ".join(f"-iname '*.{s}'" for s in ("example", "sample", "template", "dist", "defaults", "schema"))

FUNCTIONS = (
    r"""cmdop_fail() { printf '%s\n' "$T:failed:$1" >&2; exit 125; }
cmdop_scan() {
  local roots=("$HOME") r
  for r in "${R[@]}"; do case "$r/" in "$HOME"/*) ;; *) roots+=("$r") ;; esac; done
  local limit=(); command -v timeout >/dev/null 2>&1 && limit=(timeout "$1")
  "${limit[@]}" find -P "${roots[@]}" -xdev -path "$D" -prune -o -name .git -print0 -prune -o \
    \( -name .env -o -name '.env.*' -o """
    + _KEYS
    + r""" \) ! \( """
    + _HARMLESS
    + r""" \) \( -type f -o -type l \) -print0 2>/dev/null
  [ $? -lt 124 ]
}
cmdop_refresh() {
  local new="$S/found.$BASHPID"
  cmdop_scan "$1" > "$new" && mv -f -- "$new" "$S/found" || { rm -f -- "$new"; return 1; }
  printf '%(%s)T\n' -1 > "$S/when"
}
cmdop_setup() {
  mkdir -p -m 700 -- "$D" "$D/sandbox" "$S" "$S/tmp" "$S/vartmp" "$W" || cmdop_fail "its folders cannot be made"
  if [ -n "$F" ]; then
    local new="$S/seccomp.$BASHPID"
    printf %s "$F" | base64 -d > "$new" && mv -f -- "$new" "$S/seccomp" || cmdop_fail "its system-call filter cannot be written"
  fi
  cmdop_refresh """
    + str(SCAN_S)
    + r""" || cmdop_fail unscanned
  : > "$S/ready"
  find "$D/sandbox" -mindepth 1 -maxdepth 1 -type d -mtime +2 ! -path "$S" \
    -exec sh -c 'chmod -R u+rwX -- "$@" 2>/dev/null; rm -rf -- "$@"' sh {} + 2>/dev/null
}
cmdop_cover() {  # t: $1, or where the symlink $1 leads when that is a place to cover
  t=$1
  [ -L "$t" ] || return 0
  t=$(readlink -f -- "$t") || return 1
  case "$t" in / | /proc | /proc/* | /sys | /sys/* | /dev | /dev/* | /run | /run/* | /tmp | /tmp/* | /var/tmp | /var/tmp/*) return 1 ;; esac
}
cmdop_inside() { local r; for r in "${R[@]}"; do case "$1/" in "$r"/*) return 0 ;; esac; done; return 1; }
cmdop_hide() {  # $2 "file": only a file is hidden there (a folder named .env is a virtualenv)
  cmdop_cover "$1" || return 0
  if [ -d "$t" ]; then [ "$2" = file ] || { A+=(--tmpfs "$t"); RO+=("$t"); }
  elif [ -e "$t" ]; then A+=(--ro-bind /dev/null "$t"); fi
}
cmdop_created() {
  local c=() i=0 p q
  for p in "${N[@]}"; do if [ -e "$p" ] || [ -L "$p" ]; then c+=("$p"); fi; done
  [ ${#c[@]} -gt 0 ] || return 0
  printf -v q '%s/quarantine/%(%Y%m%d-%H%M%S)T-%s' "$D" -1 "$BASHPID"
  for p in "${c[@]}"; do
    i=$((i + 1))
    mkdir -p -m 700 -- "$q/$i" && mv -- "$p" "$q/$i/" && printf '%s\t%s\n' "$T:created:$p" "$q/$i" >&2
  done
}"""
)

# Confined: the roots, the mounts, the filter, the environment; then the operation, and after
# it what it created that it must not have.
CONFINED = (
    r"""R=("$W")
for r in "${EXTRA[@]}"; do
  x=$(cd -P -- "$r" 2>/dev/null && pwd) || continue
  [ "$x" = / ] && continue
  case "$H/" in "$x"/*) continue ;; esac
  R+=("$x")
done
[ -e "$S/ready" ] && [ -e "$S/found" ] || cmdop_setup
if [ -e "$S/stale" ]; then rm -f -- "$S/stale"; cmdop_refresh """
    + str(SCAN_S)
    + r""" || cmdop_fail unscanned; fi
A=(--unshare-user --unshare-pid --unshare-ipc --unshare-cgroup-try --cap-drop ALL --die-with-parent --new-session
   --ro-bind / / --dev /dev --proc /proc --tmpfs /dev/shm --tmpfs /run)
case "$RESOLV" in /run/*) [ -e "$RESOLV" ] && A+=(--ro-bind "$RESOLV" "$RESOLV") ;; esac
A+=(--bind "$S/tmp" /tmp --bind "$S/vartmp" /var/tmp)
for r in "${R[@]}"; do A+=(--bind "$r" "$r"); done
N=() RO=()
for r in "${R[@]}"; do
  for n in "${P[@]}"; do
    if [ -e "$r/$n" ]; then cmdop_cover "$r/$n" && A+=(--ro-bind "$t" "$t")
    elif [ ! -L "$r/$n" ]; then N+=("$r/$n"); fi
  done
done
for p in "${STORES[@]}"; do [[ -e $p || -L $p ]] && cmdop_hide "$p" any; done
while IFS= read -r -d '' p; do
  case "${p##*/}" in
    .git) cmdop_cover "$p" && [ -d "$t" ] && cmdop_inside "$t" && A+=(--ro-bind "$t" "$t") ;;
    *) cmdop_hide "$p" file ;;
  esac
done < "$S/found"
for p in "${RO[@]}"; do A+=(--remount-ro "$p"); done
[ -z "$F" ] || A+=(--seccomp 3)
[ "$NET" = 1 ] || A+=(--unshare-net)
for n in "${UNSET[@]}"; do A+=(--unsetenv "$n"); done
A+=(--setenv TMPDIR /tmp --chdir "$C" --)
[ "$CLEAR" = 1 ] && A+=(env -i "PATH=$PATH" "HOME=$HOME" "USER=$USER" "LOGNAME=$LOGNAME" "LANG=${LANG:-C.UTF-8}" TMPDIR=/tmp)
J=
read -r w < "$S/when" 2>/dev/null
printf -v now '%(%s)T' -1
if (( now - ${w:-0} >= """
    + str(REFRESH_S)
    + r""" )); then cmdop_refresh """
    + str(SCAN_S)
    + r""" < /dev/null > /dev/null 2>&1 & J=$!; fi
if [ -n "$F" ]; then bwrap "${A[@]}" bash -c "$CMD" 3< "$S/seccomp"; else bwrap "${A[@]}" bash -c "$CMD"; fi
s=$?
[ -z "$J" ] || wait "$J"
cmdop_created
exit $s
"""
)
