#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Init command of the netregress packetdrill corpus: a known TCP configuration for the fresh
# network namespace each script runs in (these sysctls are per namespace, so nothing outside
# it changes). Values follow the reference's conventions (docs/packetdrill-language.md §12);
# a fresh namespace has no TCP metrics to flush, and it inherits the host's congestion
# control (this kernel refuses to change the default inside a namespace: EPERM). Scripts
# that depend on one set it per socket with TCP_CONGESTION.
set -e
sysctl -q -w net.ipv4.tcp_rmem="4096 540000 15728640" \
             net.ipv4.tcp_wmem="4096 262144 4194304" \
             net.ipv4.tcp_timestamps=1 net.ipv4.tcp_sack=1 net.ipv4.tcp_dsack=1 \
             net.ipv4.tcp_syn_retries=5 net.ipv4.tcp_synack_retries=5 \
             net.ipv4.tcp_frto=2 net.ipv4.tcp_reordering=3 \
             net.ipv4.tcp_slow_start_after_idle=0 net.ipv4.tcp_early_retrans=4 \
             net.ipv4.tcp_recovery=1 net.ipv4.tcp_tso_win_divisor=3 net.ipv4.tcp_ecn=0 \
             net.ipv4.tcp_notsent_lowat=4294967295 net.ipv4.tcp_fastopen=0x70403 \
             net.ipv4.tcp_syncookies=1
# pfifo rather than the default qdisc, so no fq pacing shapes the packets we expect.
tc qdisc add dev tun0 root pfifo
