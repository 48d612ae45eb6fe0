#!/usr/bin/env bash
# The shell way of setting up a TPU VM worker, as the tpu-starter guide's setup script does it
# (run on every worker at once through `gcloud ... ssh --worker=all --command`), adapted to the
# benchmark's Debian 12 workers. bench/bootstrap/run.py pipes it into one ssh per worker, in
# parallel, as the login user.
#
# Kept from the guide: the apt package list (golang neofetch zsh mosh byobu aria2), the login
# shell, the time zone, a venv in the home folder, pip and wheel upgraded, jax[tpu] installed.
# Left out, because they cannot run on these workers (and left out of the Ansible side too):
#   - apt-get upgrade (a full upgrade of the image; not reproducible between runs)
#   - the deadsnakes PPA and python3.10 (Ubuntu only; Debian 12 ships Python 3.11, which is used)
#   - the oh-my-zsh installer (a script downloaded from the internet and run)
#   - the extra find-links page for libtpu (jax[tpu] now takes libtpu from the package index)
# Added, so that it works on a bare Debian image: python3-venv (Ubuntu images have it).
#
# Environment: BENCH_JAX_VERSION (the jax release, as the Ansible side pins it), BENCH_TIMEZONE,
# BENCH_PYTHON (python3.11 here; python3.10 on a TPU VM).
set -euo pipefail

jax_version=${BENCH_JAX_VERSION:-0.10.2}
timezone=${BENCH_TIMEZONE:-Asia/Hong_Kong}
python=${BENCH_PYTHON:-python3.11}
venv=$HOME/.venv$(echo "${python#python}" | tr -d .)

# Show that the script runs on the worker
uname -a

# Common packages
export DEBIAN_FRONTEND=noninteractive
sudo -E apt-get update -y -qq
sudo -E apt-get install -y -qq golang neofetch zsh mosh byobu aria2 python3-venv >/dev/null

# Login shell and time zone
sudo chsh "$USER" -s /usr/bin/zsh
sudo timedatectl set-timezone "$timezone"

# The venv (created once; the guide's `python -m venv` on an existing venv only refreshes it)
"$python" -m venv "$venv"
# shellcheck disable=SC1091
. "$venv/bin/activate"

# jax with TPU support
pip install -q --disable-pip-version-check -U pip
pip install -q --disable-pip-version-check -U wheel
pip install -q --disable-pip-version-check -U "jax[tpu]==$jax_version"
python -c 'import jax; print("jax", jax.__version__)'
