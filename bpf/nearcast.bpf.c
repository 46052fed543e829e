// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * nearcast's XDP fast path: answers plain DNS queries for names in the names table straight from
 * the table (XDP_TX), and passes everything else to the kernel and the slow path. It never sends a
 * reply the slow path would not send byte for byte (the ID aside): the answers are the slow path's
 * own replies. Entry and flow only; the logic is in include/.
 */
#include <linux/bpf.h>

#include "compiler.h"
#include "cookie.h"
#include "csum.h"
#include "dns.h"
#include "geo.h"
#include "local.h"
#include "lookup.h"
#include "maps.h"
#include "names.h"
#include "negative.h"
#include "parse.h"
#include "ratelimit.h"
#include "reply.h"
#include "rrl.h"
#include "stats.h"
#include "tally.h"

SEC("xdp")
int nearcast_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u32 zero = 0;
	struct nc_config *cfg = bpf_map_lookup_elem(&nc_config, &zero);

	if (!cfg || !cfg->enabled || !cfg->dns_port)
		return nc_exit(NC_PASS_NOT_DNS, XDP_PASS);

	struct nc_scratch *scratch = bpf_map_lookup_elem(&nc_scratch, &zero);

	if (!scratch)
		return nc_exit(NC_PASS_NOT_DNS, XDP_PASS);
	struct nc_packet *pkt = &scratch->pkt;

	/* Ethernet, IP, UDP to the DNS port. */
	struct nc_cursor c = { .pos = data };
	__be16 proto = nc_parse_eth(&c, data_end);
	__u32 ip_payload;
	struct nc_local_key to = {};

	pkt->l3_off = c.pos - data;
	pkt->ipv6 = 0;
	if (proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = nc_parse_ipv4(&c, data_end);

		if (!ip)
			return nc_exit(NC_PASS_NOT_DNS, XDP_PASS);
		__u32 tot_len = bpf_ntohs(ip->tot_len);

		/*
		 * What the kernel drops, XDP never answers (the fuzzer found both): a header whose
		 * checksum is wrong, a total length past the frame or too short for UDP.
		 */
		if (nc_csum_fold_native(nc_csum_native(ip, 5, 0)) != 0xffff || tot_len < sizeof(*ip) + 8 ||
		    tot_len > (__u32)(data_end - (void *)ip))
			return nc_exit(NC_PASS_SHAPE, XDP_PASS);
		ip_payload = tot_len - sizeof(*ip);
		scratch->src_family = 4;
		scratch->src[0] = ip->saddr;
		scratch->src[1] = 0;
		to.family = 4;
		__builtin_memcpy(to.addr, &ip->daddr, 4);
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = nc_parse_ipv6(&c, data_end);

		if (!ip6)
			return nc_exit(NC_PASS_NOT_DNS, XDP_PASS);
		ip_payload = bpf_ntohs(ip6->payload_len);
		if (ip_payload > (__u32)(data_end - (void *)(ip6 + 1))) /* past the frame: the kernel drops it */
			return nc_exit(NC_PASS_SHAPE, XDP_PASS);
		pkt->ipv6 = 1;
		scratch->src_family = 6;
		__builtin_memcpy(&scratch->src[0], &ip6->saddr, 16);
		to.family = 6;
		__builtin_memcpy(to.addr, &ip6->daddr, 16);
	} else {
		return nc_exit(NC_PASS_NOT_DNS, XDP_PASS);
	}
	pkt->l4_off = c.pos - data;
	struct udphdr *udp = nc_parse_udp(&c, data_end, cfg->dns_port);

	if (!udp)
		return nc_exit(NC_PASS_NOT_DNS, XDP_PASS);
	/* Another address's query is passed untouched: before any check that could drop or limit it. */
	if (!nc_addressed_to_us(cfg, &to))
		return nc_exit(NC_PASS_NOT_OURS, XDP_PASS);
	__u32 udp_len = bpf_ntohs(udp->len);

	/* The UDP length, not the frame, says where the message ends: Ethernet pads short frames. */
	if (udp_len > ip_payload || pkt->l4_off + udp_len > (__u32)(data_end - data))
		return nc_exit(NC_PASS_SHAPE, XDP_PASS);
	if (udp_len < sizeof(*udp) + NC_DNS_HDR)
		return nc_exit(NC_DROP_MALFORMED, XDP_DROP);
	pkt->dns_off = c.pos - data;
	pkt->dns_len = udp_len - sizeof(*udp);

	/*
	 * The question, into the names-table key. The DNS header's position is read back from the
	 * scratch map (see struct nc_scratch): from here on, all header shapes share one path.
	 */
	nc_barrier();
	struct nc_dnshdr *dns = data + (pkt->dns_off & 0xff);
	enum nc_reason reason = nc_read_query(dns, pkt->dns_len, data_end, &scratch->key, &scratch->q);
	const struct nc_answer *ans = NULL;
	int question_read = reason == NC_ANSWERED;

	if (reason == NC_DROP_MALFORMED)
		return nc_exit(reason, XDP_DROP);
	scratch->nx = 0;
	scratch->geo = 0;
	scratch->geo_node = NC_TALLY_NO_NODE;
	/* A COOKIE: checked, and the reply's made (cookie.h); one the slow path answers with an error passes. */
	if (question_read && scratch->q.cookie_in != NC_COOKIE_NONE)
		reason = nc_cookie_check() == NC_PASS_COOKIE ? NC_PASS_COOKIE : NC_ANSWERED;
	if (question_read && reason == NC_ANSWERED) {
		/*
		 * The generation is read once: the names entry and the geo maps it leads to are of the
		 * same generation even while the control plane switches (nearcast_abi.h).
		 */
		scratch->gen = cfg->generation & 1;
		nc_barrier(); /* the rest reads the query back from the scratch map: one path for all names */
		int found = nc_lookup_answer(scratch, cfg, scratch->gen);

		if (found == 1 + NC_KIND_GEO) {
			/* A geo name: the answer for this client, built in the scratch map. */
			scratch->geo = 1;
			reason = nc_geo_answer(data, data_end, pkt, &scratch->q, scratch);
			ans = reason == NC_ANSWERED ? &scratch->answer : NULL;
		} else if (found == 1 + NC_KIND_STATIC) {
			ans = &scratch->answer;
		} else if (found != NC_FOUND_OTHER && nc_negative(scratch->gen, found)) {
			/* NODATA, or a name that does not exist: the reply, built in the scratch map. */
			ans = &scratch->answer;
		} else {
			reason = NC_PASS_MISS;
		}
		if (ans && !nc_reply_fits(&scratch->q, ans, cfg))
			reason = NC_PASS_TOO_BIG;
	}

	/*
	 * Not answered: to the slow path within the pass budget, else a TC=1 reply or a drop. One
	 * call of the reply writer below serves both kinds of reply, so it is in the program once.
	 */
	int verdict = XDP_PASS;
	int truncated = reason != NC_ANSWERED;

	/*
	 * An answer over the response rate limit: dropped, or slipped as the minimal TC=1 reply (the
	 * one above the pass budget). Kept in the scratch map: one path into the reply writer.
	 */
	scratch->slipped = 0;
	/* A valid server cookie proves the client's address. */
	if (!truncated && !scratch->q.cookie_valid && nc_rrl_on(scratch->nx)) {
		/* NXDOMAINs are counted by zone (random names would each have a bucket), the rest by question. */
		int r = nc_rrl_decide(scratch->src[0], scratch->src[1], scratch->src_family,
				      scratch->nx ? scratch->nx_zone : scratch->q.hash, scratch->nx);

		if (r == NC_RRL_DROP)
			return nc_exit(NC_RRL_DROPPED, XDP_DROP);
		if (r == NC_RRL_SLIP) {
			scratch->slipped = 1;
			scratch->q.ecs[7] = 0; /* a geo answer set its scope: the TC=1 reply has the static one */
			truncated = 1;
		}
	}
	nc_barrier();
	if (truncated) {
		ans = scratch->slipped ? &nc_tc_reply : nc_over_budget(cfg, reason, question_read, &verdict);
		if (!ans)
			return verdict;
	}
	reason = nc_write_reply(ctx, pkt, &scratch->q, ans, cfg);
	if (reason == NC_ANSWERED && !truncated)
		nc_tally(scratch->negative, scratch->geo_node, scratch->gen);
	if (reason == NC_ANSWERED)
		return nc_exit_sent(truncated ? (scratch->slipped ? NC_RRL_SLIPPED : NC_LIMIT_TRUNCATED)
				    : scratch->geo ? (scratch->geo_all_down ? NC_ANSWERED_GEO_ALL_DOWN : NC_ANSWERED_GEO)
				    : scratch->nx ? NC_ANSWERED_NXDOMAIN
						  : NC_ANSWERED,
				    truncated ^ 1, nc_type_slot(scratch->key.qtype));
	if (reason == NC_DROP_INTERNAL || truncated)
		return nc_exit(reason == NC_DROP_INTERNAL ? reason : scratch->slipped ? NC_RRL_DROPPED : NC_LIMIT_DROPPED,
			       XDP_DROP);
	/* The frame could not grow (nothing was changed): the slow path answers, within the budget. */
	nc_over_budget(cfg, reason, 0, &verdict);
	return verdict;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
