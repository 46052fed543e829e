/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Turning a plain query into its reply in place: resize the frame, append the names-table entry's
 * sections (and our OPT when the query had EDNS), set the DNS header, swap the addresses and ports,
 * and fill in the IPv4 header checksum and the full UDP checksum. The UDP checksum is computed
 * from scratch, never updated from the query's: on veth the query's field holds only a partial sum.
 * Its payload part is the question's sum (taken while parsing) plus the entry's precomputed sum,
 * so no loop runs over the answer for it.
 */
#ifndef NC_REPLY_H
#define NC_REPLY_H

#include "dns.h"

#define NC_REPLY_TTL 64

/*
 * Copies `len` bytes of `src` (a names-table entry) to the packet at `dst`, a word at a time: the
 * whole words, then the last 8 bytes over them for the rest (a byte loop only for a copy shorter
 * than a word).
 */
static __always_inline int nc_copy_sections(__u8 *dst, const __u8 *src, __u32 len, void *data_end)
{
	__u32 i;

	for (i = 0; i < NC_SECTIONS_MAX / 8; i++) { /* bound: the entry's capacity, 8 bytes a step */
		if (i * 8 + 8 > len)
			break;
		if ((void *)(dst + i * 8 + 8) > data_end)
			return -1;
		*(nc_u64a *)(dst + i * 8) = *(const nc_u64a *)(src + i * 8);
	}
	if (!(len & 7))
		return 0;
	if (len >= 8) {
		__u32 at = len - 8;

		nc_barrier_var(at);
		if (at > NC_SECTIONS_MAX - 8)
			return -1;
		if ((void *)(dst + at + 8) > data_end)
			return -1;
		*(nc_u64a *)(dst + at) = *(const nc_u64a *)(src + at);
		return 0;
	}
	for (__u32 k = 0; k < 7; k++) { /* bound: shorter than a word */
		if (k >= len)
			break;
		if ((void *)(dst + k + 1) > data_end)
			return -1;
		dst[k] = src[k];
	}
	return 0;
}

/*
 * A reply grows at the tail when the frame has room there, else at the head. The tests build a
 * variant with NC_TAILROOM_FIRST=0, which always grows at the head, to check that path's bytes
 * against the slow path's (BPF_PROG_TEST_RUN frames always have tailroom).
 */
#ifndef NC_TAILROOM_FIRST
#define NC_TAILROOM_FIRST 1
#endif

#define NC_PREFIX_MAX 512 /* frame bytes before the sections: L2-L4 headers, DNS header, question */

/*
 * Makes room for a reply `delta` bytes longer than the query when the frame has no tailroom for
 * it (e.g. a veth frame that came from an skb with little slack; drivers keep at least 256 bytes
 * of headroom for XDP): the frame grows at the head, and its first `prefix` bytes, everything the
 * reply keeps of the query, move to the new start. The sections are then written over the rest.
 * Returns 0, or -1 with the frame as it was.
 */
static __always_inline int nc_grow_at_head(struct xdp_md *ctx, __u32 prefix, int delta)
{
	if (delta <= 0 || prefix > NC_PREFIX_MAX)
		return -1;
	if (bpf_xdp_adjust_head(ctx, -delta))
		return -1;
	__u8 *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u32 d = delta & 0xfff; /* the frame grew by delta: the mask only tells the verifier */
	__u32 i;

	/* Moving to lower addresses, an ascending copy never reads what it already overwrote. */
	for (i = 0; i < NC_PREFIX_MAX / 8; i++) { /* bound: the longest prefix, a word a step */
		if (i * 8 + 8 > prefix)
			break;
		__u8 *dst = data + i * 8, *src = dst + d;

		if ((void *)(src + 8) > data_end || (void *)(dst + 8) > data_end) /* dst < src: for the verifier */
			goto undo;
		*(nc_u64a *)dst = *(nc_u64a *)src;
	}
	for (__u32 k = i * 8; k < i * 8 + 7; k++) { /* bound: the tail is shorter than a word */
		if (k >= prefix || k >= NC_PREFIX_MAX)
			break;
		__u8 *dst = data + k, *src = dst + d;

		if ((void *)(src + 1) > data_end || (void *)(dst + 1) > data_end)
			goto undo;
		*dst = *src;
	}
	return 0;
undo:
	bpf_xdp_adjust_head(ctx, delta); /* cannot be reached: the query held the prefix */
	return -1;
}

/* Swaps the MAC addresses, three 16-bit words each (a byte-wise memcpy would be 36 instructions). */
static __always_inline void nc_swap_mac(struct ethhdr *eth)
{
	nc_u16a *m = (nc_u16a *)eth;
	__u16 a = m[0], b = m[1], c = m[2];

	m[0] = m[3];
	m[1] = m[4];
	m[2] = m[5];
	m[3] = a;
	m[4] = b;
	m[5] = c;
}

/* The reply's DNS message length: the query's header and question, the sections, our OPT. */
static __always_inline __u32 nc_reply_len(const struct nc_query *q, const struct nc_answer *ans)
{
	__u32 alen = ans->len, ecs_len = q->ecs_len;

	if (alen > NC_SECTIONS_MAX || ecs_len > NC_ECS_MAX)
		return 0xffff; /* cannot be: the control plane and the parser bound both */
	return NC_DNS_HDR + q->qname_len + 4 + alen +
	       (q->edns ? NC_OPT_LEN + ecs_len + (q->cookie_out ? NC_COOKIE_OPT_LEN : 0) : 0);
}

/* Whether the reply from `ans` fits what the client takes; the slow path sets TC when it does not. */
static __always_inline int nc_reply_fits(const struct nc_query *q, const struct nc_answer *ans,
					  const struct nc_config *cfg)
{
	return nc_reply_len(q, ans) <= nc_reply_limit(q, cfg);
}

/*
 * Rewrites the query at `pkt` into the reply built from `ans`, which fits (nc_reply_fits).
 * Returns NC_ANSWERED, NC_PASS_NO_ROOM (before anything was changed), or NC_DROP_INTERNAL (after:
 * the packet is no longer the query).
 */
static __always_inline enum nc_reason nc_write_reply(struct xdp_md *ctx, const struct nc_packet *pkt,
						      struct nc_query *q, const struct nc_answer *ans,
						      const struct nc_config *cfg)
{
	__u32 alen = ans->len;

	if (alen > NC_SECTIONS_MAX)
		return NC_DROP_INTERNAL;
	__u32 sections_at = NC_DNS_HDR + q->qname_len + 4; /* within the DNS message */
	__u32 ecs_len = q->ecs_len;

	if (ecs_len > NC_ECS_MAX)
		return NC_DROP_INTERNAL;
	__u32 dns_len = nc_reply_len(q, ans);

	q->reply_len = dns_len;

	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	int delta = (int)(pkt->dns_off + dns_len) - (int)(data_end - data);

	if ((!NC_TAILROOM_FIRST && delta > 0) || bpf_xdp_adjust_tail(ctx, delta)) {
		if (nc_grow_at_head(ctx, pkt->dns_off + sections_at, delta))
			return NC_PASS_NO_ROOM;
	}
	/* adjust_tail and adjust_head invalidate every packet pointer: derive them again. */
	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;

	/* sections_at <= 12 + 255 + 4: the mask only tells the verifier. */
	__u8 *sections = data + NC_OFF(pkt->dns_off) + (sections_at & 0x1ff);

	if (nc_copy_sections(sections, ans->sections, alen, data_end))
		return NC_DROP_INTERNAL;
	/* Leaving the copy loop pinned `alen` to the step it left at; read it back (see nc_scratch). */
	nc_barrier();
	alen = ans->len;
	if (alen > NC_SECTIONS_MAX)
		return NC_DROP_INTERNAL;

	/* Where the OPT goes and what it sums to; positions count from the question's start. */
	__u32 qpos_opt = q->qname_len + 4 + alen;
	__u32 sum = q->qsum;

	sum += (q->qname_len & 1) ? nc_csum_swap(ans->csum) : ans->csum;
	if (q->edns) {
		__u8 *opt = sections + (alen & (NC_SECTIONS_MAX * 2 - 1)); /* alen <= NC_SECTIONS_MAX (above) */
		__u32 cookie_len = q->cookie_out ? NC_COOKIE_OPT_LEN : 0;
		__u8 o[NC_OPT_LEN + 5] __attribute__((aligned(8))) = {0, 0, 41, cfg->udp_payload >> 8, cfg->udp_payload & 0xff, 0, 0,
					  q->dnssec_ok ? 0x80 : 0, 0, 0, ecs_len + cookie_len};

		if ((void *)(opt + NC_OPT_LEN) > data_end)
			return NC_DROP_INTERNAL;
		/* Three stores (8, 2 and 1 bytes), and its sum from the two words, zero-padded. */
		const nc_u64a *ow = (const nc_u64a *)o;

		*(nc_u64a *)opt = ow[0];
		*(nc_u16a *)(opt + 8) = *(const nc_u16a *)(o + 8);
		opt[10] = o[10];
		__u16 ole = nc_csum_fold(nc_csum_word_le(ow[0]) + nc_csum_word_le(ow[1]));

		sum += (qpos_opt & 1) ? ole : nc_csum_swap(ole);
		/*
		 * The Client Subnet option, echoed as the query had it (scope 0 for static data, the
		 * matched prefix for geo), a word at a time: it ends the reply, so its last 8 bytes go
		 * first, then the whole words over them (the first holds the scope).
		 */
		if (ecs_len) {
			__u8 *ecs = opt + NC_OPT_LEN;
			__u8 *end8 = ecs + ((ecs_len - 8) & 0x1f); /* 8 <= ecs_len <= NC_ECS_MAX (24) */
			const nc_u64a *w = (const nc_u64a *)q->ecs;

			if (ecs_len < 8 || (void *)(end8 + 8) > data_end || (void *)(ecs + 8) > data_end)
				return NC_DROP_INTERNAL;
			*(nc_u64a *)end8 = q->ecs_tail;
			*(nc_u64a *)ecs = w[0];
			if (ecs_len >= 16) {
				if ((void *)(ecs + 16) > data_end)
					return NC_DROP_INTERNAL;
				*(nc_u64a *)(ecs + 8) = w[1];
			}
			if (ecs_len >= 24) {
				if ((void *)(ecs + 24) > data_end)
					return NC_DROP_INTERNAL;
				*(nc_u64a *)(ecs + 16) = w[2];
			}
			/* Its sum from the zero-padded copy: little-endian halves, byte-swapped at an even position. */
			__u16 le = nc_csum_fold(nc_csum_word_le(w[0]) + nc_csum_word_le(w[1]) + nc_csum_word_le(w[2]));

			sum += ((qpos_opt + NC_OPT_LEN) & 1) ? le : nc_csum_swap(le);
		}
		/*
		 * The COOKIE option (cookie.h) ends the reply after the Client Subnet: its header as one
		 * word, the cookie as three, summed as the echo is.
		 */
		if (cookie_len) {
			__u8 *ck = opt + NC_OPT_LEN + (ecs_len & 0x1f); /* ecs_len <= NC_ECS_MAX (24) */
			const __u64 *w = q->cookie;

			if ((void *)(ck + NC_COOKIE_OPT_LEN) > data_end)
				return NC_DROP_INTERNAL;
			*(nc_u32a *)ck = 0x18000a00; /* code 10, length 24, in network order */
			*(nc_u64a *)(ck + 4) = w[0];
			*(nc_u64a *)(ck + 12) = w[1];
			*(nc_u64a *)(ck + 20) = w[2];
			__u16 le = nc_csum_fold(0x2200 + nc_csum_word_le(w[0]) + nc_csum_word_le(w[1]) + nc_csum_word_le(w[2]));

			sum += ((qpos_opt + NC_OPT_LEN + ecs_len) & 1) ? le : nc_csum_swap(le);
		}
	}
	/* Leaving the loop pinned the lengths to its step: read the reply's length back (nc_scratch). */
	nc_barrier();
	dns_len = q->reply_len;
	if (dns_len > 0xffff - sizeof(struct udphdr))
		return NC_DROP_INTERNAL;

	/* DNS header: the entry's flags with the query's RD, the entry's counts, same ID. */
	struct nc_dnshdr *hdr = data + NC_OFF(pkt->dns_off);

	if ((void *)(hdr + 1) > data_end)
		return NC_DROP_INTERNAL;
	/*
	 * The headers' sums are taken from the values written, never by reading back what was just
	 * stored: a wide load over narrower stores still in flight cannot be forwarded from them and
	 * waits for them to reach the cache.
	 */
	__u16 flags = ans->flags | (bpf_ntohs(hdr->flags) & NC_FLAGS_RD);
	__u16 arcount = ans->arcount + (q->edns ? 1 : 0);

	sum += bpf_ntohs(hdr->id) + flags + 1 + ans->ancount + ans->nscount + arcount;
	hdr->flags = bpf_htons(flags);
	hdr->qdcount = bpf_htons(1);
	hdr->ancount = bpf_htons(ans->ancount);
	hdr->nscount = bpf_htons(ans->nscount);
	hdr->arcount = bpf_htons(arcount);

	/* UDP: back to the client's port; the checksum covers the pseudo-header added below. */
	struct udphdr *udp = data + NC_OFF(pkt->l4_off);

	if ((void *)(udp + 1) > data_end)
		return NC_DROP_INTERNAL;
	__be16 sport = udp->source, dport = udp->dest;
	__u16 udp_len = sizeof(*udp) + dns_len;

	udp->source = dport;
	udp->dest = sport;
	udp->len = bpf_htons(udp_len);
	udp->check = 0;
	sum += bpf_ntohs(sport) + bpf_ntohs(dport) + udp_len; /* the header */
	sum += IPPROTO_UDP + udp_len;			       /* the pseudo-header, less the addresses */

	struct ethhdr *eth = data;

	if ((void *)(eth + 1) > data_end)
		return NC_DROP_INTERNAL;
	nc_swap_mac(eth);

	if (pkt->ipv6) {
		struct ipv6hdr *ip6 = data + NC_OFF(pkt->l3_off);

		if ((void *)(ip6 + 1) > data_end)
			return NC_DROP_INTERNAL;
		struct in6_addr src = ip6->saddr, dst = ip6->daddr;

		ip6->saddr = dst;
		ip6->daddr = src;
		ip6->payload_len = bpf_htons(udp_len);
		ip6->hop_limit = NC_REPLY_TTL;
		/* The pseudo-header sum does not depend on the order of the addresses. */
		sum += nc_csum_native_to_net(nc_csum_native(&dst, 4, nc_csum_native(&src, 4, 0)));
	} else {
		struct iphdr *ip = data + NC_OFF(pkt->l3_off);

		if ((void *)(ip + 1) > data_end)
			return NC_DROP_INTERNAL;
		__u32 saddr = bpf_ntohl(ip->saddr), daddr = bpf_ntohl(ip->daddr);
		__u16 tot_len = sizeof(*ip) + udp_len;
		__u32 addrs = (saddr >> 16) + (saddr & 0xffff) + (daddr >> 16) + (daddr & 0xffff);
		/* Version, IHL and TOS as the query had them; ID 0, DF (as the kernel sends UDP), TTL, UDP. */
		__u32 ipsum = ((__u32)(*(__u8 *)ip) << 8) + ip->tos + tot_len + 0x4000 + ((NC_REPLY_TTL << 8) | IPPROTO_UDP) + addrs;

		ip->saddr = bpf_htonl(daddr);
		ip->daddr = bpf_htonl(saddr);
		ip->tot_len = bpf_htons(tot_len);
		ip->id = 0;
		ip->frag_off = bpf_htons(0x4000);
		ip->ttl = NC_REPLY_TTL;
		ip->check = bpf_htons((__u16)~nc_csum_fold(ipsum));
		sum += addrs;
	}
	udp->check = bpf_htons(nc_csum_finish_udp(sum));
	return NC_ANSWERED;
}

#endif /* NC_REPLY_H */
