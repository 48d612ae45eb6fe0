#!/usr/bin/env bash
# The whole lifecycle on a local pod: the TPU API emulator with its Docker backend, a pod
# provisioned through the API (one container per worker), site.yml, verify and status.
#
#   tools/demo.sh up      set everything up and bootstrap the pod (DEMO_TYPE, default v4-32)
#   tools/demo.sh ssh     log in to worker 0 (or: tools/demo.sh ssh demo-w1)
#   tools/demo.sh env     print the environment to use ansible-playbook by hand
#   tools/demo.sh down    delete the pod and stop the emulator (and its bucket service)
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
demo=${DEMO_DIR:-$repo/.demo}
port=${DEMO_PORT:-8470}
type=${DEMO_TYPE:-v4-32}
name=${DEMO_NAME:-demo}
zone=${DEMO_ZONE:-us-central2-b}
project="demo-project"
bin=$repo/.venv/bin

step() { printf '\n==> %s\n' "$*"; }

demo_env() {
  export PATH="$bin:$PATH"
  export ANSIBLE_CONFIG="$repo/ansible.cfg"
  export CLOUDTPU_API_ENDPOINT="http://127.0.0.1:$port/v2"
  export CLOUDTPU_PROJECT=$project CLOUDTPU_ZONES=$zone
  export GCP_AUTH_KIND=accesstoken GCP_ACCESS_TOKEN=demo-token
  export ANSIBLE_REMOTE_USER=tpu
  export ANSIBLE_PRIVATE_KEY_FILE="$demo/id_ed25519"
  # Host keys are checked, against a known_hosts file of the demo's own.
  export ANSIBLE_SSH_COMMON_ARGS="-o UserKnownHostsFile=$demo/known_hosts"
  # The playbooks then need no -i: the same commands as on GCP with ANSIBLE_INVENTORY set.
  export ANSIBLE_INVENTORY="$repo/inventories/demo"
  # Facts of this demo's workers, kept apart from every other pod's: host names repeat across
  # demos and inventories (demo-w0), and a fact cache shared by two pods hands one the other's.
  export ANSIBLE_CACHE_PLUGIN_CONNECTION="$demo/facts"
  # What the playbooks record on this machine (the SSH config files written, for refreshes)
  # stays with this demo too: every demo's block is named after the same inventory.
  export CLOUDTPU_STATE_DIR="$demo/state"
  # This demo's folder and port, for ssh -F "$DEMO_DIR/ssh_config" and make demo-down.
  export DEMO_DIR="$demo" DEMO_PORT="$port"
  # The bucket service tools/emulator.sh runs beside the TPU API, as the workers reach it: the
  # storage role's endpoint in inventories/demo/group_vars/all.yml.
  export DEMO_STORAGE_ENDPOINT="http://host.docker.internal:$port/storage/v1/"
}

playbook() {
  ansible-playbook -i inventories/demo "$@"
}

up() {
  mkdir -p "$demo"
  step "toolchain, Docker daemon and worker image"
  make --no-print-directory setup image
  demo_env
  if [ ! -f "$demo/id_ed25519" ]; then
    ssh-keygen -q -t ed25519 -N '' -C "tpu@cloudtpu-demo" -f "$demo/id_ed25519"
  fi
  touch "$demo/known_hosts"

  step "TPU API emulator (Docker backend) on port $port, and its bucket service"
  tools/emulator.sh start "$demo" "$port"

  step "provision $name ($type) through the API: one container per worker"
  playbook playbooks/provision.yml \
    -e tpu_provision_name="$name" -e tpu_provision_zone="$zone" \
    -e tpu_provision_project="$project" -e tpu_provision_accelerator_type="$type" \
    -e tpu_provision_ssh_user=tpu -e tpu_provision_ssh_public_key_file="$demo/id_ed25519.pub" \
    -e tpu_provision_known_hosts="$demo/known_hosts" -e tpu_provision_poll_interval=1

  step "the pod as the inventory sees it"
  ansible-inventory -i inventories/demo --graph

  step "bootstrap: site.yml (Python 3.10 from the image's own apt repository, as on a TPU VM)"
  playbook site.yml

  step "verify: devices and framework, on all workers at once"
  playbook playbooks/verify.yml

  step "status"
  playbook playbooks/status.yml

  # User, key and known_hosts file are the ones Ansible connects with (the environment above);
  # recover.yml rewrites this file when the workers' addresses change.
  step "SSH config for the workers ($demo/ssh_config)"
  playbook playbooks/ssh_config.yml -e tpu_ssh_config_path="$demo/ssh_config"

  cat <<MSG

The demo pod is up. Look inside:
  make demo-ssh                       ssh to $name-w0 (tools/demo.sh ssh $name-w1 for another)
  ssh -F $demo/ssh_config $name-w0    the generated SSH config, one Host per worker
  eval "\$(tools/demo.sh env)"        then ansible-playbook -i inventories/demo playbooks/run.yml -e cmd=hostname
Stop it:
  make demo-down
MSG
}

case "${1:-up}" in
  up) up ;;
  env)
    demo_env
    for v in PATH ANSIBLE_CONFIG CLOUDTPU_API_ENDPOINT CLOUDTPU_PROJECT CLOUDTPU_ZONES GCP_AUTH_KIND \
      GCP_ACCESS_TOKEN ANSIBLE_REMOTE_USER ANSIBLE_PRIVATE_KEY_FILE ANSIBLE_SSH_COMMON_ARGS \
      ANSIBLE_INVENTORY ANSIBLE_CACHE_PLUGIN_CONNECTION CLOUDTPU_STATE_DIR DEMO_DIR DEMO_PORT \
      DEMO_STORAGE_ENDPOINT; do
      printf 'export %s=%q\n' "$v" "${!v}"
    done
    ;;
  ssh)
    exec ssh -F "$demo/ssh_config" "${2:-$name-w0}"
    ;;
  down)
    demo_env
    if [ -f "$demo/emulator.pid" ]; then
      step "teardown $name"
      playbook playbooks/teardown.yml -e tpu_teardown_confirm=true -e tpu_provision_name="$name" \
        -e tpu_provision_zone="$zone" -e tpu_provision_project="$project" || true
    fi
    step "stop the emulator"
    tools/emulator.sh stop "$demo"
    ;;
  *)
    echo "usage: $0 up|ssh [host]|env|down" >&2
    exit 2
    ;;
esac
