# Sourced by the scripts that build virtualenvs (scripts/setup-test-env.sh,
# clients/python/scripts/setup.sh): `find_python VERSION` prints the path of an interpreter of
# that version that really runs (a pyenv shim may exist without the version), or fails naming
# what to install.
find_python() {
  local version=$1 candidate
  local pyenv_root; pyenv_root=$(pyenv root 2>/dev/null || echo "${HOME}/.pyenv")
  for candidate in "$(command -v "python$version" 2>/dev/null || true)" \
                   "$pyenv_root"/versions/"$version".*/bin/"python$version" \
                   /usr/bin/"python$version" /usr/local/bin/"python$version"; do
    if [ -n "$candidate" ] && [ -x "$candidate" ] && "$candidate" -c 'pass' 2>/dev/null; then
      echo "$candidate"; return 0
    fi
  done
  echo "$(basename "$0"): no working python$version found (install CPython $version)" >&2
  return 1
}
