# SPDX-License-Identifier: Apache-2.0
# scripts/testbed, part: The testbed's own bridge: its config (with SKB_TESTBED_BRIDGE_CONFIG merged over it) and its
# process.
# Sourced by scripts/testbed after its settings (D, N, ports, LOGS, PIDS, BIN), never run.

write_bridge_config() {
  mkdir -p "$D/bridge"
  local out="$D/bridge/config.json"
  cat >"$out" <<EOF
{
  "logging": {"level": "info", "format": "text"},
  "kubernetes": {"kubeconfig": "$KUBECONFIG_FILE", "namespace": "slurm-bridge"},
  "slurm": {"conf": "$SLURM_CONF_FILE", "poll_interval": "200ms"},
  "server": {"socket_path": "$BRIDGE_SOCKET", "http_address": "127.0.0.1:$BRIDGE_HTTP_PORT"},
  "admission": {"preemptible_partitions": ["gpu"]},
  "lending": {"enabled": true, "default_grace": "10s", "cooldown": "15s",
              "min_lend_time": "10s", "class_upgrade_delay": "2s",
              "class_downgrade_delay": "10s", "reservation_update_interval": "5s"}
}
EOF
  if [[ -n "$MIG_NODE" ]]; then
    # The MIG node's GRES files (docs/gpu-granular.md): which slice each GRES index is.
    jq --arg n "$MIG_NODE" --slurpfile f "$D/mig-gres-files.json" \
      '.gpu_sharing.gres_files[$n] = $f[0]' "$out" >"$out.tmp" ||
      skb_die "adding gpu_sharing.gres_files to the bridge config failed"
    mv "$out.tmp" "$out"
  fi
  merge_bridge_config "$out"
}

# merge_bridge_config FILE: merges the JSON object in SKB_TESTBED_BRIDGE_CONFIG over FILE,
# key by key (jq's `*`: objects merge recursively, anything else from the overlay replaces).
merge_bridge_config() {
  local base="$1" overlay="${SKB_TESTBED_BRIDGE_CONFIG:-}"
  [[ -n "$overlay" ]] || return 0
  [[ -r "$overlay" ]] || skb_die "SKB_TESTBED_BRIDGE_CONFIG=$overlay: no such file"
  skb_have jq || skb_die "SKB_TESTBED_BRIDGE_CONFIG needs jq (scripts/setup installs it)"
  jq -e 'type == "object"' "$overlay" >/dev/null 2>&1 ||
    skb_die "SKB_TESTBED_BRIDGE_CONFIG=$overlay: not a JSON object"
  jq -s '.[0] * .[1]' "$base" "$overlay" >"$base.tmp" ||
    skb_die "merging $overlay over the bridge config failed"
  mv "$base.tmp" "$base"
  skb_log "bridge config: $overlay merged over the testbed's ($base)"
}


bridge_ok() { is_running bridge; }

start_bridge() {
  is_running bridge && return 0
  skb_step testbed/bridge
  local exe="$SKB_BUILD_DIR/bridge/slurm-k8s-bridge"
  if [[ ! -x "$exe" && "$SLURM_RELEASE" != 22.05 ]]; then
    skb_die "the bridge is not built ($exe missing): build it in Slurm $SLURM_RELEASE's root (SKB_TESTBED_SLURM=$SLURM_RELEASE scripts/testbed exec bash -c 'cmake -S . -B $SKB_BUILD_DIR -G Ninja && ninja -C $SKB_BUILD_DIR') or use 'up --no-bridge'; scripts/demo --slurm $SLURM_RELEASE builds it and brings the testbed up"
  fi
  [[ -x "$exe" ]] || skb_die "the bridge is not built ($exe missing): build it (cmake -S . -B build -G Ninja && ninja -C build) or use 'up --no-bridge'"
  require_port "$BRIDGE_HTTP_PORT" "the bridge's /metrics"
  write_bridge_config
  # Another release's build runs in its root, beside its libslurm and libraries.
  launch bridge "${SLURM_EXEC[@]}" "$exe" --config "$D/bridge/config.json"
  sleep 0.5
  is_running bridge || skb_die "the bridge exited at startup" "$LOGS/bridge.log"
}
