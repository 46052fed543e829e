/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * DNS on the fast path: deciding whether a UDP payload is a plain query XDP may answer, and
 * reading its question into the names-table key (lower-cased) while summing its bytes for the
 * checksum. The reply itself is written by reply.h.
 *
 * A plain query: QR=0, OPCODE=0, QDCOUNT=1, ANCOUNT=NSCOUNT=0, an uncompressed name, class IN,
 * and then either the end of the message or one EDNS(0) OPT record whose options are well formed
 * (at most one Client Subnet, valid). That is the slow path reply cache's definition, plus a valid
 * ECS option. Anything else is passed to the slow path.
 */
#ifndef NC_DNS_H
#define NC_DNS_H

#include "csum.h"
#include "maps.h"
#include "names.h"
#include "parse.h"

#define NC_DNS_HDR 12
#define NC_OPT_LEN 11
#define NC_FLAGS_RD 0x0100 /* the query's bit a reply copies (flags word, host order): RD; CD is not (docs/CONFORMANCE.md) */

struct nc_dnshdr {
	__be16 id;
	__be16 flags;
	__be16 qdcount;
	__be16 ancount;
	__be16 nscount;
	__be16 arcount;
};

#define NC_ECS_MAX 24 /* an ECS option with its header: 4 + family, prefixes (4) + 16 address bytes */

/*
 * What the reply needs to know about the query. It lives in the per-CPU scratch map, not on the
 * stack: read back from a map, its fields are bounded but not exact, so the verifier checks the
 * code after the name loop once rather than once per name length.
 */
struct nc_query {
	__u64 hash;	  /* the question's hash (nearcast_abi.h): rate limiting's class of an answer */
	__u64 name_hash;  /* the same before the type is added (the names table's, with 0) */
	__u32 qsum;	  /* sum of the question's bytes (name, type, class), question start = even */
	__u16 qname_len;  /* wire length of the name, root label included */
	__u16 qtype;
	__u16 udp_size;	  /* the client's EDNS size; 0 without EDNS */
	__u8 edns;
	__u8 dnssec_ok;
	__u32 ecs_len;	  /* bytes of the Client Subnet option to echo (header included): 8..24; 0: none */
	__u32 reply_len;  /* the reply's DNS message length, kept here by the reply writer */
	__u32 pad;
	__u64 ecs_tail;	  /* the option's last 8 bytes as the query had them (nc_read_ecs) */
	/*
	 * The option as the query had it, zero past ecs_len, 8-aligned so it is read and written a
	 * word at a time (scope 0, which the echo keeps for static answers; geo sets the scope).
	 */
	__u8 ecs[NC_ECS_MAX];
	/*
	 * DNS Cookies (cookie.h). In: what the query's COOKIE option held (enum nc_cookie_in) and its
	 * octets (the client cookie, then a 16-octet server cookie). Out: whether the reply carries a
	 * COOKIE option (its 24 octets then in `cookie`), and whether the client proved its address.
	 */
	__u8 cookie_in;
	__u8 cookie_out;
	__u8 cookie_valid;
	__u8 pad2[5];
	__u64 cookie[3];
};

enum nc_cookie_in {
	NC_COOKIE_NONE = 0,
	NC_COOKIE_CLIENT = 1,	  /* a client cookie alone */
	NC_COOKIE_SERVER = 2,	  /* and a 16-octet server cookie, which may be ours */
	NC_COOKIE_FOREIGN = 3,	  /* and a server cookie of another length: not valid */
	NC_COOKIE_MALFORMED = 4,  /* not 8 or 16 to 40 octets, or a second COOKIE: FORMERR */
};

#define NC_OPTION_COOKIE 10
#define NC_COOKIE_OPT_LEN 28 /* a reply's COOKIE option: code, length, 8 + 16 octets */

static __always_inline __u8 nc_fold(__u8 b)
{
	return (b >= 'A' && b <= 'Z') ? b | 0x20 : b;
}

/* nc_fold on each byte of a word: 0x80 marks the bytes in 'A'..'Z' (not >= 0x80), 0x20 is added. */
static __always_inline __u64 nc_fold_word(__u64 w)
{
	__u64 low7 = w & 0x7f7f7f7f7f7f7f7fULL;
	__u64 ge_a = low7 + 0x3f3f3f3f3f3f3f3fULL; /* 0x80 set from 'A' (0x41) up */
	__u64 gt_z = low7 + 0x2525252525252525ULL; /* 0x80 set from '[' (0x5b) up */

	return w | ((ge_a & ~gt_z & ~w & 0x8080808080808080ULL) >> 2);
}

/* The one's-complement sum of a word's four 16-bit halves, in the machine's (little-endian) order. */
static __always_inline __u32 nc_csum_word_le(__u64 w)
{
	return (__u32)(w & 0xffff) + (__u32)((w >> 16) & 0xffff) + (__u32)((w >> 32) & 0xffff) + (__u32)(w >> 48);
}

#define NC_OPTIONS_MAX 8	/* options looked at in one OPT record; more are passed */
#define NC_OPTION_ECS 8
#define NC_OPTION_NSID 3

/*
 * Checks a Client Subnet option (`olen` data bytes after the 4-byte header at `o`) exactly as the
 * slow path does (RFC 7871 §7.1.1; DNSWire's ClientSubnet(queryOption:)), and keeps it in `q` for
 * the echo. Anything the slow path would answer FORMERR is passed to it.
 */
static __always_inline enum nc_reason nc_read_ecs(__u8 *o, __u32 olen, void *data_end, struct nc_query *q)
{
	if (olen < 4 || olen > NC_ECS_MAX - 4 || q->ecs_len) /* short, too long, or a second one */
		return NC_PASS_EDNS;
	if ((void *)(o + 8) > data_end)
		return NC_PASS_SHAPE;
	__u16 family = ((__u16)o[4] << 8) | o[5];
	__u32 source = o[6];

	if ((family != 1 || source > 32) && (family != 2 || source > 128))
		return NC_PASS_EDNS;
	if (o[7] != 0 || olen != 4 + (source + 7) / 8) /* scope 0; exactly the prefix's bytes */
		return NC_PASS_EDNS;
	/* No address bits set beyond the source prefix (the last address byte is o[3 + olen]). */
	__u32 rem = source % 8;

	__u8 *last = o + ((3 + olen) & 0x1f); /* 3 + olen <= 23: the mask only tells the verifier */

	if ((void *)(last + 1) > data_end)
		return NC_PASS_SHAPE;
	if (rem && (*last & (0xff >> rem)))
		return NC_PASS_EDNS;
	q->ecs_len = 4 + olen;
	nc_barrier(); /* the copy below is verified once, not once per option length */
	__u32 n = q->ecs_len;

	/*
	 * A word at a time, with no byte loop: the whole words, then the last partial one taken from
	 * the option's last 8 bytes (an option is at least 8 bytes, and its end is in the packet).
	 */
	if (n < 8 || n > NC_ECS_MAX)
		return NC_PASS_EDNS;
	nc_u64a *w = (nc_u64a *)q->ecs;
	__u8 *end8 = o + ((n - 8) & 0x1f); /* n - 8 <= 16: the mask only tells the verifier */

	if ((void *)(end8 + 8) > data_end)
		return NC_PASS_SHAPE;
	__u64 tail = *(nc_u64a *)end8;

	q->ecs_tail = tail;
	w[0] = *(nc_u64a *)o;
	w[1] = 0;
	w[2] = 0;
	if (n >= 16) {
		if ((void *)(o + 16) > data_end)
			return NC_PASS_SHAPE;
		w[1] = *(nc_u64a *)(o + 8);
	}
	if (n >= 24) {
		if ((void *)(o + 24) > data_end)
			return NC_PASS_SHAPE;
		w[2] = *(nc_u64a *)(o + 16);
	}
	if (n & 7) /* the partial word: the top n % 8 bytes of the last 8 (little-endian loads) */
		w[(n >> 3) & 3] = tail >> (8 * (8 - (n & 7)));
	return NC_ANSWERED;
}

/*
 * Keeps a COOKIE option (`olen` data octets after the 4-byte header at `o`) for cookie.h: the
 * client cookie, and a server cookie of our 16 octets; any other shape is only classed.
 */
static __always_inline enum nc_reason nc_read_cookie(__u8 *o, __u32 olen, void *data_end, struct nc_query *q)
{
	if (q->cookie_in != NC_COOKIE_NONE || (olen != 8 && (olen < 16 || olen > 40))) {
		q->cookie_in = NC_COOKIE_MALFORMED;
		return NC_ANSWERED;
	}
	if ((void *)(o + 12) > data_end)
		return NC_PASS_SHAPE;
	q->cookie[0] = *(nc_u64a *)(o + 4);
	q->cookie_in = olen == 8 ? NC_COOKIE_CLIENT : olen == 24 ? NC_COOKIE_SERVER : NC_COOKIE_FOREIGN;
	if (olen == 24) {
		if ((void *)(o + 28) > data_end)
			return NC_PASS_SHAPE;
		q->cookie[1] = *(nc_u64a *)(o + 12);
		q->cookie[2] = *(nc_u64a *)(o + 20);
	}
	return NC_ANSWERED;
}

/*
 * Checks the options of an OPT record (`len` bytes at `p`): each must lie within the record. A
 * Client Subnet option is checked and kept for the echo, as the slow path echoes it (scope 0 for
 * the static answers XDP gives); a COOKIE is kept for cookie.h; an NSID request passes (the slow
 * path answers it with the server's identity). Every other option (padding) is ignored by the slow
 * path, so the reply is the same as without it.
 */
static __always_inline enum nc_reason nc_check_options(__u8 *p, __u32 len, void *data_end, struct nc_query *q)
{
	__u32 pos = 0;

	for (int i = 0; i < NC_OPTIONS_MAX; i++) { /* bound: NC_OPTIONS_MAX options */
		if (pos == len)
			return NC_ANSWERED;
		if (pos + 4 > len || pos > 1024)
			return NC_PASS_SHAPE; /* the slow path answers FORMERR */
		nc_barrier_var(pos);
		__u8 *o = p + (pos & 0x7ff); /* pos <= 1024: the mask only tells the verifier */

		if ((void *)(o + 4) > data_end)
			return NC_PASS_SHAPE;
		__u16 code = ((__u16)o[0] << 8) | o[1];
		__u32 olen = ((__u32)o[2] << 8) | o[3];

		if (pos + 4 + olen > len)
			return NC_PASS_SHAPE;
		if (code == NC_OPTION_NSID)
			return NC_PASS_EDNS;
		if (code == NC_OPTION_ECS || code == NC_OPTION_COOKIE) {
			enum nc_reason r = code == NC_OPTION_ECS ? nc_read_ecs(o, olen, data_end, q)
								 : nc_read_cookie(o, olen, data_end, q);

			if (r != NC_ANSWERED)
				return r;
		}
		pos += 4 + olen;
	}
	return pos == len ? NC_ANSWERED : NC_PASS_EDNS;
}

/*
 * Reads the question of the DNS message at `dns` (`dns_len` bytes by the UDP length) into `key`
 * and `q`. Returns NC_ANSWERED when the query is plain, or the reason to pass it.
 */
static __always_inline enum nc_reason nc_read_query(struct nc_dnshdr *hdr, __u32 dns_len, void *data_end,
						     struct nc_name_key *key, struct nc_query *q)
{
	if ((void *)(hdr + 1) > data_end)
		return NC_DROP_MALFORMED;
	/* QR=0 and OPCODE=0: the top five bits of the flags word. */
	if (hdr->flags & bpf_htons(0xf800))
		return NC_PASS_SHAPE;
	if (hdr->qdcount != bpf_htons(1) || hdr->ancount || hdr->nscount)
		return NC_PASS_SHAPE;
	__u16 arcount = bpf_ntohs(hdr->arcount);

	if (arcount > 1)
		return NC_PASS_SHAPE;

	/*
	 * The name: labels of 1..63 octets, no compression, at most 255 octets in all. First walk the
	 * labels to find its length, then copy it folded to lower case while summing it: folding
	 * leaves the length bytes (at most 63) as they are, so the copy needs no label logic. Two
	 * simple loops keep the verifier's work small.
	 */
	__u8 *name = (__u8 *)(hdr + 1);
	__u32 len = 0, pos = 0;

	for (__u32 l = 0; l < NC_NAME_MAX / 2; l++) { /* bound: at most 127 labels fit 255 octets */
		if (pos >= NC_NAME_MAX - 1)
			return NC_PASS_SHAPE;
		if ((void *)(name + pos + 1) > data_end)
			return NC_PASS_SHAPE;
		__u8 b = name[pos];

		if (b == 0) {
			len = pos + 1;
			break;
		}
		if (b > 63) /* a compression pointer or a reserved label type */
			return NC_PASS_SHAPE;
		pos += b + 1;
	}
	if (len == 0)
		return NC_PASS_SHAPE; /* more than 255 octets */
	/* Read back from the map so the copy below is verified once, not once per length. */
	q->qname_len = len;
	nc_barrier();
	len = q->qname_len;

	/*
	 * Copy the name into the key a word at a time, folded to lower case, while hashing it and
	 * summing it for the checksum. The name starts the question, at an even offset, so the words'
	 * little-endian halves sum to the byte-swapped sum (RFC 1071 §2(B)). The last partial word is
	 * gathered byte by byte below: reading 8 bytes there could run past the packet.
	 */
	__u64 h = nc_hash_start(len), wsum = 0;
	nc_u64a *kw = (nc_u64a *)key->name;
	__u32 i;

	for (i = 0; i < NC_NAME_MAX / 8; i++) { /* bound: 255 octets, RFC 1035 §3.1, a word a step */
		if (i * 8 + 8 > len)
			break;
		if ((void *)(name + i * 8 + 8) > data_end)
			return NC_PASS_SHAPE;
		__u64 w = *(nc_u64a *)(name + i * 8);
		__u64 lw = nc_fold_word(w);

		wsum += nc_csum_word_le(w);
		kw[i] = lw;
		h = nc_hash_word(h, lw);
	}
	/* Leaving the loop pinned `len` to the step it left at; read it back to verify the rest once. */
	nc_barrier();
	len = q->qname_len;
	if (len == 0 || len > NC_NAME_MAX - 1 || NC_DNS_HDR + len + 4 > dns_len)
		return NC_PASS_SHAPE;
	__u32 done = len & 0xf8; /* whole words copied */
	__u32 sum = nc_csum_swap(nc_csum_fold((__u32)wsum));
	__u64 tail = 0;

	for (__u32 k = 0; k < 7; k++) { /* bound: the tail is shorter than a word */
		__u32 at = done + k;

		if (at >= len)
			break;
		if ((void *)(name + at + 1) > data_end)
			return NC_PASS_SHAPE;
		__u8 b = name[at];

		sum = nc_csum_byte(sum, b, at);
		tail |= (__u64)nc_fold(b) << (8 * k);
	}
	nc_barrier();
	len = q->qname_len;
	if (len == 0 || len > NC_NAME_MAX - 1)
		return NC_PASS_SHAPE;
	if (len & 7) {
		/* The last word, zero padded: the key compares whole words (len <= 255: the mask tells the verifier). */
		kw[(len >> 3) & 0x1f] = tail;
		h = nc_hash_word(h, tail);
	}

	/* Type and class. */
	__u8 *tc = name + NC_NAME_POS(len);

	if ((void *)(tc + 4) > data_end)
		return NC_PASS_SHAPE;
	if (tc[2] != 0 || tc[3] != 1) /* class IN */
		return NC_PASS_SHAPE;
#pragma unroll
	for (int k = 0; k < 4; k++)
		sum = nc_csum_byte(sum, tc[k], len + k);
	q->qtype = ((__u16)tc[0] << 8) | tc[1];
	q->qname_len = len;
	q->qsum = sum;
	q->name_hash = h;
	q->hash = nc_hash_finish(h, q->qtype);
	key->len = len;
	key->qtype = q->qtype;

	/* What follows the question: nothing, or exactly one OPT record without options. */
	__u32 rest = dns_len - (NC_DNS_HDR + len + 4);

	q->edns = 0;
	q->dnssec_ok = 0;
	q->udp_size = 0;
	q->ecs_len = 0;
	q->cookie_in = NC_COOKIE_NONE;
	q->cookie_out = 0;
	q->cookie_valid = 0;
	if (arcount == 0)
		return rest == 0 ? NC_ANSWERED : NC_PASS_SHAPE;
	if (rest < NC_OPT_LEN)
		return NC_PASS_SHAPE;
	__u8 *opt = tc + 4;

	if ((void *)(opt + NC_OPT_LEN) > data_end)
		return NC_PASS_SHAPE;
	if (opt[0] != 0 || opt[1] != 0 || opt[2] != 41) /* root owner, TYPE OPT */
		return NC_PASS_SHAPE;
	if (opt[6] != 0) /* version 0 only: the slow path answers BADVERS */
		return NC_PASS_EDNS;
	__u32 rdlen = ((__u32)opt[9] << 8) | opt[10];

	if (rest != NC_OPT_LEN + rdlen)
		return NC_PASS_SHAPE;
	if (rdlen) {
		enum nc_reason r = nc_check_options(opt + NC_OPT_LEN, rdlen, data_end, q);

		if (r != NC_ANSWERED)
			return r;
	}
	q->edns = 1;
	q->dnssec_ok = (opt[7] & 0x80) ? 1 : 0;
	q->udp_size = ((__u16)opt[3] << 8) | opt[4];
	return NC_ANSWERED;
}

/* The largest reply the client takes: 512 without EDNS, else its size (at least 512) capped at ours. */
static __always_inline __u32 nc_reply_limit(const struct nc_query *q, const struct nc_config *cfg)
{
	if (!q->edns)
		return 512;
	__u32 size = q->udp_size < 512 ? 512 : q->udp_size;

	return size < cfg->udp_payload ? size : cfg->udp_payload;
}

#endif /* NC_DNS_H */
