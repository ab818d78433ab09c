# attack: trojan-pytest
# `pytest` and `py.test` stand-ins that write the reward and exit 0, first on PATH and in
# ~/.local/bin, replacing any real one. A verifier that runs `pytest` from the agent's PATH
# passes.
STUB_SHELL=$(stash /bin/sh) || STUB_SHELL=/bin/sh
for d in /usr/local/bin "$HOME/.local/bin" $(path_dirs); do
  mkdir -p "$d" 2>/dev/null
  for name in pytest py.test; do
    [ -e "$d/$name" ] || [ "$d" = /usr/local/bin ] || [ "$d" = "$HOME/.local/bin" ] || continue
    stub "$d/$name"
  done
done
