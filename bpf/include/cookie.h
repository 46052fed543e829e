/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * DNS Cookies on the fast path (RFC 7873; server cookies as RFC 9018 makes them; nearcast_abi.h,
 * struct nc_cookie_config): the query's server cookie checked, and the reply's made, exactly as
 * the slow path's ServerCookies does, so both send the same bytes. What the slow path answers with
 * an error (FORMERR for a malformed option, BADCOOKIE for a server cookie that is not valid) is
 * passed to it.
 */
#ifndef NC_COOKIE_H
#define NC_COOKIE_H

#include "dns.h"
#include "scratch.h"
#include "maps.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nc_cookie_config);
} nc_cookie SEC(".maps");

#define NC_COOKIE_VALID_FOR 3600 /* seconds a server cookie is valid after its time */
#define NC_COOKIE_VALID_AHEAD 300 /* and before it (clocks of a fleet's servers differ) */
#define NC_COOKIE_ECHO_FOR 1800	  /* seconds after its time it is echoed rather than made anew */

static __always_inline __u64 nc_rotl(__u64 x, int b)
{
	return (x << b) | (x >> (64 - b));
}

#define NC_SIPROUND                                                                                                    \
	do {                                                                                                           \
		v0 += v1;                                                                                              \
		v1 = nc_rotl(v1, 13);                                                                                  \
		v1 ^= v0;                                                                                              \
		v0 = nc_rotl(v0, 32);                                                                                  \
		v2 += v3;                                                                                              \
		v3 = nc_rotl(v3, 16);                                                                                  \
		v3 ^= v2;                                                                                              \
		v0 += v3;                                                                                              \
		v3 = nc_rotl(v3, 21);                                                                                  \
		v3 ^= v0;                                                                                              \
		v2 += v1;                                                                                              \
		v1 = nc_rotl(v1, 17);                                                                                  \
		v1 ^= v2;                                                                                              \
		v2 = nc_rotl(v2, 32);                                                                                  \
	} while (0)

#define NC_SIPCOMPRESS(m)                                                                                              \
	do {                                                                                                           \
		__u64 m_ = (m);                                                                                        \
		v3 ^= m_;                                                                                              \
		NC_SIPROUND;                                                                                           \
		NC_SIPROUND;                                                                                           \
		v0 ^= m_;                                                                                              \
	} while (0)

/*
 * The Hash sub-field: SipHash-2-4 under `k` (two words) of client cookie `cc` | `head` (version,
 * reserved and time, as the cookie's first 8 octets) | the client's address (`a0`, `a1` as loaded
 * from the packet: IPv4 in the low 4 octets of a0), 20 or 32 octets in all.
 */
static __always_inline __u64 nc_cookie_hash(const __u64 *k, __u64 cc, __u64 head, __u64 a0, __u64 a1, __u32 v6)
{
	__u64 v0 = 0x736f6d6570736575ULL ^ k[0], v1 = 0x646f72616e646f6dULL ^ k[1];
	__u64 v2 = 0x6c7967656e657261ULL ^ k[0], v3 = 0x7465646279746573ULL ^ k[1];

	NC_SIPCOMPRESS(cc);
	NC_SIPCOMPRESS(head);
	if (v6) {
		NC_SIPCOMPRESS(a0);
		NC_SIPCOMPRESS(a1);
		NC_SIPCOMPRESS(32ULL << 56);
	} else {
		NC_SIPCOMPRESS((a0 & 0xffffffffULL) | (20ULL << 56));
	}
	v2 ^= 0xff;
	NC_SIPROUND;
	NC_SIPROUND;
	NC_SIPROUND;
	NC_SIPROUND;
	return v0 ^ v1 ^ v2 ^ v3;
}

/*
 * The monotonic clock to within a tick: bpf_ktime_get_ns read once a second per CPU, and jiffies
 * (a load) counted on from there. On the benchmark's host the full read costs 45 ns a packet.
 */
static __always_inline __u64 nc_monotonic_ns(struct nc_scratch *s)
{
	if (!CONFIG_HZ)
		return bpf_ktime_get_ns();
	__u64 j = bpf_jiffies64();

	if (j - s->clock_jiffies >= CONFIG_HZ || !s->clock_ns) {
		s->clock_ns = bpf_ktime_get_ns();
		s->clock_jiffies = j;
		return s->clock_ns;
	}
	return s->clock_ns + (j - s->clock_jiffies) * (1000000000ULL / CONFIG_HZ);
}

/*
 * The query's cookie, checked, and the reply's, made: in the scratch map's query. NC_ANSWERED,
 * or NC_PASS_COOKIE for what the slow path answers with an error. A global function: verified
 * once, apart from the paths that lead to it.
 */
__attribute__((noinline)) int nc_cookie_check(void)
{
	__u32 zero = 0;
	struct nc_scratch *s = bpf_map_lookup_elem(&nc_scratch, &zero);
	struct nc_cookie_config *c = bpf_map_lookup_elem(&nc_cookie, &zero);

	if (!s)
		return NC_ANSWERED;
	struct nc_query *q = &s->q;
	__u8 in = q->cookie_in;

	q->cookie_out = 0;
	q->cookie_valid = 0;
	if (!c || !c->enabled || in == NC_COOKIE_NONE)
		return NC_ANSWERED;
	if (in == NC_COOKIE_MALFORMED)
		return NC_PASS_COOKIE;
	__u32 now = (__u32)((nc_monotonic_ns(s) + c->clock_offset_ns) / 1000000000ULL);
	__u64 a0 = s->src[0], a1 = s->src[1];
	__u32 v6 = s->src_family == 6;
	int reason = NC_ANSWERED;

	if (in == NC_COOKIE_SERVER) {
		__u64 head = q->cookie[1];
		__u32 time = bpf_ntohl((__u32)(head >> 32));
		__s32 ahead = (__s32)(time - now); /* serial number arithmetic (RFC 1982) */

		if ((head & 0xff) == 1 && ahead >= -NC_COOKIE_VALID_FOR && ahead <= NC_COOKIE_VALID_AHEAD) {
			if (nc_cookie_hash(c->secret, q->cookie[0], head, a0, a1, v6) == q->cookie[2]) {
				q->cookie_valid = 1;
				q->cookie_out = 1;
				if (ahead > -NC_COOKIE_ECHO_FOR)
					return NC_ANSWERED; /* echoed as it came */
			} else if (c->has_previous &&
				   nc_cookie_hash(c->previous, q->cookie[0], head, a0, a1, v6) == q->cookie[2]) {
				q->cookie_valid = 1;
			}
		}
	}
	if (in != NC_COOKIE_CLIENT && !q->cookie_valid)
		reason = NC_PASS_COOKIE; /* BADCOOKIE, with the new cookie below */
	/* A new server cookie: version 1, reserved 0, the time in network order, its hash. */
	__u64 head = 1 | ((__u64)bpf_htonl(now) << 32);

	q->cookie[1] = head;
	q->cookie[2] = nc_cookie_hash(c->secret, q->cookie[0], head, a0, a1, v6);
	q->cookie_out = 1;
	return reason;
}

#endif /* NC_COOKIE_H */
