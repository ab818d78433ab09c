#!/bin/sh
# proctor's git for checks (docs/checks.md, "Running tools over the agent's repository").
#
# The repository a check looks at is the agent's: its .git/config may name a program for git
# to run (core.fsmonitor, a clean/smudge filter, a textconv, diff.external, core.pager,
# core.sshCommand, credential helpers, gpg.program with log.showSignature, ...), include
# another file, and .git/hooks may hold more. This git reads the same objects and refs
# through a shadow git directory whose config is written anew: only the format version and
# the known extensions, each read by its own name and kept only if its value is a plain
# word (a value holding a newline once smuggled a [filter] section into the copy), so
# nothing of the agent's runs. No system or global config is read (the agent may have
# written /etc/gitconfig in a container it owned as root), no replace refs and no grafts
# (they make `git diff HEAD` see another tree). The index is rebuilt from the agent's
# entries (path, mode, blob, stage) alone: no skip-worktree or assume-unchanged flag, and no
# stat data, so every tracked file is compared by content (a rewritten test hidden by
# `update-index --skip-worktree`, or behind a forged stat cache, shows as changed). It needs
# no safe.directory: the shadow directory is the check's own (an explicit GIT_DIR), so git's
# ownership check, which protects from repositories of other users, is never switched off.
# Writes (an index refresh) land in the shadow directory, never in the agent's repository.
#
# Usage: exactly like git. The real git is REAL_GIT (filled in by proctor), else the next git
# on PATH after this one.
real=REAL_GIT
if [ ! -x "$real" ]; then
    real=$(IFS=:; for d in $PATH; do
        [ "$d" != "${0%/*}" ] && [ -x "$d/git" ] && { echo "$d/git"; break; }; done)
    [ -n "$real" ] || { echo "git: not found" >&2; exit 127; }
fi

# Where git would look: -C options, else the current directory; GIT_DIR/--git-dir if given.
dir=$PWD
gitdir=${GIT_DIR:-}
worktree=${GIT_WORK_TREE:-}
skip=
for arg in "$@"; do
    if [ -n "$skip" ]; then
        [ "$skip" = C ] && dir=$(cd "$dir" 2>/dev/null && cd "$arg" 2>/dev/null && pwd -P)
        skip=
        continue
    fi
    case $arg in
        -C) skip=C ;;
        -c) skip=c ;;
        --git-dir=*) gitdir=${arg#--git-dir=} ;;
        --work-tree=*) worktree=${arg#--work-tree=} ;;
        --namespace=*|--exec-path*|--no-pager|--paginate|-p|-P|--bare|--no-replace-objects|\
        --literal-pathspecs|--glob-pathspecs|--noglob-pathspecs|--icase-pathspecs|\
        --no-optional-locks|--html-path|--man-path|--info-path|--super-prefix=*|\
        --config-env=*|--list-cmds=*|--attr-source=*) ;;
        *) break ;;
    esac
done
[ -n "$dir" ] || dir=$PWD

# The repository git would find from $dir (a .git directory, or a .git file naming one).
if [ -z "$gitdir" ]; then
    d=$dir
    while :; do
        if [ -d "$d/.git" ]; then
            gitdir=$d/.git
            break
        elif [ -f "$d/.git" ]; then
            line=$(head -c 4096 "$d/.git" 2>/dev/null | head -n 1)
            case $line in
                "gitdir: /"*) gitdir=${line#gitdir: } ;;
                "gitdir: "*) gitdir=$d/${line#gitdir: } ;;
            esac
            break
        fi
        [ "$d" = / ] && break
        d=$(dirname "$d")
    done
    [ -n "$gitdir" ] && [ -z "$worktree" ] && worktree=$d
fi

# Only proctor's own settings: no system or global config (not even a ~/.gitconfig written
# during the check), none passed in the environment, no program named by a variable.
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_SYSTEM=/dev/null
unset GIT_CONFIG GIT_CONFIG_PARAMETERS GIT_CONFIG_COUNT GIT_EXTERNAL_DIFF GIT_PAGER \
    GIT_EDITOR GIT_SEQUENCE_EDITOR GIT_SSH GIT_SSH_COMMAND GIT_ASKPASS GIT_PROXY_COMMAND \
    GIT_EXEC_PATH GIT_TEMPLATE_DIR

# No repository: git may still run (init, clone, --version); it reads no repository config.
if [ -z "$gitdir" ] || [ ! -d "$gitdir" ]; then
    exec "$real" -c core.fsmonitor=false -c core.hooksPath=/dev/null "$@"
fi
case $gitdir in /*) ;; *) gitdir=$(cd "$dir" && cd "$gitdir" && pwd -P) ;; esac

# One shadow per repository per check, in the check's own temp directory.
shadow_of() {
    key=$(printf '%s' "$1" | cksum | cut -d ' ' -f 1)
    echo "${TMPDIR:-/tmp}/.proctor-git/$key"
}

# A config value kept in the shadow: one plain word, nothing git or a shell could read as more.
plain() {
    case $1 in ''|*[!A-Za-z0-9._-]*) return 1 ;; esac
}

make_shadow() {  # $1: a real git directory; prints its shadow (made once)
    src=$1
    dst=$(shadow_of "$src")
    if [ ! -d "$dst" ]; then
        mkdir -p "${TMPDIR:-/tmp}/.proctor-git" || return 1
        tmp=$dst.$$
        rm -rf "$tmp"
        mkdir "$tmp" || return 1
        for entry in "$src"/* "$src"/.[!.]*; do
            [ -e "$entry" ] || [ -L "$entry" ] || continue
            name=${entry##*/}
            case $name in
                config|config.worktree|hooks|commondir|index|index.lock) ;;
                HEAD) cp "$entry" "$tmp/HEAD" ;;  # git reads a HEAD symlink as a symref
                *) ln -s "$entry" "$tmp/$name" ;;
            esac
        done
        if [ -f "$src/commondir" ]; then  # a linked worktree: shadow the common directory
            common=$(head -n 1 "$src/commondir")
            case $common in /*) ;; *) common=$src/$common ;; esac
            printf '%s\n' "$(make_shadow "$common")" > "$tmp/commondir"
        fi
        version=$("$real" config --file "$src/config" --get core.repositoryformatversion \
                  2>/dev/null)
        plain "$version" || version=0
        printf '[core]\n\trepositoryformatversion = %s\n\tbare = false\n' "$version" \
            > "$tmp/config"
        for ext in objectformat compatobjectformat refstorage preciousobjects partialclone \
                   noop noop-v1; do
            value=$("$real" config --file "$src/config" --get "extensions.$ext" 2>/dev/null)
            plain "$value" && printf '[extensions]\n\t%s = %s\n' "$ext" "$value" \
                >> "$tmp/config"
        done
        if [ -f "$src/index" ]; then  # entries only: no flags, no stat data (see the top)
            GIT_INDEX_FILE=$src/index "$real" --git-dir="$tmp" ls-files -s -z 2>/dev/null |
                GIT_INDEX_FILE=$tmp/index "$real" --git-dir="$tmp" update-index -z \
                    --index-info 2>/dev/null
        fi
        mv "$tmp" "$dst" 2>/dev/null || rm -rf "$tmp"
    fi
    echo "$dst"
}

shadow=$(make_shadow "$gitdir") || { echo "git: cannot read $gitdir safely" >&2; exit 128; }
export GIT_DIR="$shadow"
[ -n "$worktree" ] && export GIT_WORK_TREE="$worktree"
export GIT_NO_REPLACE_OBJECTS=1 GIT_GRAFT_FILE="$shadow/no-grafts"
exec "$real" -c core.fsmonitor=false -c core.hooksPath=/dev/null -c core.pager=cat \
    -c core.untrackedCache=false "$@"
