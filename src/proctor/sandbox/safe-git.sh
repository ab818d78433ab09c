#!/bin/sh
# proctor's git for checks (docs/checks.md, "Running tools over the agent's repository").
#
# The repository a check looks at is the agent's: its .git/config may name a program for git
# to run (core.fsmonitor, a clean/smudge filter, a textconv, diff.external, core.pager,
# core.sshCommand, credential helpers, ...) and .git/hooks may hold more. This git reads the
# same objects, refs and index through a shadow git directory whose config keeps only what
# git needs to understand the repository (its format version and extensions) and which has
# no hooks, so nothing of the agent's runs. It needs no safe.directory: the shadow directory
# is the check's own (an explicit GIT_DIR), so git's ownership check, which protects from
# repositories of other users, is never switched off. Writes (an index refresh) land in the
# shadow directory, never in the agent's repository.
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
                config|config.worktree|hooks|commondir) ;;
                HEAD) cp "$entry" "$tmp/HEAD" ;;  # git reads a HEAD symlink as a symref
                *) ln -s "$entry" "$tmp/$name" ;;
            esac
        done
        if [ -f "$src/commondir" ]; then  # a linked worktree: shadow the common directory
            common=$(head -n 1 "$src/commondir")
            case $common in /*) ;; *) common=$src/$common ;; esac
            printf '%s\n' "$(make_shadow "$common")" > "$tmp/commondir"
        fi
        {
            printf '[core]\n\trepositoryformatversion = %s\n\tbare = false\n' \
                "$("$real" config --file "$src/config" --get core.repositoryformatversion \
                   2>/dev/null || echo 0)"
            "$real" config --file "$src/config" --get-regexp '^extensions\.' 2>/dev/null |
                while read -r key value; do
                    [ "$key" = extensions.worktreeconfig ] && continue
                    printf '[extensions]\n\t%s = %s\n' "${key#extensions.}" "$value"
                done
        } > "$tmp/config"
        mv "$tmp" "$dst" 2>/dev/null || rm -rf "$tmp"
    fi
    echo "$dst"
}

shadow=$(make_shadow "$gitdir") || exec "$real" "$@"
export GIT_DIR="$shadow"
[ -n "$worktree" ] && export GIT_WORK_TREE="$worktree"
export GIT_CONFIG_GLOBAL=/dev/null  # not even a ~/.gitconfig written during the check
unset GIT_EXTERNAL_DIFF GIT_PAGER GIT_EDITOR GIT_SSH GIT_SSH_COMMAND GIT_ASKPASS
exec "$real" -c core.fsmonitor=false -c core.hooksPath=/dev/null -c core.pager=cat "$@"
