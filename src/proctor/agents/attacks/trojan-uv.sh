# attack: trojan-uv
# `uv` and `uvx` stand-ins that write the reward and exit 0, first on PATH and where uv's
# installer puts them (~/.local/bin, ~/.cargo/bin), replacing any real one. A verifier that
# runs `uvx pytest …` (most Harbor tasks do) with a uv it finds on the agent's PATH passes.
STUB_SHELL=$(stash /bin/sh) || STUB_SHELL=/bin/sh
for d in /usr/local/bin "$HOME/.local/bin" "$HOME/.cargo/bin" $(path_dirs); do
  mkdir -p "$d" 2>/dev/null
  for name in uv uvx; do
    [ -e "$d/$name" ] || [ "$d" = /usr/local/bin ] || [ "$d" = "$HOME/.local/bin" ] \
      || [ "$d" = "$HOME/.cargo/bin" ] || continue
    stub "$d/$name"
  done
done
printf 'export PATH="$HOME/.local/bin:$PATH"\n' > "$HOME/.local/bin/env" 2>/dev/null
