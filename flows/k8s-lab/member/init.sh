#!/bin/sh
# /sbin/init of the flow member image: what MicroK8s gets from systemd and snapd, done by
# hand. LXD mounts no cgroup hierarchies in these privileged containers, the kubelet wants
# /dev/kmsg, and containers get no NIC: the pod bridge (cni0, 10.1.0.1) is made here so the
# API server has an address pods can reach before the first pod exists. Then tini reaps
# orphans as PID 1, and a member whose cluster was set up once (the flow pushed its PKI)
# starts it again at boot, as a rebooted MicroK8s would.
set -u
mountpoint -q /sys/fs/cgroup || mount -t tmpfs -o mode=0755 cgroup /sys/fs/cgroup
for c in cpu cpuacct cpuset memory devices freezer blkio pids net_cls net_prio hugetlb perf_event; do
  mkdir -p "/sys/fs/cgroup/$c"
  mountpoint -q "/sys/fs/cgroup/$c" || mount -t cgroup -o "$c" cgroup "/sys/fs/cgroup/$c" 2>/dev/null || rmdir "/sys/fs/cgroup/$c"
done
mkdir -p /sys/fs/cgroup/systemd
mountpoint -q /sys/fs/cgroup/systemd || mount -t cgroup -o none,name=systemd cgroup /sys/fs/cgroup/systemd
[ -e /dev/kmsg ] || ln -s /dev/console /dev/kmsg
ip link set lo up
ip link show cni0 >/dev/null 2>&1 || ip link add cni0 type bridge
ip addr show dev cni0 | grep -q 'inet 10.1.0.1/' || ip addr add 10.1.0.1/16 dev cni0
ip link set cni0 up
# The member has no default route: Service IPs need one to the bridge, so that traffic
# started here (a proxy device's far end) reaches kube-proxy's DNAT in OUTPUT.
ip route replace 10.152.183.0/24 dev cni0 src 10.1.0.1
# Pods reach Services through iptables on the bridge, and their own pod IPs via the bridge.
sysctl -qw net.ipv4.ip_forward=1 net.bridge.bridge-nf-call-iptables=1 2>/dev/null || true
touch /run/flow-member-init.done
exec tini -s -- sh -c '[ -s /var/lib/k8s/pki/ca.crt ] && sh /opt/flow-member/up.sh >>/var/log/flow-member-up.log 2>&1; exec sleep infinity'
