#!/bin/bash
# How tests/data/linux_four_flows_shared_tbf.receiver.pcap was made (root, two network namespaces):
# four iperf3 flows from one Linux host through its own 10 Mbit/s tbf with a 15 KB queue, tapped at
# the receiver's veth, then cut to its first 700 packets (editcap -F pcap -r FILE OUT 1-700).
set -e
ip netns add sa; ip netns add sb
ip link add va type veth peer name vb
ip link set va netns sa; ip link set vb netns sb
ip -n sa addr add 10.9.0.1/24 dev va; ip -n sb addr add 10.9.0.2/24 dev vb
ip -n sa link set va up; ip -n sb link set vb up
ip netns exec sa ethtool -K va tso off gso off gro off
ip netns exec sb ethtool -K vb tso off gso off gro off
ip netns exec sa tc qdisc add dev va root tbf rate 10mbit burst 3000 limit 15000
ip netns exec sb iperf3 -s -p 5301 -D
ip netns exec sb tcpdump -i vb -s 128 -w four_flows.pcap -U tcp port 5301 &
sleep 0.5
ip netns exec sa iperf3 -c 10.9.0.2 -p 5301 -t 3 -P 4
sleep 0.3; kill -INT %1
