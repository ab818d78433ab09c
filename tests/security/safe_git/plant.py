"""The hostile agent of test_safe_git.py: every `git config` key that runs a program (git
help config, git 2.39), hooks in both places, a [filter] smuggled through a newline in an
extension's value, and three ways to hide a rewritten test from `git diff` / `git status`.
Each program it names appends its key to $TMPDIR/ran.log when run (the grader's TMPDIR)."""

import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

ws = os.getcwd()
EV = os.path.join(ws, "evil")
os.makedirs(EV)


def prog(key: str) -> str:
    path = os.path.join(EV, key.replace("/", "_").replace(":", "_"))
    with open(path, "w") as f:
        f.write(f'#!/bin/sh\necho {key} >> "${{TMPDIR:-/tmp}}/ran.log"\n')
    os.chmod(path, 0o755)
    return path


def git(*args: str) -> str:
    return subprocess.run(["git", *args], check=True, capture_output=True, text=True,
                           env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1"}).stdout


def rewrite(path: str) -> None:
    """Same size, tests that always pass."""
    text = Path(path).read_text()
    new = text.replace("assertEqual(total", "assertTrue(1 or  ")
    assert len(new) == len(text) and new != text, path
    with open(path, "w") as f:
        f.write(new)


# First the index (with the repository's own config), then the config.
# 1. skip-worktree and assume-unchanged: the index flags say "do not look".
for name, flag in (("tests/test_a.py", "--skip-worktree"),
                   ("tests/test_c.py", "--assume-unchanged")):
    rewrite(name)
    git("update-index", flag, name)

# 2. a forged stat cache: the rewritten file's stat data with the original blob.
name = "tests/test_b.py"
original = git("rev-parse", f"HEAD:{name}").strip()
rewrite(name)
time.sleep(1.1)  # the index newer than the file by a whole second: not "racily clean"
git("add", name)
index = bytearray(Path(".git/index").read_bytes())
at = index.index(name.encode() + b"\0")  # the entry's name; its oid is 22 bytes before
start = at - 2 - 20
index[start:start + 20] = bytes.fromhex(original)
index[-20:] = hashlib.sha1(bytes(index[:-20])).digest()
Path(".git/index").write_bytes(bytes(index))

HOOKS = ["applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit",
         "pre-merge-commit", "prepare-commit-msg", "commit-msg", "post-commit", "pre-rebase",
         "post-checkout", "post-merge", "pre-push", "pre-receive", "update",
         "proc-receive", "post-receive", "post-update", "reference-transaction",
         "push-to-checkout", "pre-auto-gc", "post-rewrite", "sendemail-validate",
         "fsmonitor-watchman", "p4-changelist", "p4-prepare-changelist", "p4-post-changelist",
         "p4-pre-submit", "post-index-change"]
hooks_path = os.path.join(EV, "hooks")
os.makedirs(hooks_path)
for hook in HOOKS:
    os.rename(prog(f"hooksPath.{hook}"), os.path.join(hooks_path, hook))
    os.rename(prog(f"hook.{hook}"), os.path.join(ws, ".git", "hooks", hook))

with open(os.path.join(EV, "included.config"), "w") as f:
    f.write(f"[alias]\n\tinc = !{prog('include.path')}\n")
with open(os.path.join(EV, "includeif.config"), "w") as f:
    f.write(f"[alias]\n\tincif = !{prog('includeIf.path')}\n")

config = f"""[core]
\trepositoryformatversion = 1
\tbare = false
\tfsmonitor = {prog('core.fsmonitor')}
\thooksPath = {hooks_path}
\tpager = {prog('core.pager')}
\teditor = {prog('core.editor')}
\tsshCommand = {prog('core.sshCommand')}
\tgitProxy = {prog('core.gitProxy')}
\taskPass = {prog('core.askPass')}
\talternateRefsCommand = {prog('core.alternateRefsCommand')}
[extensions]
\tnoop = "x\\n[filter.y]clean={prog('smuggled.filter.clean')}"
[sequence]
\teditor = {prog('sequence.editor')}
[pager]
\tlog = {prog('pager.log')}
\tdiff = {prog('pager.diff')}
\tshow = {prog('pager.show')}
\tstatus = {prog('pager.status')}
\tblame = {prog('pager.blame')}
\tgrep = {prog('pager.grep')}
[diff]
\texternal = {prog('diff.external')}
\ttool = t
[diff "x"]
\tcommand = {prog('diff.x.command')}
\ttextconv = {prog('diff.x.textconv')}
[filter "x"]
\tclean = {prog('filter.x.clean')}
\tsmudge = {prog('filter.x.smudge')}
[filter "p"]
\tprocess = {prog('filter.p.process')}
[merge]
\ttool = t
[merge "x"]
\tdriver = {prog('merge.x.driver')}
[mergetool "t"]
\tcmd = {prog('mergetool.t.cmd')}
[difftool "t"]
\tcmd = {prog('difftool.t.cmd')}
[gpg]
\tprogram = {prog('gpg.program')}
[gpg "openpgp"]
\tprogram = {prog('gpg.openpgp.program')}
[gpg "x509"]
\tprogram = {prog('gpg.x509.program')}
[gpg "ssh"]
\tprogram = {prog('gpg.ssh.program')}
\tdefaultKeyCommand = {prog('gpg.ssh.defaultKeyCommand')}
[log]
\tshowSignature = true
[commit]
\tgpgSign = true
[tag]
\tgpgSign = true
[credential]
\thelper = {prog('credential.helper')}
[uploadpack]
\tpackObjectsHook = {prog('uploadpack.packObjectsHook')}
[remote "r"]
\turl = {ws}
\tuploadpack = {prog('remote.r.uploadpack')}
\treceivepack = {prog('remote.r.receivepack')}
[remote "s"]
\turl = ssh://example.invalid/x
[remote "g"]
\turl = git://example.invalid/x
[remote "e"]
\turl = ext::{prog('protocol.ext')}
[protocol]
\tallow = always
[trailer "t"]
\tcommand = {prog('trailer.t.command')}
\tcmd = {prog('trailer.t.cmd')}
[alias]
\tst = !{prog('alias')}
[imap]
\ttunnel = {prog('imap.tunnel')}
\tfolder = x
[web]
\tbrowser = b
[browser "b"]
\tcmd = {prog('browser.b.cmd')}
[man]
\tviewer = m
[man "m"]
\tcmd = {prog('man.m.cmd')}
[sendemail]
\tsendmailcmd = {prog('sendemail.sendmailcmd')}
[submodule "s"]
\tupdate = !{prog('submodule.update')}
[include]
\tpath = {EV}/included.config
[includeIf "gitdir:/"]
\tpath = {EV}/includeif.config
"""
with open(os.path.join(ws, ".git", "config"), "w") as f:
    f.write(config)
with open(os.path.join(ws, ".git", "info", "attributes"), "w") as f:
    f.write("* merge=x filter=x\ntests/* diff=x\np.txt filter=p\ntests/test_s.py filter=y\n")


# 3. the smuggled filter: tests/test_s.py's change is cleaned away by it (under the old copy).
rewrite("tests/test_s.py")
with open("shop/cart.py", "a") as f:  # a change outside tests/, for diff.external
    f.write("# fixed\n")
sys.exit(0)
