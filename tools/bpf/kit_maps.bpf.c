// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
// Maps for BPFKit's tests, of the kinds BPFKit handles but nearcast's program may not use: a
// hash map (batch updates, key listing, deletes), a sizeable array and per-CPU arrays. Not part
// of nearcast.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct kit_key {
	__u8 bytes[36];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct kit_key);
	__type(value, __u8[1040]);
} kit_hash SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u64);
} kit_array SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64[13]);
} kit_percpu SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 10000);
	__type(key, __u32);
	__type(value, __u64);
} kit_counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 300);
	__type(key, __u32);
	__type(value, __u64[4]);
} kit_counter_blocks SEC(".maps");

SEC("xdp")
int kit_maps(struct xdp_md *ctx)
{
	struct kit_key key = {};
	__u32 zero = 0;

	/* Referenced, so the maps are part of the object. */
	if (bpf_map_lookup_elem(&kit_hash, &key) || bpf_map_lookup_elem(&kit_percpu, &zero) ||
	    bpf_map_lookup_elem(&kit_counters, &zero) || bpf_map_lookup_elem(&kit_counter_blocks, &zero))
		return XDP_PASS;
	return bpf_map_lookup_elem(&kit_array, &zero) ? XDP_PASS : XDP_DROP;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
