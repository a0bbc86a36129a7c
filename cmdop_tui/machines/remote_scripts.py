"""The file tools' scripts on another machine: POSIX tools and bash there, nothing installed.

Each runs inside the sandbox there (machines/remote_sandbox.py) unless the machine has none or
the user let the operation out; relative paths start at the machine's workspace. `HIDE` (a bash
associative array of the hidden places, and `HIDING=1`) is set before them inside the sandbox:
what it hides is neither listed nor globbed. (Bare, HIDE is never read: a bash without
associative arrays would evaluate its keys, file names, as arithmetic.)
"""

from __future__ import annotations

__all__ = [
    "EDIT_SCRIPT",
    "FETCH_SCRIPT",
    "GLOB_SCRIPT",
    "GREP_SCRIPT",
    "LIST_SCRIPT",
    "NO_SUCH_FILE",
    "READ_SCRIPT",
    "REFUSED",
    "WRITE_SCRIPT",
]

READ_SCRIPT = r"""
f={path}
[ -e "$f" ] || {{ echo "no such file: $f" >&2; exit 3; }}
[ -d "$f" ] && {{ echo "$f is a directory (use list_dir)" >&2; exit 3; }}
[ -f "$f" ] || {{ echo "$f is not a regular file" >&2; exit 3; }}
size=$(wc -c < "$f") || exit 3
if [ "$(head -c 8192 "$f" | tr -d '\000' | wc -c)" -ne "$(head -c 8192 "$f" | wc -c)" ]; then
  echo "$f is a binary file ($size bytes)" >&2; exit 3
fi
total=$(wc -l < "$f")
awk -v s={start} -v e={end} 'NR>=s && (e==0 || NR<=e) {{printf "%6d\t%s\n", NR, substr($0, 1, 2000)}} e>0 && NR>e {{exit}}' "$f" | head -n {limit}
echo "lines in file: $total"
"""

# What the sandbox hides is not listed: a stand-in /dev/null (a hidden file) or a place of HIDE.
LIST_SCRIPT = r"""
d={path}
[ -d "$d" ] || {{ echo "not a directory: $d" >&2; exit 3; }}
cd -- "$d" || exit 3
shopt -s dotglob nullglob
k=()
for e in *; do
  [[ -c $e && $PWD != /dev && $PWD != /dev/* ]] && continue
  [[ -n $HIDING ]] && [[ -n ${{HIDE["${{PWD%/}}/$e"]}} ]] && continue
  k+=("$e")
done
ls -lad -- . .. "${{k[@]}}" | head -n {limit}
"""

REFUSED = 5  # WRITE_SCRIPT's and EDIT_SCRIPT's exit status when the file could not be made there

# A write that cannot be made says `refused:<the path it resolved to>` (exit 5); whether the
# sandbox refused it is judged from its rules (RemoteSandbox.may_write), never from an error text.
REFUSE_SH = 'refuse() {{ rm -f -- "$tmp"; printf \'refused:%s\\n\' "$f" >&2; exit 5; }}'
WRITE_SCRIPT = (
    r"""
f={path}
if [ -L "$f" ]; then t=$(readlink -f -- "$f") && f=$t; fi  # write through a symlink, as the local tool does
dir=$(dirname -- "$f")
tmp=
"""
    + REFUSE_SH
    + r"""
mkdir -p -- "$dir" 2>/dev/null || refuse
if [ -e "$f" ]; then
  mode=$(stat -c %a -- "$f" 2>/dev/null || stat -f %Lp -- "$f" 2>/dev/null)  # GNU, then BSD
else
  mode=$(printf '%o' $((0666 & ~0$(umask))))  # what a plain new file would get
fi
tmp=$(mktemp "$dir/.cmdop-write.XXXXXX" 2>/dev/null) || refuse
cat > "$tmp" || {{ rm -f "$tmp"; exit 3; }}
[ -n "$mode" ] && chmod "$mode" "$tmp"
mv -f -- "$tmp" "$f" 2>/dev/null || refuse
echo "wrote $(wc -c < "$f") bytes to $f"
"""
)

NO_SUCH_FILE = 4  # FETCH_SCRIPT's exit status for a missing file

# The file's bytes after a line with its `cksum`, which EDIT_SCRIPT checks before replacing it.
FETCH_SCRIPT = r"""
f={path}
[ -L "$f" ] && f=$(readlink -f -- "$f")
[ -e "$f" ] || exit 4
[ -d "$f" ] && {{ echo "$f is a directory" >&2; exit 3; }}
[ -f "$f" ] || {{ echo "$f is not a regular file" >&2; exit 3; }}
size=$(($(wc -c < "$f"))) || exit 3
[ "$size" -le {limit} ] || {{ echo "$f is too large {purpose} ($size bytes)" >&2; exit 3; }}
cksum < "$f" || exit 3
exec cat -- "$f"
"""

# New content on stdin, written atomically with the old file's mode and (where allowed) owner,
# unless the file changed since FETCH_SCRIPT read it.
EDIT_SCRIPT = (
    r"""
f={path}
if [ -L "$f" ]; then t=$(readlink -f -- "$f") && f=$t; fi
[ -f "$f" ] || {{ echo "no such file: $f" >&2; exit 3; }}
[ "$(cksum < "$f")" = {checksum} ] || {{ echo "$f changed while it was being edited; it was left as it is now" >&2; exit 3; }}
dir=$(dirname -- "$f")
tmp=
"""
    + REFUSE_SH
    + r"""
mode=$(stat -c %a -- "$f" 2>/dev/null || stat -f %Lp -- "$f" 2>/dev/null)  # GNU, then BSD
owner=$(stat -c %u:%g -- "$f" 2>/dev/null || stat -f %u:%g -- "$f" 2>/dev/null)
tmp=$(mktemp "$dir/.cmdop-edit.XXXXXX" 2>/dev/null) || refuse
trap 'rm -f -- "$tmp"' EXIT
cat > "$tmp" || exit 3
[ -n "$owner" ] && chown "$owner" "$tmp" 2>/dev/null
[ -n "$mode" ] && chmod "$mode" "$tmp"
mv -f -- "$tmp" "$f" 2>/dev/null || refuse
"""
)

GREP_SCRIPT = r"""
grep -rnIE -D skip --exclude-dir=.git {include} -e {pattern} -- {path} | head -n {limit} | cut -c1-500
status=${{PIPESTATUS[0]}}
[ "$status" -le 1 ] || exit "$status"
"""

GLOB_SCRIPT = r"""
cd -- {cwd} || exit 3
shopt -s globstar nullglob
IFS=$'\n'
pattern={pattern}
# An unquoted variable is only split and globbed, never run: no command substitution happens.
for match in $pattern; do
  [[ -c $match && $match != /dev/* ]] && continue
  [[ -n $HIDING ]] && [[ -n ${{HIDE["${{PWD%/}}/${{match%/}}"]}} ]] && continue
  printf '%s\n' "$match"
done | head -n {limit}
"""


# The workspace's files for `@NAME:` completion: git's list (tracked and untracked, ignored left
# out) where the workspace is a git tree, else `find` pruning the usual heavy folders; NUL-separated.
WORKSPACE_FILES_SCRIPT = r"""
{{ git ls-files -z --cached --others --exclude-standard 2>/dev/null ||
  find . -mindepth 1 \( -name .git -o -name node_modules -o -name __pycache__ -o -name .venv \
    -o -name .cache -o -name .tox \) -prune -o -type f -print0 2>/dev/null; }} | head -z -n {limit}
exit 0
"""
