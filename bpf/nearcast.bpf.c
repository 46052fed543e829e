// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * nearcast's XDP fast path: answers plain DNS queries for names in the names table straight from
 * the table (XDP_TX), and passes everything else to the kernel and the slow path. It never sends a
 * reply the slow path would not send byte for byte (the ID aside): the answers are the slow path's
 * own replies. Entry and flow only; the logic is in include/.
 *
 * The flow is a pipeline of steps: parse -> question -> answer -> limit -> send. A step returns
 * NC_NEXT to go on, or the packet's verdict (XDP_PASS, XDP_DROP, XDP_TX), counted with its reason
 * (stats.h) where the step decided it.
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
#include "scratch.h"
#include "stats.h"
#include "tally.h"

/* A step's verdict: go on to the next step. Not an XDP action (those are 0..4). */
#define NC_NEXT (-1)

/* What the steps hand on; the packet's own fields are in the scratch map (scratch.h). */
struct nc_flow {
	struct nc_config *cfg;
	struct nc_scratch *s;
	const struct nc_answer *ans; /* the reply to write: an answer, or the TC=1 reply */
	enum nc_reason reason;	     /* NC_ANSWERED while XDP can answer the query; else why it cannot */
	int question_read;	     /* the question was read: a TC=1 reply may be sent for it */
	int truncated;		     /* the reply to write is the TC=1 one (over a limit) */
};

/* Ethernet, IP, UDP to one of our addresses and the DNS port; where each header is, in s->pkt. */
static __always_inline int nc_step_parse(void *data, void *data_end, struct nc_flow *f)
{
	struct nc_scratch *s = f->s;
	struct nc_packet *pkt = &s->pkt;
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
		s->src_family = 4;
		s->src[0] = ip->saddr;
		s->src[1] = 0;
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
		s->src_family = 6;
		__builtin_memcpy(&s->src[0], &ip6->saddr, 16);
		to.family = 6;
		__builtin_memcpy(to.addr, &ip6->daddr, 16);
	} else {
		return nc_exit(NC_PASS_NOT_DNS, XDP_PASS);
	}
	pkt->l4_off = c.pos - data;
	struct udphdr *udp = nc_parse_udp(&c, data_end, f->cfg->dns_port);

	if (!udp)
		return nc_exit(NC_PASS_NOT_DNS, XDP_PASS);
	/* Another address's query is passed untouched: before any check that could drop or limit it. */
	if (!nc_addressed_to_us(f->cfg, &to))
		return nc_exit(NC_PASS_NOT_OURS, XDP_PASS);
	__u32 udp_len = bpf_ntohs(udp->len);

	/* The UDP length, not the frame, says where the message ends: Ethernet pads short frames. */
	if (udp_len > ip_payload || pkt->l4_off + udp_len > (__u32)(data_end - data))
		return nc_exit(NC_PASS_SHAPE, XDP_PASS);
	if (udp_len < sizeof(*udp) + NC_DNS_HDR)
		return nc_exit(NC_DROP_MALFORMED, XDP_DROP);
	pkt->dns_off = c.pos - data;
	pkt->dns_len = udp_len - sizeof(*udp);
	return NC_NEXT;
}

/*
 * The question, into the names-table key. The DNS header's position is read back from the scratch
 * map: from here on, all header shapes share one path. A malformed message is dropped; one XDP
 * cannot answer goes on with the reason why (the limit step passes it, within the budget).
 */
static __always_inline int nc_step_question(void *data, void *data_end, struct nc_flow *f)
{
	struct nc_scratch *s = f->s;

	nc_barrier();
	struct nc_dnshdr *dns = data + NC_OFF(s->pkt.dns_off);

	f->reason = nc_read_query(dns, s->pkt.dns_len, data_end, &s->key, &s->q);
	if (f->reason == NC_DROP_MALFORMED)
		return nc_exit(NC_DROP_MALFORMED, XDP_DROP);
	f->question_read = f->reason == NC_ANSWERED;
	s->nx = 0;
	s->rec_flags = 0;
	s->proof_len = 0;
	s->geo = 0;
	s->geo_node = NC_TALLY_NO_NODE;
	return NC_NEXT;
}

/*
 * The answer to a question read: its cookie checked (cookie.h: one the slow path answers with an
 * error passes), then the names table's answer, a geo name's for this client, or a negative one.
 * Sets f->ans, or f->reason to why there is none; never ends the packet.
 */
static __always_inline void nc_step_answer(void *data, void *data_end, struct nc_flow *f)
{
	struct nc_scratch *s = f->s;

	if (!f->question_read)
		return;
	if (s->q.cookie_in != NC_COOKIE_NONE && nc_cookie_check() == NC_PASS_COOKIE)
		f->reason = NC_PASS_COOKIE;
	if (f->reason != NC_ANSWERED)
		return;
	/*
	 * The generation is read once: the names entry and the geo maps it leads to are of the
	 * same generation even while the control plane switches (nearcast_abi.h).
	 */
	s->gen = f->cfg->generation & 1;
	nc_barrier(); /* the rest reads the query back from the scratch map: one path for all names */
	int found = nc_lookup_answer(s, f->cfg, s->gen);

	if (found == 1 + NC_KIND_GEO) {
		/* A geo name: the answer for this client, built in the scratch map. */
		s->geo = 1;
		f->reason = nc_geo_answer(data, data_end, &s->pkt, &s->q, s);
		f->ans = f->reason == NC_ANSWERED ? &s->answer : NULL;
	} else if (found == 1 + NC_KIND_STATIC) {
		f->ans = &s->answer;
	} else if (found != NC_FOUND_OTHER && found != NC_FOUND_UNSIGNED && nc_negative(s->gen, found)) {
		/* NODATA, or a name that does not exist: the reply, built in the scratch map. */
		f->ans = &s->answer;
	} else {
		/* DO in a signed zone: the signed answer is missing, or proofs only the slow path has. */
		f->reason = found == NC_FOUND_UNSIGNED || (s->q.dnssec_ok && (s->rec_flags & NC_NAME_SIGNED))
				    ? NC_PASS_DNSSEC
				    : NC_PASS_MISS;
	}
	/*
	 * DO=1 in a signed zone without the signed answer (a geo name's; an NXDOMAIN): the slow path
	 * answers with the signatures and proofs.
	 */
	if (f->ans && s->q.dnssec_ok && (s->rec_flags & NC_NAME_SIGNED) && !s->signed_answer) {
		f->ans = NULL;
		f->reason = NC_PASS_DNSSEC;
	}
	if (f->ans && !nc_reply_fits(&s->q, f->ans, f->cfg))
		f->reason = NC_PASS_TOO_BIG;
}

/*
 * The limits. An answer over the response rate limit is dropped, or slipped as the minimal TC=1
 * reply; a query not answered goes to the slow path within the pass budget, else gets the TC=1
 * reply or is dropped (ratelimit.h). The TC=1 reply and an answer then take one path into the
 * reply writer, so it is in the program once.
 */
static __always_inline int nc_step_limit(struct nc_flow *f)
{
	struct nc_scratch *s = f->s;
	int verdict = XDP_PASS;

	f->truncated = f->reason != NC_ANSWERED;
	s->slipped = 0;
	/* A valid server cookie proves the client's address. */
	if (!f->truncated && !s->q.cookie_valid && nc_rrl_on(s->nx)) {
		/* NXDOMAINs are counted by zone (random names would each have a bucket), the rest by question. */
		int r = nc_rrl_decide(s->src[0], s->src[1], s->src_family, s->nx ? s->nx_zone : s->q.hash, s->nx);

		if (r == NC_RRL_DROP)
			return nc_exit(NC_RRL_DROPPED, XDP_DROP);
		if (r == NC_RRL_SLIP) {
			s->slipped = 1;
			s->q.ecs[7] = 0; /* a geo answer set its scope: the TC=1 reply has the static one */
			f->truncated = 1;
		}
	}
	nc_barrier();
	if (f->truncated) {
		f->ans = s->slipped ? &nc_tc_reply : nc_over_budget(f->cfg, f->reason, f->question_read, &verdict);
		if (!f->ans)
			return verdict;
	}
	return NC_NEXT;
}

/* What a reply sent counts as: the kind of answer, or why it is the TC=1 reply. */
static __always_inline enum nc_reason nc_sent_reason(const struct nc_scratch *s, int truncated)
{
	if (truncated)
		return s->slipped ? NC_RRL_SLIPPED : NC_LIMIT_TRUNCATED;
	if (s->geo)
		return s->geo_all_down ? NC_ANSWERED_GEO_ALL_DOWN : NC_ANSWERED_GEO;
	return s->nx ? NC_ANSWERED_NXDOMAIN : NC_ANSWERED;
}

/* The reply written over the query and sent back (XDP_TX); answers tallied by zone and node. */
static __always_inline int nc_step_send(struct xdp_md *ctx, struct nc_flow *f)
{
	struct nc_scratch *s = f->s;
	int verdict = XDP_PASS;
	enum nc_reason written = nc_write_reply(ctx, &s->pkt, &s->q, f->ans, f->cfg);

	if (written == NC_ANSWERED) {
		if (!f->truncated)
			nc_tally(s->negative, s->geo_node, s->gen);
		return nc_exit_sent(nc_sent_reason(s, f->truncated), f->truncated ^ 1, nc_type_slot(s->key.qtype));
	}
	if (written == NC_DROP_INTERNAL)
		return nc_exit(NC_DROP_INTERNAL, XDP_DROP);
	if (f->truncated)
		return nc_exit(s->slipped ? NC_RRL_DROPPED : NC_LIMIT_DROPPED, XDP_DROP);
	/* The frame could not grow (nothing was changed): the slow path answers, within the budget. */
	nc_over_budget(f->cfg, written, 0, &verdict);
	return verdict;
}

SEC("xdp")
int nearcast_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u32 zero = 0;
	struct nc_flow f = { .cfg = bpf_map_lookup_elem(&nc_config, &zero) };
	int verdict;

	if (!f.cfg || !f.cfg->enabled || !f.cfg->dns_port)
		return nc_exit(NC_PASS_NOT_DNS, XDP_PASS);
	f.s = bpf_map_lookup_elem(&nc_scratch, &zero);
	if (!f.s)
		return nc_exit(NC_PASS_NOT_DNS, XDP_PASS);

	verdict = nc_step_parse(data, data_end, &f);
	if (verdict != NC_NEXT)
		return verdict;
	verdict = nc_step_question(data, data_end, &f);
	if (verdict != NC_NEXT)
		return verdict;
	nc_step_answer(data, data_end, &f);
	verdict = nc_step_limit(&f);
	if (verdict != NC_NEXT)
		return verdict;
	return nc_step_send(ctx, &f);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
