#!/usr/bin/env bash
# The main job: a local cluster (API server, OVN NB/SB + northd, scheduler, kubelet and
# EndpointSlice stand-ins, the ovnk cluster manager and zone controller) with the workshop's
# user-defined networks applied, then what ovnk made of them: NADs, allocations, the OVN
# topology, the reachability matrix from ovn-trace and, with the real dataplane (root, OVS),
# real pings between pods.  The cluster keeps running afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$PWD/.venv/bin
DIR=${OVNK_DIR:-.ovnk}
KUBECTL="kubectl --kubeconfig $DIR/kubeconfig"
# ovn-nbctl of the OVN the cluster runs (ovnk local up writes which to DIR/ovn-install)
nbctl() {
  OVNK_OVN=$(cat "$DIR/ovn-install") "$BIN/python" -m ovnk_core.ovn.install exec ovn-nbctl \
    --db="unix:$(cd "$DIR" && pwd)/ovn/nb.sock" "$@"
}

echo "== plugins"
$BIN/ovnk plugins --check --enable-multi-network --enable-network-segmentation \
  --gateway-v4-masquerade-subnet 169.254.0.0/17
echo
echo "== ovnk local up --dir $DIR"
$BIN/ovnk local down --dir "$DIR" >/dev/null 2>&1 || true
# a fresh cluster each time (the stored objects of a last run would collide); only an
# ovnk local directory is removed
if [ -e "$DIR/cluster.json" ]; then rm -rf "$DIR"; fi
$BIN/ovnk local up --dir "$DIR" --nodes 2 --enable-persistent-ips
$BIN/ovnk local status --dir "$DIR"
echo
echo "== kubectl apply -f examples/workshop (namespaces, then UDNs)"
$KUBECTL apply -f examples/workshop/00-namespaces.yaml
$KUBECTL apply -f examples/workshop/10-networks.yaml
for ns in blue green teal; do
  $KUBECTL wait --for=condition=NetworkCreated --timeout=60s -n "$ns" udn --all >/dev/null
done
echo
echo "== user-defined networks and their conditions"
for ns in blue green teal; do
  $KUBECTL get udn -n "$ns" -o \
    jsonpath='{range .items[*]}{.metadata.namespace}/{.metadata.name}: {range .status.conditions[*]}{.type}={.status} ({.reason}){end}{"\n"}{end}'
done
echo
echo "== NetworkAttachmentDefinitions rendered by the cluster manager"
for ns in blue green teal; do
  $KUBECTL get net-attach-def -n "$ns" -o jsonpath='{range .items[*]}{.metadata.namespace}/{.metadata.name}: {.spec.config}{"\n"}{end}'
done
echo
echo "== node subnets per network (k8s.ovn.org/node-subnets)"
$KUBECTL get nodes -o jsonpath='{range .items[*]}{.metadata.name}: {.metadata.annotations.k8s\.ovn\.org/node-subnets}{"\n"}{end}'
echo
echo "== pods and their networks (k8s.ovn.org/pod-networks)"
$KUBECTL apply -f examples/workshop/20-pods.yaml
for ns in blue green teal; do
  $KUBECTL wait --for=condition=Ready --timeout=60s -n "$ns" pod --all >/dev/null
done
$KUBECTL get pods -A -o wide -l network
for pod in blue/blue blue/blue1 green/green green/green1 teal/teal teal/teal1; do
  echo "$pod: $($KUBECTL get pod -n "${pod%/*}" "${pod#*/}" -o jsonpath='{.metadata.annotations.k8s\.ovn\.org/pod-networks}')"
done
echo "(teal reuses blue's CIDR: overlapping pod IPs in separate networks)"
echo
echo "== reachability (ovn-trace: is a packet from each pod delivered to each other pod?)"
$BIN/ovnk reachability --config "$DIR/ovnk.toml" -n blue -n green -n teal --wait 60 \
  --output "$DIR/reachability.svg"
echo
if $BIN/ovnk local exec --dir "$DIR" -n blue blue -- true 2>/dev/null; then
  echo "== real packets: kubectl exec -n blue blue -- ping (each node runs its own OVS +"
  echo "   ovn-controller; each pod is a network namespace wired by the node agent)"
  udn_ip() {  # the primary-network IP of a pod, from its k8s.ovn.org/pod-networks
    $KUBECTL get pod -n "$1" "$2" -o jsonpath='{.metadata.annotations.k8s\.ovn\.org/pod-networks}' |
      $BIN/python -c 'import json,sys; n=json.load(sys.stdin); print(next(e["ip_addresses"][0].split("/")[0] for e in n.values() if e["role"]=="primary"))'
  }
  for target in blue/blue1 green/green teal/teal1; do
    ip=$(udn_ip "${target%/*}" "${target#*/}")
    if $KUBECTL exec -n blue blue -- ping -c 3 -i 0.2 -W 1 -q "$ip" >/dev/null 2>&1; then
      verdict="replies (same network)"
    else
      verdict="no reply (isolated)"
    fi
    printf '  blue/blue -> %-12s %-15s %s\n' "$target" "$ip" "$verdict"
  done
  verdict="no reply"
  for _ in 1 2 3 4 5; do  # the gateway flows follow ovn-controller's patch ports within seconds
    if $KUBECTL exec -n blue blue -- ping -c 3 -i 0.2 -W 1 -q 172.18.255.254 >/dev/null 2>&1; then
      verdict="replies (through the node's gateway; the external host sees the node IP)"
      break
    fi
  done
  printf '  blue/blue -> %-12s %-15s %s\n' "external" "172.18.255.254" "$verdict"
  echo "  try: $KUBECTL exec -n blue blue -- ping -c 2 <ip>"
  echo
  echo "== isolation on the default network (examples/workshop/40-isolation.yaml): blue/web"
  echo "   keeps its default interface only for its kubelet, which probes it over HTTP"
  $KUBECTL apply -f examples/workshop/40-isolation.yaml >/dev/null
  $KUBECTL wait --for=condition=Ready --timeout=90s -n plain pod client >/dev/null
  if $KUBECTL wait --for=condition=Ready --timeout=90s -n blue pod web >/dev/null; then
    echo "  blue/web is Ready: its HTTP readiness probe came from the node's kubelet cgroup"
  else
    echo "  blue/web is NOT Ready"
  fi
  web_ip=$($KUBECTL get pod -n blue web -o jsonpath='{.status.podIP}')
  client_ip=$($KUBECTL get pod -n plain client -o jsonpath='{.status.podIP}')
  fetch() {  # fetch <ns> <pod> <url> [curl options]: what answers, or that nothing did
    local out
    if out=$($KUBECTL exec -n "$1" "$2" -- curl -sS --max-time 2 "${@:4}" "$3" 2>&1); then
      echo "answers: $out"
    else
      case "$out" in *"timed out"*) echo "no answer (dropped)";; *) echo "$out";; esac
    fi
  }
  printf '  plain/client -> blue/web %s:8080 (default network)  %s\n' "$web_ip" \
    "$(fetch plain client "http://$web_ip:8080/hostname")"
  printf '  blue/web -> plain/client %s:8080 over eth0          %s\n' "$client_ip" \
    "$(fetch blue web "http://$client_ip:8080/hostname" --interface eth0)"
  node_netns=$(ip netns list | awk '{print $1}' | grep -- '-ovn-worker$' | head -1 || true)
  if [ -n "$node_netns" ]; then
    if out=$(ip netns exec "$node_netns" curl -sS --max-time 2 "http://$web_ip:8080/hostname" 2>&1); then
      verdict="answers: $out"
    else
      verdict="no answer (dropped: not the kubelet)"
    fi
    printf '  host process on ovn-worker -> blue/web (outside the kubelet cgroup)  %s\n' "$verdict"
    echo "  the node's rules (nft list chain inet ovn-kubernetes udn-isolation):"
    ip netns exec "$node_netns" nft list chain inet ovn-kubernetes udn-isolation | sed 's/^/    /'
  fi
  $KUBECTL annotate --overwrite pod -n blue web \
    'k8s.ovn.org/open-default-ports=- protocol: tcp
  port: 8080' >/dev/null
  verdict="no answer"
  for _ in $(seq 1 20); do  # the zone's ACL and the node's set follow within a second or two
    verdict=$(fetch plain client "http://$web_ip:8080/hostname")
    case "$verdict" in answers*) break;; esac
    sleep 0.5
  done
  echo "  with k8s.ovn.org/open-default-ports tcp/8080 on blue/web:"
  printf '    plain/client -> blue/web :8080  %s\n' "$verdict"
  printf '    plain/client -> blue/web :9090  %s\n' \
    "$(fetch plain client "http://$web_ip:9090/")"
  echo "  the same from ovn-trace, each blue pod also at its default-network interface (@default):"
  $BIN/ovnk reachability --config "$DIR/ovnk.toml" -n blue -n plain --default-network \
    --protocol tcp --port 8080 --wait 30 | sed 's/^/  /'
  echo
  echo "== Layer2 with persistent IPs (examples/workshop/50-layer2-vm.yaml): one subnet across"
  echo "   the nodes; a VM's pod moves to the other node and keeps its IP (its IPAMClaim holds it)"
  $KUBECTL apply -f examples/workshop/50-layer2-vm.yaml >/dev/null
  $KUBECTL wait --for=condition=Ready --timeout=90s -n vms pod --all >/dev/null
  vm_ip=$(udn_ip vms virt-launcher-vm1-a)
  ping_vm() {
    for _ in 1 2 3 4 5; do
      if $KUBECTL exec -n vms peer -- ping -c 3 -i 0.2 -W 1 -q "$vm_ip" >/dev/null 2>&1; then
        echo "replies"; return
      fi
    done
    echo "no reply"
  }
  printf '  vms/virt-launcher-vm1-a on %s: %s; vms/peer (ovn-worker) -> it: %s\n' \
    "$($KUBECTL get pod -n vms virt-launcher-vm1-a -o jsonpath='{.spec.nodeName}')" "$vm_ip" \
    "$(ping_vm)"
  echo "  IPAMClaim vms/vm1: $($KUBECTL get ipamclaim -n vms vm1 -o jsonpath='{.status.ips} owner={.status.ownerPod.name} {range .status.conditions[*]}{.type}={.status} ({.reason}){end}')"
  $KUBECTL delete pod -n vms virt-launcher-vm1-a --wait=true >/dev/null
  $KUBECTL apply -f examples/workshop/51-layer2-vm-migrated.yaml >/dev/null
  $KUBECTL wait --for=condition=Ready --timeout=90s -n vms pod virt-launcher-vm1-b >/dev/null
  printf '  migrated: vms/virt-launcher-vm1-b on %s: %s; vms/peer -> it: %s\n' \
    "$($KUBECTL get pod -n vms virt-launcher-vm1-b -o jsonpath='{.spec.nodeName}')" \
    "$(udn_ip vms virt-launcher-vm1-b)" "$(ping_vm)"
  echo "  the network's topology: $BIN/ovnk show network vms/vm-network --config $DIR/ovnk.toml"
  echo
  echo "== Localnet (examples/workshop/60-localnet.yaml): a pod on the physical network physnet1,"
  echo "   VLAN 10, beside its host 10.100.10.254 (each node's br-physnet1, mapped by the admin)"
  $KUBECTL apply -f examples/workshop/60-localnet.yaml >/dev/null
  $KUBECTL wait --for=condition=Ready --timeout=90s -n radio pod radio >/dev/null
  radio_ip=$($KUBECTL get pod -n radio radio -o jsonpath='{.metadata.annotations.k8s\.ovn\.org/pod-networks}' \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["radio/physnet1-vlan10"]["ip_addresses"][0])')
  verdict="no reply"
  for _ in 1 2 3 4 5; do
    if $KUBECTL exec -n radio radio -- ping -c 1 -W 1 -q 10.100.10.254 >/dev/null 2>&1; then
      verdict="replies"; break
    fi
  done
  printf '  radio/radio (phys0 %s) -> host 10.100.10.254 on VLAN 10: %s\n' "$radio_ip" "$verdict"
  echo "  its NB switch and localnet port:"
  nbctl --columns=name,type,options,tag_request \
    find Logical_Switch_Port 'name="cluster_udn_physnet1.vlan10_ovn_localnet_port"' | sed 's/^/    /'
  echo
fi
echo "== the OVN topology ovnk rendered for the blue network (ovnk show network)"
$BIN/ovnk show network blue/blue-network --config "$DIR/ovnk.toml"
echo
echo "== a Service in blue: default EndpointSlice (default-network IPs) and its mirror (blue IPs)"
$KUBECTL apply -f examples/workshop/30-service.yaml
$KUBECTL wait --for=condition=Ready --timeout=90s -n blue pod web-a web-b >/dev/null || true
for _ in $(seq 1 100); do
  mirrored=$($KUBECTL get endpointslice -n blue \
    -l endpointslice.kubernetes.io/managed-by=endpointslice-mirror-controller.k8s.ovn.org \
    -o jsonpath='{range .items[*].endpoints[*]}{.addresses[0]}{" "}{end}' | wc -w)
  [ "$mirrored" -ge 2 ] && break
  sleep 0.2
done
$KUBECTL get endpointslice -n blue -o custom-columns='NAME:.metadata.name,MANAGED-BY:.metadata.labels.endpointslice\.kubernetes\.io/managed-by,ADDRESSES:.endpoints[*].addresses[0]'
echo
echo "== its OVN load balancer: in blue's clusterLBGroup, over the blue addresses"
cluster_ip=$($KUBECTL get service -n blue web -o jsonpath='{.spec.clusterIP}')
for _ in $(seq 1 50); do
  lb=$(nbctl --bare --columns=vips find Load_Balancer \
    'name="blue_blue.network_Service_blue/web_TCP_cluster"' 2>/dev/null || true)
  case "$lb" in *,*) break;; esac
  sleep 0.2
done
echo "  blue_blue.network_Service_blue/web_TCP_cluster: $lb"
if $BIN/ovnk local exec --dir "$DIR" -n blue blue -- true 2>/dev/null; then
  answers=""
  for _ in $(seq 1 8); do
    out=$($KUBECTL exec -n blue blue -- curl -sS --max-time 2 "http://$cluster_ip/hostname" 2>/dev/null) \
      && answers="$answers $out"
  done
  echo "  blue/blue -> web ClusterIP $cluster_ip: answered by:$(echo "$answers" | tr ' ' '\n' | sort -u | tr '\n' ' ')"
  if $KUBECTL exec -n green green -- curl -sS --max-time 2 "http://$cluster_ip/hostname" >/dev/null 2>&1; then
    echo "  green/green -> the same ClusterIP: ANSWERS (not isolated!)"
  else
    echo "  green/green -> the same ClusterIP: no answer (blue's service lives in blue only)"
  fi
fi
echo
echo "== an invalid UDN is rejected at apply time"
$KUBECTL apply -f examples/workshop/90-invalid.yaml || true
echo
echo "== who may do what: every process runs as its own identity, RBAC decides"
$KUBECTL auth whoami
for who in system:serviceaccount:ovn-kubernetes:ovnkube-cluster-manager \
           system:serviceaccount:ovn-kubernetes:ovnkube-controller; do
  printf '  %-58s exec into pods: %-3s delete namespaces: %s\n' "$who" \
    "$($KUBECTL auth can-i create pods --subresource=exec -A --as "$who" 2>/dev/null || true)" \
    "$($KUBECTL auth can-i delete namespaces -A --as "$who" 2>/dev/null || true)"
done
echo "== a developer with edit rights in blue tries to forge k8s.ovn.org/pod-networks"
$KUBECTL create serviceaccount dev -n blue >/dev/null 2>&1 || true
$KUBECTL create rolebinding dev-edits --clusterrole=edit --serviceaccount=blue:dev -n blue \
  >/dev/null 2>&1 || true
$KUBECTL annotate pod blue1 -n blue --overwrite --as system:serviceaccount:blue:dev \
  'k8s.ovn.org/pod-networks={"default":{"ip_addresses":["10.244.0.9/24"]}}' || true
echo
echo "The cluster is still running:  $KUBECTL get udn -A"
echo "Stop it with:                  $BIN/ovnk local down --dir $DIR"
