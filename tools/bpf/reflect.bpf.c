// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
// The benchmark ceiling: the least a DNS responder in XDP can do. For IPv4 or IPv6 UDP to port 53
// it swaps the MAC and IP addresses and the ports, sets QR in the DNS header and sends the frame
// back (XDP_TX); checksums are left as they are. Everything else passes. Not part of nearcast.
// Built with REFLECT_GROW=N (reflect_grow.bpf.c) it also grows the frame by N bytes at the tail,
// as any responder must to add an answer: the ceiling with that one unavoidable helper call.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int reflect(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct udphdr *udp;

	if ((void *)(eth + 1) > data_end)
		return XDP_PASS;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);

		if ((void *)(ip + 1) > data_end || ip->protocol != IPPROTO_UDP)
			return XDP_PASS;
		__be32 a = ip->saddr;

		ip->saddr = ip->daddr;
		ip->daddr = a;
		udp = (void *)(ip + 1);
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);

		if ((void *)(ip6 + 1) > data_end || ip6->nexthdr != IPPROTO_UDP)
			return XDP_PASS;
		struct in6_addr a = ip6->saddr;

		ip6->saddr = ip6->daddr;
		ip6->daddr = a;
		udp = (void *)(ip6 + 1);
	} else {
		return XDP_PASS;
	}
	if ((void *)(udp + 1) + 3 > data_end || udp->dest != bpf_htons(53))
		return XDP_PASS;
	__be16 p = udp->source;

	udp->source = udp->dest;
	udp->dest = p;
	((__u8 *)(udp + 1))[2] |= 0x80; /* QR */
	__u8 mac[ETH_ALEN];

	__builtin_memcpy(mac, eth->h_source, ETH_ALEN);
	__builtin_memcpy(eth->h_source, eth->h_dest, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, mac, ETH_ALEN);
#ifdef REFLECT_GROW
	if (bpf_xdp_adjust_tail(ctx, REFLECT_GROW))
		return XDP_PASS;
#endif
	return XDP_TX;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
