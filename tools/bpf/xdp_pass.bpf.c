// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
// A pass-through XDP program for the client end of a test veth pair: frames sent back with
// XDP_TX by the server end reach a veth peer only when the peer runs an XDP program too
// (ARCHITECTURE §9). Used by the end-to-end tests and the benchmarks; not part of nearcast.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int xdp_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
