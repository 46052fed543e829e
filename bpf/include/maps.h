/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The maps of the XDP program. Layouts and names come from the shared ABI header; the control
 * plane fills nc_names and nc_config and reads nc_stats.
 */
#ifndef NC_MAPS_H
#define NC_MAPS_H

#include "compiler.h"
#include "nearcast_abi.h"

/* (lower-cased name, type) -> the slow path's reply sections for it. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, NC_NAMES_CAPACITY);
	__type(key, struct nc_name_key);
	__type(value, struct nc_answer);
} nc_names SEC(".maps");

/* One entry, key 0: the program's settings. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nc_config);
} nc_config SEC(".maps");

/*
 * Verdict counters, one entry (key 0). Per-CPU: XDP runs in softirq context and one CPU never runs
 * two instances at once, so plain increments are safe and no atomics are needed.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nc_stats);
} nc_stats SEC(".maps");



#endif /* NC_MAPS_H */
