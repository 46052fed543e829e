/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Packet parsing up to the UDP payload: Ethernet, up to NC_VLAN_MAX 802.1Q/802.1ad tags, IPv4
 * without options and not fragmented, IPv6 without extension headers, UDP. Each parser takes a
 * cursor, bounds-checks its header once, advances the cursor, and says what comes next; anything
 * unexpected makes the caller pass the packet to the kernel.
 */
#ifndef NC_PARSE_H
#define NC_PARSE_H

#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>

#include "compiler.h"

#ifndef NC_VLAN_MAX
#define NC_VLAN_MAX 2
#endif

struct nc_cursor {
	void *pos;
};

struct nc_vlan_hdr {
	__be16 tci;
	__be16 proto;
};

/*
 * Where the headers are, as offsets from the frame start (pointers do not survive adjust_tail).
 * Every offset is below 256: Ethernet, two VLAN tags, IPv6 and UDP end at byte 70. Read back from
 * the scratch map, an offset is any __u16 to the verifier; NC_OFF states the bound, so a pointer
 * made from it has a known range (it changes no value).
 */
#define NC_OFF(off) ((off) & 0xff)

struct nc_packet {
	__u16 l3_off;
	__u16 l4_off;
	__u16 dns_off;
	__u16 dns_len;	/* from the UDP length: Ethernet may pad short frames */
	__u8 ipv6;
};

/* Ethernet and VLAN tags; returns the EtherType in network order, or 0. */
static __always_inline __be16 nc_parse_eth(struct nc_cursor *c, void *data_end)
{
	struct ethhdr *eth = c->pos;

	if ((void *)(eth + 1) > data_end)
		return 0;
	c->pos = eth + 1;
	__be16 proto = eth->h_proto;

#pragma unroll
	for (int i = 0; i < NC_VLAN_MAX; i++) {
		if (proto != bpf_htons(ETH_P_8021Q) && proto != bpf_htons(ETH_P_8021AD))
			break;
		struct nc_vlan_hdr *vlan = c->pos;

		if ((void *)(vlan + 1) > data_end)
			return 0;
		c->pos = vlan + 1;
		proto = vlan->proto;
	}
	return proto;
}

/* IPv4 without options, not a fragment, carrying UDP; returns the header or NULL. */
static __always_inline struct iphdr *nc_parse_ipv4(struct nc_cursor *c, void *data_end)
{
	struct iphdr *ip = c->pos;

	if ((void *)(ip + 1) > data_end)
		return NULL;
	if (ip->ihl != 5 || ip->version != 4 || ip->protocol != IPPROTO_UDP)
		return NULL;
	if (ip->frag_off & bpf_htons(0x3fff)) /* MF set or a fragment offset */
		return NULL;
	c->pos = ip + 1;
	return ip;
}

/* IPv6 whose next header is UDP (no extension headers); returns the header or NULL. */
static __always_inline struct ipv6hdr *nc_parse_ipv6(struct nc_cursor *c, void *data_end)
{
	struct ipv6hdr *ip6 = c->pos;

	if ((void *)(ip6 + 1) > data_end)
		return NULL;
	if (ip6->version != 6 || ip6->nexthdr != IPPROTO_UDP)
		return NULL;
	c->pos = ip6 + 1;
	return ip6;
}

/* UDP to `port` (host order); returns the header or NULL. */
static __always_inline struct udphdr *nc_parse_udp(struct nc_cursor *c, void *data_end, __u16 port)
{
	struct udphdr *udp = c->pos;

	if ((void *)(udp + 1) > data_end)
		return NULL;
	if (udp->dest != bpf_htons(port))
		return NULL;
	c->pos = udp + 1;
	return udp;
}

#endif /* NC_PARSE_H */
